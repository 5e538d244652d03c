-- The stores each commit changed, so that a key limited to some stores is given data tokens that
-- name the latest commit of its own stores instead of the latest of all: tokens that change only
-- when its own stores' data does, from which it can neither count nor date other stores' commits.
-- Filled by the writer with each commit (recordCommits), and here for the commits made before (every
-- import row is read once: the transaction lifts the connection's statement limit for itself).
SET LOCAL statement_timeout = 0;

CREATE TABLE commit_stores (
  store_id integer NOT NULL REFERENCES stores(id),
  seq bigint NOT NULL REFERENCES commits(seq),
  PRIMARY KEY (store_id, seq)
);

-- The stores of a commit's rows that wrote a revision (the changing actions, planner.ts): a row that
-- changed nothing does not make a commit its store's.
INSERT INTO commit_stores (store_id, seq)
SELECT DISTINCT r.resolved_store_id, c.seq
FROM commits c
JOIN import_rows r ON r.batch_id = c.batch_id
WHERE r.action IN ('INSERT', 'UPDATE', 'RELINK', 'RESTORE', 'VOID');
