-- Import rows reference their store's metering scope with one composite key instead of two
-- separate ones: it is stronger (the scope must belong to that store) and costs one check per row
-- instead of two on a 10,000-row preview. The (batch_id) index is covered by the unique
-- (batch_id, row_number) index and is dropped. energy_days keeps 10 % of each page free, so that a
-- commit's update of a day can stay on its page without touching the day's three indexes (a HOT
-- update; it applies to pages written from now on).
ALTER TABLE scopes ADD CONSTRAINT scopes_store_scope_key UNIQUE (store_id, id);
ALTER TABLE import_rows
  DROP CONSTRAINT import_rows_resolved_store_id_fkey,
  DROP CONSTRAINT import_rows_scope_id_fkey,
  ADD CONSTRAINT import_rows_store_scope_fkey
    FOREIGN KEY (resolved_store_id, scope_id) REFERENCES scopes (store_id, id);
DROP INDEX import_rows_batch;
ALTER TABLE energy_days SET (fillfactor = 90);
