// The schema as an earlier migration left it, for tests of an upgrade: each constant undoes one
// migration (its SQL runs inside a test's database), the later ones first.

// Before 0012: the state a revision left its day in is kept apart (energy_day_states), and only
// once a later revision replaced it; a revision carries no state.
export const undo0012 = `
  CREATE TABLE energy_day_states (
    energy_id integer NOT NULL,
    revision_no integer NOT NULL CHECK (revision_no >= 1),
    legacy_kwh numeric,
    cleaned_kwh numeric,
    cleaned_source_kind text,
    is_void boolean NOT NULL,
    provisional smallint NOT NULL,
    provisional_at timestamptz,
    quality_status text,
    quality_note text,
    source_reference jsonb,
    PRIMARY KEY (energy_id, revision_no)
  );
  INSERT INTO energy_day_states
  SELECT r.energy_id, r.revision_no, r.legacy_kwh, r.cleaned_kwh, r.cleaned_source_kind,
    r.after_is_void, r.provisional, r.provisional_at, r.quality_status, r.quality_note,
    i.source_reference
  FROM energy_revisions r JOIN energy_days e ON e.id = r.energy_id
  JOIN import_rows i ON i.id = r.import_row_id
  WHERE r.state_kept AND r.revision_no <> e.revision_no;
  CREATE TRIGGER energy_day_states_immutable BEFORE UPDATE OR DELETE ON energy_day_states
    FOR EACH ROW EXECUTE FUNCTION refuse_change();
  CREATE TRIGGER energy_day_states_revision_fkey AFTER INSERT ON energy_day_states
    REFERENCING NEW TABLE AS added FOR EACH STATEMENT
    EXECUTE FUNCTION check_references('energy_day_states_revision_fkey', 'energy_id,revision_no',
      'energy_revisions', 'energy_id,revision_no');
  ALTER TABLE energy_revisions DROP CONSTRAINT energy_revisions_state_check;
  ALTER TABLE energy_revisions DROP COLUMN legacy_kwh, DROP COLUMN cleaned_kwh,
    DROP COLUMN cleaned_source_kind, DROP COLUMN provisional, DROP COLUMN provisional_at,
    DROP COLUMN state_kept;
  DELETE FROM schema_migrations WHERE migration_id = 12;`;

// Before 0011: the references of import rows, revisions, kept states and days are foreign keys
// again, checked row by row, and the rows they refer to are no longer kept by triggers.
export const undo0011 = `
  DROP TRIGGER import_rows_batch_id_fkey ON import_rows;
  DROP TRIGGER import_rows_batch_id_fkey_update ON import_rows;
  DROP TRIGGER import_rows_store_scope_fkey ON import_rows;
  DROP TRIGGER import_rows_store_scope_fkey_update ON import_rows;
  DROP TRIGGER energy_revisions_energy_id_fkey ON energy_revisions;
  DROP TRIGGER energy_revisions_import_row_id_fkey ON energy_revisions;
  DROP TRIGGER energy_revisions_member_id_fkey ON energy_revisions;
  DROP TRIGGER energy_day_states_revision_fkey ON energy_day_states;
  DROP TRIGGER energy_days_import_row_id_fkey ON energy_days;
  DROP TRIGGER energy_days_import_row_id_fkey_update ON energy_days;
  DROP TRIGGER import_batches_kept ON import_batches;
  DROP TRIGGER import_rows_kept ON import_rows;
  DROP TRIGGER energy_days_kept ON energy_days;
  DROP TRIGGER members_kept ON members;
  DROP TRIGGER scopes_kept ON scopes;
  DROP FUNCTION check_references();
  DROP FUNCTION keep_referenced();
  ALTER TABLE import_rows ADD CONSTRAINT import_rows_batch_id_fkey
    FOREIGN KEY (batch_id) REFERENCES import_batches (id);
  ALTER TABLE import_rows ADD CONSTRAINT import_rows_store_scope_fkey
    FOREIGN KEY (resolved_store_id, scope_id) REFERENCES scopes (store_id, id);
  ALTER TABLE energy_revisions ADD CONSTRAINT energy_revisions_energy_id_fkey
    FOREIGN KEY (energy_id) REFERENCES energy_days (id);
  ALTER TABLE energy_revisions ADD CONSTRAINT energy_revisions_import_row_id_fkey
    FOREIGN KEY (import_row_id) REFERENCES import_rows (id);
  ALTER TABLE energy_revisions ADD CONSTRAINT energy_revisions_member_id_fkey
    FOREIGN KEY (member_id) REFERENCES members (id);
  ALTER TABLE energy_day_states ADD CONSTRAINT energy_day_states_revision_fkey
    FOREIGN KEY (energy_id, revision_no) REFERENCES energy_revisions (energy_id, revision_no);
  ALTER TABLE energy_days ADD CONSTRAINT energy_days_import_row_id_fkey
    FOREIGN KEY (import_row_id) REFERENCES import_rows (id);
  DELETE FROM schema_migrations WHERE migration_id = 11;`;

// Migration 0018 undone: no table sends notices of its changes, the migration not recorded.
export const undo0018 = `
  DO $undo$
  DECLARE t regclass;
  BEGIN
    FOR t IN SELECT tgrelid::regclass FROM pg_trigger WHERE tgname = 'notify_data_change' LOOP
      EXECUTE format('DROP TRIGGER notify_data_change ON %s', t);
    END LOOP;
  END
  $undo$;
  DROP FUNCTION notify_data_change();
  DELETE FROM schema_migrations WHERE migration_id = 18;`;

// Migration 0017 undone: no record of the stores each commit changed, the migration not recorded.
export const undo0017 = `
  DROP TABLE commit_stores;
  DELETE FROM schema_migrations WHERE migration_id = 17;`;

// Migration 0016 undone: each month chunk's day lengths back from its ends, the running totals gone
// and the migration not recorded.
export const undo0016 = `
  ALTER TABLE energy_months ADD COLUMN lengths integer[];
  UPDATE energy_months SET lengths = (
    SELECT array_agg(u.e - coalesce(ends[u.i - 1], 0) - 2 ORDER BY u.i)
    FROM unnest(ends) WITH ORDINALITY AS u(e, i));
  ALTER TABLE energy_months ALTER COLUMN lengths SET NOT NULL,
    ADD CHECK (array_length(lengths, 1) = length(statuses)),
    DROP COLUMN ends, DROP COLUMN served_upto, DROP COLUMN facts_upto, DROP COLUMN revisions_upto;
  ALTER TABLE energy_months RESET (toast_tuple_target);
  DELETE FROM schema_migrations WHERE migration_id = 16;`;

// Migration 0015 undone: the month chunks' settled counts gone and the migration not recorded.
export const undo0015 = `
  ALTER TABLE energy_months DROP COLUMN settled_days, DROP COLUMN settled_kwh,
    DROP COLUMN settled_revisions;
  DELETE FROM schema_migrations WHERE migration_id = 15;`;

// Migration 0014 undone: the provisional days' index gone and the migration not recorded.
export const undo0014 = `
  DROP INDEX energy_days_provisional;
  DELETE FROM schema_migrations WHERE migration_id = 14;`;

// Migration 0013 undone: the review's columns gone and the migration not recorded.
export const undo0013 = `
  ALTER TABLE import_rows DROP COLUMN warnings;
  ALTER TABLE import_batches DROP COLUMN discarded_at;
  ALTER TABLE import_batches DROP COLUMN discarded_by;
  DELETE FROM schema_migrations WHERE migration_id = 13;`;
