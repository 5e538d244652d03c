// metric_version gives the version (and data token) metric_inputs gives for the same arguments, so
// that a kept metrics, targets or periods answer is compared with the version it was made at.
import assert from "node:assert/strict";
import { SqlClient } from "@effect/sql";
import { Effect, FastCheck as fc } from "effect";
import { addDays } from "../src/domain/range.ts";
import { generateSnapshot } from "../src/seed/generate.ts";
import { loadSnapshot } from "../src/seed/load.ts";
import { makeTestApp } from "./helpers.ts";
import { b64, commitDay, storesOf } from "./import_helpers.ts";

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

// One file of several days of one store, previewed and committed ("VOID" voids a day).
const commitDays = async (
  store: (typeof stores)[number],
  values: ReadonlyArray<readonly [string, string]>,
) => {
  const rows = values.map(([day, kwh]) => `${store.brand_name},${store.name},${day},${kwh}\r\n`);
  const preview = await app.call("POST", "/api/v1/imports/preview", {
    key: writer.key,
    headers: { "idempotency-key": crypto.randomUUID() },
    body: {
      filename: "days.csv",
      content_base64: b64(`品牌,门店,日期,日能耗\r\n${rows.join("")}`),
      reason: "baseline fix",
    },
  });
  assert.equal(preview.status, 200, JSON.stringify(preview.body));
  const commit = await app.call("POST", `/api/v1/imports/${preview.body.id}/commit`, {
    key: writer.key,
    headers: { "idempotency-key": crypto.randomUUID() },
    body: {},
  });
  assert.equal(commit.status, 200, JSON.stringify(commit.body));
};

Deno.test("a commit that takes one baseline day out and puts another in moves the version", async () => {
  // Two settled, available days of a BASELINE summer before the last year, still at revision 1.
  const [a, b] = await app.db.run(
    Effect.flatMap(SqlClient.SqlClient, (sql) =>
      sql<{ store_id: number; day: string }>`
      SELECT sc.store_id, e.business_date::text AS day
      FROM energy_days e
      JOIN scopes sc ON sc.id = e.scope_id
      JOIN stage_history h ON h.store_id = sc.store_id AND h.stage = 'BASELINE'
        AND e.business_date >= h.valid_from
        AND (h.valid_to IS NULL OR e.business_date < h.valid_to)
      WHERE extract(month FROM e.business_date) BETWEEN 6 AND 9
        AND extract(year FROM e.business_date) < extract(year FROM ${end}::date)
        AND e.status = 'AVAILABLE' AND e.provisional = 0 AND e.revision_no = 1
      ORDER BY sc.store_id, e.business_date
      LIMIT 2`),
  );
  assert.ok(a !== undefined && b !== undefined && a.store_id === b.store_id, "two baseline days");
  const store = stores.find((s) => s.id === a.store_id)!;
  const range = [addDays(end, -30), end] as const;
  // Both voided (revision 2), then a restored (revision 3): a is in the baseline, b is not.
  await commitDays(store, [[a.day, "VOID"], [b.day, "VOID"]]);
  await commitDays(store, [[a.day, "101.5"]]);
  const before = await versionsOf(store, ...range);
  const path = `/api/v1/stores/${store.id}/metrics?scope_id=${store.scope_id}` +
    `&start=${range[0]}&end=${range[1]}`;
  const etag = (await app.call("GET", path, { key: writer.key })).headers.get("etag");
  assert.ok(etag !== null);
  // One commit: a leaves at revision 3 and b comes back at revision 3, so the baseline keeps as many
  // days and the sum of their revision numbers is unchanged; the days' values are not.
  await commitDays(store, [[a.day, "VOID"], [b.day, "250.25"]]);
  const after = await versionsOf(store, ...range);
  assert.notEqual(after.version, before.version);
  assert.equal(after.version, after.inputs);
  const again = await app.call("GET", path, {
    key: writer.key,
    headers: { "if-none-match": etag },
  });
  assert.equal(again.status, 200);
  await agree(10);
});

Deno.test("close", async () => {
  await app.close();
});
