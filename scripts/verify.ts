// CLI: deno task verify [--stores N] — proves that what the database stores for reads equals what
// the rules compute from its facts: every day's derived columns, and the energy read of every store
// (or N of them) over the whole dataset in 366-day windows. Read-only; safe on a production
// database. Uses DATABASE_URL when set, else the embedded database in DATA_DIR.
import { parseArgs } from "node:util";
import { SqlClient } from "@effect/sql";
import { Cause, Effect, Exit, Layer } from "effect";
import { AppConfig } from "../src/config.ts";
import { ExistingDatabaseLive } from "../src/db/database.ts";
import { pendingMigrations } from "../src/db/migrator.ts";
import { checkReads, checkStoredDays } from "../src/energy/day_check.ts";
import { addDays } from "../src/domain/range.ts";
import { failureReason } from "../src/log.ts";

const USAGE = "usage: deno task verify [--stores N]   (exit 0: all equal, 1: a difference)";
const values = (() => {
  try {
    return parseArgs({
      args: Deno.args,
      options: { stores: { type: "string" }, help: { type: "boolean", short: "h" } },
    }).values;
  } catch (error) {
    console.error(`${(error as Error).message}\n${USAGE}`);
    return Deno.exit(2);
  }
})();
if (values.help) {
  console.log(USAGE);
  Deno.exit(0);
}
const limit = values.stores === undefined ? null : Number(values.stores);
if (limit !== null && (!Number.isInteger(limit) || limit < 1)) {
  console.error("--stores takes a whole number >= 1");
  Deno.exit(2);
}

const program = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient;
  const pending = yield* pendingMigrations;
  if (pending > 0) {
    console.log(`${pending} migration(s) not applied: start the service once (it migrates) first`);
    return 1;
  }
  const started = performance.now();
  const stored = yield* checkStoredDays();
  console.log(`${stored.days} stored days checked: ${stored.mismatches.length} differ`);
  for (const m of stored.mismatches) {
    console.log(`  day ${m.id} (scope ${m.scope_id}, ${m.business_date}): ${m.columns.join(", ")}`);
  }
  console.log(`month chunks checked: ${stored.months.length} differ or are missing`);
  for (const m of stored.months) console.log(`  scope ${m.scope_id}, month ${m.month}`);
  const [dataset] = yield* sql<{ start: string; end: string }>`
    SELECT start_date::text AS start, end_date::text AS end FROM dataset`;
  if (dataset === undefined) {
    console.log("no snapshot is loaded: no reads to check");
    return stored.mismatches.length + stored.months.length;
  }
  const scopes = yield* sql<{ id: number }>`
    SELECT id FROM scopes ORDER BY id ${limit === null ? sql`` : sql`LIMIT ${limit}`}`;
  const ranges = scopes.flatMap(({ id }) => {
    const windows: Array<{ scopeId: number; start: string; end: string }> = [];
    for (let start = dataset.start; start <= dataset.end; start = addDays(start, 366)) {
      const end = addDays(start, 365);
      windows.push({ scopeId: id, start, end: end < dataset.end ? end : dataset.end });
    }
    return windows;
  });
  const reads = yield* checkReads(ranges);
  console.log(
    `${ranges.length} energy reads of ${scopes.length} scopes checked: ${reads.length} differ`,
  );
  for (const m of reads.slice(0, 20)) {
    console.log(`  scope ${m.scopeId} ${m.start}..${m.end}: ${m.part}`);
  }
  console.log(`in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  return stored.mismatches.length + stored.months.length + reads.length;
}).pipe(Effect.provide(Layer.provideMerge(ExistingDatabaseLive, AppConfig.layer)));

const exit = await Effect.runPromiseExit(program);
if (Exit.isFailure(exit)) {
  console.error(`verify failed: ${failureReason(Cause.squash(exit.cause))}`);
  Deno.exit(2);
}
Deno.exit(exit.value === 0 ? 0 : 1);
