-- key_store_status is derived from the legacy flag (rules.md §8): MARKED when is_key_store is true,
-- UNCONFIRMED otherwise. A generated column states the rule once and can never disagree with it.
ALTER TABLE stores DROP COLUMN key_store_status;
ALTER TABLE stores ADD COLUMN key_store_status text NOT NULL
  GENERATED ALWAYS AS (CASE WHEN is_key_store THEN 'MARKED' ELSE 'UNCONFIRMED' END) STORED;
