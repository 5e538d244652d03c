// The baseline metric_inputs gives (rules.md §4): per month, the settled (not provisional),
// available days of BASELINE stages in June to September of the years before the range's last year,
// their number and the sum of their kWh. Checked against that rule applied to the stored days, for
// random stage histories: several BASELINE stages over several years, open or closed, overlapping
// or not, among stages of other kinds. The as-of function, at the latest commit, gives the same.
import assert from "node:assert/strict";
import { SqlClient } from "@effect/sql";
import { Decimal } from "decimal.js";
import { Effect, FastCheck as fc } from "effect";
import { addDays } from "../src/domain/range.ts";
import { generateSnapshot } from "../src/seed/generate.ts";
import { loadSnapshot } from "../src/seed/load.ts";
import { makeTestApp } from "./helpers.ts";

const snapshot = generateSnapshot({ stores: 2 });
const app = await makeTestApp((db) =>
  db.run(Effect.asVoid(loadSnapshot(snapshot, { reset: false })))
);
const store = snapshot.stores[0];
const { start: first, end } = snapshot.dataset;

const query = <A>(run: (sql: SqlClient.SqlClient) => Effect.Effect<A, unknown>) =>
  app.db.run(Effect.flatMap(SqlClient.SqlClient, run));

interface Day {
  readonly date: string;
  readonly kwh: string | null;
  readonly status: string;
  readonly provisional: number;
}

const days = await query((sql) =>
  sql<Day>`
    SELECT business_date::text AS date, served_kwh::text AS kwh, status, provisional
    FROM energy_days WHERE scope_id = ${store.scope.id}`
);

interface Stage {
  readonly stage: string;
  readonly from: string;
  readonly to: string | null;
}

interface Month {
  readonly year: number;
  readonly month: number;
  readonly days: number;
  readonly sum: string | null;
}

// The rule over the stored days: every (stage, day) pair counts, as a day in two BASELINE stages
// is in the baseline of each.
const expected = (stages: ReadonlyArray<Stage>, to: string): Array<Month> => {
  const lastYear = Number(to.slice(0, 4));
  const months = new Map<string, { year: number; month: number; days: number; sum: Decimal }>();
  for (const stage of stages) {
    if (stage.stage !== "BASELINE") continue;
    for (const day of days) {
      const year = Number(day.date.slice(0, 4));
      const month = Number(day.date.slice(5, 7));
      if (
        day.status !== "AVAILABLE" || day.provisional !== 0 || year >= lastYear ||
        month < 6 || month > 9 || day.date < stage.from ||
        (stage.to !== null && day.date >= stage.to)
      ) continue;
      const key = `${year}-${month}`;
      const entry = months.get(key) ?? { year, month, days: 0, sum: new Decimal(0) };
      entry.days++;
      if (day.kwh !== null) entry.sum = entry.sum.plus(day.kwh);
      months.set(key, entry);
    }
  }
  return [...months.values()].map((m) => ({ ...m, sum: m.sum.toString() }));
};

const sorted = (months: ReadonlyArray<Month>) =>
  [...months].map((m) => ({
    year: m.year,
    month: m.month,
    days: m.days,
    sum: m.sum === null ? null : new Decimal(m.sum).toString(),
  })).sort((a, b) => a.year - b.year || a.month - b.month);

const setStages = (stages: ReadonlyArray<Stage>) =>
  query((sql) =>
    sql.withTransaction(Effect.gen(function* () {
      yield* sql`DELETE FROM stage_history WHERE store_id = ${store.id}`;
      for (const s of stages) {
        yield* sql`
          INSERT INTO stage_history (store_id, stage, valid_from, valid_to, change_reason)
          VALUES (${store.id}, ${s.stage}, ${s.from}::date, ${s.to}::date, 'test')`;
      }
    }))
  );

const baselines = (from: string, to: string) =>
  query((sql) =>
    sql<{ now: Array<Month>; at: Array<Month> }>`
      SELECT
        (SELECT out_baseline FROM metric_inputs(${store.id}, ${store.scope.id}, ${from}::date,
          ${to}::date, 'Asia/Shanghai')) AS now,
        (SELECT out_baseline FROM metric_inputs_at(${store.id}, ${store.scope.id}, ${from}::date,
          ${to}::date, 'Asia/Shanghai', (SELECT max(seq) FROM commits))) AS at`
  ).then(([row]) => row);

const span = Math.round((Date.parse(end) - Date.parse(first)) / 86_400_000);
const KINDS = ["BASELINE", "BASELINE", "INSTALLING", "OPERATING"] as const;
// Stages starting a year before the data and lasting up to three years, or open.
const stage = fc.record({
  stage: fc.constantFrom(...KINDS),
  from: fc.integer({ min: -400, max: span + 30 }),
  days: fc.option(fc.integer({ min: 1, max: 3 * 366 }), { nil: null }),
}).map(({ stage, from, days }) => {
  const start = addDays(first, from);
  return { stage, from: start, to: days === null ? null : addDays(start, days) };
});
// Ranges ending anywhere, and often in the dataset's last year or the next (where earlier summers
// can count).
const read = fc.record({
  to: fc.oneof(
    fc.integer({ min: -30, max: span + 400 }),
    fc.integer({ min: span - 200, max: span + 400 }),
  ),
  length: fc.integer({ min: 0, max: 365 }),
});

Deno.test("baseline of metric_inputs: the rule's days of BASELINE stages, any stage history and range", async () => {
  let kept = 0;
  await fc.assert(
    fc.asyncProperty(
      fc.array(stage, { maxLength: 4 }),
      read,
      async (stages, { to, length }) => {
        await setStages(stages);
        const last = addDays(first, to);
        const want = sorted(expected(stages, last));
        const got = await baselines(addDays(last, -length), last);
        assert.deepEqual(sorted(got.now), want);
        assert.deepEqual(sorted(got.at), want);
        if (want.length > 0) kept++;
      },
    ),
    { numRuns: 80 },
  );
  assert.ok(kept >= 8, `runs with baseline months: ${kept}`);
});

Deno.test({
  name: "close the test app",
  fn: () => app.close(),
  sanitizeOps: false,
  sanitizeResources: false,
});
