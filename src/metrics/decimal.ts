// Exact decimal arithmetic for the metrics engine and its single output rounding (rules.md §1).
import { Decimal } from "decimal.js";

// A local clone so nothing else can change the global precision or rounding mode.
export const Dec = Decimal.clone({ precision: 60, rounding: Decimal.ROUND_HALF_UP });
export type Dec = InstanceType<typeof Dec>;

export const dec = (s: string): Dec => new Dec(s);

// Contract decimal strings carry no sign (rules.md §1): a negative value has no representation
// and is returned as null; callers record why (NEGATIVE_SAVINGS).
export const fmt = (d: Dec | null): string | null =>
  d === null || d.lt(0) ? null : d.toFixed(4, Decimal.ROUND_HALF_UP);

const PLAIN = /^(0|[1-9]\d*)(?:\.(\d{1,4}))?$/;
const OUTPUT_FORM = /^(?:0|[1-9]\d*)\.\d{4}$/;

// Output of an input string: one already in the output's form (4 decimals, as the stored days
// mostly are) is itself, one with fewer decimals only needs padding, which is exact and much
// cheaper than a decimal round-trip; anything else goes through fmt.
export const fmtInput = (s: string | null): string | null => {
  if (s === null) return null;
  if (OUTPUT_FORM.test(s)) return s;
  const m = PLAIN.exec(s);
  return m === null ? fmt(dec(s)) : `${m[1]}.${(m[2] ?? "").padEnd(4, "0")}`;
};

// Exact fixed point for the engine: a quantity v is the BigInt v x 10^8 x SCALE_N. SCALE_N =
// lcm(1..31) is divisible by every baseline month's day count and by 180 and 210, so EBA means and
// TES quotients are whole and every sum, difference and comparison is exact; inputs carry at most 4
// decimals (device costs a few more), so parsing is exact and a TEV x ratio product stays integral.
// The one division is at output, with an exact half-up remainder test (rules.md §1 "computed
// exactly ... rounded only at output").
const SCALE_N = 72201776446800n;
const FRACTION_DIGITS = 8;
const POW10 = Array.from({ length: FRACTION_DIGITS + 1 }, (_, i) => 10n ** BigInt(i));
const FRACTION = POW10[FRACTION_DIGITS];
const UNITS_PER_OUTPUT = SCALE_N * 10_000n;
const FIXED = /^(-?)(\d+)(?:\.(\d*))?$/;

/** An exact value: v x 10^8 x SCALE. */
export type Exact = bigint;

// s x 10^8, exactly; throws when s has a nonzero digit beyond the 8th decimal.
const fixed = (s: string): bigint => {
  const m = FIXED.exec(s);
  if (m === null) {
    const d = new Dec(s).times(FRACTION.toString());
    if (!d.isInteger()) throw new Error(`${s} has more than ${FRACTION_DIGITS} decimals`);
    return BigInt(d.toFixed(0));
  }
  let frac = m[3] ?? "";
  if (frac.length > FRACTION_DIGITS) {
    if (!/^0*$/.test(frac.slice(FRACTION_DIGITS))) {
      throw new Error(`${s} has more than ${FRACTION_DIGITS} decimals`);
    }
    frac = frac.slice(0, FRACTION_DIGITS);
  }
  const v = BigInt(m[2] + frac) * POW10[FRACTION_DIGITS - frac.length];
  return m[1] === "-" ? -v : v;
};

// SCALE x 10^(8 - d): the factor of an input's digits when it has d decimals.
const DIGIT_FACTOR = POW10.map((_, d) => POW10[FRACTION_DIGITS - d] * SCALE_N);
const DIGITS = /^\d+$/;

// The common case, a plain unsigned decimal of at most 15 digits and 8 decimals, read digit by
// digit into a double (exact below 2^53) and scaled once as a BigInt; a longer one by string split
// and a BigInt parse. Anything else takes the general path.
export const exact = (s: string): Exact => {
  if (s.length <= 16) {
    let n = 0;
    let dot = -1;
    let i = 0;
    for (; i < s.length; i++) {
      const c = s.charCodeAt(i);
      if (c >= 48 && c <= 57) n = n * 10 + (c - 48);
      else if (c === 46 && dot < 0 && i > 0) dot = i;
      else break;
    }
    const decimals = dot < 0 ? 0 : s.length - dot - 1;
    const digits = dot < 0 ? s.length : s.length - 1;
    if (i === s.length && i > 0 && digits <= 15 && decimals <= FRACTION_DIGITS) {
      return BigInt(n) * DIGIT_FACTOR[decimals];
    }
  }
  const dot = s.indexOf(".");
  const digits = dot < 0 ? s : s.slice(0, dot) + s.slice(dot + 1);
  const decimals = dot < 0 ? 0 : s.length - dot - 1;
  if (dot === 0 || decimals > FRACTION_DIGITS || !DIGITS.test(digits)) return fixed(s) * SCALE_N;
  const n = digits.length <= 15 ? BigInt(Number(digits)) : BigInt(digits);
  return n * DIGIT_FACTOR[decimals];
};

export const exactOrNull = (s: string | null): Exact | null => s === null ? null : exact(s);

export const exactQuotient = (numerator: string, divisor: number): Exact => {
  if (!Number.isInteger(divisor) || divisor < 1 || SCALE_N % BigInt(divisor) !== 0n) {
    throw new Error(`divisor ${divisor} does not divide the exact scale`);
  }
  return fixed(numerator) * (SCALE_N / BigInt(divisor));
};

// x times the plain factor s, exactly.
export const exactTimes = (x: Exact, s: string): Exact => {
  const p = x * fixed(s);
  if (p % FRACTION !== 0n) throw new Error(`product with ${s} is not exact`);
  return p / FRACTION;
};

// The decimal.js value (v x SCALE) of an exact value, for callers that want one.
export const toDec = (x: Exact | null): Dec | null =>
  x === null ? null : new Dec(x.toString()).div(FRACTION.toString());

// num / den (num >= 0, den > 0) half-up to 4 decimals by an exact remainder test.
const quotient4N = (num: bigint, den: bigint): string => {
  let q = num / den;
  if ((num - q * den) * 2n >= den) q += 1n;
  const digits = q.toString().padStart(5, "0");
  return `${digits.slice(0, -4)}.${digits.slice(-4)}`;
};

export const exactOut = (x: Exact | null): string | null =>
  x === null || x < 0n ? null : quotient4N(x, UNITS_PER_OUTPUT);

// x / n (x >= 0, n a whole count above 0), half-up to 4 decimals: a mean of exact values.
export const exactRatioOut = (x: Exact, n: number): string | null =>
  x < 0n ? null : quotient4N(x, UNITS_PER_OUTPUT * BigInt(n));

// part / whole x 100 of two exact quantities; null when whole is 0 (ZERO_BASELINE).
export const exactPercentOut = (part: Exact, whole: Exact): string | null =>
  whole === 0n || part < 0n ? null : quotient4N(part * 1_000_000n, whole);

export const addExact = (total: Exact | null, v: Exact | null): Exact | null =>
  v === null ? total : total === null ? v : total + v;
