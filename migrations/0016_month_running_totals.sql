-- Per month chunk, running totals instead of per-day lengths: where each day's row ends in the
-- month's text (ends, in bytes, the separator after it counted), and the served kWh, the days with
-- a fact and their revision numbers up to and including each day (served_upto, facts_upto,
-- revisions_upto). A read of a range takes each month's totals and its cut from two entries of
-- these instead of summing the days' values one by one. Filled here from the columns they
-- replace or sit beside; the routine "energy derived data" derives every chunk again on the next
-- start (its text changed with them). Every month chunk is written once more: the transaction lifts
-- the connection's statement limit for itself.
SET LOCAL statement_timeout = 0;

-- A chunk's row (its month text compresses to about 1.5 KB) stays whole in its heap page instead of
-- its text going to the TOAST table once the row passes 2 KB: a read of a year then fetches 13 rows,
-- not 13 rows and the TOAST entries of each through their index.
ALTER TABLE energy_months SET (toast_tuple_target = 8160);

ALTER TABLE energy_months
  ADD COLUMN ends integer[],
  ADD COLUMN served_upto numeric[],
  ADD COLUMN facts_upto integer[],
  ADD COLUMN revisions_upto integer[];

UPDATE energy_months m
SET (ends, served_upto, facts_upto, revisions_upto) = (
  SELECT array_agg(w.ends ORDER BY w.i), array_agg(w.served_upto ORDER BY w.i),
    array_agg(w.facts_upto ORDER BY w.i), array_agg(w.revisions_upto ORDER BY w.i)
  FROM (
    SELECT u.i, (sum(u.l + 2) OVER upto)::int AS ends, sum(u.v) OVER upto AS served_upto,
      (sum((u.r > 0)::int) OVER upto)::int AS facts_upto,
      (sum(u.r) OVER upto)::int AS revisions_upto
    FROM unnest(m.lengths, m.served, m.revisions) WITH ORDINALITY AS u(l, v, r, i)
    WINDOW upto AS (ORDER BY u.i ROWS UNBOUNDED PRECEDING)
  ) w
);

ALTER TABLE energy_months
  DROP COLUMN lengths,
  ALTER COLUMN ends SET NOT NULL,
  ALTER COLUMN served_upto SET NOT NULL,
  ALTER COLUMN facts_upto SET NOT NULL,
  ALTER COLUMN revisions_upto SET NOT NULL,
  ADD CHECK (array_length(ends, 1) = length(statuses)),
  ADD CHECK (array_length(served_upto, 1) = length(statuses)),
  ADD CHECK (array_length(facts_upto, 1) = length(statuses)),
  ADD CHECK (array_length(revisions_upto, 1) = length(statuses));
