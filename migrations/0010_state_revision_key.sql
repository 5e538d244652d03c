-- A kept state (energy_day_states) is the state of a day at one of its revisions: its key now
-- refers to that revision (energy_revisions' unique (energy_id, revision_no), which names the day),
-- and its import row is read through the revision instead of being kept a second time (the day
-- writer always set the two equal; checked here before the column goes). A commit checks one
-- foreign key per kept state instead of two.
DO $$
BEGIN
  IF EXISTS (
    SELECT 1 FROM energy_day_states s
    LEFT JOIN energy_revisions r ON r.energy_id = s.energy_id AND r.revision_no = s.revision_no
    WHERE r.import_row_id IS DISTINCT FROM s.import_row_id
  ) THEN
    RAISE EXCEPTION 'a kept state names another import row than its revision';
  END IF;
END $$;

ALTER TABLE energy_day_states DROP COLUMN import_row_id;
ALTER TABLE energy_day_states DROP CONSTRAINT energy_day_states_energy_id_fkey;
ALTER TABLE energy_day_states ADD CONSTRAINT energy_day_states_revision_fkey
  FOREIGN KEY (energy_id, revision_no) REFERENCES energy_revisions (energy_id, revision_no);
