-- The provisional days of a scope, by date: a portfolio reads the stored month chunks for the days
-- of its range and only these days one by one (their provisional instants are not in the chunks).
-- Few days are provisional at a time, so the index stays small and cheap to keep up.
CREATE INDEX IF NOT EXISTS energy_days_provisional
  ON energy_days (scope_id, business_date) WHERE provisional = 1;
