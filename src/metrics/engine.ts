// Pure metrics engine: daily EBA/AES/AER/TES/TEV metrics, pass flags, summaries and availability (rules.md §4-§7).
import type { Availability, MetricDay, MetricSummary } from "../domain/metrics.ts";
import {
  type Dec,
  type Exact,
  exact,
  exactOut,
  exactPercentOut,
  exactQuotient,
  fmtInput,
  toDec,
} from "./decimal.ts";
import { type TargetInput, targetResolver, type TargetValues, type TevInput } from "./targets.ts";
import { partsOf, summaryOf } from "./summary_parts.ts";

export { computeTargets, type TargetInput, type TevInput } from "./targets.ts";

export const RULE_VERSION = "esm-2026.11";

export type Stage = "BASELINE" | "INSTALLING" | "TRIAL" | "OPERATING" | "SUSPENDED" | "EXITED";

export interface DayInput {
  readonly date: string;
  readonly actual: string | null;
  readonly provisional: 0 | 1;
  readonly provisionalAt: string | null;
  readonly stage: Stage | null;
  readonly target: TargetInput | null;
  readonly tev: TevInput | null;
}

export interface BaselineMonth {
  readonly year: number;
  readonly month: number;
  readonly days: number;
  readonly sum: string;
}

export type MetricDayOut = typeof MetricDay.Type;
export type MetricSummaryOut = typeof MetricSummary.Type;
export type AvailabilityOut = typeof Availability.Type;

// Kept in alphabetical order: availability lists reasons in this order.
export const REASON_CODES = [
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
] as const;

export type ReasonCode = typeof REASON_CODES[number];

// Reasons travel as bit sets: a year of days folds into availability without building strings.
const R = Object.fromEntries(REASON_CODES.map((c, i) => [c, 1 << i])) as Record<
  ReasonCode,
  number
>;

export const reasonCodes = (mask: number): Array<ReasonCode> =>
  REASON_CODES.filter((_, i) => (mask & (1 << i)) !== 0);

export const METRICS = [
  { metric: "actual", label: "Actual energy (kWh)", field: "actual_kwh" },
  { metric: "eba", label: "Baseline energy EBA (kWh)", field: "eba_kwh" },
  { metric: "aes", label: "Energy saved AES (kWh)", field: "aes_kwh" },
  { metric: "aer", label: "Energy saving rate AER (%)", field: "aer_percent" },
  { metric: "tes", label: "Legacy target TES (kWh/day)", field: "tes_kwh" },
  { metric: "tes_180", label: "Target TES-180 (kWh/day)", field: "tes_180_kwh" },
  { metric: "tes_210", label: "Target TES-210 (kWh/day)", field: "tes_210_kwh" },
  { metric: "tev", label: "Target value TEV (kWh/day)", field: "tev_kwh" },
] as const;

export type MetricKey = typeof METRICS[number]["metric"];

export const NOTES: ReadonlyArray<string> = [
  "Sums cover only the days that have a value: a partial sum is not a complete-period sum. Read requested_days together with actual_days, eba_days and matched_days.",
  "Provisional days (provisional = 1, intraday rolling values) are included in numeric totals but never produce a pass or a fail.",
  "EBA is a local trial baseline for summer days only (June 1 to September 30): the mean of the same calendar month in the most recent earlier year with at least 15 settled BASELINE-stage days. Other days have no EBA.",
  "AES, AER and pass flags are evaluated only on days in stage TRIAL or OPERATING that have both actual energy and EBA; summary pass flags use settled days only.",
  "TES-180 and TES-210 are independent targets (device cost / 180 or / 210 at 1 per kWh), each judged on its own against its own value; neither is derived from the legacy tes_kwh.",
  "Savings that would be negative (actual above EBA) are shown as null with the reason NEGATIVE_SAVINGS; pass flags still use the signed value, so such a day fails eba_pass.",
  "A TEV observed more than 180 days before a day is stale on that day (TEV_STALE) and gives no TEV pass or fail.",
  "availability[].reasons lists every cause of a null value or a null pass flag of that metric in the range; read it together with the values.",
];

type Passes = {
  readonly eba: boolean | null;
  readonly tes: boolean | null;
  readonly tes180: boolean | null;
  readonly tes210: boolean | null;
  readonly tev: boolean | null;
};

// One computed day: the output row plus the exact values the summaries are folded from, so a
// sub-range summary never re-reads rounded strings. The *X fields hold them as native fixed-point
// (see Exact in decimal.ts); the Dec fields are the same values (scaled, see decimal.ts), built
// only when read.
export interface ComputedDay {
  // The business date (YYYY-MM-DD), without making the output row.
  readonly date: string;
  readonly day: MetricDayOut;
  readonly actual: Dec | null;
  readonly eba: Dec | null;
  readonly settled: boolean;
  readonly matched: boolean;
  readonly savings: Dec | null;
  readonly tes: Dec | null;
  readonly tes180: Dec | null;
  readonly tes210: Dec | null;
  readonly tevThreshold: Dec | null;
  readonly passes: Passes;
  /** Reason bit sets per metric; see reasonCodes. */
  readonly reasons: Readonly<Record<MetricKey, number>>;
  readonly actualX: Exact | null;
  readonly ebaX: Exact | null;
  readonly savingsX: Exact | null;
  readonly tesX: Exact | null;
  readonly tes180X: Exact | null;
  readonly tes210X: Exact | null;
  readonly tevThresholdX: Exact | null;
}

// A day as computed: what it was computed from and its exact values. The output row and the
// reason sets are made from them when first read (summaries and roll-ups read only the exact
// values), and the Dec fields are the exact values as decimal.js values (scaled, see decimal.ts).
class Computed implements ComputedDay {
  #day: MetricDayOut | undefined;
  #reasons: Readonly<Record<MetricKey, number>> | undefined;
  constructor(
    readonly input: DayInput,
    readonly base: Baseline,
    readonly target: TargetValues | null,
    readonly settled: boolean,
    readonly matched: boolean,
    readonly passes: Passes,
    readonly actualX: Exact | null,
    readonly savingsX: Exact | null,
  ) {}
  get date(): string {
    return this.input.date;
  }
  get ebaX(): Exact | null {
    return this.base.eba;
  }
  get tesX(): Exact | null {
    return this.target?.tesX ?? null;
  }
  get tes180X(): Exact | null {
    return this.target?.tes180X ?? null;
  }
  get tes210X(): Exact | null {
    return this.target?.tes210X ?? null;
  }
  get tevThresholdX(): Exact | null {
    return this.target?.tevThresholdX ?? null;
  }
  get day(): MetricDayOut {
    return this.#day ??= dayOut(this);
  }
  get reasons(): Readonly<Record<MetricKey, number>> {
    return this.#reasons ??= reasonsOf(this);
  }
  get actual(): Dec | null {
    return toDec(this.actualX);
  }
  get eba(): Dec | null {
    return toDec(this.ebaX);
  }
  get savings(): Dec | null {
    return toDec(this.savingsX);
  }
  get tes(): Dec | null {
    return toDec(this.tesX);
  }
  get tes180(): Dec | null {
    return toDec(this.tes180X);
  }
  get tes210(): Dec | null {
    return toDec(this.tes210X);
  }
  get tevThreshold(): Dec | null {
    return toDec(this.tevThresholdX);
  }
}

const isEvaluable = (s: Stage | null) => s === "TRIAL" || s === "OPERATING";

const QUALIFYING_BASELINE_DAYS = 15;

interface Baseline {
  readonly eba: Exact | null;
  readonly ebaKwh: string | null;
  readonly status: "AVAILABLE" | "OUT_OF_SEASON" | "NO_BASELINE_DATA";
  readonly reference: string | null;
}

const OUT_OF_SEASON: Baseline = {
  eba: null,
  ebaKwh: null,
  status: "OUT_OF_SEASON",
  reference: null,
};

// The summer of rules.md §4, its first and last days as [month, day]: June 1 to September 30 (the
// metric inputs and the portfolio read the baseline's days by it, metrics_sql.ts).
export const SUMMER = { first: [6, 1], last: [9, 30] } as const;

// EBA per rules.md §4 (SUMMER_ONLY, LOCAL_TRIAL); memoised per (year, month) of the date.
const baselineLookup = (months: ReadonlyArray<BaselineMonth>) => {
  const qualifying = months
    .filter((m) => m.days >= QUALIFYING_BASELINE_DAYS)
    .toSorted((a, b) => b.year - a.year);
  const cache = new Map<number, Baseline>();
  // The digits of YYYY-MM-DD read in place: a lookup per day makes no text.
  const digit = (date: string, at: number) => date.charCodeAt(at) - 48;
  return (date: string): Baseline => {
    const month = digit(date, 5) * 10 + digit(date, 6);
    if (month < SUMMER.first[0] || month > SUMMER.last[0]) return OUT_OF_SEASON;
    const year = digit(date, 0) * 1000 + digit(date, 1) * 100 + digit(date, 2) * 10 +
      digit(date, 3);
    const key = year * 100 + month;
    const hit = cache.get(key);
    if (hit !== undefined) return hit;
    const source = qualifying.find((m) => m.month === month && m.year < year);
    let result: Baseline = {
      eba: null,
      ebaKwh: null,
      status: "NO_BASELINE_DATA",
      reference: null,
    };
    if (source !== undefined) {
      const eba = exactQuotient(source.sum, source.days);
      const mm = String(month).padStart(2, "0");
      result = {
        eba,
        ebaKwh: exactOut(eba),
        status: "AVAILABLE",
        reference: `BASELINE ${source.year}-${mm} mean of ${source.days} days`,
      };
    }
    cache.set(key, result);
    return result;
  };
};

// A savings target's pass flag of a judged day: the signed savings against the target.
const savingsPass = (judged: boolean, savings: Exact | null, target: Exact | null) =>
  judged && savings !== null && target !== null ? savings >= target : null;

// The reason a target's value is missing on a day: no covering period, or `code` (0: present).
const targetMissing = (t: TargetValues | null, value: Exact | null, code: number) =>
  t === null ? R.NO_EFFECTIVE_TARGET : value === null ? code : 0;

const computeDay = (
  input: DayInput,
  baselineOf: (date: string) => Baseline,
  resolveTarget: ReturnType<typeof targetResolver>,
): ComputedDay => {
  const a = input.actual === null ? null : exact(input.actual);
  const base = baselineOf(input.date);
  const e = base.eba;
  const evaluable = isEvaluable(input.stage);
  const settled = input.provisional === 0;
  const t = resolveTarget(input.date, input.target, input.tev);
  const matched = a !== null && e !== null && evaluable;
  const savings = matched ? e - a : null;

  // rules.md §6: every pass flag needs A, a settled day, an evaluable stage and every input it
  // uses, present and not stale; the comparisons use the signed savings (rules.md §1).
  const judged = a !== null && settled && evaluable;
  const tevThreshold = t?.tevThresholdX ?? null;
  const passes: Passes = {
    eba: judged && e !== null ? a <= e : null,
    tes: savingsPass(judged, savings, t?.tesX ?? null),
    tes180: savingsPass(judged, savings, t?.tes180X ?? null),
    tes210: savingsPass(judged, savings, t?.tes210X ?? null),
    tev: judged && t !== null && tevThreshold !== null && !t.tevStale ? a <= tevThreshold : null,
  };
  return new Computed(input, base, t, settled, matched, passes, a, savings);
};

// A metric's reasons name every cause of a null value or a null pass flag of it (see NOTES).
const reasonsOf = (c: Computed): Record<MetricKey, number> => {
  const { input, base, target: t } = c;
  const noActual = c.actualX === null ? R.NO_ENERGY_DATA : 0;
  const noEba = base.status === "AVAILABLE" ? 0 : R[base.status];
  const stage = input.stage === null
    ? R.STAGE_UNKNOWN
    : isEvaluable(input.stage)
    ? 0
    : R.STAGE_NOT_EVALUATED;
  const savingsGate = noActual | noEba | stage;
  const passGate = savingsGate | (c.settled ? 0 : R.PROVISIONAL_EXCLUDED);
  const negative = c.savingsX !== null && c.savingsX < 0n ? R.NEGATIVE_SAVINGS : 0;
  const tevMissing = t === null
    ? R.NO_EFFECTIVE_TARGET
    : t.tevX === null
    ? R.NO_TEV_OBSERVATION
    : t.tevStale
    ? R.TEV_STALE
    : 0;
  return {
    actual: noActual,
    eba: passGate,
    aes: savingsGate | negative,
    aer: savingsGate | (c.matched && base.eba === 0n ? R.ZERO_BASELINE : negative),
    // A period without a legacy tes_kwh has no effective TES on that day.
    tes: passGate | targetMissing(t, c.tesX, R.NO_EFFECTIVE_TARGET),
    tes_180: passGate | targetMissing(t, c.tes180X, R.NO_PRICED_ITEMS),
    tes_210: passGate | targetMissing(t, c.tes210X, R.NO_PRICED_ITEMS),
    // TEV is judged on the actual alone, without EBA (rules.md §6).
    tev: (passGate & ~noEba) | tevMissing,
  };
};

// The day's output row.
const dayOut = (c: Computed): MetricDayOut => {
  const { input, base, target: t } = c;
  const { passes, savingsX: savings } = c;
  const e = base.eba;
  return {
    business_date: input.date,
    actual_kwh: fmtInput(input.actual),
    eba_kwh: base.ebaKwh,
    aes_kwh: exactOut(savings),
    aer_percent: savings !== null && e !== null ? exactPercentOut(savings, e) : null,
    tes_kwh: t?.tesKwh ?? null,
    tes_180_kwh: t?.tes180Kwh ?? null,
    tes_210_kwh: t?.tes210Kwh ?? null,
    tev_kwh: t?.tevKwh ?? null,
    // rules.md §6 and service-spec rule 4: the threshold is the TES itself, not min(TES, EBA).
    tes_threshold_kwh: t?.tesKwh ?? null,
    tes_180_threshold_kwh: t?.tes180Kwh ?? null,
    tes_210_threshold_kwh: t?.tes210Kwh ?? null,
    tev_threshold_kwh: t?.tevThresholdKwh ?? null,
    effective_tev_warning_ratio: t?.ratioOut ?? null,
    eba_pass: passes.eba,
    tes_pass: passes.tes,
    tes_180_pass: passes.tes180,
    tes_210_pass: passes.tes210,
    tev_pass: passes.tev,
    provisional: input.provisional,
    provisional_at: c.settled ? null : input.provisionalAt,
    tev_latest_observed_date: t?.tevObservedDate ?? null,
    baseline_status: base.status,
    baseline_reference: base.reference,
    stage: input.stage,
    evaluation_status: passes.eba !== null || passes.tes !== null || passes.tes180 !== null ||
        passes.tes210 !== null || passes.tev !== null
      ? "EVALUATED"
      : "NOT_EVALUATED",
  };
};

export const computeDays = (
  days: ReadonlyArray<DayInput>,
  baseline: ReadonlyArray<BaselineMonth>,
): Array<ComputedDay> => {
  const baselineOf = baselineLookup(baseline);
  const resolveTarget = targetResolver();
  return days.map((d) => computeDay(d, baselineOf, resolveTarget));
};

// rules.md §7. Works on any sub-range of computed days, so period summaries equal the metrics
// summary of the same range.
export const summarize = (days: ReadonlyArray<ComputedDay>): MetricSummaryOut =>
  summaryOf(partsOf(days));

// Per metric: the days with a value and the union of reasons, counted in one pass over the days.
export const availabilityOf = (days: ReadonlyArray<ComputedDay>): Array<AvailabilityOut> => {
  const available = [0, 0, 0, 0, 0, 0, 0, 0];
  const masks = [0, 0, 0, 0, 0, 0, 0, 0];
  for (const { day, reasons } of days) {
    if (day.actual_kwh !== null) available[0]++;
    if (day.eba_kwh !== null) available[1]++;
    if (day.aes_kwh !== null) available[2]++;
    if (day.aer_percent !== null) available[3]++;
    if (day.tes_kwh !== null) available[4]++;
    if (day.tes_180_kwh !== null) available[5]++;
    if (day.tes_210_kwh !== null) available[6]++;
    if (day.tev_kwh !== null) available[7]++;
    masks[0] |= reasons.actual;
    masks[1] |= reasons.eba;
    masks[2] |= reasons.aes;
    masks[3] |= reasons.aer;
    masks[4] |= reasons.tes;
    masks[5] |= reasons.tes_180;
    masks[6] |= reasons.tes_210;
    masks[7] |= reasons.tev;
  }
  return METRICS.map(({ metric, label }, i) => ({
    metric,
    label,
    available_days: available[i],
    requested_days: days.length,
    status: available[i] === days.length
      ? "AVAILABLE"
      : available[i] === 0
      ? "UNAVAILABLE"
      : "PARTIAL",
    reasons: reasonCodes(masks[i]),
  }));
};

export interface MetricsResult {
  readonly days: Array<MetricDayOut>;
  readonly summary: MetricSummaryOut;
  readonly availability: Array<AvailabilityOut>;
  readonly notes: Array<string>;
}

export const computeMetrics = (
  days: ReadonlyArray<DayInput>,
  baseline: ReadonlyArray<BaselineMonth>,
): MetricsResult => {
  const computed = computeDays(days, baseline);
  return {
    days: computed.map((c) => c.day),
    summary: summarize(computed),
    availability: availabilityOf(computed),
    notes: [...NOTES],
  };
};
