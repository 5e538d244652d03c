// Applies the SQL migrations (migrations/*.sql) in order and records them; the same files serve
// PostgreSQL and PGlite.
import * as SqlClient from "@effect/sql/SqlClient";
import * as Migrator from "@effect/sql/Migrator";
import { Effect } from "effect";
import m0001 from "../../migrations/0001_schema.sql" with { type: "text" };
import m0002 from "../../migrations/0002_metric_inputs_function.sql" with { type: "text" };
import m0003 from "../../migrations/0003_energy_read_functions.sql" with { type: "text" };
import m0004 from "../../migrations/0004_import_row_keys.sql" with { type: "text" };
import m0005 from "../../migrations/0005_hashed_sessions.sql" with { type: "text" };
import m0006 from "../../migrations/0006_key_store_status.sql" with { type: "text" };
import m0007 from "../../migrations/0007_shaped_days.sql" with { type: "text" };
import m0008 from "../../migrations/0008_commit_order.sql" with { type: "text" };
import m0009 from "../../migrations/0009_unused_day_index.sql" with { type: "text" };
import m0010 from "../../migrations/0010_state_revision_key.sql" with { type: "text" };
import m0011 from "../../migrations/0011_set_checked_references.sql" with { type: "text" };
import m0012 from "../../migrations/0012_revision_states.sql" with { type: "text" };
import m0013 from "../../migrations/0013_import_review.sql" with { type: "text" };
import m0014 from "../../migrations/0014_provisional_days.sql" with { type: "text" };
import m0015 from "../../migrations/0015_month_settled_sums.sql" with { type: "text" };
import m0016 from "../../migrations/0016_month_running_totals.sql" with { type: "text" };
import m0017 from "../../migrations/0017_commit_stores.sql" with { type: "text" };
import m0018 from "../../migrations/0018_change_notices.sql" with { type: "text" };

// Each migration is a plain SQL file, imported as text (no globbing at run time: the record below
// is the list).
export const migrationTexts: Readonly<Record<string, string>> = {
  "0001_schema": m0001,
  "0002_metric_inputs_function": m0002,
  "0003_energy_read_functions": m0003,
  "0004_import_row_keys": m0004,
  "0005_hashed_sessions": m0005,
  "0006_key_store_status": m0006,
  "0007_shaped_days": m0007,
  "0008_commit_order": m0008,
  "0009_unused_day_index": m0009,
  "0010_state_revision_key": m0010,
  "0011_set_checked_references": m0011,
  "0012_revision_states": m0012,
  "0013_import_review": m0013,
  "0014_provisional_days": m0014,
  "0015_month_settled_sums": m0015,
  "0016_month_running_totals": m0016,
  "0017_commit_stores": m0017,
  "0018_change_notices": m0018,
};

export const migrations = Object.fromEntries(
  Object.entries(migrationTexts).map(([name, text]) => [
    name,
    Effect.flatMap(SqlClient.SqlClient, (sql) => sql.unsafe(text)),
  ]),
);

export const migrationsTable = "schema_migrations";

export const runMigrations = Migrator.make({})({
  loader: Migrator.fromRecord(migrations),
  table: migrationsTable,
});

export const latestMigrationId = Math.max(
  ...Object.keys(migrations).map((key) => Number(key.slice(0, 4))),
);

// Creating the table up front keeps the migrator's existence probe from failing inside its
// transaction; two processes that start on an empty database at once create it one after the
// other (CREATE TABLE IF NOT EXISTS run at the same moment fails in one of them), and the
// migrator's own lock of the table orders their migrations.
export const migrate = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient;
  yield* sql.withTransaction(Effect.zipRight(
    sql`SELECT pg_advisory_xact_lock(hashtext(${migrationsTable}))`,
    sql.unsafe(
      `CREATE TABLE IF NOT EXISTS ${migrationsTable} (
        migration_id integer PRIMARY KEY,
        created_at timestamptz NOT NULL DEFAULT now(),
        name text NOT NULL
      )`,
    ),
  ));
  return yield* runMigrations;
});

export const pendingMigrations = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient;
  // A database never migrated has no table of migrations: every one is pending.
  const [{ present }] = yield* sql<{ present: boolean }>`
    SELECT to_regclass(${migrationsTable}) IS NOT NULL AS present`;
  if (!present) return latestMigrationId;
  const rows = yield* sql<{ id: number | null }>`
    SELECT max(migration_id)::int AS id FROM ${sql(migrationsTable)}`;
  return latestMigrationId - (rows[0]?.id ?? 0);
});
