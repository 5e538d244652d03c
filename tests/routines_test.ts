// Routines (query logic and derived data kept in src/) are installed at start, keyed by a hash of
// their text: a new text is installed once, an unchanged one never again; readiness waits for them.
import assert from "node:assert/strict";
import { SqlClient } from "@effect/sql";
import { Effect } from "effect";
import { migrate } from "../src/db/migrator.ts";
import { functionRoutine, installRoutines, staleRoutines } from "../src/db/routines.ts";
import { checkStoredDays } from "../src/energy/day_check.ts";
import { derivedRoutine } from "../src/energy/day_writer.ts";
import { ROUTINES } from "../src/routines.ts";
import { generateSnapshot } from "../src/seed/generate.ts";
import { loadSnapshot } from "../src/seed/load.ts";
import { makeTestApp } from "./helpers.ts";
import { undo0016, undo0017, undo0018 } from "./schema_history.ts";

const app = await makeTestApp((db) =>
  db.run(Effect.asVoid(loadSnapshot(generateSnapshot({ stores: 2 }), { reset: false })))
);
const sql = <A extends object>(text: string, params: ReadonlyArray<unknown> = []) =>
  app.db.run(Effect.flatMap(SqlClient.SqlClient, (s) => s.unsafe<A>(text, params)));

Deno.test("a prepared database has every routine installed, and installing again does nothing", async () => {
  assert.deepEqual(await app.db.run(staleRoutines(ROUTINES)), []);
  assert.deepEqual(await app.db.run(installRoutines(ROUTINES)), []);
  const recorded = await sql<{ name: string }>("SELECT name FROM installed_routines ORDER BY 1");
  assert.deepEqual(recorded.map((r) => r.name), ROUTINES.map((r) => r.name).sort());
});

Deno.test("a changed text is installed once, even when the function's arguments change", async () => {
  const v1 = functionRoutine(
    "routine_probe",
    "CREATE FUNCTION routine_probe(a int) RETURNS int LANGUAGE sql AS $$ SELECT a + 1 $$;",
  );
  const v2 = functionRoutine(
    "routine_probe",
    "CREATE FUNCTION routine_probe(a int, b int) RETURNS int LANGUAGE sql AS $$ SELECT a + b $$;",
  );
  assert.deepEqual(await app.db.run(installRoutines([v1])), ["function routine_probe"]);
  assert.equal((await sql<{ n: number }>("SELECT routine_probe(1) AS n"))[0].n, 2);
  assert.deepEqual(await app.db.run(installRoutines([v1])), []);
  assert.deepEqual(await app.db.run(installRoutines([v2])), ["function routine_probe"]);
  assert.equal((await sql<{ n: number }>("SELECT routine_probe(2, 5) AS n"))[0].n, 7);
  const overloads = await sql<{ n: number }>(
    "SELECT count(*)::int AS n FROM pg_proc WHERE proname = 'routine_probe'",
  );
  assert.equal(overloads[0].n, 1, "the old signature is gone");
});

Deno.test("the derived data is recomputed when its routine is due, and only then", async () => {
  await sql("UPDATE energy_days SET status = 'VOID' WHERE id = (SELECT min(id) FROM energy_days)");
  await sql(
    "UPDATE energy_months SET days_json = 'damaged' WHERE month = (SELECT max(month) FROM energy_months)",
  );
  const damaged = await app.db.run(checkStoredDays());
  assert.equal(damaged.mismatches.length, 1);
  assert.deepEqual(damaged.mismatches[0].columns, ["status"]);
  assert.ok(damaged.months.length >= 1);
  // Installed already: nothing runs, the damage stays (the check is what finds it).
  assert.deepEqual(await app.db.run(installRoutines(ROUTINES)), []);
  assert.equal((await app.db.run(checkStoredDays())).mismatches.length, 1);
  // A new text of the rules (here: a forgotten record) recomputes everything from the facts.
  await sql("DELETE FROM installed_routines WHERE name = $1", [derivedRoutine.name]);
  assert.deepEqual(await app.db.run(installRoutines(ROUTINES)), [derivedRoutine.name]);
  const repaired = await app.db.run(checkStoredDays());
  assert.deepEqual([repaired.mismatches, repaired.months], [[], []]);
});

Deno.test("migration 0016 gives every month chunk the running totals its writer gives it", async () => {
  // Chunks as 0015 left them (each day's length in bytes), with a day whose text is not ASCII.
  await sql(
    `UPDATE energy_days SET quality_note = '电表更换，数据已核对' WHERE id = (
       SELECT min(id) FROM energy_days WHERE business_date > (SELECT min(business_date) + 3
         FROM energy_days))`,
  );
  await sql("DELETE FROM installed_routines WHERE name = $1", [derivedRoutine.name]);
  assert.deepEqual(await app.db.run(installRoutines(ROUTINES)), [derivedRoutine.name]);
  await sql(undo0018 + undo0017 + undo0016);
  assert.deepEqual(
    await app.db.run(migrate).then((applied) => applied.map(([id]) => id)),
    [16, 17, 18],
  );
  const check = await app.db.run(checkStoredDays());
  assert.deepEqual([check.mismatches, check.months], [[], []]);
  const [month] = await sql<{ n: number }>(
    "SELECT count(*)::int AS n FROM energy_months WHERE octet_length(days_json) <> length(days_json)",
  );
  assert.ok(month.n >= 1, "a chunk holds multibyte text");
});

Deno.test("migration 0017 notes the stores of every commit made before it, as the writer does", async () => {
  const rows = () =>
    sql<{ store_id: number; seq: string }>(
      "SELECT store_id, seq::text FROM commit_stores ORDER BY seq, store_id",
    );
  const written = await rows();
  const [stores] = await sql<{ n: number }>("SELECT count(*)::int AS n FROM stores");
  assert.equal(written.filter((r) => r.seq === written[0].seq).length, stores.n);
  await sql(undo0018 + undo0017);
  assert.deepEqual(
    await app.db.run(migrate).then((applied) => applied.map(([id]) => id)),
    [17, 18],
  );
  assert.deepEqual(await rows(), written);
});

Deno.test("the service is not ready while a routine is not installed", async () => {
  assert.equal((await app.call("GET", "/health/ready")).status, 200);
  const [{ sha256 }] = await sql<{ sha256: string }>(
    "SELECT sha256 FROM installed_routines WHERE name = 'function energy_read'",
  );
  await sql("UPDATE installed_routines SET sha256 = $1 WHERE name = 'function energy_read'", [
    "0".repeat(64),
  ]);
  const answer = await app.call("GET", "/health/ready");
  assert.equal(answer.status, 503);
  assert.equal(answer.body.error.code, "NOT_READY");
  assert.match(answer.body.error.message, /1 routine\(s\) not installed/);
  await sql("UPDATE installed_routines SET sha256 = $1 WHERE name = 'function energy_read'", [
    sha256,
  ]);
  assert.equal((await app.call("GET", "/health/ready")).status, 200);
});

Deno.test({
  name: "close the test app",
  fn: () => app.close(),
  sanitizeOps: false,
  sanitizeResources: false,
});
