-- A revision keeps the state its day had right after it: energy_day_states, which kept that state
-- only once a later revision replaced it, is folded into energy_revisions. The day writer writes
-- a revision and its state in one row (a commit writes one row fewer per changed day), and a read
-- as of an earlier commit finds a day's state in the revision it picks, without a second lookup.
--
-- The state's columns are those of energy_days that a revision does not already hold: the void
-- flag and the quality of the state are the revision's own (after_is_void, quality_status,
-- quality_note), its source reference its import row's (checked here before the kept states go). state_kept says whether the columns hold
-- the state (false unless a writer says so): revisions replaced before history was kept
-- (commit_clock.history_from) have none.
--
-- The states that snapshot loads kept for their legacy revisions held the day as the cleaned batch
-- after it left it (its cleaned value, its void mark). A legacy revision is the first of its day:
-- the state after it has no cleaned value, whatever the kept state said; the void flag and quality
-- are the revision's.
-- Every revision is written once more here (at 2,000 stores, 1.4 million rows): the connection's
-- statement limit would stop that at the first start; this transaction lifts it for itself, as the
-- routines' transaction does.
SET LOCAL statement_timeout = 0;

DO $$
BEGIN
  IF EXISTS (
    SELECT 1 FROM energy_day_states s
    JOIN energy_revisions r ON r.energy_id = s.energy_id AND r.revision_no = s.revision_no
    JOIN import_rows i ON i.id = r.import_row_id
    WHERE s.source_reference IS DISTINCT FROM i.source_reference
      OR (r.source_kind <> 'LEGACY_DIRECT' AND (
        s.is_void IS DISTINCT FROM r.after_is_void
        OR s.quality_status IS DISTINCT FROM r.quality_status
        OR s.quality_note IS DISTINCT FROM r.quality_note))
  ) OR EXISTS (
    SELECT 1 FROM energy_days e
    JOIN energy_revisions r ON r.energy_id = e.id AND r.revision_no = e.revision_no
    JOIN import_rows i ON i.id = r.import_row_id
    WHERE e.is_void IS DISTINCT FROM r.after_is_void
      OR e.quality_status IS DISTINCT FROM r.quality_status
      OR e.quality_note IS DISTINCT FROM r.quality_note
      OR e.source_reference IS DISTINCT FROM i.source_reference
  ) THEN
    RAISE EXCEPTION 'a kept state differs from its revision in its void flag, quality or source';
  END IF;
END $$;

ALTER TABLE energy_revisions
  ADD COLUMN legacy_kwh numeric,
  ADD COLUMN cleaned_kwh numeric,
  ADD COLUMN cleaned_source_kind text,
  ADD COLUMN provisional smallint,
  ADD COLUMN provisional_at timestamptz,
  ADD COLUMN state_kept boolean NOT NULL DEFAULT false;

ALTER TABLE energy_revisions DISABLE TRIGGER energy_revisions_immutable;
UPDATE energy_revisions r SET
  legacy_kwh = s.legacy_kwh,
  cleaned_kwh = CASE WHEN r.source_kind = 'LEGACY_DIRECT' THEN NULL ELSE s.cleaned_kwh END,
  cleaned_source_kind =
    CASE WHEN r.source_kind = 'LEGACY_DIRECT' THEN NULL ELSE s.cleaned_source_kind END,
  provisional = s.provisional, provisional_at = s.provisional_at, state_kept = true
FROM energy_day_states s
WHERE s.energy_id = r.energy_id AND s.revision_no = r.revision_no;
UPDATE energy_revisions r SET
  legacy_kwh = e.legacy_kwh, cleaned_kwh = e.cleaned_kwh,
  cleaned_source_kind = e.cleaned_source_kind, provisional = e.provisional,
  provisional_at = e.provisional_at, state_kept = true
FROM energy_days e
WHERE e.id = r.energy_id AND e.revision_no = r.revision_no;
ALTER TABLE energy_revisions ENABLE TRIGGER energy_revisions_immutable;

ALTER TABLE energy_revisions ADD CONSTRAINT energy_revisions_state_check CHECK (
  NOT state_kept OR (provisional IN (0, 1) AND (provisional = 0 OR provisional_at IS NOT NULL)
    AND (cleaned_kwh IS NULL) = (cleaned_source_kind IS NULL)));

DROP TABLE energy_day_states;
