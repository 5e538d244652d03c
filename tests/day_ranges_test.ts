// The ranges a preview reads the current days of its store-days by: every key covered, and never
// more days read than twice the keys, whatever dates a file names.
import assert from "node:assert/strict";
import { FastCheck as fc } from "effect";
import { addDays, dayIndex } from "../src/domain/range.ts";
import { dayRanges } from "../src/imports/import_repo.ts";

const key = fc.record({
  scopeId: fc.integer({ min: 1, max: 6 }),
  // Mostly close together (ranges), sometimes far apart (lookups).
  date: fc.oneof(fc.integer({ min: 0, max: 40 }), fc.integer({ min: 0, max: 900 })).map((n) =>
    addDays("2025-01-01", n)
  ),
});

// The days the ranges of one store cover.
const covered = (ranges: ReturnType<typeof dayRanges>, scopeId: number) =>
  ranges.scopeIds.reduce(
    (n, s, i) => s === scopeId ? n + dayIndex(ranges.lasts[i]) - dayIndex(ranges.firsts[i]) + 1 : n,
    0,
  );

Deno.test("every key lies in a range of its store, and a store's ranges hold at most twice its keys", () => {
  fc.assert(
    fc.property(fc.array(key, { maxLength: 300 }), (keys) => {
      const ranges = dayRanges(keys);
      for (const k of keys) {
        assert.ok(
          ranges.scopeIds.some((s, i) =>
            s === k.scopeId && ranges.firsts[i] <= k.date && k.date <= ranges.lasts[i]
          ),
          `${k.scopeId} ${k.date} is not covered`,
        );
      }
      for (const scopeId of new Set(keys.map((k) => k.scopeId))) {
        const asked = keys.filter((k) => k.scopeId === scopeId).length;
        assert.ok(covered(ranges, scopeId) <= 2 * asked, `store ${scopeId}: more than twice`);
      }
    }),
    { numRuns: 300 },
  );
});

Deno.test("a store's consecutive days are one range; two far-apart days stay two lookups", () => {
  const grid = [1, 2].flatMap((scopeId) =>
    Array.from({ length: 100 }, (_, i) => ({ scopeId, date: addDays("2026-06-01", i) }))
  );
  assert.deepEqual(dayRanges(grid), {
    scopeIds: [1, 2],
    firsts: ["2026-06-01", "2026-06-01"],
    lasts: ["2026-09-08", "2026-09-08"],
  });
  assert.deepEqual(
    dayRanges([{ scopeId: 3, date: "2025-01-01" }, { scopeId: 3, date: "2026-11-20" }]),
    { scopeIds: [3, 3], firsts: ["2025-01-01", "2026-11-20"], lasts: ["2025-01-01", "2026-11-20"] },
  );
});
