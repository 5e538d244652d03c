// Plausibility warnings of a preview's rows (docs/imports.md, "Plausibility warnings"): a value far
// from the store's own recent days, or a day dropping to zero. Pure and exact (decimal.js); they
// never block a commit, a clerk reads them before committing.
import { exact, exactOrNull, exactOut, exactRatioOut } from "../metrics/decimal.ts";
import type { ImportAction, PlausibilityCode } from "../domain/imports.ts";
import type { PlannedRow } from "./model.ts";
import { type Text, text as t } from "../domain/language.ts";

// The recent days of a row's day D: D-28 to D-1, of the same store, as they are served before the
// commit; at least 7 of them must have a value for the range rules to apply.
export const RECENT_DAYS = 28;
export const MIN_RECENT_DAYS = 7;
// "Far": more than 3 times the recent mean, or less than a third of it.
export const FAR_FACTOR = 3;

// The rows whose value a commit writes: their value is checked.
const CHECKED: ReadonlySet<ImportAction> = new Set<ImportAction>([
  "INSERT",
  "UPDATE",
  "RELINK",
  "RESTORE",
]);

// The store's recent days before a row's day: how many have a value, and the exact sum of those
// values (null when none has one). Their mean is compared without dividing.
export interface RecentLevel {
  readonly days: number;
  readonly total: string | null;
}

export interface PlausibilityWarning {
  readonly code: PlausibilityCode;
  readonly message: string;
  // The value written and what it is compared with, printed with 4 decimals.
  readonly value_kwh: string;
  readonly before_kwh: string | null;
  // The recent mean, rounded half-up to 4 decimals for display (the rule compares it exactly).
  readonly recent_mean_kwh: string | null;
  readonly recent_days: number;
}

// The facts of a warning, as a preview stores them: its text is made when it is read, in the
// reader's language (warningText).
export type PlausibilityFacts = Omit<PlausibilityWarning, "message">;

/**
 * A warning's text for people, from its facts and its row's day: kept warnings store their facts
 * (and the English text), and a read gives the text again in the request's language.
 */
export const warningText = (
  w: PlausibilityFacts,
  date: string,
): Text => {
  const n = w.recent_days;
  const over = t(
    `its ${n} days with a value among the ${RECENT_DAYS} days before ${date}`,
    `${date} 之前 ${RECENT_DAYS} 天中有值的 ${n} 天`,
  );
  const mean = w.recent_mean_kwh;
  switch (w.code) {
    case "DROP_TO_ZERO":
      return w.before_kwh !== null
        ? t(
          `0 kWh where ${date} now has ${w.before_kwh} kWh`,
          `${date} 现为 ${w.before_kwh} kWh，却填为 0 kWh`,
        )
        : t(
          `0 kWh where the store's mean is ${mean} kWh over ${over.en}`,
          `门店在${over.zh}的平均值为 ${mean} kWh，却填为 0 kWh`,
        );
    case "FAR_ABOVE_RECENT":
      return t(
        `${w.value_kwh} kWh is more than ${FAR_FACTOR} times the store's mean of ${mean} kWh ` +
          `over ${over.en}`,
        `${w.value_kwh} kWh 超过门店在${over.zh}平均值 ${mean} kWh 的 ${FAR_FACTOR} 倍`,
      );
    case "FAR_BELOW_RECENT":
      return t(
        `${w.value_kwh} kWh is less than a third of the store's mean of ${mean} kWh over ${over.en}`,
        `${w.value_kwh} kWh 不到门店在${over.zh}平均值 ${mean} kWh 的三分之一`,
      );
  }
};

export const isChecked = (planned: PlannedRow) =>
  CHECKED.has(planned.action) && planned.proposedKwh !== null;

/**
 * The warnings of one planned row, given its store's recent days (undefined: none read).
 *
 * - DROP_TO_ZERO: the value is 0 and the day serves a value above 0 now, or (the day serving none)
 *   the recent mean is above 0.
 * - FAR_ABOVE_RECENT: value > 3 x recent mean, that is value x n > 3 x sum over the n recent days.
 * - FAR_BELOW_RECENT: value > 0 and 3 x value < recent mean, that is 3 x value x n < sum.
 *
 * The range rules need MIN_RECENT_DAYS recent days with a value; a zero is only ever DROP_TO_ZERO.
 */
export const plausibility = (
  planned: PlannedRow,
  recent: RecentLevel | undefined,
): ReadonlyArray<PlausibilityFacts> => {
  if (!isChecked(planned)) return [];
  // Exact fixed-point values (metrics/decimal.ts): comparisons are integer ones.
  const value = exact(planned.proposedKwh!);
  const before = planned.beforeKwh === null || planned.beforeKwh.trim() === ""
    ? null
    : exact(planned.beforeKwh);
  const enough = recent !== undefined && recent.days >= MIN_RECENT_DAYS && recent.total !== null;
  const n = enough ? BigInt(recent.days) : 0n;
  const sum = enough ? exactOrNull(recent.total) : null;
  const warning = (code: PlausibilityCode): PlausibilityFacts => ({
    code,
    value_kwh: exactOut(value)!,
    before_kwh: before === null ? null : exactOut(before),
    recent_mean_kwh: sum === null ? null : exactRatioOut(sum, recent!.days),
    recent_days: recent?.days ?? 0,
  });
  if (value === 0n) {
    if (before !== null && before > 0n) return [warning("DROP_TO_ZERO")];
    if (before === null && sum !== null && sum > 0n) return [warning("DROP_TO_ZERO")];
    return [];
  }
  if (sum === null) return [];
  const factor = BigInt(FAR_FACTOR);
  if (value * n > sum * factor) return [warning("FAR_ABOVE_RECENT")];
  if (value * factor * n < sum) return [warning("FAR_BELOW_RECENT")];
  return [];
};
