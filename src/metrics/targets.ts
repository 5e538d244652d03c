// Effective targets of a day (TES, TES-180, TES-210, TEV) and the targets endpoint's rows (rules.md §5).
import type { TargetDay } from "../domain/metrics.ts";
import { addDays, dayIndex } from "../domain/range.ts";
import {
  type Exact,
  exact,
  exactOrNull,
  exactOut,
  exactQuotient,
  exactTimes,
  fmtInput,
} from "./decimal.ts";

export interface TargetInput {
  readonly periodId: number;
  readonly tesKwh: string | null;
  readonly deviceCost: string | null;
  readonly ratio: string;
  readonly sourceKind: string;
  readonly sourceReference: string | null;
}

export interface TevInput {
  readonly value: string;
  readonly observedDate: string;
}

export interface TargetDayInput {
  readonly date: string;
  readonly target: TargetInput | null;
  readonly tev: TevInput | null;
}

export type TargetDayOut = typeof TargetDay.Type;

export interface TargetsResult {
  readonly days: Array<TargetDayOut>;
  readonly summary: {
    readonly requested_days: number;
    readonly available_days: number;
    readonly missing_days: number;
  };
}

// The spec's TEV warning ratio: the top-level field of a metrics answer, and a period's ratio where
// none is given (the column's default, rules.md §5).
export const DEFAULT_TEV_WARNING_RATIO = "1.2";
export const TEV_STALE_AFTER_DAYS = 180;
// 1 per kWh (service-spec §8); kept explicit so the formula reads as the rule does.
const ELECTRICITY_PRICE = 1;

interface PeriodValues {
  readonly tesKwh: string | null;
  readonly tes180Kwh: string | null;
  readonly tes210Kwh: string | null;
  readonly ratioOut: string | null;
  readonly tesX: Exact | null;
  readonly tes180X: Exact | null;
  readonly tes210X: Exact | null;
}

interface TevValues {
  readonly tevX: Exact;
  readonly thresholdX: Exact;
  readonly tevKwh: string | null;
  readonly thresholdKwh: string | null;
}

// Exact values (native fixed point, see Exact in decimal.ts) and their output strings; a day
// without a covering period has none of them.
export interface TargetValues extends PeriodValues {
  readonly periodId: number;
  readonly sourceKind: string;
  readonly sourceReference: string | null;
  readonly tevX: Exact | null;
  readonly tevThresholdX: Exact | null;
  readonly tevKwh: string | null;
  readonly tevThresholdKwh: string | null;
  readonly tevObservedDate: string | null;
  readonly tevStale: boolean;
}

const periodValues = (target: TargetInput): PeriodValues => {
  const cost = target.deviceCost;
  const tesX = exactOrNull(target.tesKwh);
  // Derived from the device cost only, never from tes_kwh nor from each other (rules.md §5).
  const tes180X = cost === null ? null : exactQuotient(cost, 180 * ELECTRICITY_PRICE);
  const tes210X = cost === null ? null : exactQuotient(cost, 210 * ELECTRICITY_PRICE);
  return {
    tesKwh: exactOut(tesX),
    tes180Kwh: exactOut(tes180X),
    tes210Kwh: exactOut(tes210X),
    ratioOut: fmtInput(target.ratio),
    tesX,
    tes180X,
    tes210X,
  };
};

// Periods and TEV observations repeat over many days, so their values are computed once per
// distinct input within one call.
export const targetResolver = () => {
  const periods = new Map<string, PeriodValues>();
  const tevs = new Map<string, TevValues>();
  // Consecutive days mostly share one observation: its epoch day is kept for the next day.
  let lastObserved = "";
  let lastObservedDay = 0;
  // The previous day's answer: the next day with the same target, TEV and staleness (a run of
  // days in one period) shares it.
  let last: {
    target: TargetInput;
    observed: TevInput | null;
    stale: boolean;
    // The first date on which the observation is stale (none without one).
    staleFrom: string;
    values: TargetValues;
  } | undefined;
  return (date: string, target: TargetInput | null, tev: TevInput | null): TargetValues | null => {
    // No covering period: every target value of the day is null, TEV included, so the targets
    // and metrics endpoints agree (rules.md §5 "every value null").
    if (target === null) return null;
    if (last !== undefined && last.target === target) {
      const observedNow = tev !== null && tev.observedDate <= date ? tev : null;
      if (
        last.observed === observedNow &&
        (observedNow !== null && date >= last.staleFrom) === last.stale
      ) {
        return last.values;
      }
    }
    const periodKey = `${target.tesKwh}|${target.deviceCost}|${target.ratio}`;
    let period = periods.get(periodKey);
    if (period === undefined) {
      period = periodValues(target);
      periods.set(periodKey, period);
    }
    // A TEV is never back-filled before the day it was observed (rules.md §5).
    const observed = tev !== null && tev.observedDate <= date ? tev : null;
    let tevValues: TevValues | null = null;
    let observedDay = 0;
    if (observed !== null) {
      if (observed.observedDate !== lastObserved) {
        lastObserved = observed.observedDate;
        lastObservedDay = dayIndex(lastObserved);
      }
      observedDay = lastObservedDay;
      const tevKey = `${observed.value}|${target.ratio}`;
      tevValues = tevs.get(tevKey) ?? null;
      if (tevValues === null) {
        const tevX = exact(observed.value);
        const thresholdX = exactTimes(tevX, target.ratio);
        tevValues = {
          tevX,
          thresholdX,
          tevKwh: exactOut(tevX),
          thresholdKwh: exactOut(thresholdX),
        };
        tevs.set(tevKey, tevValues);
      }
    }
    const values: TargetValues = {
      tesKwh: period.tesKwh,
      tes180Kwh: period.tes180Kwh,
      tes210Kwh: period.tes210Kwh,
      ratioOut: period.ratioOut,
      tesX: period.tesX,
      tes180X: period.tes180X,
      tes210X: period.tes210X,
      periodId: target.periodId,
      sourceKind: target.sourceKind,
      sourceReference: target.sourceReference,
      tevX: tevValues?.tevX ?? null,
      tevThresholdX: tevValues?.thresholdX ?? null,
      tevKwh: tevValues?.tevKwh ?? null,
      tevThresholdKwh: tevValues?.thresholdKwh ?? null,
      tevObservedDate: observed?.observedDate ?? null,
      tevStale: observed !== null && dayIndex(date) - observedDay > TEV_STALE_AFTER_DAYS,
    };
    last = {
      target,
      observed,
      stale: values.tevStale,
      staleFrom: observed === null ? "" : addDays(observed.observedDate, TEV_STALE_AFTER_DAYS + 1),
      values,
    };
    return values;
  };
};

const noTarget = (date: string): TargetDayOut => ({
  business_date: date,
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

export const computeTargets = (days: ReadonlyArray<TargetDayInput>): TargetsResult => {
  const resolve = targetResolver();
  const out = days.map((day): TargetDayOut => {
    const t = resolve(day.date, day.target, day.tev);
    if (t === null) return noTarget(day.date);
    return {
      business_date: day.date,
      status: "AVAILABLE",
      target_period_id: t.periodId,
      tes_kwh: t.tesKwh,
      tes_180_kwh: t.tes180Kwh,
      tes_210_kwh: t.tes210Kwh,
      tev_kwh: t.tevKwh,
      effective_tev_warning_ratio: t.ratioOut,
      tev_latest_observed_date: t.tevObservedDate,
      source_kind: t.sourceKind,
      source_reference: t.sourceReference,
      evaluation_status: "NOT_EVALUATED",
    };
  });
  const available = out.filter((d) => d.status === "AVAILABLE").length;
  return {
    days: out,
    summary: {
      requested_days: out.length,
      available_days: available,
      missing_days: out.length - available,
    },
  };
};
