// A portfolio store's days text and month chunks, as the inputs statement writes them, read back
// by decodeStore: every day of the range with its value, status and provisional instant, whatever
// the items and their order, and whatever part of a chunk's month the range covers.
import assert from "node:assert/strict";
import { FastCheck as fc } from "effect";
import { datesOf } from "../src/domain/range.ts";
import { decodeStore, type StoreRow } from "../src/portfolio/portfolio_compute.ts";

const dates = datesOf("2026-01-01", "2026-12-31");

const NO_FACTS = JSON.stringify({ stages: [], periods: [], tev: [], baseline: [] });

const rowOf = (days: string | null, months: string | null = null): StoreRow => ({
  store_id: 1,
  scope_id: 1,
  name: "Store",
  store_code: "S1",
  brand_id: 1,
  brand_name: "Brand",
  city: null,
  timezone: "Asia/Shanghai",
  months,
  days,
  facts: NO_FACTS,
  evidence: null,
  version: "v",
  token: null,
  carry_until: null,
});

type Stored =
  | { readonly kind: "AVAILABLE"; readonly kwh: string }
  | { readonly kind: "VOID" | "NO_DATA" };

const storedArb: fc.Arbitrary<Stored> = fc.oneof(
  fc.record({
    kind: fc.constant("AVAILABLE" as const),
    kwh: fc.oneof(
      fc.constantFrom("0", "5", "0.0000", "12.3400", "100000.0001"),
      fc.tuple(fc.nat(99999), fc.nat(9999)).map(([w, f]) => `${w}.${String(f).padStart(4, "0")}`),
    ),
  }),
  fc.record({ kind: fc.constantFrom("VOID" as const, "NO_DATA" as const) }),
);

const dayArb = fc.record({
  index: fc.nat(dates.length - 1),
  stored: storedArb,
  provisionalAt: fc.option(fc.constantFrom("2026-03-04 09:15", "2026-12-31 23:45"), {
    nil: null,
  }),
});

Deno.test("decodeStore reads every stored day of the text, in any order, and only those", () => {
  fc.assert(
    fc.property(
      fc.uniqueArray(dayArb, { selector: (d) => d.index, maxLength: 60 }),
      (days) => {
        const text = days.map((d) =>
          `${d.index}|${
            d.stored.kind === "AVAILABLE" ? d.stored.kwh : d.stored.kind === "VOID" ? "V" : "N"
          }|${d.provisionalAt ?? ""}`
        ).join(";");
        const decoded = decodeStore(rowOf(days.length === 0 ? null : text), dates);
        const byIndex = new Map(days.map((d) => [d.index, d]));
        assert.equal(decoded.energy.length, dates.length);
        decoded.energy.forEach((e, i) => {
          const d = byIndex.get(i);
          assert.equal(e.date, dates[i]);
          assert.equal(e.status, d?.stored.kind ?? "NO_DATA");
          assert.equal(e.servedKwh, d?.stored.kind === "AVAILABLE" ? d.stored.kwh : null);
          assert.equal(decoded.days[i].actual, e.servedKwh);
          assert.equal(decoded.days[i].provisional, d?.provisionalAt == null ? 0 : 1);
          assert.equal(decoded.days[i].provisionalAt, d?.provisionalAt ?? null);
        });
        assert.equal(decoded.provisionalDays, days.filter((d) => d.provisionalAt !== null).length);
      },
    ),
    { numRuns: 300 },
  );
});

// Calendar months of 2025-12 .. 2027-01: a chunk per month, each day with a letter and a value.
const MONTHS = Array.from({ length: 14 }, (_, i) => {
  const first = new Date(Date.UTC(2025, 11 + i, 1));
  const days = new Date(Date.UTC(first.getUTCFullYear(), first.getUTCMonth() + 1, 0)).getUTCDate();
  return { first: first.toISOString().slice(0, 10), days };
});

const dayNo = (date: string) => Date.parse(`${date}T00:00:00Z`) / 86_400_000;

Deno.test("decodeStore reads month chunks for the days of the range they cover, items over them", () => {
  fc.assert(
    fc.property(
      // The range: its first day within the first months, its length up to a year.
      fc.nat(30),
      fc.integer({ min: 1, max: 366 }),
      fc.array(storedArb, { minLength: 427, maxLength: 427 }),
      fc.uniqueArray(fc.nat(365), { maxLength: 8 }),
      (skip, length, stored, provisional) => {
        const start = new Date(Date.UTC(2026, 0, 1 + skip)).toISOString().slice(0, 10);
        const end = new Date(Date.UTC(2026, 0, skip + length)).toISOString().slice(0, 10);
        const range = datesOf(start, end);
        // Stored states by day after 2025-12-01; the chunks of the months the range touches.
        const origin = dayNo("2025-12-01");
        const chunks = MONTHS.filter((m) =>
          m.first <= end && dayNo(m.first) + m.days > dayNo(start)
        ).map((m) => {
          const from = dayNo(m.first) - origin;
          const own = stored.slice(from, from + m.days);
          const letters = own.map((d) => d.kind[0]).join("");
          const values = own.map((d) => d.kind === "AVAILABLE" ? d.kwh : "").join(",");
          return `${dayNo(m.first) - dayNo(start)}|${letters}|${values}`;
        });
        const shift = dayNo(start) - origin;
        const items = provisional.filter((i) => i < range.length).map((i) => {
          const d = stored[shift + i];
          return `${i}|${d.kind === "AVAILABLE" ? d.kwh : d.kind === "VOID" ? "V" : "N"}|` +
            "2026-12-31 23:45";
        });
        const decoded = decodeStore(
          rowOf(items.length === 0 ? null : items.join(";"), chunks.join(";")),
          range,
        );
        assert.equal(decoded.energy.length, range.length);
        decoded.energy.forEach((e, i) => {
          const d = stored[shift + i];
          assert.equal(e.date, range[i]);
          assert.equal(e.status, d.kind);
          assert.equal(e.servedKwh, d.kind === "AVAILABLE" ? d.kwh : null);
          assert.equal(decoded.days[i].provisional, provisional.includes(i) ? 1 : 0);
        });
        assert.equal(decoded.provisionalDays, items.length);
      },
    ),
    { numRuns: 200 },
  );
});
