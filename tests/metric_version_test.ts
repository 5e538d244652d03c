// metric_version gives the version (and data token) metric_inputs gives for the same arguments, so
// that a kept metrics, targets or periods answer is compared with the version it was made at.
import assert from "node:assert/strict";
import { SqlClient } from "@effect/sql";
import { Effect, FastCheck as fc } from "effect";
import { addDays } from "../src/domain/range.ts";
import { generateSnapshot } from "../src/seed/generate.ts";
import { loadSnapshot } from "../src/seed/load.ts";
import { makeTestApp } from "./helpers.ts";
import { commitDay, storesOf } from "./import_helpers.ts";

const snapshot = generateSnapshot({ stores: 4 });
const app = await makeTestApp((db) =>
  db.run(Effect.asVoid(loadSnapshot(snapshot, { reset: false })))
);
const writer = await app.key(["read", "write", "raw"], { member: "version-writer" });
const stores = await storesOf(app, writer.key);
const { start: first, end } = snapshot.dataset;

interface Versions {
  readonly inputs: string;
  readonly inputsToken: string | null;
  readonly version: string;
  readonly versionToken: string | null;
}

const versionsOf = (store: (typeof stores)[number], start: string, to: string) =>
  app.db.run(Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<Versions>`
      SELECT i.out_version AS inputs, i.out_token AS "inputsToken",
        v.out_version AS version, v.out_token AS "versionToken"
      FROM metric_inputs(${store.id}, ${store.scope_id}, ${start}::date, ${to}::date, 'Asia/Shanghai') i,
        metric_version(${store.id}, ${store.scope_id}, ${start}::date, ${to}::date) v`)).then((
      [row],
    ) => row);

const span = Math.round((Date.parse(end) - Date.parse(first)) / 86_400_000);
// Ranges anywhere in the dataset and a little past it, up to a year long.
const ranges = fc.record({
  store: fc.integer({ min: 0, max: stores.length - 1 }),
  from: fc.integer({ min: -10, max: span + 10 }),
  days: fc.integer({ min: 0, max: 365 }),
});

const agree = async (runs: number) => {
  await fc.assert(
    fc.asyncProperty(ranges, async ({ store, from, days }) => {
      const start = addDays(first, from);
      const row = await versionsOf(stores[store], start, addDays(start, days));
      assert.equal(row.version, row.inputs);
      assert.equal(row.versionToken, row.inputsToken);
    }),
    { numRuns: runs },
  );
};

Deno.test("metric_version is metric_inputs' version, for any store and range", async () => {
  await agree(60);
});

Deno.test("after a commit both move together, and only for the ranges that hold the day", async () => {
  const [a] = stores;
  const day = addDays(end, -3);
  const year = [addDays(end, -365), end] as const;
  const before = await versionsOf(a, ...year);
  const earlier = await versionsOf(a, addDays(end, -60), addDays(end, -40));
  await commitDay(app, writer.key, a, day, "2468.1357");
  const after = await versionsOf(a, ...year);
  assert.notEqual(after.version, before.version);
  assert.equal(after.version, after.inputs);
  assert.equal(
    (await versionsOf(a, addDays(end, -60), addDays(end, -40))).version,
    earlier.version,
  );
  await agree(20);
});

Deno.test("close", async () => {
  await app.close();
});
