-- Commit order, for reads as of an earlier instant and for the change feed.
--
-- Every committed batch (an import commit, each batch of a snapshot load) gets the next number of
-- commit_clock, taken at the end of its transaction under the clock's row lock: numbers follow the
-- order in which commits became visible, and a statement that reads the clock sees exactly the
-- commits numbered up to it. committed_at is the instant of that step (never earlier than the
-- commit before it).
--
-- energy_day_states keeps the state of a day at each revision that is no longer its current one
-- (the current state is energy_days itself): the writer saves a day's state when a later revision
-- replaces it. With the commit of each revision (through its import row and batch), the state of
-- any day at any commit is known.
--
-- Batches committed before this migration are numbered in the order of their committed_at; the
-- states their revisions replaced were not kept, so history starts at the last of them
-- (history_from): reads as of an earlier commit are refused.
CREATE TABLE commit_clock (
  id boolean PRIMARY KEY DEFAULT true CHECK (id),
  seq bigint NOT NULL CHECK (seq >= 0),
  committed_at timestamptz,
  history_from bigint NOT NULL CHECK (history_from >= 0)
);

CREATE TABLE commits (
  seq bigint PRIMARY KEY CHECK (seq >= 1),
  batch_id integer NOT NULL UNIQUE REFERENCES import_batches(id),
  committed_at timestamptz NOT NULL
);
CREATE INDEX commits_committed_at ON commits (committed_at, seq);
CREATE TRIGGER commits_immutable BEFORE UPDATE OR DELETE ON commits
  FOR EACH ROW EXECUTE FUNCTION refuse_change();

CREATE TABLE energy_day_states (
  energy_id integer NOT NULL REFERENCES energy_days(id),
  revision_no integer NOT NULL CHECK (revision_no >= 1),
  legacy_kwh numeric,
  cleaned_kwh numeric,
  cleaned_source_kind text,
  is_void boolean NOT NULL,
  provisional smallint NOT NULL,
  provisional_at timestamptz,
  quality_status text,
  quality_note text,
  import_row_id integer NOT NULL REFERENCES import_rows(id),
  source_reference jsonb,
  PRIMARY KEY (energy_id, revision_no)
);
CREATE TRIGGER energy_day_states_immutable BEFORE UPDATE OR DELETE ON energy_day_states
  FOR EACH ROW EXECUTE FUNCTION refuse_change();

INSERT INTO commits (seq, batch_id, committed_at)
SELECT row_number() OVER (ORDER BY b.committed_at, b.id), b.id, b.committed_at
FROM import_batches b
WHERE b.status = 'COMMITTED';

INSERT INTO commit_clock (seq, committed_at, history_from)
SELECT coalesce(max(seq), 0), max(committed_at), coalesce(max(seq), 0) FROM commits;
