// Exact decimal arithmetic for the metrics engine and its single output rounding (rules.md §1).
import { Decimal } from "decimal.js";

// A local clone so nothing else can change the global precision or rounding mode.
export const Dec = Decimal.clone({ precision: 60, rounding: Decimal.ROUND_HALF_UP });
export type Dec = InstanceType<typeof Dec>;

// Quantities are held exactly as value x SCALE. SCALE = lcm(1..31) is divisible by every
// baseline month's day count and by 180 and 210, so EBA means and TES quotients are finite
// decimals and every sum, difference and comparison is exact; the one division happens at
// output (rules.md §1 "computed exactly ... rounded only at output").
export const SCALE: Dec = new Dec("72201776446800");

export const dec = (s: string): Dec => new Dec(s);

export const scaled = (s: string): Dec => new Dec(s).times(SCALE);

export const scaledOrNull = (s: string | null): Dec | null => s === null ? null : scaled(s);

export const scaledQuotient = (numerator: string, divisor: number): Dec => {
  const factor = SCALE.div(divisor);
  if (!Number.isInteger(divisor) || divisor < 1 || !factor.isInteger()) {
    throw new Error(`divisor ${divisor} does not divide the exact scale`);
  }
  return new Dec(numerator).times(factor);
};

// Contract decimal strings carry no sign (rules.md §1): a negative value has no representation
// and is returned as null; callers record why (NEGATIVE_SAVINGS).
export const fmt = (d: Dec | null): string | null =>
  d === null || d.lt(0) ? null : d.toFixed(4, Decimal.ROUND_HALF_UP);

// num / den (num >= 0, den > 0) half-up to 4 decimals, decided by an exact remainder test: the
// quotient is never rounded before the output digit, and it avoids a 60-digit long division.
const quotient4 = (num: Dec, den: Dec): string => {
  const units = num.times(10_000);
  let q = units.divToInt(den);
  if (units.minus(q.times(den)).times(2).gte(den)) q = q.plus(1);
  const digits = q.toFixed(0).padStart(5, "0");
  return `${digits.slice(0, -4)}.${digits.slice(-4)}`;
};

export const out = (x: Dec | null): string | null =>
  x === null || x.lt(0) ? null : quotient4(x, SCALE);

// part / whole x 100 of two scaled quantities; null when whole is 0 (ZERO_BASELINE).
export const percentOut = (part: Dec, whole: Dec): string | null =>
  whole.isZero() || part.lt(0) ? null : quotient4(part.times(100), whole);

const PLAIN = /^(0|[1-9]\d*)(?:\.(\d{1,4}))?$/;

// Output of an input string: one with at most 4 decimals only needs padding, which is exact and
// much cheaper than a decimal round-trip; anything else goes through fmt.
export const fmtInput = (s: string | null): string | null => {
  if (s === null) return null;
  const m = PLAIN.exec(s);
  return m === null ? fmt(dec(s)) : `${m[1]}.${(m[2] ?? "").padEnd(4, "0")}`;
};

// A sum over no contributing value is null, never zero (rules.md §1).
export const add = (total: Dec | null, v: Dec | null): Dec | null =>
  v === null ? total : total === null ? v : total.plus(v);
