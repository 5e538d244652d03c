-- Per month chunk, the number and the sum of its settled AVAILABLE days (provisional = 0), and the
-- revision numbers of its days when they were counted: what the summer baseline (rules.md §4)
-- takes of a month that a BASELINE stage covers whole, so that a portfolio reads one row of such a
-- month instead of each of its days. The day writer keeps them with the chunk; chunks written
-- before this migration get them from the routine "energy derived data", which derives every chunk
-- again on the next start (its text changed with them). A reader uses the counts only while the
-- chunk's revisions are still those they were counted at: a chunk rewritten by a writer that does
-- not know them (an instance of an earlier release) is read day by day.
ALTER TABLE energy_months
  ADD COLUMN settled_days integer CHECK (settled_days >= 0),
  ADD COLUMN settled_kwh numeric,
  ADD COLUMN settled_revisions integer[];
