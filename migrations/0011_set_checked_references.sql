-- The references of the rows written by the thousand (an import's rows at its preview; revisions,
-- kept states and days at its commit) are checked once per statement instead of once per row.
-- PostgreSQL checks a foreign key row by row: one lookup and one row lock per written row and key,
-- 35-60 ms per key for 10,000 values, two keys in a preview and five in a commit. Here one query
-- per statement and reference looks for a written row whose referenced row is missing, and fails
-- the statement as the foreign key would (SQLSTATE 23503, the same constraint name).
--
-- A foreign key also locks each referenced row until the writing transaction ends, so that no one
-- deletes it meanwhile. The rows referred to here are never deleted nor given another key:
-- revisions are already immutable, and import batches, import rows, days, members and scopes
-- refuse both (keep_referenced below). A row the check sees can therefore not go away, and no lock
-- is needed.

CREATE FUNCTION check_references() RETURNS trigger LANGUAGE plpgsql AS $$
-- An AFTER ... FOR EACH STATEMENT trigger whose statement's new rows are the transition table
-- `added`. Arguments: the reference's name, the referencing columns (comma-separated), the
-- referenced table and its columns (in the same order). A row with a null in its referencing
-- columns refers to nothing, as with a foreign key.
DECLARE
  columns text[] := string_to_array(TG_ARGV[1], ',');
  keys text := (SELECT string_agg(format('a.%I', c), ', ') FROM unnest(columns) c);
  present text := (SELECT string_agg(format('a.%I IS NOT NULL', c), ' AND ') FROM unnest(columns) c);
  missing text;
BEGIN
  EXECUTE format(
    'SELECT concat_ws('', '', %1$s) FROM added a
     WHERE %2$s AND NOT EXISTS (SELECT 1 FROM %3$I r WHERE (%4$s) = (%1$s))
     LIMIT 1',
    keys, present, TG_ARGV[2],
    (SELECT string_agg(format('r.%I', c), ', ') FROM unnest(string_to_array(TG_ARGV[3], ',')) c))
  INTO missing;
  IF missing IS NOT NULL THEN
    RAISE EXCEPTION 'insert or update on table "%" violates foreign key constraint "%"',
      TG_TABLE_NAME, TG_ARGV[0]
      USING ERRCODE = 'foreign_key_violation', CONSTRAINT = TG_ARGV[0], TABLE = TG_TABLE_NAME,
        DETAIL = format('Key (%s)=(%s) is not present in table "%s".', TG_ARGV[1], missing,
          TG_ARGV[2]);
  END IF;
  RETURN NULL;
END;
$$;

CREATE FUNCTION keep_referenced() RETURNS trigger LANGUAGE plpgsql AS $$
-- BEFORE DELETE OR UPDATE OF <key> ... FOR EACH ROW on a table whose rows others refer to by that
-- key. Arguments: the key's columns.
DECLARE
  changed boolean := TG_OP = 'DELETE';
  key text;
BEGIN
  FOREACH key IN ARRAY TG_ARGV LOOP
    EXIT WHEN changed;
    EXECUTE format('SELECT ($1).%1$I IS DISTINCT FROM ($2).%1$I', key) INTO changed USING OLD, NEW;
  END LOOP;
  IF changed THEN
    RAISE EXCEPTION '% rows are kept with their key: other rows refer to them', TG_TABLE_NAME
      USING ERRCODE = 'foreign_key_violation', TABLE = TG_TABLE_NAME;
  END IF;
  RETURN NEW;
END;
$$;

CREATE TRIGGER import_batches_kept BEFORE DELETE OR UPDATE OF id ON import_batches
  FOR EACH ROW EXECUTE FUNCTION keep_referenced('id');
CREATE TRIGGER import_rows_kept BEFORE DELETE OR UPDATE OF id ON import_rows
  FOR EACH ROW EXECUTE FUNCTION keep_referenced('id');
CREATE TRIGGER energy_days_kept BEFORE DELETE OR UPDATE OF id ON energy_days
  FOR EACH ROW EXECUTE FUNCTION keep_referenced('id');
CREATE TRIGGER members_kept BEFORE DELETE OR UPDATE OF id ON members
  FOR EACH ROW EXECUTE FUNCTION keep_referenced('id');
CREATE TRIGGER scopes_kept BEFORE DELETE OR UPDATE OF store_id, id ON scopes
  FOR EACH ROW EXECUTE FUNCTION keep_referenced('store_id', 'id');

ALTER TABLE import_rows DROP CONSTRAINT import_rows_batch_id_fkey;
ALTER TABLE import_rows DROP CONSTRAINT import_rows_store_scope_fkey;
ALTER TABLE energy_revisions DROP CONSTRAINT energy_revisions_energy_id_fkey;
ALTER TABLE energy_revisions DROP CONSTRAINT energy_revisions_import_row_id_fkey;
ALTER TABLE energy_revisions DROP CONSTRAINT energy_revisions_member_id_fkey;
ALTER TABLE energy_day_states DROP CONSTRAINT energy_day_states_revision_fkey;
ALTER TABLE energy_days DROP CONSTRAINT energy_days_import_row_id_fkey;

-- An import's rows: checked on insert and on update (no statement of the service updates them).
CREATE TRIGGER import_rows_batch_id_fkey AFTER INSERT ON import_rows
  REFERENCING NEW TABLE AS added FOR EACH STATEMENT
  EXECUTE FUNCTION check_references('import_rows_batch_id_fkey', 'batch_id', 'import_batches', 'id');
CREATE TRIGGER import_rows_batch_id_fkey_update AFTER UPDATE ON import_rows
  REFERENCING NEW TABLE AS added FOR EACH STATEMENT
  EXECUTE FUNCTION check_references('import_rows_batch_id_fkey', 'batch_id', 'import_batches', 'id');
CREATE TRIGGER import_rows_store_scope_fkey AFTER INSERT ON import_rows
  REFERENCING NEW TABLE AS added FOR EACH STATEMENT
  EXECUTE FUNCTION check_references('import_rows_store_scope_fkey', 'resolved_store_id,scope_id',
    'scopes', 'store_id,id');
CREATE TRIGGER import_rows_store_scope_fkey_update AFTER UPDATE ON import_rows
  REFERENCING NEW TABLE AS added FOR EACH STATEMENT
  EXECUTE FUNCTION check_references('import_rows_store_scope_fkey', 'resolved_store_id,scope_id',
    'scopes', 'store_id,id');

-- Revisions and kept states are immutable (refuse_change): their references are checked on insert.
CREATE TRIGGER energy_revisions_energy_id_fkey AFTER INSERT ON energy_revisions
  REFERENCING NEW TABLE AS added FOR EACH STATEMENT
  EXECUTE FUNCTION check_references('energy_revisions_energy_id_fkey', 'energy_id', 'energy_days', 'id');
CREATE TRIGGER energy_revisions_import_row_id_fkey AFTER INSERT ON energy_revisions
  REFERENCING NEW TABLE AS added FOR EACH STATEMENT
  EXECUTE FUNCTION check_references('energy_revisions_import_row_id_fkey', 'import_row_id', 'import_rows', 'id');
CREATE TRIGGER energy_revisions_member_id_fkey AFTER INSERT ON energy_revisions
  REFERENCING NEW TABLE AS added FOR EACH STATEMENT
  EXECUTE FUNCTION check_references('energy_revisions_member_id_fkey', 'member_id', 'members', 'id');
CREATE TRIGGER energy_day_states_revision_fkey AFTER INSERT ON energy_day_states
  REFERENCING NEW TABLE AS added FOR EACH STATEMENT
  EXECUTE FUNCTION check_references('energy_day_states_revision_fkey', 'energy_id,revision_no',
    'energy_revisions', 'energy_id,revision_no');
CREATE TRIGGER energy_days_import_row_id_fkey AFTER INSERT ON energy_days
  REFERENCING NEW TABLE AS added FOR EACH STATEMENT
  EXECUTE FUNCTION check_references('energy_days_import_row_id_fkey', 'import_row_id', 'import_rows', 'id');
CREATE TRIGGER energy_days_import_row_id_fkey_update AFTER UPDATE ON energy_days
  REFERENCING NEW TABLE AS added FOR EACH STATEMENT
  EXECUTE FUNCTION check_references('energy_days_import_row_id_fkey', 'import_row_id', 'import_rows', 'id');
