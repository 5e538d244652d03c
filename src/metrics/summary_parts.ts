// The exact parts a metric summary is made of (rules.md §7): folded from the engine's computed
// days, added across sets of days (another range, other stores), and finished once into the
// summary. Every sum is of exact values, rounded once; AER is the summed savings over the summed
// matched baseline, never an average of ratios; a pass flag compares the summed parts.
import { addExact, type Exact, exactOut, exactPercentOut } from "./decimal.ts";
import type { ComputedDay, MetricSummaryOut } from "./engine.ts";

interface TargetParts {
  // The target over the matched days that have it; savings and target over the settled ones.
  readonly sum: Exact | null;
  readonly settledSavings: Exact | null;
  readonly settledSum: Exact | null;
}

export interface SummaryParts {
  readonly requestedDays: number;
  readonly actualDays: number;
  readonly ebaDays: number;
  readonly matchedDays: number;
  readonly savingsDays: number;
  readonly actual: Exact | null;
  readonly matchedEba: Exact | null;
  readonly matchedActual: Exact | null;
  readonly settledEba: Exact | null;
  readonly settledActual: Exact | null;
  readonly tevActual: Exact | null;
  readonly tevThreshold: Exact | null;
  readonly tes: TargetParts;
  readonly tes180: TargetParts;
  readonly tes210: TargetParts;
}

const NO_TARGET: TargetParts = { sum: null, settledSavings: null, settledSum: null };

export const NO_PARTS: SummaryParts = {
  requestedDays: 0,
  actualDays: 0,
  ebaDays: 0,
  matchedDays: 0,
  savingsDays: 0,
  actual: null,
  matchedEba: null,
  matchedActual: null,
  settledEba: null,
  settledActual: null,
  tevActual: null,
  tevThreshold: null,
  tes: NO_TARGET,
  tes180: NO_TARGET,
  tes210: NO_TARGET,
};

// A sum of values that come in runs of the same value (a month's EBA, a period's target): a run
// is counted and added once, as value x count, so a day of a run adds no BigInt.
class RunSum {
  #total: Exact | null = null;
  #value: Exact | null = null;
  #count = 0;

  add(v: Exact | null) {
    if (v === null) return;
    if (v === this.#value) {
      this.#count++;
      return;
    }
    this.#flush();
    this.#value = v;
    this.#count = 1;
  }

  #flush() {
    if (this.#value === null) return;
    this.#total = addExact(
      this.#total,
      this.#count === 1 ? this.#value : this.#value * BigInt(this.#count),
    );
    this.#value = null;
  }

  get total(): Exact | null {
    this.#flush();
    return this.#total;
  }
}

// A target over the matched days that have it, and over the settled ones.
interface TargetSums {
  readonly sum: RunSum;
  readonly settled: RunSum;
}

const targetSums = (): TargetSums => ({ sum: new RunSum(), settled: new RunSum() });

// The three savings targets, as bits of a day's set of the targets it has.
const TES = 1, TES_180 = 2, TES_210 = 4;

// The parts of a set of computed days, in one pass over them. A settled matched day's savings
// are added once, to the sum of the days with the same set of targets; each target's savings sum
// is the sum over the sets that hold it.
export const partsOf = (days: ReadonlyArray<ComputedDay>): SummaryParts => {
  let actualDays = 0, ebaDays = 0, matchedDays = 0, savingsDays = 0;
  let actual: Exact | null = null;
  let matchedActual: Exact | null = null, settledActual: Exact | null = null;
  let tevActual: Exact | null = null;
  const matchedEba = new RunSum(), settledEba = new RunSum(), tevThreshold = new RunSum();
  const tes = targetSums(), tes180 = targetSums(), tes210 = targetSums();
  const savingsBySet: Array<Exact | null> = [null, null, null, null, null, null, null, null];
  for (const d of days) {
    if (d.actualX !== null) actualDays++;
    if (d.ebaX !== null) ebaDays++;
    actual = addExact(actual, d.actualX);
    if (d.passes.tev !== null) {
      tevActual = addExact(tevActual, d.actualX);
      tevThreshold.add(d.tevThresholdX);
    }
    if (!d.matched) continue;
    matchedDays++;
    if (d.savingsX !== null && d.savingsX >= 0n) savingsDays++;
    matchedEba.add(d.ebaX);
    matchedActual = addExact(matchedActual, d.actualX);
    if (d.settled) {
      settledEba.add(d.ebaX);
      settledActual = addExact(settledActual, d.actualX);
    }
    const set = (d.tesX === null ? 0 : TES) | (d.tes180X === null ? 0 : TES_180) |
      (d.tes210X === null ? 0 : TES_210);
    tes.sum.add(d.tesX);
    tes180.sum.add(d.tes180X);
    tes210.sum.add(d.tes210X);
    if (d.settled) {
      tes.settled.add(d.tesX);
      tes180.settled.add(d.tes180X);
      tes210.settled.add(d.tes210X);
      if (set !== 0) savingsBySet[set] = addExact(savingsBySet[set], d.savingsX);
    }
  }
  const targetParts = (bit: number, sums: TargetSums): TargetParts => {
    let settledSavings: Exact | null = null;
    for (let set = 1; set < 8; set++) {
      if ((set & bit) !== 0) settledSavings = addExact(settledSavings, savingsBySet[set]);
    }
    return { sum: sums.sum.total, settledSavings, settledSum: sums.settled.total };
  };
  return {
    requestedDays: days.length,
    actualDays,
    ebaDays,
    matchedDays,
    savingsDays,
    actual,
    matchedEba: matchedEba.total,
    matchedActual,
    settledEba: settledEba.total,
    settledActual,
    tevActual,
    tevThreshold: tevThreshold.total,
    tes: targetParts(TES, tes),
    tes180: targetParts(TES_180, tes180),
    tes210: targetParts(TES_210, tes210),
  };
};

const addTarget = (a: TargetParts, b: TargetParts): TargetParts => ({
  sum: addExact(a.sum, b.sum),
  settledSavings: addExact(a.settledSavings, b.settledSavings),
  settledSum: addExact(a.settledSum, b.settledSum),
});

// The parts of two sets of days taken together (a sum over no contributing day stays null).
export const addParts = (a: SummaryParts, b: SummaryParts): SummaryParts => ({
  requestedDays: a.requestedDays + b.requestedDays,
  actualDays: a.actualDays + b.actualDays,
  ebaDays: a.ebaDays + b.ebaDays,
  matchedDays: a.matchedDays + b.matchedDays,
  savingsDays: a.savingsDays + b.savingsDays,
  actual: addExact(a.actual, b.actual),
  matchedEba: addExact(a.matchedEba, b.matchedEba),
  matchedActual: addExact(a.matchedActual, b.matchedActual),
  settledEba: addExact(a.settledEba, b.settledEba),
  settledActual: addExact(a.settledActual, b.settledActual),
  tevActual: addExact(a.tevActual, b.tevActual),
  tevThreshold: addExact(a.tevThreshold, b.tevThreshold),
  tes: addTarget(a.tes, b.tes),
  tes180: addTarget(a.tes180, b.tes180),
  tes210: addTarget(a.tes210, b.tes210),
});

const lte = (x: Exact | null, y: Exact | null) => x === null || y === null ? null : x <= y;
const gte = (x: Exact | null, y: Exact | null) => x === null || y === null ? null : x >= y;

// The summary of the parts.
export const summaryOf = (p: SummaryParts): MetricSummaryOut => {
  const aes = p.matchedEba !== null && p.matchedActual !== null
    ? p.matchedEba - p.matchedActual
    : null;
  const aer = aes !== null && p.matchedEba !== null && aes >= 0n
    ? exactPercentOut(aes, p.matchedEba)
    : null;
  return {
    requested_days: p.requestedDays,
    actual_days: p.actualDays,
    eba_days: p.ebaDays,
    matched_days: p.matchedDays,
    savings_days: p.savingsDays,
    actual_kwh: exactOut(p.actual),
    matched_eba_kwh: exactOut(p.matchedEba),
    aes_kwh: exactOut(aes),
    aer_percent: aer,
    tes_kwh: exactOut(p.tes.sum),
    tes_180_kwh: exactOut(p.tes180.sum),
    tes_210_kwh: exactOut(p.tes210.sum),
    // The thresholds are the TES values themselves (rules.md §6), so their sums coincide.
    tes_threshold_kwh: exactOut(p.tes.sum),
    tes_180_threshold_kwh: exactOut(p.tes180.sum),
    tes_210_threshold_kwh: exactOut(p.tes210.sum),
    eba_pass: lte(p.settledActual, p.settledEba),
    tes_pass: gte(p.tes.settledSavings, p.tes.settledSum),
    tes_180_pass: gte(p.tes180.settledSavings, p.tes180.settledSum),
    tes_210_pass: gte(p.tes210.settledSavings, p.tes210.settledSum),
    tev_pass: lte(p.tevActual, p.tevThreshold),
    complete_for_savings: p.matchedDays === p.requestedDays,
  };
};
