// Migrations apply in order on an empty database, are recorded once, and protect immutable history.
import assert from "node:assert/strict";
import { SqlClient } from "@effect/sql";
import { Effect } from "effect";
import { latestMigrationId, migrate, migrations, pendingMigrations } from "../src/db/migrator.ts";
import { databaseKind, makeTestDatabase } from "./db.ts";

const db = await makeTestDatabase({ migrate: false });
const query = <A extends object>(text: string) =>
  db.run(Effect.flatMap(SqlClient.SqlClient, (sql) => sql.unsafe<A>(text)));

Deno.test(`migrations apply on an empty ${databaseKind} database and are recorded`, async () => {
  // Never migrated: every migration is pending (there is no table of them yet).
  assert.equal(await db.run(pendingMigrations), latestMigrationId);
  const applied = await db.run(migrate);
  assert.deepEqual(
    applied.map(([id]) => id),
    Object.keys(migrations).map((k) => Number(k.slice(0, 4))),
  );
  const recorded = await query<{ migration_id: number }>(
    "SELECT migration_id::int AS migration_id FROM schema_migrations ORDER BY 1",
  );
  assert.equal(recorded.at(-1)?.migration_id, latestMigrationId);
  assert.equal(await db.run(pendingMigrations), 0);
});

Deno.test("running the migrations again applies nothing", async () => {
  assert.deepEqual(await db.run(migrate), []);
});

Deno.test("the schema holds every table the contract needs", async () => {
  const rows = await query<{ table_name: string }>(
    "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'",
  );
  const tables = new Set(rows.map((r) => r.table_name));
  for (
    const name of [
      "dataset",
      "brands",
      "stores",
      "scopes",
      "members",
      "access_keys",
      "sessions",
      "source_files",
      "source_records",
      "import_batches",
      "import_rows",
      "import_row_sources",
      "energy_days",
      "energy_revisions",
      "idempotency_records",
      "target_periods",
      "target_period_items",
      "tev_observations",
      "stage_history",
      "stage_snapshots",
      "devices",
      "device_events",
      "strategies",
      "strategy_items",
      "target_candidates",
      "audit_log",
    ]
  ) assert.ok(tables.has(name), `table ${name}`);
});

Deno.test("kWh and money columns are numeric, never floating point", async () => {
  const rows = await query<{ column_name: string; data_type: string }>(
    `SELECT table_name || '.' || column_name AS column_name, data_type
     FROM information_schema.columns
     WHERE table_schema = 'public' AND (column_name LIKE '%kwh%' OR column_name IN ('unit_price', 'priced_quantity', 'tev_warning_ratio'))`,
  );
  assert.ok(rows.length >= 12);
  for (const row of rows) assert.equal(row.data_type, "numeric", row.column_name);
});

Deno.test("revisions, sealed sources and the audit log refuse UPDATE and DELETE", async () => {
  await query(`
    INSERT INTO brands VALUES (1, 'B');
    INSERT INTO stores (id, brand_id, store_code, name) VALUES (1, 1, 'S1', 'Store');
    INSERT INTO scopes VALUES (1, 1, 'AIR_CONDITIONING', 'kWh', 'Asia/Shanghai');
    INSERT INTO import_batches (batch_no, batch_kind, status, action_counts) VALUES ('B-1', 'PLATFORM_LEGACY', 'COMMITTED', '{}');
    INSERT INTO import_rows (batch_id, row_number, resolved_store_id, scope_id, business_date, action, source_kind, quality_status, lineage_status)
      VALUES (1, 1, 1, 1, '2026-07-01', 'INSERT', 'LEGACY_DIRECT', 'UNREVIEWED', 'SEALED_SOURCE');
    INSERT INTO energy_days (store_id, scope_id, business_date, legacy_kwh, revision_no, import_row_id)
      VALUES (1, 1, '2026-07-01', 12.5, 1, 1);
    INSERT INTO energy_revisions (energy_id, revision_no, operation, after_kwh, after_is_void, change_reason, import_row_id, source_kind, source_label)
      VALUES (1, 1, 'INSERT', 12.5, false, 'load', 1, 'LEGACY_DIRECT', 'Sealed legacy data');
    INSERT INTO source_files (sha256, source_kind, byte_size) VALUES ('abc', 'LEGACY_SNAPSHOT', 3);
  `);
  await query(
    "INSERT INTO audit_log (action, entity_type, entity_id) VALUES ('PROFILE_UPDATED', 'store', 1)",
  );
  for (
    const statement of [
      "UPDATE audit_log SET action = 'x'",
      "DELETE FROM audit_log",
      "UPDATE energy_revisions SET after_kwh = 1",
      "DELETE FROM energy_revisions",
      "UPDATE source_files SET sha256 = 'x'",
      "DELETE FROM source_files",
    ]
  ) {
    await assert.rejects(() => query(statement), statement);
  }
  const [row] = await query<{ after_kwh: string }>(
    "SELECT after_kwh::text AS after_kwh FROM energy_revisions",
  );
  assert.equal(row.after_kwh, "12.5");
});

Deno.test("kWh values must be non-negative with at most 4 decimals", async () => {
  await assert.rejects(() =>
    query("UPDATE energy_days SET cleaned_kwh = 1.23456, cleaned_source_kind = 'CLEANED'")
  );
  await assert.rejects(() => query("UPDATE energy_days SET legacy_kwh = -1"));
  await query("UPDATE energy_days SET cleaned_kwh = 0, cleaned_source_kind = 'CLEANED'");
});

Deno.test({
  name: "close the database",
  fn: () => db.close(),
  sanitizeOps: false,
  sanitizeResources: false,
});
