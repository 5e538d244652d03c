// Monthly totals over HTTP: each month's figures against the daily values of the metrics and energy
// reads of its days (and the same days a year earlier), the total against the range's metrics
// summary, the month plan's edges, refusals, ETags and reads as of an earlier commit.
import assert from "node:assert/strict";
import { Decimal } from "decimal.js";
import { Effect, FastCheck } from "effect";
import { EnergyResponse } from "../src/domain/energy.ts";
import { MetricsResponse } from "../src/domain/metrics.ts";
import { type MonthSpan, MonthsResponse } from "../src/domain/months.ts";
import { addDays } from "../src/domain/range.ts";
import { monthPlan, yearBefore } from "../src/metrics/months.ts";
import { generateSnapshot } from "../src/seed/generate.ts";
import { loadSnapshot } from "../src/seed/load.ts";
import { assertErrorBody, assertSchema, makeTestApp } from "./helpers.ts";
import { commitDay } from "./import_helpers.ts";

const snapshot = generateSnapshot({ stores: 6 });
const app = await makeTestApp((db) =>
  db.run(Effect.asVoid(loadSnapshot(snapshot, { reset: false })))
);
const { key } = await app.key(["read"]);
const end = snapshot.dataset.end;
// 366 days: thirteen calendar months, the first and last cut by the range.
const start = addDays(end, -365);

type Months = typeof MonthsResponse.Type;
type Store = (typeof snapshot.stores)[number];

const q = (store: Store, from: string, to: string) =>
  `scope_id=${store.scope.id}&start=${from}&end=${to}`;

const get = async (path: string) => {
  const answer = await app.call("GET", path, { key });
  assert.equal(answer.status, 200, JSON.stringify(answer.body));
  return answer.body;
};

const months = async (store: Store, from: string, to: string): Promise<Months> =>
  assertSchema(
    MonthsResponse,
    await get(`/api/v1/stores/${store.id}/months?${q(store, from, to)}`),
  );

const metrics = async (store: Store, from: string, to: string) =>
  assertSchema(
    MetricsResponse,
    await get(`/api/v1/stores/${store.id}/metrics?${q(store, from, to)}`),
  );

const energy = async (store: Store, from: string, to: string) =>
  assertSchema(
    EnergyResponse,
    await get(`/api/v1/stores/${store.id}/energy?${q(store, from, to)}`),
  );

const D = Decimal.clone({ precision: 60 });
const sum = (values: ReadonlyArray<string | null>) => {
  const present = values.filter((v): v is string => v !== null);
  return present.length === 0 ? null : present.reduce((s, v) => s.plus(v), new D(0));
};
const text = (d: Decimal | null) => d === null ? null : d.toFixed(4, Decimal.ROUND_HALF_UP);

type Day = typeof MetricsResponse.Type.days[number];
type EnergyDay = typeof EnergyResponse.Type.days[number];

// A span's figures against the daily values of its days: the actual total is the exact sum of the
// days' values (the same in the metrics and the energy read); EBA and savings are summed by the
// service over exact means, so the sum of the days' rounded EBA may differ from them by at most
// half a unit of the 4th decimal per day.
const checkSpan = (
  span: MonthSpan,
  days: ReadonlyArray<Day>,
  energyDays: ReadonlyArray<EnergyDay>,
) => {
  const mine = days.filter((d) => d.business_date >= span.start && d.business_date <= span.end);
  const served = energyDays.filter((d) =>
    d.business_date >= span.start && d.business_date <= span.end
  );
  const s = span.summary;
  assert.equal(s.requested_days, mine.length);
  assert.equal(served.length, mine.length);
  assert.equal(s.actual_kwh, text(sum(mine.map((d) => d.actual_kwh))));
  assert.equal(s.actual_kwh, text(sum(served.map((d) => d.energy_kwh))));
  assert.equal(s.actual_days, mine.filter((d) => d.actual_kwh !== null).length);
  assert.equal(s.eba_days, mine.filter((d) => d.eba_kwh !== null).length);
  // rules.md §7: matched days have the actual and EBA, in a stage where savings count.
  const matched = mine.filter((d) =>
    d.actual_kwh !== null && d.eba_kwh !== null &&
    (d.stage === "TRIAL" || d.stage === "OPERATING")
  );
  assert.equal(s.matched_days, matched.length);
  const eba = sum(matched.map((d) => d.eba_kwh));
  const tolerance = new D("0.00005").times(matched.length).plus("0.00005");
  if (eba === null) {
    assert.equal(s.matched_eba_kwh, null);
    assert.equal(s.aes_kwh, null);
    return;
  }
  assert.ok(eba.minus(s.matched_eba_kwh!).abs().lte(tolerance), `${span.start} EBA`);
  const savings = eba.minus(sum(matched.map((d) => d.actual_kwh))!);
  if (s.aes_kwh === null) {
    // Negative savings have no decimal string (rules.md §1); the baseline was not met.
    assert.ok(savings.lte(tolerance), `${span.start} savings ${savings}`);
  } else {
    assert.ok(savings.minus(s.aes_kwh).abs().lte(tolerance), `${span.start} savings`);
  }
};

Deno.test("months: each month's totals are the sums of its days in the daily reads, beside the same days a year earlier", async () => {
  const earlierStart = yearBefore(start)!;
  const earlierEnd = yearBefore(end)!;
  let matchedMonths = 0;
  for (const store of snapshot.stores) {
    const body = await months(store, start, end);
    assert.equal(body.unit, "kWh");
    assert.equal(body.months.length, 13);
    assert.deepEqual(
      body.months.map((m) => [m.month, m.start, m.end]),
      monthPlan(start, end).months.map((m) => [m.month, m.start, m.end]),
    );
    const now = await metrics(store, start, end);
    const then = await metrics(store, earlierStart, earlierEnd);
    const nowServed = (await energy(store, start, end)).days;
    const thenServed = (await energy(store, earlierStart, earlierEnd)).days;
    for (const row of body.months) {
      checkSpan(row, now.days, nowServed);
      assert.ok(row.year_earlier !== null);
      assert.equal(
        row.year_earlier.month,
        `${Number(row.month!.slice(0, 4)) - 1}${row.month!.slice(4)}`,
      );
      checkSpan(row.year_earlier, then.days, thenServed);
      if (row.summary.matched_days > 0) matchedMonths++;
    }
    // The whole range is the metrics summary of the range, to the last digit; the same a year
    // earlier.
    assert.deepEqual(body.total.summary, now.summary);
    assert.deepEqual(body.total.year_earlier?.summary, then.summary);
    assert.deepEqual([body.total.start, body.total.end], [start, end]);
    assert.deepEqual([body.total.year_earlier?.start, body.total.year_earlier?.end], [
      earlierStart,
      earlierEnd,
    ]);
  }
  assert.ok(matchedMonths >= 6, "the demo has summer months with savings");
});

Deno.test("months: a month's summary is the metrics summary of its days, in summer and cut by the range", async () => {
  const year = end.slice(0, 4);
  for (const store of snapshot.stores.slice(0, 3)) {
    const body = await months(store, `${year}-06-10`, `${year}-09-30`);
    assert.deepEqual(body.months.map((m) => m.month), [
      `${year}-06`,
      `${year}-07`,
      `${year}-08`,
      `${year}-09`,
    ]);
    assert.equal(body.months[0].start, `${year}-06-10`);
    for (const row of body.months) {
      assert.deepEqual(row.summary, (await metrics(store, row.start, row.end)).summary);
      const earlier = row.year_earlier!;
      assert.deepEqual(earlier.summary, (await metrics(store, earlier.start, earlier.end)).summary);
    }
  }
});

Deno.test("month plan: cut months, 29 February a year earlier, the year 0001, the last month there is", () => {
  const plan = monthPlan("2028-01-20", "2028-03-02");
  assert.deepEqual(plan.months.map((m) => [m.month, m.start, m.end]), [
    ["2028-01", "2028-01-20", "2028-01-31"],
    ["2028-02", "2028-02-01", "2028-02-29"],
    ["2028-03", "2028-03-01", "2028-03-02"],
  ]);
  assert.deepEqual(plan.months[1].earlier, {
    month: "2027-02",
    start: "2027-02-01",
    end: "2027-02-28",
  });
  assert.equal(plan.readStart, "2027-01-20");
  assert.equal(plan.total.earlier?.month, null);
  assert.equal(yearBefore("0001-05-01"), null);
  const first = monthPlan("0001-01-01", "0001-02-10");
  assert.equal(first.readStart, "0001-01-01");
  assert.ok(first.months.every((m) => m.earlier === null) && first.total.earlier === null);
  assert.deepEqual(
    monthPlan("9999-12-05", "9999-12-31").months.map((m) => m.month),
    ["9999-12"],
  );
  assert.deepEqual(monthPlan("2026-03-31", "2026-03-31").months.map((m) => m.start), [
    "2026-03-31",
  ]);
});

Deno.test("month plan: the months' year-earlier spans together are the total's, over any leap day", () => {
  const plan = monthPlan("2025-02-01", "2025-03-31");
  assert.deepEqual(plan.months.map((m) => [m.earlier?.start, m.earlier?.end]), [
    ["2024-02-01", "2024-02-29"],
    ["2024-03-01", "2024-03-31"],
  ]);
  assert.deepEqual([plan.total.earlier?.start, plan.total.earlier?.end], [
    "2024-02-01",
    "2024-03-31",
  ]);
  // A day of the year 2024 or 2028 as an index from 2023-01-01, and back.
  const day = (n: number) => addDays("2023-01-01", n);
  FastCheck.assert(
    FastCheck.property(
      FastCheck.integer({ min: 0, max: 6 * 366 }),
      FastCheck.integer({ min: 0, max: 730 }),
      (from, length) => {
        const plan = monthPlan(day(from), day(from + length));
        const total = plan.total.earlier!;
        const spans = plan.months.map((m) => m.earlier!);
        assert.equal(spans[0].start, total.start);
        assert.equal(spans.at(-1)!.end, total.end);
        for (const [i, span] of spans.entries()) {
          assert.ok(span.start <= span.end, `${span.start}..${span.end}`);
          if (i > 0) assert.equal(span.start, addDays(spans[i - 1].end, 1));
        }
      },
    ),
    { numRuns: 500 },
  );
});

Deno.test("months: the year 0001 has no year before it; days without data are counted, not zeroed", async () => {
  const store = snapshot.stores[0];
  const body = await months(store, "0001-01-01", "0001-02-10");
  assert.equal(body.months.length, 2);
  assert.ok(body.months.every((m) => m.year_earlier === null) && body.total.year_earlier === null);
  assert.equal(body.total.summary.requested_days, 41);
  assert.equal(body.total.summary.actual_days, 0);
  assert.equal(body.total.summary.actual_kwh, null);
  // Across the end of the year 0001: the months of 0002 have their year earlier, read whole.
  const across = await months(store, "0001-12-01", "0002-01-31");
  assert.equal(across.total.year_earlier, null);
  assert.equal(across.months[0].year_earlier, null);
  const earlier = across.months[1].year_earlier!;
  assert.deepEqual([earlier.start, earlier.end], ["0001-01-01", "0001-01-31"]);
  assert.equal(earlier.summary.requested_days, 31);
  assert.equal(earlier.summary.actual_days, 0);
});

Deno.test("months: refusals of the credential, the permission, the store, the scope and the range", async () => {
  const [a, b] = snapshot.stores;
  const path = (store: Store, query: string) => `/api/v1/stores/${store.id}/months?${query}`;
  const ok = path(a, q(a, start, end));
  assertErrorBody(await app.call("GET", ok), 401, "MISSING_CREDENTIAL");
  assertErrorBody(await app.call("GET", ok, { key: "esk_not-a-key" }), 401);
  const writeOnly = await app.key(["write"]);
  assertErrorBody(await app.call("GET", ok, { key: writeOnly.key }), 403, "PERMISSION_MISSING");
  const scoped = await app.key(["read"], { stores: [b.id] });
  assertErrorBody(await app.call("GET", ok, { key: scoped.key }), 403, "STORE_FORBIDDEN");
  assert.equal((await app.call("GET", path(b, q(b, start, end)), { key: scoped.key })).status, 200);
  assertErrorBody(
    await app.call("GET", `/api/v1/stores/999999/months?${q(a, start, end)}`, { key }),
    404,
    "NOT_FOUND",
  );
  assertErrorBody(await app.call("GET", path(a, q(b, start, end)), { key }), 400, "INVALID_SCOPE");
  assertErrorBody(await app.call("GET", path(a, q(a, end, start)), { key }), 400, "INVALID_RANGE");
  // 366 days are answered (above); 367 are not.
  assertErrorBody(
    await app.call("GET", path(a, q(a, addDays(start, -1), end)), { key }),
    400,
    "RANGE_TOO_LONG",
  );
  for (
    const query of [
      `scope_id=${a.scope.id}&start=${start}`,
      `scope_id=${a.scope.id}&start=2026-02-30&end=${end}`,
      `scope_id=${a.scope.id}&start=2026-01&end=${end}`,
      `start=${start}&end=${end}`,
      `${q(a, start, end)}&known_at=yesterday`,
    ]
  ) {
    assertErrorBody(await app.call("GET", path(a, query), { key }), 400, "INVALID_REQUEST");
  }
});

Deno.test("months: a conditional read; a commit in the year before changes it; a data token reads the earlier answer", async () => {
  const writer = await app.key(["read", "write"]);
  const store = snapshot.stores[1];
  const from = `${end.slice(0, 4)}-01-01`;
  const path = `/api/v1/stores/${store.id}/months?${q(store, from, end)}`;
  const first = await app.call("GET", path, { key });
  assert.equal(first.status, 200);
  const etag = first.headers.get("etag");
  const token = first.headers.get("data-token");
  assert.ok(etag !== null && token !== null);
  const again = await app.call("GET", path, { key, headers: { "if-none-match": etag } });
  assert.equal(again.status, 304);
  assert.deepEqual((await app.call("GET", path, { key })).body, first.body);

  // A day of the year before the range: only its year-earlier figures change.
  const listed = (await app.call("GET", "/api/v1/stores", { key })).body.stores
    .find((s: { id: number }) => s.id === store.id);
  const day = yearBefore(`${end.slice(0, 4)}-03-10`)!;
  await commitDay(app, writer.key, listed, day, "1234.5678");
  const after = await app.call("GET", path, { key, headers: { "if-none-match": etag } });
  assert.equal(after.status, 200);
  assert.notEqual(after.headers.get("etag"), etag);
  const march = (body: Months) => body.months.find((m) => m.month === `${end.slice(0, 4)}-03`)!;
  assert.deepEqual(march(after.body).summary, march(first.body).summary);
  assert.notDeepEqual(march(after.body).year_earlier, march(first.body).year_earlier);
  const served = await energy(store, day, day);
  assert.equal(served.days[0].energy_kwh, "1234.5678");
  assert.equal(
    march(after.body).year_earlier!.summary.actual_kwh,
    text(
      sum(
        (await energy(store, `${day.slice(0, 7)}-01`, `${day.slice(0, 7)}-31`)).days.map((d) =>
          d.energy_kwh
        ),
      ),
    ),
  );

  const then = await app.call("GET", `${path}&data_token=${encodeURIComponent(token)}`, { key });
  assert.equal(then.status, 200);
  assert.equal(then.headers.get("etag"), null);
  assert.deepEqual(then.body, first.body);
  assertErrorBody(
    await app.call(
      "GET",
      `${path}&data_token=${encodeURIComponent(token)}&known_at=${end}T00:00:00Z`,
      {
        key,
      },
    ),
    400,
    "INVALID_REQUEST",
  );
});

Deno.test({
  name: "months: close",
  sanitizeOps: false,
  sanitizeResources: false,
  fn: () => app.close(),
});
