// Pure metrics engine: daily rules, gates, reasons, rounding, summaries and property tests (rules.md §1-§7).
import assert from "node:assert/strict";
import { Decimal } from "decimal.js";
import { FastCheck as fc, Schema } from "effect";
import {
  Availability,
  MetricDay,
  MetricsResponse,
  MetricSummary,
  TargetDay,
  TargetsResponse,
} from "../src/domain/metrics.ts";
import { exact, exactOut, exactPercentOut, fmt } from "../src/metrics/decimal.ts";
import {
  availabilityOf,
  type BaselineMonth,
  computeDays,
  computeMetrics,
  computeTargets,
  type DayInput,
  type MetricDayOut,
  type MetricKey,
  type MetricsResult,
  RULE_VERSION,
  type Stage,
  summarize,
  type TargetInput,
} from "../src/metrics/engine.ts";

// An independent exact reference for the folds, deliberately not the engine's clone.
const X = Decimal.clone({ precision: 100, rounding: Decimal.ROUND_HALF_UP });
const x4 = (d: InstanceType<typeof X>) => d.toFixed(4, Decimal.ROUND_HALF_UP);

const strict = { onExcessProperty: "error" } as const;
const decodeDay = Schema.decodeUnknownSync(MetricDay, strict);
const decodeSummary = Schema.decodeUnknownSync(MetricSummary, strict);
const decodeAvailability = Schema.decodeUnknownSync(Availability, strict);
const decodeResponse = Schema.decodeUnknownSync(MetricsResponse, strict);
const decodeTargetDay = Schema.decodeUnknownSync(TargetDay, strict);
const decodeTargets = Schema.decodeUnknownSync(TargetsResponse, strict);

const addDays = (date: string, n: number) => {
  const [y, m, d] = date.split("-").map(Number);
  return new Date(Date.UTC(y, m - 1, d) + n * 86_400_000).toISOString().slice(0, 10);
};

const TARGET: TargetInput = {
  periodId: 7,
  tesKwh: "15",
  deviceCost: "3600", // TES-180 = 20, TES-210 = 17.142857...
  ratio: "1.2",
  sourceKind: "LEGACY_PERIOD",
  sourceReference: "period 7",
};
const TEV = { value: "90", observedDate: "2026-06-01" }; // threshold 108
const BASELINE: ReadonlyArray<BaselineMonth> = [
  { year: 2025, month: 7, days: 31, sum: "3100" }, // EBA 100 for July 2026
  { year: 2025, month: 8, days: 20, sum: "1000" }, // EBA 50 for August 2026
];

const day = (over: Partial<DayInput> = {}): DayInput => ({
  date: "2026-07-10",
  actual: "80",
  provisional: 0,
  provisionalAt: null,
  stage: "OPERATING",
  target: TARGET,
  tev: TEV,
  ...over,
});

const validate = (r: MetricsResult) => {
  r.days.forEach((d) => decodeDay(d));
  decodeSummary(r.summary);
  r.availability.forEach((a) => decodeAvailability(a));
  decodeResponse({
    store_id: 1,
    scope_id: 1,
    unit: "kWh",
    timezone: "Asia/Shanghai",
    start: r.days[0]?.business_date ?? "2026-07-01",
    end: r.days.at(-1)?.business_date ?? "2026-07-01",
    baseline_policy: "SUMMER_ONLY",
    baseline_usage: "LOCAL_TRIAL",
    rule_version: RULE_VERSION,
    tev_warning_ratio: "1.2",
    summary: r.summary,
    availability: r.availability,
    days: r.days,
    notes: r.notes,
  });
  return r;
};

const run = (days: ReadonlyArray<DayInput>, baseline: ReadonlyArray<BaselineMonth> = BASELINE) =>
  validate(computeMetrics(days, baseline));
const one = (over: Partial<DayInput> = {}, baseline?: ReadonlyArray<BaselineMonth>) =>
  run([day(over)], baseline).days[0];
const reasons = (r: MetricsResult, metric: MetricKey) =>
  r.availability.find((a) => a.metric === metric)!.reasons;
const reasonsOne = (
  over: Partial<DayInput>,
  metric: MetricKey,
  baseline?: ReadonlyArray<BaselineMonth>,
) => reasons(run([day(over)], baseline), metric);
const flags = (
  d: MetricDayOut,
) => [d.eba_pass, d.tes_pass, d.tes_180_pass, d.tes_210_pass, d.tev_pass];
const NO_FLAGS = [null, null, null, null, null];

Deno.test("rule version", () => {
  assert.equal(RULE_VERSION, "esm-2026.11");
});

Deno.test("§6 every field of an evaluated day", () => {
  assert.deepEqual(one(), {
    business_date: "2026-07-10",
    actual_kwh: "80.0000",
    eba_kwh: "100.0000",
    aes_kwh: "20.0000",
    aer_percent: "20.0000",
    tes_kwh: "15.0000",
    tes_180_kwh: "20.0000",
    tes_210_kwh: "17.1429",
    tev_kwh: "90.0000",
    tes_threshold_kwh: "15.0000",
    tes_180_threshold_kwh: "20.0000",
    tes_210_threshold_kwh: "17.1429",
    tev_threshold_kwh: "108.0000",
    effective_tev_warning_ratio: "1.2000",
    eba_pass: true,
    tes_pass: true,
    tes_180_pass: true, // 20 >= 20: the boundary passes
    tes_210_pass: true,
    tev_pass: true,
    provisional: 0,
    provisional_at: null,
    tev_latest_observed_date: "2026-06-01",
    baseline_status: "AVAILABLE",
    baseline_reference: "BASELINE 2025-07 mean of 31 days",
    stage: "OPERATING",
    evaluation_status: "EVALUATED",
  });
});

Deno.test("§6 an all-available evaluated day has empty reasons everywhere", () => {
  const r = run([day()]);
  for (const a of r.availability) {
    assert.equal(a.status, "AVAILABLE", a.metric);
    assert.deepEqual(a.reasons, [], a.metric);
  }
});

Deno.test("§6 aes and aer: E - A and (E - A) / E x 100", () => {
  const d = one({ actual: "66.6667" });
  assert.equal(d.aes_kwh, "33.3333");
  assert.equal(d.aer_percent, "33.3333");
  const z = one({ actual: "100" });
  assert.equal(z.aes_kwh, "0.0000");
  assert.equal(z.aer_percent, "0.0000");
  assert.equal(z.eba_pass, true);
  // EBA 300 / 9 = 33.3333..., A = 0: aer is exactly 100
  const b = one({ actual: "0" }, [{ year: 2025, month: 7, days: 18, sum: "600" }]);
  assert.equal(b.eba_kwh, "33.3333");
  assert.equal(b.aes_kwh, "33.3333");
  assert.equal(b.aer_percent, "100.0000");
  // aer is computed from the exact EBA, not the rounded one: (33.333.. - 10) / 33.333.. = 70 %
  assert.equal(
    one({ actual: "10" }, [{ year: 2025, month: 7, days: 18, sum: "600" }]).aer_percent,
    "70.0000",
  );
});

Deno.test("§6 each TES is judged on its own against its own value", () => {
  // savings 18: TES 15 passes, TES-180 (20) fails, TES-210 (17.1429) passes
  const d = one({ actual: "82" });
  assert.deepEqual([d.tes_pass, d.tes_180_pass, d.tes_210_pass], [true, false, true]);
  // savings 17.1428 < 17.142857...: TES-210 fails on the exact value although it prints as 17.1429
  const e = one({ actual: "82.8572" });
  assert.deepEqual([e.tes_pass, e.tes_180_pass, e.tes_210_pass], [true, false, false]);
  const f = one({ actual: "82.8571" });
  assert.equal(f.tes_210_pass, true);
  // savings 5: every target fails, eba still passes
  const g = one({ actual: "95" });
  assert.deepEqual(flags(g), [true, false, false, false, true]);
});

Deno.test("§6 the TES threshold is the TES itself, never min(TES, EBA)", () => {
  // EBA 100, TES 150, A 0: savings 100 >= min(150, 100) would pass; against 150 it fails
  const t: TargetInput = { ...TARGET, tesKwh: "150", deviceCost: "27000" }; // TES-180 = 150
  const d = one({ actual: "0", target: t });
  assert.equal(d.tes_threshold_kwh, "150.0000");
  assert.equal(d.tes_180_threshold_kwh, "150.0000");
  assert.equal(d.tes_210_threshold_kwh, "128.5714");
  assert.equal(d.tes_pass, false);
  assert.equal(d.tes_180_pass, false);
  assert.equal(d.tes_210_pass, false);
  // thresholds are shown even on a day that is not evaluated (winter, no EBA)
  const w = one({ date: "2026-01-10", target: t });
  assert.equal(w.tes_threshold_kwh, "150.0000");
  assert.equal(w.tes_pass, null);
});

Deno.test("§5 tes_kwh never feeds TES-180/210 and they never stand in for each other", () => {
  const noItems = one({ target: { ...TARGET, tesKwh: "999", deviceCost: null } });
  assert.equal(noItems.tes_kwh, "999.0000");
  assert.equal(noItems.tes_180_kwh, null);
  assert.equal(noItems.tes_210_kwh, null);
  assert.equal(noItems.tes_180_threshold_kwh, null);
  assert.deepEqual(flags(noItems), [true, false, null, null, true]);
  assert.deepEqual(reasonsOne({ target: { ...TARGET, deviceCost: null } }, "tes_180"), [
    "NO_PRICED_ITEMS",
  ]);
  assert.deepEqual(reasonsOne({ target: { ...TARGET, deviceCost: null } }, "tes_210"), [
    "NO_PRICED_ITEMS",
  ]);
  assert.deepEqual(reasonsOne({ target: { ...TARGET, deviceCost: null } }, "tes"), []);

  const noLegacy = one({ target: { ...TARGET, tesKwh: null } });
  assert.equal(noLegacy.tes_kwh, null);
  assert.equal(noLegacy.tes_threshold_kwh, null);
  assert.equal(noLegacy.tes_pass, null);
  assert.equal(noLegacy.tes_180_kwh, "20.0000");
  assert.equal(noLegacy.tes_210_kwh, "17.1429");
  assert.deepEqual(reasonsOne({ target: { ...TARGET, tesKwh: null } }, "tes"), [
    "NO_EFFECTIVE_TARGET",
  ]);

  // a different legacy value changes nothing about TES-180/210
  const a = one({ target: { ...TARGET, tesKwh: "1" } });
  const b = one({ target: { ...TARGET, tesKwh: "500" } });
  assert.deepEqual(
    [a.tes_180_kwh, a.tes_210_kwh, a.tes_180_pass, a.tes_210_pass],
    [b.tes_180_kwh, b.tes_210_kwh, b.tes_180_pass, b.tes_210_pass],
  );
  assert.notEqual(a.tes_pass, b.tes_pass);
});

Deno.test("§6 TEV threshold is TEV x the period's ratio", () => {
  const d = one({
    target: { ...TARGET, ratio: "1.15" },
    tev: { value: "80.1234", observedDate: "2026-07-01" },
  });
  assert.equal(d.tev_threshold_kwh, "92.1419"); // 92.14191
  assert.equal(d.effective_tev_warning_ratio, "1.1500");
  assert.equal(d.tev_pass, true);
  assert.equal(one({ actual: "108" }).tev_pass, true); // A <= threshold
  assert.equal(one({ actual: "108.0001" }).tev_pass, false);
  // tev does not need EBA
  const w = one({ date: "2026-01-10", tev: { value: "90", observedDate: "2026-01-01" } });
  assert.deepEqual(flags(w), [null, null, null, null, true]);
  assert.equal(w.evaluation_status, "EVALUATED");
});

Deno.test("§5 TEV is stale more than 180 days after its observation", () => {
  const date = "2026-07-10";
  const at180 = one({ date, tev: { value: "90", observedDate: addDays(date, -180) } });
  assert.equal(at180.tev_pass, true);
  assert.deepEqual(
    reasonsOne({ date, tev: { value: "90", observedDate: addDays(date, -180) } }, "tev"),
    [],
  );
  const observed = addDays(date, -181);
  const at181 = one({ date, tev: { value: "90", observedDate: observed } });
  assert.equal(at181.tev_pass, null);
  assert.equal(at181.tev_kwh, "90.0000");
  assert.equal(at181.tev_latest_observed_date, observed);
  assert.equal(at181.tev_threshold_kwh, "108.0000");
  assert.equal(at181.eba_pass, true);
  assert.equal(at181.evaluation_status, "EVALUATED");
  assert.deepEqual(reasonsOne({ date, tev: { value: "90", observedDate: observed } }, "tev"), [
    "TEV_STALE",
  ]);
  // stale TEV alone: nothing is evaluated
  const winter = one({ date: "2026-12-31", tev: { value: "90", observedDate: "2026-06-01" } });
  assert.deepEqual(flags(winter), NO_FLAGS);
  assert.equal(winter.evaluation_status, "NOT_EVALUATED");
});

Deno.test("§5 a run of days sharing one period and one TEV: each day alone would give the same values", () => {
  // Days before the observation, then up to 200 days after it (stale from the 181st), the period
  // changing once, as one store's days come from the inputs (shared target and TEV objects).
  const observedDate = "2026-03-01";
  const tev = { value: "90", observedDate };
  const other: TargetInput = { ...TARGET, periodId: 8, tesKwh: "12" };
  const days = Array.from({ length: 215 }, (_, i) => {
    const date = addDays(observedDate, i - 14);
    return day({ date, target: date < "2026-06-15" ? TARGET : other, tev });
  });
  const together = run(days).days;
  days.forEach((d, i) => assert.deepEqual(together[i], run([d]).days[0], d.date));
  const staleFrom = together.findIndex((d) => d.tev_kwh !== null && d.tev_pass === null);
  assert.equal(together[staleFrom].business_date, addDays(observedDate, 181));
  assert.equal(together[0].tev_kwh, null, "not before its observation");
});

Deno.test("§5 TEV is null before its first observation and never back-filled", () => {
  const none = one({ tev: null });
  assert.deepEqual([none.tev_kwh, none.tev_latest_observed_date, none.tev_threshold_kwh], [
    null,
    null,
    null,
  ]);
  assert.equal(none.tev_pass, null);
  assert.equal(none.effective_tev_warning_ratio, "1.2000");
  assert.deepEqual(reasonsOne({ tev: null }, "tev"), ["NO_TEV_OBSERVATION"]);
  const future = one({ tev: { value: "90", observedDate: "2026-07-11" } });
  assert.equal(future.tev_kwh, null);
  assert.equal(future.tev_pass, null);
  const sameDay = one({ tev: { value: "90", observedDate: "2026-07-10" } });
  assert.equal(sameDay.tev_kwh, "90.0000");
});

Deno.test("§5 no effective target: every target value null, TEV included; EBA still judged", () => {
  const d = one({ target: null });
  for (
    const k of [
      "tes_kwh",
      "tes_180_kwh",
      "tes_210_kwh",
      "tev_kwh",
      "tes_threshold_kwh",
      "tes_180_threshold_kwh",
      "tes_210_threshold_kwh",
      "tev_threshold_kwh",
      "effective_tev_warning_ratio",
      "tev_latest_observed_date",
    ] as const
  ) assert.equal(d[k], null, k);
  assert.deepEqual(flags(d), [true, null, null, null, null]);
  assert.equal(d.aes_kwh, "20.0000");
  const r = run([day({ target: null })]);
  for (const m of ["tes", "tes_180", "tes_210", "tev"] as const) {
    assert.deepEqual(reasons(r, m), ["NO_EFFECTIVE_TARGET"], m);
  }
});

Deno.test("§6 gate: no actual energy", () => {
  const d = one({ actual: null });
  assert.equal(d.actual_kwh, null);
  assert.equal(d.eba_kwh, "100.0000");
  assert.equal(d.aes_kwh, null);
  assert.equal(d.aer_percent, null);
  assert.equal(d.tes_kwh, "15.0000");
  assert.deepEqual(flags(d), NO_FLAGS);
  assert.equal(d.evaluation_status, "NOT_EVALUATED");
  const r = run([day({ actual: null })]);
  for (const m of ["actual", "eba", "aes", "aer", "tes", "tes_180", "tes_210", "tev"] as const) {
    assert.deepEqual(reasons(r, m), ["NO_ENERGY_DATA"], m);
  }
  assert.equal(r.availability.find((a) => a.metric === "actual")!.status, "UNAVAILABLE");
  assert.equal(r.availability.find((a) => a.metric === "eba")!.status, "AVAILABLE");
});

Deno.test("§6 gate: a provisional day keeps its numbers but never passes or fails", () => {
  const d = one({ provisional: 1, provisionalAt: "2026-07-10 14:30" });
  assert.equal(d.provisional, 1);
  assert.equal(d.provisional_at, "2026-07-10 14:30");
  assert.equal(d.actual_kwh, "80.0000");
  assert.equal(d.aes_kwh, "20.0000");
  assert.equal(d.aer_percent, "20.0000");
  assert.equal(d.tev_threshold_kwh, "108.0000");
  assert.deepEqual(flags(d), NO_FLAGS);
  assert.equal(d.evaluation_status, "NOT_EVALUATED");
  const r = run([day({ provisional: 1, provisionalAt: "2026-07-10 14:30" })]);
  for (const m of ["eba", "tes", "tes_180", "tes_210", "tev"] as const) {
    assert.deepEqual(reasons(r, m), ["PROVISIONAL_EXCLUDED"], m);
  }
  for (const m of ["actual", "aes", "aer"] as const) assert.deepEqual(reasons(r, m), [], m);
  assert.ok(r.availability.every((a) => a.status === "AVAILABLE"));
  // a failing provisional day does not fail either
  assert.deepEqual(
    flags(one({ actual: "500", provisional: 1, provisionalAt: "2026-07-10 09:00" })),
    NO_FLAGS,
  );
  // provisional_at is null on a settled day whatever the input says
  assert.equal(one({ provisional: 0, provisionalAt: "2026-07-10 14:30" }).provisional_at, null);
});

Deno.test("§3/§6 gate: only TRIAL and OPERATING are evaluated", () => {
  const stages: Array<Stage | null> = [
    "BASELINE",
    "INSTALLING",
    "TRIAL",
    "OPERATING",
    "SUSPENDED",
    "EXITED",
    null,
  ];
  for (const stage of stages) {
    const d = one({ stage });
    assert.equal(d.stage, stage);
    assert.equal(d.eba_kwh, "100.0000");
    assert.equal(d.tes_kwh, "15.0000");
    const evaluated = stage === "TRIAL" || stage === "OPERATING";
    assert.deepEqual(
      flags(d),
      evaluated ? [true, true, true, true, true] : NO_FLAGS,
      String(stage),
    );
    assert.equal(d.aes_kwh, evaluated ? "20.0000" : null);
    assert.equal(d.aer_percent, evaluated ? "20.0000" : null);
    assert.equal(d.evaluation_status, evaluated ? "EVALUATED" : "NOT_EVALUATED");
    const code = stage === null ? ["STAGE_UNKNOWN"] : evaluated ? [] : ["STAGE_NOT_EVALUATED"];
    const r = run([day({ stage })]);
    for (const m of ["eba", "aes", "aer", "tes", "tes_180", "tes_210", "tev"] as const) {
      assert.deepEqual(reasons(r, m), code, `${stage} ${m}`);
    }
    assert.deepEqual(reasons(r, "actual"), []);
  }
});

Deno.test("§4 summer window is 06-01..09-30 inclusive", () => {
  const base: ReadonlyArray<BaselineMonth> = [5, 6, 9, 10].map((month) => ({
    year: 2025,
    month,
    days: 30,
    sum: "300",
  }));
  const edges = [
    ["2026-05-31", false],
    ["2026-06-01", true],
    ["2026-09-30", true],
    ["2026-10-01", false],
  ] as const;
  const tev = { value: "90", observedDate: "2026-05-01" };
  for (const [date, inSeason] of edges) {
    const d = one({ date, tev }, base);
    assert.equal(d.eba_kwh, inSeason ? "10.0000" : null, date);
    assert.equal(d.baseline_status, inSeason ? "AVAILABLE" : "OUT_OF_SEASON", date);
    assert.equal(
      d.baseline_reference,
      inSeason ? `BASELINE 2025-${date.slice(5, 7)} mean of 30 days` : null,
    );
    if (!inSeason) {
      assert.equal(d.aes_kwh, null);
      assert.deepEqual([d.eba_pass, d.tes_pass, d.tes_180_pass, d.tes_210_pass], [
        null,
        null,
        null,
        null,
      ]);
      assert.equal(d.tev_pass, true);
      for (const m of ["eba", "aes", "aer", "tes", "tes_180", "tes_210"] as const) {
        assert.deepEqual(reasonsOne({ date, tev }, m, base), ["OUT_OF_SEASON"], m);
      }
      assert.deepEqual(reasonsOne({ date, tev }, "tev", base), []);
    }
  }
});

Deno.test("§4 EBA month: most recent earlier year with at least 15 qualifying days", () => {
  const base: ReadonlyArray<BaselineMonth> = [
    { year: 2022, month: 7, days: 31, sum: "9999" },
    { year: 2023, month: 7, days: 15, sum: "150" }, // exactly 15 qualifies: EBA 10
    { year: 2024, month: 7, days: 14, sum: "1400" }, // 14 days: skipped
    { year: 2025, month: 8, days: 31, sum: "3100" }, // another month
    { year: 2026, month: 7, days: 31, sum: "31" }, // same year: never used
    { year: 2027, month: 7, days: 31, sum: "31" }, // later year: never used
  ];
  const d = one({ date: "2026-07-10", actual: "4" }, base);
  assert.equal(d.eba_kwh, "10.0000");
  assert.equal(d.baseline_reference, "BASELINE 2023-07 mean of 15 days");
  assert.equal(d.baseline_status, "AVAILABLE");
  assert.equal(
    one({ date: "2028-07-10" }, base).baseline_reference,
    "BASELINE 2027-07 mean of 31 days",
  );
  const none = one({ date: "2026-06-10" }, base);
  assert.equal(none.eba_kwh, null);
  assert.equal(none.baseline_status, "NO_BASELINE_DATA");
  assert.equal(none.baseline_reference, null);
  assert.deepEqual(flags(none), [null, null, null, null, true]);
  assert.deepEqual(reasonsOne({ date: "2026-06-10" }, "eba", base), ["NO_BASELINE_DATA"]);
  assert.deepEqual(reasonsOne({ date: "2026-06-10" }, "aes", base), ["NO_BASELINE_DATA"]);
  assert.equal(
    one({ date: "2026-07-10" }, [{ year: 2025, month: 7, days: 14, sum: "1" }]).baseline_status,
    "NO_BASELINE_DATA",
  );
  assert.equal(one({ date: "2026-07-10" }, []).baseline_status, "NO_BASELINE_DATA");
  // the mean is exact: 100 / 30 = 3.3333..., 200 / 30 = 6.6667
  assert.equal(one({}, [{ year: 2025, month: 7, days: 30, sum: "100" }]).eba_kwh, "3.3333");
  assert.equal(one({}, [{ year: 2025, month: 7, days: 30, sum: "200" }]).eba_kwh, "6.6667");
});

Deno.test("§1 half-up rounding at the 5th decimal, always 4 decimals", () => {
  const D = Decimal.clone({ precision: 60 });
  const cases: Array<[string, string]> = [
    ["0.00005", "0.0001"],
    ["0.00004", "0.0000"],
    ["0.000049999999", "0.0000"],
    ["12.34565", "12.3457"],
    ["12.34564", "12.3456"],
    ["2.5", "2.5000"],
    ["12.5", "12.5000"],
    ["0", "0.0000"],
    ["99999.99995", "100000.0000"],
  ];
  for (const [input, out] of cases) assert.equal(fmt(new D(input)), out, input);
  assert.equal(fmt(new D(1).div(3)), "0.3333");
  assert.equal(fmt(new D(2).div(3)), "0.6667");
  assert.equal(fmt(new D("-0.0001")), null);
  assert.equal(fmt(null), null);
  // exact quantities are rounded by an exact remainder test
  const outCases: Array<[string, string | null]> = [
    ["0.00005", "0.0001"],
    ["0.00004999", "0.0000"],
    ["123456789.12345", "123456789.1235"],
    ["0", "0.0000"],
    ["7", "7.0000"],
    ["-0.00001", null],
  ];
  for (const [input, expected] of outCases) assert.equal(exactOut(exact(input)), expected, input);
  assert.equal(exactPercentOut(exact("1"), exact("3")), "33.3333");
  assert.equal(exactPercentOut(exact("2"), exact("3")), "66.6667");
  assert.equal(exactPercentOut(exact("1"), exact("0")), null);
  assert.equal(exactPercentOut(exact("-1"), exact("3")), null);
  // through the engine: device cost / 180
  const tes180 = (deviceCost: string) => one({ target: { ...TARGET, deviceCost } }).tes_180_kwh;
  assert.equal(tes180("0.009"), "0.0001"); // 0.00005
  assert.equal(tes180("0.0072"), "0.0000"); // 0.00004
  assert.equal(tes180("60"), "0.3333");
  assert.equal(tes180("120"), "0.6667");
  assert.equal(one({ target: { ...TARGET, tesKwh: "7" } }).tes_kwh, "7.0000");
});

Deno.test("§1 sums are exact and rounded once", () => {
  // three days of TES-180 = 60 / 180 = 1/3: the sum is 1.0000, not 3 x 0.3333 = 0.9999
  const t = { ...TARGET, deviceCost: "60" };
  const r = run([0, 1, 2].map((i) => day({ date: addDays("2026-07-10", i), target: t })));
  assert.equal(r.days[0].tes_180_kwh, "0.3333");
  assert.equal(r.summary.tes_180_kwh, "1.0000");
  assert.equal(r.summary.tes_180_threshold_kwh, "1.0000");
  // EBA 100 / 30 three times: matched EBA 10.0000
  const e = run([0, 1, 2].map((i) => day({ date: addDays("2026-07-10", i), actual: "1" })), [
    { year: 2025, month: 7, days: 30, sum: "100" },
  ]);
  assert.equal(e.summary.matched_eba_kwh, "10.0000");
  assert.equal(e.summary.aes_kwh, "7.0000");
  assert.equal(e.summary.aer_percent, "70.0000");
});

Deno.test("§1 negative savings: null value, NEGATIVE_SAVINGS, failing flags", () => {
  const d = one({ actual: "120" });
  assert.equal(d.aes_kwh, null);
  assert.equal(d.aer_percent, null);
  assert.equal(d.actual_kwh, "120.0000");
  assert.deepEqual(flags(d), [false, false, false, false, false]);
  assert.equal(d.evaluation_status, "EVALUATED");
  const r = run([day({ actual: "120" })]);
  assert.deepEqual(reasons(r, "aes"), ["NEGATIVE_SAVINGS"]);
  assert.deepEqual(reasons(r, "aer"), ["NEGATIVE_SAVINGS"]);
  assert.deepEqual(reasons(r, "eba"), []);
  assert.equal(r.availability.find((a) => a.metric === "aes")!.status, "UNAVAILABLE");
  assert.equal(r.summary.aes_kwh, null);
  assert.equal(r.summary.aer_percent, null);
  assert.equal(r.summary.matched_days, 1);
  assert.equal(r.summary.savings_days, 0);
  assert.equal(r.summary.eba_pass, false);
  // a tiny excess is still negative
  assert.equal(one({ actual: "100.0001" }).aes_kwh, null);
  assert.equal(one({ actual: "100.0001" }).eba_pass, false);
});

Deno.test("§6 ZERO_BASELINE: aer is null when EBA is 0", () => {
  const zero = [{ year: 2025, month: 7, days: 20, sum: "0" }];
  const d = one({ actual: "0" }, zero);
  assert.equal(d.eba_kwh, "0.0000");
  assert.equal(d.aes_kwh, "0.0000");
  assert.equal(d.aer_percent, null);
  assert.equal(d.eba_pass, true);
  assert.deepEqual(reasonsOne({ actual: "0" }, "aer", zero), ["ZERO_BASELINE"]);
  assert.deepEqual(reasonsOne({ actual: "0" }, "aes", zero), []);
  const over = one({ actual: "5" }, zero);
  assert.equal(over.aes_kwh, null);
  assert.equal(over.aer_percent, null);
  assert.equal(over.eba_pass, false);
  assert.deepEqual(reasonsOne({ actual: "5" }, "aer", zero), ["ZERO_BASELINE"]);
  assert.deepEqual(reasonsOne({ actual: "5" }, "aes", zero), ["NEGATIVE_SAVINGS"]);
  const s = run([day({ actual: "0" })], zero).summary;
  assert.equal(s.matched_eba_kwh, "0.0000");
  assert.equal(s.aes_kwh, "0.0000");
  assert.equal(s.aer_percent, null);
  // 0.0000 is a real zero, not a missing value
  assert.equal(one({ actual: "0" }).actual_kwh, "0.0000");
});

Deno.test("reasons are unions of every cause, sorted and unique", () => {
  const r = run([
    day({ date: "2026-01-05", actual: null, stage: null, target: null }),
    day({ date: "2026-01-06", actual: null, stage: null, target: null }),
  ]);
  assert.deepEqual(reasons(r, "aes"), ["NO_ENERGY_DATA", "OUT_OF_SEASON", "STAGE_UNKNOWN"]);
  assert.deepEqual(reasons(r, "tes_180"), [
    "NO_EFFECTIVE_TARGET",
    "NO_ENERGY_DATA",
    "OUT_OF_SEASON",
    "STAGE_UNKNOWN",
  ]);
  assert.deepEqual(reasons(r, "tev"), ["NO_EFFECTIVE_TARGET", "NO_ENERGY_DATA", "STAGE_UNKNOWN"]);
  for (const a of r.availability) {
    assert.deepEqual(a.reasons, [...new Set(a.reasons)].sort(), a.metric);
    assert.ok(a.status === "UNAVAILABLE" ? a.reasons.length > 0 : true);
  }
});

Deno.test("every reason code is reachable", () => {
  const seen = new Set<string>();
  const scenarios: Array<[Partial<DayInput>, ReadonlyArray<BaselineMonth>?]> = [
    [{ actual: null }],
    [{ date: "2026-01-10" }],
    [{ date: "2026-06-10" }],
    [{ stage: null }],
    [{ stage: "SUSPENDED" }],
    [{ target: null }],
    [{ provisional: 1, provisionalAt: "2026-07-10 10:00" }],
    [{ tev: { value: "9", observedDate: "2025-01-01" } }],
    [{ actual: "101" }],
    [{ actual: "0" }, [{ year: 2025, month: 7, days: 20, sum: "0" }]],
    [{ tev: null }],
    [{ target: { ...TARGET, deviceCost: null } }],
  ];
  for (const [over, base] of scenarios) {
    run([day(over)], base).availability.forEach((a) => a.reasons.forEach((c) => seen.add(c)));
  }
  assert.deepEqual([...seen].sort(), [
    "NEGATIVE_SAVINGS",
    "NO_BASELINE_DATA",
    "NO_EFFECTIVE_TARGET",
    "NO_ENERGY_DATA",
    "NO_PRICED_ITEMS",
    "NO_TEV_OBSERVATION",
    "OUT_OF_SEASON",
    "PROVISIONAL_EXCLUDED",
    "STAGE_NOT_EVALUATED",
    "STAGE_UNKNOWN",
    "TEV_STALE",
    "ZERO_BASELINE",
  ]);
});

Deno.test("availability: order, labels, counts and status", () => {
  const r = run([
    day({ date: "2026-07-10" }),
    day({ date: "2026-07-11", actual: null }),
    day({ date: "2026-07-12", target: null }),
  ]);
  assert.deepEqual(r.availability.map((a) => a.metric), [
    "actual",
    "eba",
    "aes",
    "aer",
    "tes",
    "tes_180",
    "tes_210",
    "tev",
  ]);
  assert.ok(r.availability.every((a) => a.label.length > 0 && a.requested_days === 3));
  const by = Object.fromEntries(r.availability.map((a) => [a.metric, a]));
  assert.deepEqual([by.actual.available_days, by.actual.status], [2, "PARTIAL"]);
  assert.deepEqual([by.eba.available_days, by.eba.status], [3, "AVAILABLE"]);
  assert.deepEqual([by.aes.available_days, by.aes.status], [2, "PARTIAL"]);
  assert.deepEqual([by.tes.available_days, by.tes.status], [2, "PARTIAL"]);
  assert.deepEqual(by.tes.reasons, ["NO_EFFECTIVE_TARGET", "NO_ENERGY_DATA"]);
  assert.deepEqual(by.eba.reasons, ["NO_ENERGY_DATA"]); // eba_pass of the day without energy
  const winter = run([day({ date: "2026-02-01" })]);
  assert.equal(winter.availability.find((a) => a.metric === "eba")!.status, "UNAVAILABLE");
});

Deno.test("§7 summary over a mixed range", () => {
  const d = (i: number, over: Partial<DayInput>) =>
    day({ date: addDays("2026-07-01", i), ...over });
  const r = run([
    d(0, { actual: "80" }), // matched, settled, savings 20
    d(1, { actual: "90", stage: "TRIAL", provisional: 1, provisionalAt: "2026-07-02 12:00" }), // matched, provisional
    d(2, { actual: "120" }), // matched, settled, savings -20
    d(3, { actual: null }),
    d(4, { actual: "50", stage: "BASELINE" }),
    d(5, { actual: "70", target: null }), // matched, settled, no target
  ]);
  assert.deepEqual(r.summary, {
    requested_days: 6,
    actual_days: 5,
    eba_days: 6,
    matched_days: 4,
    savings_days: 3,
    actual_kwh: "410.0000",
    matched_eba_kwh: "400.0000",
    aes_kwh: "40.0000",
    aer_percent: "10.0000",
    tes_kwh: "45.0000",
    tes_180_kwh: "60.0000",
    tes_210_kwh: "51.4286",
    tes_threshold_kwh: "45.0000",
    tes_180_threshold_kwh: "60.0000",
    tes_210_threshold_kwh: "51.4286",
    eba_pass: true, // settled matched: 270 <= 300
    tes_pass: false, // settled matched with TES: 20 - 20 = 0 >= 30 fails
    tes_180_pass: false,
    tes_210_pass: false,
    tev_pass: true, // days with a daily tev_pass: 80 + 120 <= 108 + 108
    complete_for_savings: false,
  });
});

Deno.test("§7 summary pass flags use settled matched days only", () => {
  const r = run([
    day({ date: "2026-07-01", actual: "95" }), // savings 5
    day({ date: "2026-07-02", actual: "0", provisional: 1, provisionalAt: "2026-07-02 10:00" }), // savings 100
  ]);
  // totals include the provisional day
  assert.equal(r.summary.actual_kwh, "95.0000");
  assert.equal(r.summary.aes_kwh, "105.0000");
  assert.equal(r.summary.tes_kwh, "30.0000");
  // but the verdict does not: 5 >= 15 fails (with the provisional day it would be 105 >= 30)
  assert.equal(r.summary.tes_pass, false);
  assert.equal(r.summary.eba_pass, true);
  assert.equal(r.summary.complete_for_savings, true);

  const onlyProvisional = run([day({ provisional: 1, provisionalAt: "2026-07-10 10:00" })]).summary;
  assert.deepEqual(
    [
      onlyProvisional.eba_pass,
      onlyProvisional.tes_pass,
      onlyProvisional.tes_180_pass,
      onlyProvisional.tes_210_pass,
      onlyProvisional.tev_pass,
    ],
    NO_FLAGS,
  );
  assert.equal(onlyProvisional.aes_kwh, "20.0000");

  // settled matched days without TES-180 do not enter the TES-180 verdict
  const mixed = run([
    day({ date: "2026-07-01", actual: "0" }), // savings 100, no priced items
    day({ date: "2026-07-02", actual: "90", target: { ...TARGET, deviceCost: "3600" } }), // savings 10 < 20
  ].map((x, i) => i === 0 ? { ...x, target: { ...TARGET, deviceCost: null } } : x)).summary;
  assert.equal(mixed.tes_180_kwh, "20.0000");
  assert.equal(mixed.tes_180_pass, false);
  assert.equal(mixed.tes_pass, true); // 110 >= 30

  // the TEV verdict only uses days whose daily tev_pass exists (the stale one is left out)
  const tev = run([
    day({ date: "2026-07-01", actual: "100" }),
    day({ date: "2026-07-02", actual: "500", tev: { value: "90", observedDate: "2025-01-01" } }),
  ]).summary;
  assert.equal(tev.tev_pass, true);
});

Deno.test("§7 sums over no contributing day are null", () => {
  const tev = { value: "90", observedDate: "2025-12-01" };
  const winter = run([day({ date: "2026-01-01", tev }), day({ date: "2026-01-02", tev })]).summary;
  assert.equal(winter.actual_kwh, "160.0000");
  assert.equal(winter.eba_days, 0);
  for (
    const k of [
      "matched_eba_kwh",
      "aes_kwh",
      "aer_percent",
      "tes_kwh",
      "tes_180_kwh",
      "tes_210_kwh",
      "tes_threshold_kwh",
      "tes_180_threshold_kwh",
      "tes_210_threshold_kwh",
      "eba_pass",
      "tes_pass",
      "tes_180_pass",
      "tes_210_pass",
    ] as const
  ) assert.equal(winter[k], null, k);
  assert.equal(winter.tev_pass, true);
  assert.equal(winter.complete_for_savings, false);
  const empty =
    run([day({ actual: null, tev: null }), day({ date: "2026-07-11", actual: null, tev: null })])
      .summary;
  assert.equal(empty.actual_kwh, null);
  assert.equal(empty.actual_days, 0);
  assert.equal(empty.tev_pass, null);
  const noTarget = run([day({ target: null })]).summary;
  assert.deepEqual([noTarget.tes_kwh, noTarget.tes_180_kwh, noTarget.tes_pass], [null, null, null]);
  assert.equal(noTarget.aes_kwh, "20.0000");
  assert.equal(noTarget.complete_for_savings, true);
});

Deno.test("notes explain how to read the numbers", () => {
  const notes = run([day()]).notes;
  assert.ok(notes.length >= 5);
  const text = notes.join(" ");
  for (
    const fragment of [
      "requested_days",
      "actual_days",
      "Provisional",
      "summer",
      "TES-180",
      "TES-210",
      "NEGATIVE_SAVINGS",
    ]
  ) {
    assert.ok(text.includes(fragment), fragment);
  }
});

Deno.test("§5 targets rows", () => {
  const r = computeTargets([
    { date: "2026-07-01", target: null, tev: TEV },
    { date: "2026-07-02", target: TARGET, tev: null },
    {
      date: "2026-07-03",
      target: { ...TARGET, deviceCost: null, tesKwh: null, ratio: "1.25" },
      tev: TEV,
    },
    { date: "2027-01-01", target: TARGET, tev: TEV }, // stale TEV is still the latest observation
  ]);
  decodeTargets({
    store_id: 1,
    scope_id: 1,
    unit: "kWh/日",
    timezone: "Asia/Shanghai",
    start: "2026-07-01",
    end: "2027-01-01",
    summary: r.summary,
    days: r.days,
    note: "n",
  });
  r.days.forEach((d) => decodeTargetDay(d));
  assert.deepEqual(r.summary, { requested_days: 4, available_days: 3, missing_days: 1 });
  assert.deepEqual(r.days[0], {
    business_date: "2026-07-01",
    status: "NO_EFFECTIVE_TARGET",
    target_period_id: null,
    tes_kwh: null,
    tes_180_kwh: null,
    tes_210_kwh: null,
    tev_kwh: null,
    effective_tev_warning_ratio: null,
    tev_latest_observed_date: null,
    source_kind: null,
    source_reference: null,
    evaluation_status: "NOT_EVALUATED",
  });
  assert.deepEqual(r.days[1], {
    business_date: "2026-07-02",
    status: "AVAILABLE",
    target_period_id: 7,
    tes_kwh: "15.0000",
    tes_180_kwh: "20.0000",
    tes_210_kwh: "17.1429",
    tev_kwh: null,
    effective_tev_warning_ratio: "1.2000",
    tev_latest_observed_date: null,
    source_kind: "LEGACY_PERIOD",
    source_reference: "period 7",
    evaluation_status: "NOT_EVALUATED",
  });
  assert.deepEqual(
    [
      r.days[2].tes_kwh,
      r.days[2].tes_180_kwh,
      r.days[2].tes_210_kwh,
      r.days[2].effective_tev_warning_ratio,
      r.days[2].tev_kwh,
    ],
    [null, null, null, "1.2500", "90.0000"],
  );
  assert.deepEqual([r.days[3].tev_kwh, r.days[3].tev_latest_observed_date], [
    "90.0000",
    "2026-06-01",
  ]);
  // the metrics rows carry the same target values
  const m = run([day({ date: "2026-07-02", tev: null })]).days[0];
  assert.deepEqual(
    [m.tes_kwh, m.tes_180_kwh, m.tes_210_kwh, m.tev_kwh, m.effective_tev_warning_ratio],
    [
      r.days[1].tes_kwh,
      r.days[1].tes_180_kwh,
      r.days[1].tes_210_kwh,
      r.days[1].tev_kwh,
      r.days[1].effective_tev_warning_ratio,
    ],
  );
});

const STAGES: ReadonlyArray<Stage | null> = [
  "BASELINE",
  "INSTALLING",
  "TRIAL",
  "OPERATING",
  "SUSPENDED",
  "EXITED",
  null,
];
const decimal4 = (max: number) =>
  fc.integer({ min: 0, max: max * 10_000 }).map((n) => new X(n).div(10_000).toFixed());
const decimalAny = fc.integer({ min: 0, max: 500_000_000 }).chain((n) =>
  fc.integer({ min: 0, max: 6 }).map((dp) => new X(n).div(new X(10).pow(dp)).toFixed())
);

const targetArb: fc.Arbitrary<TargetInput | null> = fc.option(
  fc.record({
    periodId: fc.integer({ min: 1, max: 50 }),
    tesKwh: fc.option(decimal4(120), { nil: null }),
    deviceCost: fc.option(decimalAny, { nil: null }),
    ratio: fc.constantFrom("1.2", "1", "1.15", "1.5"),
    sourceKind: fc.constantFrom("LEGACY_PERIOD", "CONTRACT"),
    sourceReference: fc.option(fc.string({ maxLength: 8 }), { nil: null }),
  }),
  { nil: null },
);

const dayFieldsArb = fc.record({
  actual: fc.option(fc.oneof(decimal4(200), fc.constantFrom("0", "100", "50")), {
    nil: null,
    freq: 4,
  }),
  provisional: fc.constantFrom<0 | 1>(0, 0, 0, 1),
  stage: fc.constantFrom<Stage | null>(...STAGES, "TRIAL", "OPERATING", "OPERATING"),
  target: targetArb,
  tev: fc.option(
    fc.record({
      value: decimal4(200).filter((v) => v !== "0"),
      ago: fc.integer({ min: -3, max: 400 }),
    }),
    {
      nil: null,
    },
  ),
});

const baselineArb: fc.Arbitrary<Array<BaselineMonth>> = fc.uniqueArray(
  fc.record({
    year: fc.integer({ min: 2023, max: 2027 }),
    month: fc.integer({ min: 5, max: 10 }),
    days: fc.integer({ min: 10, max: 31 }),
    sum: decimal4(4000),
  }),
  { selector: (m) => `${m.year}-${m.month}`, maxLength: 16 },
);

const rangeArb = fc.record({
  start: fc.oneof(
    fc.integer({ min: 0, max: 140 }).map((i) => addDays("2026-05-20", i)),
    fc.integer({ min: 0, max: 1000 }).map((i) => addDays("2025-01-01", i)),
  ),
  fields: fc.array(dayFieldsArb, { minLength: 1, maxLength: 70 }),
  baseline: baselineArb,
}).map(({ start, fields, baseline }) => ({
  baseline,
  days: fields.map((f, i): DayInput => {
    const date = addDays(start, i);
    return {
      date,
      actual: f.actual,
      provisional: f.provisional,
      provisionalAt: f.provisional === 1 ? `${date} 13:45` : null,
      stage: f.stage,
      target: f.target,
      tev: f.tev === null ? null : { value: f.tev.value, observedDate: addDays(date, -f.tev.ago) },
    };
  }),
}));

const RUNS = { numRuns: 300 };
const isEvaluable = (s: Stage | null) => s === "TRIAL" || s === "OPERATING";
const sumX = (xs: ReadonlyArray<string | null>) => {
  const present = xs.filter((v): v is string => v !== null);
  return present.length === 0 ? null : x4(present.reduce((acc, v) => acc.plus(v), new X(0)));
};

Deno.test("property: every output validates against the contract schemas", () => {
  fc.assert(
    fc.property(rangeArb, ({ days, baseline }) => {
      validate(computeMetrics(days, baseline));
      const t = computeTargets(days);
      t.days.forEach((d) => decodeTargetDay(d));
      assert.equal(t.summary.missing_days, days.filter((d) => d.target === null).length);
    }),
    RUNS,
  );
});

Deno.test("property: the summary counts and totals fold the days", () => {
  fc.assert(
    fc.property(rangeArb, ({ days, baseline }) => {
      const r = computeMetrics(days, baseline);
      const s = r.summary;
      assert.equal(s.requested_days, days.length);
      assert.equal(s.actual_days, days.filter((d) => d.actual !== null).length);
      assert.equal(s.actual_kwh, sumX(days.map((d) => d.actual)));
      assert.equal(s.eba_days, r.days.filter((d) => d.eba_kwh !== null).length);
      const matched = r.days.filter((d, i) =>
        d.actual_kwh !== null && d.eba_kwh !== null && isEvaluable(days[i].stage)
      );
      assert.equal(s.matched_days, matched.length);
      assert.equal(s.savings_days, matched.filter((d) => d.aes_kwh !== null).length);
      assert.equal(s.complete_for_savings, matched.length === days.length);
      for (const k of ["tes", "tes_180", "tes_210"] as const) {
        assert.equal(s[`${k}_threshold_kwh`], s[`${k}_kwh`]);
      }
    }),
    RUNS,
  );
});

// An independent oracle: exact rationals over BigInt, computed from the raw inputs only.
type Q = { readonly n: bigint; readonly d: bigint };
const gcd = (a: bigint, b: bigint): bigint => (b === 0n ? (a < 0n ? -a : a) : gcd(b, a % b));
const Q = (n: bigint, d: bigint = 1n): Q => {
  const g = gcd(n, d) || 1n;
  return d < 0n ? { n: -n / g, d: -d / g } : { n: n / g, d: d / g };
};
const q = (s: string): Q => {
  const [i, f = ""] = s.split(".");
  return Q(BigInt(i + f), 10n ** BigInt(f.length));
};
const qAdd = (x: Q, y: Q) => Q(x.n * y.d + y.n * x.d, x.d * y.d);
const qSub = (x: Q, y: Q) => Q(x.n * y.d - y.n * x.d, x.d * y.d);
const qMul = (x: Q, y: Q) => Q(x.n * y.n, x.d * y.d);
const qDiv = (x: Q, y: Q) => Q(x.n * y.d, x.d * y.n);
const qCmp = (x: Q, y: Q) =>
  Number(x.n * y.d - y.n * x.d > 0n) - Number(x.n * y.d - y.n * x.d < 0n);
const qSum = (xs: ReadonlyArray<Q | null>): Q | null =>
  xs.reduce<Q | null>((acc, v) => v === null ? acc : acc === null ? v : qAdd(acc, v), null);
const q4 = (x: Q | null): string | null => {
  if (x === null || x.n < 0n) return null;
  let i = (x.n * 10_000n) / x.d;
  if (2n * ((x.n * 10_000n) % x.d) >= x.d) i++;
  return `${i / 10_000n}.${String(i % 10_000n).padStart(4, "0")}`;
};
const qPercent = (part: Q, whole: Q) =>
  whole.n === 0n ? null : q4(qMul(qDiv(part, whole), Q(100n)));

const oracle = (days: ReadonlyArray<DayInput>, baseline: ReadonlyArray<BaselineMonth>) => {
  const rows = days.map((d) => {
    const month = Number(d.date.slice(5, 7));
    const year = Number(d.date.slice(0, 4));
    const source = month >= 6 && month <= 9
      ? baseline
        .filter((b) => b.month === month && b.year < year && b.days >= 15)
        .sort((x, y) => y.year - x.year)[0]
      : undefined;
    const e = source === undefined ? null : qDiv(q(source.sum), Q(BigInt(source.days)));
    const a = d.actual === null ? null : q(d.actual);
    const t = d.target;
    const cost = t?.deviceCost ?? null;
    const tes = t?.tesKwh == null ? null : q(t.tesKwh);
    const tes180 = cost === null ? null : qDiv(q(cost), Q(180n));
    const tes210 = cost === null ? null : qDiv(q(cost), Q(210n));
    const tev = t !== null && d.tev !== null && d.tev.observedDate <= d.date ? d.tev : null;
    const ageDays = tev === null
      ? 0
      : (Date.parse(d.date) - Date.parse(tev.observedDate)) / 86_400_000;
    const thr = tev === null ? null : qMul(q(tev.value), q(t!.ratio));
    const evaluable = d.stage === "TRIAL" || d.stage === "OPERATING";
    const matched = a !== null && e !== null && evaluable;
    const savings = matched ? qSub(e!, a!) : null;
    const judged = a !== null && d.provisional === 0 && evaluable;
    const beats = (target: Q | null) =>
      judged && e !== null && target !== null ? qCmp(qSub(e, a!), target) >= 0 : null;
    return {
      a,
      e,
      matched,
      savings,
      tes,
      tes180,
      tes210,
      thr,
      settled: d.provisional === 0,
      day: {
        eba_kwh: q4(e),
        aes_kwh: q4(savings),
        aer_percent: savings === null ? null : qPercent(savings, e!),
        tes_180_kwh: q4(tes180),
        tes_210_kwh: q4(tes210),
        tev_threshold_kwh: q4(thr),
        eba_pass: judged && e !== null ? qCmp(a!, e) <= 0 : null,
        tes_pass: beats(tes),
        tes_180_pass: beats(tes180),
        tes_210_pass: beats(tes210),
        tev_pass: judged && thr !== null && ageDays <= 180 ? qCmp(a!, thr) <= 0 : null,
      },
    };
  });
  const matched = rows.filter((r) => r.matched);
  const settled = matched.filter((r) => r.settled);
  const eba = qSum(matched.map((r) => r.e));
  const aes = eba === null ? null : qSub(eba, qSum(matched.map((r) => r.a))!);
  const cmp = (x: Q | null, y: Q | null, ok: (c: number) => boolean) =>
    x === null || y === null ? null : ok(qCmp(x, y));
  const targetPass = (pick: (r: (typeof rows)[number]) => Q | null) => {
    const having = settled.filter((r) => pick(r) !== null);
    return cmp(qSum(having.map((r) => r.savings)), qSum(having.map(pick)), (c) => c >= 0);
  };
  const tevDays = rows.filter((r) => r.day.tev_pass !== null);
  return {
    days: rows.map((r) => r.day),
    summary: {
      requested_days: rows.length,
      actual_days: rows.filter((r) => r.a !== null).length,
      eba_days: rows.filter((r) => r.e !== null).length,
      matched_days: matched.length,
      savings_days: matched.filter((r) => r.savings!.n >= 0n).length,
      actual_kwh: q4(qSum(rows.map((r) => r.a))),
      matched_eba_kwh: q4(eba),
      aes_kwh: q4(aes),
      aer_percent: aes === null || aes.n < 0n ? null : qPercent(aes, eba!),
      tes_kwh: q4(qSum(matched.map((r) => r.tes))),
      tes_180_kwh: q4(qSum(matched.map((r) => r.tes180))),
      tes_210_kwh: q4(qSum(matched.map((r) => r.tes210))),
      tes_threshold_kwh: q4(qSum(matched.map((r) => r.tes))),
      tes_180_threshold_kwh: q4(qSum(matched.map((r) => r.tes180))),
      tes_210_threshold_kwh: q4(qSum(matched.map((r) => r.tes210))),
      eba_pass: cmp(qSum(settled.map((r) => r.a)), qSum(settled.map((r) => r.e)), (c) => c <= 0),
      tes_pass: targetPass((r) => r.tes),
      tes_180_pass: targetPass((r) => r.tes180),
      tes_210_pass: targetPass((r) => r.tes210),
      tev_pass: cmp(qSum(tevDays.map((r) => r.a)), qSum(tevDays.map((r) => r.thr)), (c) => c <= 0),
      complete_for_savings: matched.length === rows.length,
    },
  };
};

Deno.test("property: days and summary equal an independent exact oracle", () => {
  fc.assert(
    fc.property(rangeArb, ({ days, baseline }) => {
      const r = computeMetrics(days, baseline);
      const expected = oracle(days, baseline);
      assert.deepEqual(r.summary, expected.summary);
      r.days.forEach((d, i) => {
        const e = expected.days[i];
        assert.deepEqual(
          Object.fromEntries(Object.keys(e).map((k) => [k, d[k as keyof typeof e]])),
          e,
          d.business_date,
        );
      });
    }),
    RUNS,
  );
});

Deno.test("property: exact ties are rounded half-up once, after summing", () => {
  // two TES-180 quotients that are not finite decimals but sum to exactly x.xxxx5
  const r = run([
    day({ date: "2026-07-01", target: { ...TARGET, deviceCost: "81097.102" } }),
    day({ date: "2026-07-02", target: { ...TARGET, deviceCost: "239195.231" } }),
  ]);
  assert.equal(r.summary.tes_180_kwh, "1779.4019"); // 320292.333 / 180 = 1779.40185
  // EBA 1/18-ths equal to a TES-180 in 1/180-ths: savings == TES exactly, so the flag passes
  const tie = one({ actual: "1", target: { ...TARGET, deviceCost: "80" } }, [
    { year: 2025, month: 7, days: 18, sum: "26" }, // EBA 1.444..., savings 0.444... = 80 / 180
  ]);
  assert.equal(tie.tes_180_pass, true);
});

Deno.test("property: daily invariants", () => {
  fc.assert(
    fc.property(rangeArb, ({ days, baseline }) => {
      const computed = computeDays(days, baseline);
      computed.forEach((c, i) => {
        const input = days[i];
        const d = c.day;
        const anyFlag = flags(d).some((f) => f !== null);
        if (input.provisional === 1 || !isEvaluable(input.stage) || input.actual === null) {
          assert.deepEqual(flags(d), NO_FLAGS);
        }
        if (!isEvaluable(input.stage)) assert.equal(d.aes_kwh, null);
        assert.equal(d.evaluation_status, anyFlag ? "EVALUATED" : "NOT_EVALUATED");
        assert.equal(d.actual_kwh, input.actual === null ? null : x4(new X(input.actual)));
        if (d.aes_kwh !== null) {
          // exact before rounding, and consistent after it (A has at most 4 decimals)
          assert.ok(c.savings!.plus(c.actual!).eq(c.eba!));
          assert.ok(new X(d.aes_kwh).plus(d.actual_kwh!).eq(d.eba_kwh!));
        }
        if (c.matched && input.provisional === 0) {
          // negative savings and a failing EBA verdict go together
          assert.equal(d.aes_kwh === null, d.eba_pass === false);
        }
        if (d.tes_180_pass !== null && d.tes_210_pass !== null && d.tes_180_pass) {
          assert.equal(d.tes_210_pass, true); // TES-210 <= TES-180 for the same cost
        }
        // TES-180/210 come from the device cost only
        const cost = input.target?.deviceCost ?? null;
        assert.equal(d.tes_180_kwh, cost === null ? null : x4(new X(cost).div(180)));
        assert.equal(d.tes_210_kwh, cost === null ? null : x4(new X(cost).div(210)));
        if (input.target === null) assert.equal(d.tev_kwh, null);
      });
    }),
    RUNS,
  );
});

Deno.test("property: changing the legacy tes_kwh never changes TES-180/210", () => {
  fc.assert(
    fc.property(rangeArb, decimal4(500), ({ days, baseline }, tes) => {
      const a = computeMetrics(days, baseline);
      const b = computeMetrics(
        days.map((d) => d.target === null ? d : { ...d, target: { ...d.target, tesKwh: tes } }),
        baseline,
      );
      const pick = (r: MetricsResult) => [
        r.days.map((d) => [d.tes_180_kwh, d.tes_210_kwh, d.tes_180_pass, d.tes_210_pass]),
        [
          r.summary.tes_180_kwh,
          r.summary.tes_210_kwh,
          r.summary.tes_180_pass,
          r.summary.tes_210_pass,
        ],
      ];
      assert.deepEqual(pick(a), pick(b));
    }),
    { numRuns: 100 },
  );
});

Deno.test("property: a sub-range summary equals computeMetrics over that sub-range", () => {
  const arb = rangeArb.chain((r) =>
    fc.tuple(fc.nat(r.days.length - 1), fc.nat(r.days.length - 1)).map(([i, j]) => ({
      ...r,
      from: Math.min(i, j),
      to: Math.max(i, j) + 1,
    }))
  );
  fc.assert(
    fc.property(arb, ({ days, baseline, from, to }) => {
      const all = computeDays(days, baseline);
      const direct = computeMetrics(days.slice(from, to), baseline);
      assert.deepEqual(summarize(all.slice(from, to)), direct.summary);
      assert.deepEqual(availabilityOf(all.slice(from, to)), direct.availability);
      assert.deepEqual(all.slice(from, to).map((c) => c.day), direct.days);
    }),
    RUNS,
  );
});

Deno.test("property: availability matches the day values", () => {
  const fields = {
    actual: "actual_kwh",
    eba: "eba_kwh",
    aes: "aes_kwh",
    aer: "aer_percent",
    tes: "tes_kwh",
    tes_180: "tes_180_kwh",
    tes_210: "tes_210_kwh",
    tev: "tev_kwh",
  } as const;
  fc.assert(
    fc.property(rangeArb, ({ days, baseline }) => {
      const r = computeMetrics(days, baseline);
      for (const a of r.availability) {
        const n = r.days.filter((d) => d[fields[a.metric as MetricKey]] !== null).length;
        assert.equal(a.available_days, n);
        assert.equal(
          a.status,
          n === days.length ? "AVAILABLE" : n === 0 ? "UNAVAILABLE" : "PARTIAL",
        );
        assert.deepEqual(a.reasons, [...new Set(a.reasons)].sort());
        if (a.status !== "AVAILABLE") assert.ok(a.reasons.length > 0, a.metric);
      }
      const has = (m: MetricKey, code: string) =>
        r.availability.find((a) => a.metric === m)!.reasons.includes(code);
      assert.equal(has("actual", "NO_ENERGY_DATA"), days.some((d) => d.actual === null));
      // every failed gate of a day is listed: a provisional day always withholds its verdicts
      const anyProvisional = days.some((d) => d.provisional === 1);
      for (const m of ["eba", "tes", "tes_180", "tes_210", "tev"] as const) {
        assert.equal(has(m, "PROVISIONAL_EXCLUDED"), anyProvisional, m);
      }
      for (const m of ["actual", "aes", "aer"] as const) {
        assert.equal(has(m, "PROVISIONAL_EXCLUDED"), false, m);
      }
      assert.equal(
        has("aes", "NEGATIVE_SAVINGS"),
        r.days.some((d, i) =>
          d.actual_kwh !== null && d.eba_kwh !== null && isEvaluable(days[i].stage) &&
          d.aes_kwh === null
        ),
      );
    }),
    RUNS,
  );
});
