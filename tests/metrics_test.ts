// Targets, metrics and periods over HTTP, checked against the loaded snapshot and each other.
import assert from "node:assert/strict";
import { Decimal } from "decimal.js";
import { Effect } from "effect";
import { MetricsResponse, PeriodOverview, TargetsResponse } from "../src/domain/metrics.ts";
import { addDays } from "../src/domain/range.ts";
import { generateSnapshot } from "../src/seed/generate.ts";
import { loadSnapshot } from "../src/seed/load.ts";
import { assertErrorBody, assertSchema, makeTestApp } from "./helpers.ts";

const snapshot = generateSnapshot({ stores: 8 });
const app = await makeTestApp((db) =>
  db.run(Effect.asVoid(loadSnapshot(snapshot, { reset: false })))
);
const { key } = await app.key(["read"]);
const end = snapshot.dataset.end;

const get = async (path: string) => {
  const answer = await app.call("GET", path, { key });
  assert.equal(answer.status, 200, JSON.stringify(answer.body));
  return answer.body;
};
const q = (store: { id: number; scope: { id: number } }, start: string, to: string) =>
  `scope_id=${store.scope.id}&start=${start}&end=${to}`;

const D = Decimal.clone({ precision: 60 });
const half4 = (d: Decimal) => d.toFixed(4, Decimal.ROUND_HALF_UP);

Deno.test("targets: TES-180/210 from the period's device cost, never from tes_kwh; gaps are NO_EFFECTIVE_TARGET", async () => {
  let checked = 0;
  for (const store of snapshot.stores) {
    const start = addDays(end, -365);
    const body = assertSchema(
      TargetsResponse,
      await get(`/api/v1/stores/${store.id}/targets?${q(store, start, end)}`),
    );
    assert.equal(body.days.length, 366);
    assert.equal(body.unit, "kWh/日");
    const periods = snapshot.target_periods.filter((p) => p.scope_id === store.scope.id);
    for (const day of body.days) {
      const period = periods.find((p) =>
        p.valid_from <= day.business_date &&
        (p.valid_to === null || day.business_date <= p.valid_to)
      );
      if (period === undefined) {
        assert.equal(day.status, "NO_EFFECTIVE_TARGET");
        for (
          const v of [
            day.tes_kwh,
            day.tes_180_kwh,
            day.tes_210_kwh,
            day.tev_kwh,
            day.target_period_id,
          ]
        ) {
          assert.equal(v, null);
        }
        continue;
      }
      assert.equal(day.status, "AVAILABLE");
      assert.equal(day.target_period_id, period.id);
      assert.equal(day.tes_kwh, period.tes_kwh === null ? null : half4(new D(period.tes_kwh)));
      if (period.items.length > 0) {
        const cost = period.items.reduce(
          (s, i) => s.plus(new D(i.unit_price).times(i.priced_quantity)),
          new D(0),
        );
        assert.equal(day.tes_180_kwh, half4(cost.div(180)));
        assert.equal(day.tes_210_kwh, half4(cost.div(210)));
        checked++;
      }
      assert.equal(day.evaluation_status, "NOT_EVALUATED");
    }
    assert.equal(body.summary.available_days + body.summary.missing_days, 366);
  }
  assert.ok(checked > 100, "the demo has priced target periods");
});

Deno.test("targets: TEV is the latest valid positive observation, with its date, never back-filled", async () => {
  for (const store of snapshot.stores) {
    const start = addDays(end, -365);
    const body = (await get(
      `/api/v1/stores/${store.id}/targets?${q(store, start, end)}`,
    )) as typeof TargetsResponse.Type;
    const observations = snapshot.tev_observations
      .filter((o) =>
        o.scope_id === store.scope.id && o.is_valid && o.value_kwh !== null &&
        new Decimal(o.value_kwh).gt(0)
      )
      .sort((a, b) => a.observed_date.localeCompare(b.observed_date));
    for (const day of body.days) {
      if (day.status === "NO_EFFECTIVE_TARGET") continue;
      const latest = observations.filter((o) => o.observed_date <= day.business_date).at(-1);
      assert.equal(day.tev_latest_observed_date, latest?.observed_date ?? null, day.business_date);
      assert.equal(day.tev_kwh, latest ? half4(new Decimal(latest.value_kwh!)) : null);
    }
  }
});

Deno.test("metrics: strict schema, one row per day, rule version and policies", async () => {
  const store = snapshot.stores[0];
  const body = assertSchema(
    MetricsResponse,
    await get(`/api/v1/stores/${store.id}/metrics?${q(store, addDays(end, -365), end)}`),
  );
  assert.equal(body.days.length, 366);
  assert.equal(body.rule_version, "esm-2026.11");
  assert.equal(body.baseline_policy, "SUMMER_ONLY");
  assert.equal(body.tev_warning_ratio, "1.2");
  assert.deepEqual(body.availability.map((a) => a.metric), [
    "actual",
    "eba",
    "aes",
    "aer",
    "tes",
    "tes_180",
    "tes_210",
    "tev",
  ]);
  assert.ok(body.notes.length > 0);
});

Deno.test("metrics: the provisional last day keeps its energy but has no pass or fail", async () => {
  for (const energy of snapshot.energy.filter((e) => e.provisional)) {
    const store = snapshot.stores.find((s) => s.id === energy.store_id)!;
    const date = energy.provisional!.date;
    const body = await get(`/api/v1/stores/${store.id}/metrics?${q(store, date, date)}`);
    const day = body.days[0];
    assert.equal(day.provisional, 1);
    assert.match(day.provisional_at, /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}$/);
    assert.notEqual(day.actual_kwh, null);
    for (const flag of ["eba_pass", "tes_pass", "tes_180_pass", "tes_210_pass", "tev_pass"]) {
      assert.equal(day[flag], null, flag);
    }
    assert.equal(body.summary.actual_kwh, day.actual_kwh, "counted in numeric totals");
    assert.equal(body.summary.eba_pass, null);
  }
});

Deno.test("metrics: summer days of an operating store have a baseline from the prior year", async () => {
  let evaluated = 0;
  for (const store of snapshot.stores) {
    const body = await get(
      `/api/v1/stores/${store.id}/metrics?${q(store, "2026-06-01", "2026-09-30")}`,
    );
    for (const day of body.days) {
      if (day.eba_kwh !== null) {
        assert.match(day.baseline_reference, /^BASELINE 2025-(06|07|08|09) mean of \d+ days$/);
        assert.equal(day.baseline_reference.slice(14, 16), day.business_date.slice(5, 7));
      }
      if (day.evaluation_status === "EVALUATED") {
        evaluated++;
        assert.ok(day.stage === "TRIAL" || day.stage === "OPERATING");
      }
    }
    const winter = await get(
      `/api/v1/stores/${store.id}/metrics?${q(store, "2026-01-01", "2026-01-31")}`,
    );
    assert.ok(
      winter.days.every((d: { eba_kwh: unknown; baseline_status: string }) =>
        d.eba_kwh === null && d.baseline_status === "OUT_OF_SEASON"
      ),
    );
  }
  assert.ok(evaluated > 0);
});

Deno.test("periods: each summary equals the metrics summary of the same range", async () => {
  for (const asOf of [end, "2026-08-15", "2026-01-10"]) {
    for (const store of snapshot.stores.slice(0, 4)) {
      const body = assertSchema(
        PeriodOverview,
        await get(`/api/v1/stores/${store.id}/periods?scope_id=${store.scope.id}&as_of=${asOf}`),
      );
      assert.deepEqual(body.periods.map((p) => p.key), ["day", "week", "month", "year"]);
      const starts = [asOf, addDays(asOf, -6), addDays(asOf, -29), `${asOf.slice(0, 4)}-01-01`];
      for (const [i, period] of body.periods.entries()) {
        assert.equal(period.start, starts[i]);
        assert.equal(period.end, asOf);
        const metrics = await get(
          `/api/v1/stores/${store.id}/metrics?${q(store, period.start, asOf)}`,
        );
        assert.deepEqual(period.summary, metrics.summary, `${store.id} ${asOf} ${period.key}`);
      }
    }
  }
});

Deno.test("metrics and targets refuse a foreign scope, a reversed range and over two years", async () => {
  const [a, b] = snapshot.stores;
  for (const name of ["metrics", "targets"]) {
    assertErrorBody(
      await app.call("GET", `/api/v1/stores/${a.id}/${name}?${q(b, "2026-01-01", "2026-01-02")}`, {
        key,
      }),
      400,
      "INVALID_SCOPE",
    );
    assertErrorBody(
      await app.call("GET", `/api/v1/stores/${a.id}/${name}?${q(a, "2026-01-02", "2026-01-01")}`, {
        key,
      }),
      400,
      "INVALID_RANGE",
    );
    assertErrorBody(
      await app.call("GET", `/api/v1/stores/${a.id}/${name}?${q(a, "2024-01-01", "2026-01-01")}`, {
        key,
      }),
      400,
      "RANGE_TOO_LONG",
    );
  }
  assertErrorBody(
    await app.call(
      "GET",
      `/api/v1/stores/${a.id}/periods?scope_id=${b.scope.id}&as_of=2026-01-01`,
      { key },
    ),
    400,
    "INVALID_SCOPE",
  );
});

Deno.test({
  name: "close the test app",
  fn: () => app.close(),
  sanitizeOps: false,
  sanitizeResources: false,
});
