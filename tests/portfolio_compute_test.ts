// A portfolio store's days text, as the inputs statement writes it, read back by decodeStore: every
// day of the range with its value, status and provisional instant, whatever the items and their
// order.
import assert from "node:assert/strict";
import { FastCheck as fc } from "effect";
import { datesOf, decodeStore, type StoreRow } from "../src/portfolio/portfolio_compute.ts";

const dates = datesOf("2026-01-01", "2026-12-31");

const NO_FACTS = JSON.stringify({ stages: [], periods: [], tev: [], baseline: [] });

const rowOf = (days: string | null): StoreRow => ({
  store_id: 1,
  scope_id: 1,
  name: "Store",
  store_code: "S1",
  brand_id: 1,
  brand_name: "Brand",
  city: null,
  timezone: "Asia/Shanghai",
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
