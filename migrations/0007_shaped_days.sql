-- Query logic leaves the migrations: the functions of 0002 and 0003 are replaced by routines that
-- the service installs from src/ at start, keyed by a hash of their text (installed_routines).
--
-- The day fact is shaped when it is written, by src/energy/day_writer.ts in the transaction that
-- writes the facts: energy_days keeps served_kwh (the value served: cleaned, else legacy; null
-- when void), status (AVAILABLE, NO_DATA, VOID) and source_kind (the source served; for a void day,
-- that of the revision that voided it); energy_months keeps, per scope and calendar month, the
-- month's DailyRows as the energy read returns them, with what a read of part of the month needs
-- (each day's length in characters, its status letter, served kWh and revision number). Data written before
-- this migration is derived by the routine "energy derived data" on the next start.
--
-- Conditional reads: dataset.generation names each loaded snapshot; with the revision numbers of
-- the days an answer covers (they only grow) it makes an ETag that changes whenever the answer may.
CREATE TABLE installed_routines (
  name text PRIMARY KEY,
  sha256 text NOT NULL CHECK (sha256 ~ '^[0-9a-f]{64}$'),
  installed_at timestamptz NOT NULL DEFAULT now()
);

ALTER TABLE energy_days
  ADD COLUMN served_kwh numeric,
  ADD COLUMN status text CHECK (status IN ('AVAILABLE', 'NO_DATA', 'VOID')),
  ADD COLUMN source_kind text CHECK (source_kind IN ('CLEANED', 'LEGACY_DIRECT', 'MANUAL_UPLOAD'));

CREATE TABLE energy_months (
  scope_id integer NOT NULL REFERENCES scopes(id),
  month date NOT NULL CHECK (extract(day FROM month) = 1),
  days_json text NOT NULL,
  lengths integer[] NOT NULL,
  statuses text NOT NULL,
  served numeric[] NOT NULL,
  revisions integer[] NOT NULL,
  PRIMARY KEY (scope_id, month),
  CHECK (array_length(lengths, 1) = length(statuses)),
  CHECK (array_length(served, 1) = length(statuses)),
  CHECK (array_length(revisions, 1) = length(statuses))
);
-- lz4 compresses the month texts several times faster than the default where the server has it.
DO $lz4$
BEGIN
  ALTER TABLE energy_months ALTER COLUMN days_json SET COMPRESSION lz4;
EXCEPTION WHEN OTHERS THEN
  NULL;
END
$lz4$;

ALTER TABLE dataset ADD COLUMN generation text NOT NULL
  DEFAULT md5(random()::text || clock_timestamp()::text);

-- A batch's rows never change after its preview: their counts per action are kept with the batch,
-- so that reading a batch of any size starts without counting its rows.
ALTER TABLE import_batches ADD COLUMN action_counts jsonb;
UPDATE import_batches b SET action_counts = coalesce(
  (SELECT jsonb_object_agg(x.action, x.n)
   FROM (SELECT r.action, count(*)::int AS n FROM import_rows r
         WHERE r.batch_id = b.id GROUP BY r.action) x),
  '{}'::jsonb);
ALTER TABLE import_batches ALTER COLUMN action_counts SET NOT NULL;
