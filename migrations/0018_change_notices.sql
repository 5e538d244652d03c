-- Every committed change to what a read shows or to who may read it (the facts, the stores, the
-- keys, sessions and members) sends a notice on channel data_changes, one per transaction
-- (PostgreSQL folds equal notices of a transaction into one), delivered with its commit. The
-- service listens (src/db/change_notices.ts): an answer it confirmed at a data version, and a
-- credential it checked, stand while no notice has come since. Tables only the writers read (the
-- audit log, the replay records of idempotent requests) send none; the records of the schema and
-- of the installed routines do, since a new routine may compute answers anew. A table added later
-- gets the trigger in its own migration (tests/change_notices_test.ts fails while one lacks it).
CREATE FUNCTION notify_data_change() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
  PERFORM pg_notify('data_changes', '');
  RETURN NULL;
END;
$fn$;

DO $triggers$
DECLARE t text;
BEGIN
  FOR t IN SELECT c.relname FROM pg_class c
           WHERE c.relkind IN ('r', 'p') AND c.relnamespace = current_schema()::regnamespace
             AND c.relname NOT IN ('audit_log', 'idempotency_records')
  LOOP
    EXECUTE format('CREATE TRIGGER notify_data_change AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE '
                   'ON %I FOR EACH STATEMENT EXECUTE FUNCTION notify_data_change()', t);
  END LOOP;
END
$triggers$;
