-- energy_days is read by scope and date (its unique key) or by id, never by store and date: every
-- read of a store's days goes through the store's scope. The (store_id, business_date) index was
-- kept up to date by every day a commit or a seed writes (a third of the table's index upkeep) and
-- served no query.
DROP INDEX IF EXISTS energy_days_store_date;
