// The engine's exact values read from decimal texts: every text the general decimal type reads the
// same way, the fast path's and the general path's alike; a text with more than 8 decimals or none
// at all is refused.
import assert from "node:assert/strict";
import { FastCheck as fc } from "effect";
import { Dec, dec, exact, fmt, fmtInput } from "../src/metrics/decimal.ts";

// lcm(1..31), the engine's scale.
const SCALE = new Dec("72201776446800");

// v x 10^8 x SCALE by decimal.js, or undefined where exact must refuse the text.
const reference = (s: string): bigint | undefined => {
  let d: InstanceType<typeof Dec>;
  try {
    d = new Dec(s);
  } catch {
    return undefined;
  }
  const units = d.times("100000000");
  return units.isInteger() ? BigInt(units.times(SCALE).toFixed(0)) : undefined;
};

const outcome = (s: string) => {
  try {
    return exact(s);
  } catch {
    return undefined;
  }
};

const digits = (max: number) =>
  fc.array(fc.constantFrom(..."0123456789"), { minLength: 0, maxLength: max }).map((a) =>
    a.join("")
  );

const decimalText = fc.oneof(
  fc.tuple(digits(20), fc.constantFrom("", "."), digits(10)).map(([w, dot, f]) =>
    `${w}${dot}${dot === "" ? "" : f}`
  ),
  fc.tuple(fc.constantFrom("-", "+", ""), digits(8), digits(9)).map(([sign, w, f]) =>
    `${sign}${w || "0"}.${f}`
  ),
  fc.constantFrom("", ".", "5.", ".5", "1e3", " 1", "1.2.3", "0000000000000009.5", "9".repeat(16)),
);

Deno.test("exact reads every plain decimal text as decimal.js does, and refuses the rest", () => {
  fc.assert(
    fc.property(decimalText, (s) => {
      const expected = reference(s);
      // A text decimal.js reads is refused only when it has digits past the 8th decimal.
      if (expected === undefined) assert.equal(outcome(s), undefined, s);
      else assert.equal(outcome(s), expected, s);
    }),
    { numRuns: 3000 },
  );
});

Deno.test("an input's output text is its value rounded half up to 4 decimals, whatever its form", () => {
  fc.assert(
    fc.property(decimalText, (s) => {
      let expected: string | null | undefined;
      try {
        expected = fmt(dec(s));
      } catch {
        expected = undefined;
      }
      if (expected !== undefined) assert.equal(fmtInput(s), expected, s);
    }),
    { numRuns: 3000 },
  );
  for (
    const [s, out] of [["99.1034", "99.1034"], ["0.5", "0.5000"], ["7", "7.0000"], [
      "1.00005",
      "1.0001",
    ]]
  ) {
    assert.equal(fmtInput(s), out, s);
  }
});
