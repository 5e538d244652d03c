// A day's next state (src/energy/day_after.ts): the rule's cases, and its SQL, evaluated by the
// database over many days at once, giving what the TypeScript rule gives for each.
import assert from "node:assert/strict";
import { PGlite } from "@electric-sql/pglite";
import { FastCheck as fc } from "effect";
import {
  dayAfter,
  dayAfterColumns,
  dayAfterFacts,
  type DayFacts,
  factsOf,
  NO_DAY,
  NO_DAY_SQL,
  type Revision,
  type RevisionSql,
} from "../src/energy/day_after.ts";

const day: DayFacts = {
  legacyKwh: "10.5000",
  cleanedKwh: "12.0000",
  cleanedSourceKind: "CLEANED",
  isVoid: false,
  provisional: 1,
  provisionalAt: "2026-03-01 08:00:00+00",
};

Deno.test("a value replaces the cleaned value and its source, and clears a provisional mark", () => {
  assert.deepStrictEqual(
    dayAfter(day, { kind: "cleaned", void: false, kwh: "13.0000", sourceKind: "MANUAL_UPLOAD" }),
    {
      legacyKwh: "10.5000",
      cleanedKwh: "13.0000",
      cleanedSourceKind: "MANUAL_UPLOAD",
      isVoid: false,
      provisional: 0,
      provisionalAt: null,
    },
  );
  // A void day gets a value back.
  assert.equal(
    dayAfter({ ...day, isVoid: true }, {
      kind: "cleaned",
      void: false,
      kwh: "1.0000",
      sourceKind: "MANUAL_UPLOAD",
    }).isVoid,
    false,
  );
});

Deno.test("a void keeps the cleaned value, its source and the provisional mark", () => {
  assert.deepStrictEqual(
    dayAfter(day, { kind: "cleaned", void: true, kwh: null, sourceKind: "MANUAL_UPLOAD" }),
    { ...day, isVoid: true },
  );
  assert.deepStrictEqual(
    dayAfter(NO_DAY, { kind: "cleaned", void: true, kwh: null, sourceKind: "CLEANED" }),
    { ...NO_DAY, isVoid: true },
  );
});

Deno.test("the legacy value changes only the legacy value; a stated mark is set either way", () => {
  assert.deepStrictEqual(dayAfter(day, { kind: "legacy", kwh: "9.0000" }), {
    ...day,
    legacyKwh: "9.0000",
  });
  assert.deepStrictEqual(dayAfter(NO_DAY, { kind: "legacy", kwh: "9.0000", provisionalAt: null }), {
    ...NO_DAY,
    legacyKwh: "9.0000",
  });
  const mark = "2026-03-02 00:00:00+00";
  for (
    const revision of [
      { kind: "legacy", kwh: "1.0000", provisionalAt: mark },
      { kind: "cleaned", void: true, kwh: null, sourceKind: "CLEANED", provisionalAt: mark },
      { kind: "cleaned", void: false, kwh: "2.0000", sourceKind: "CLEANED", provisionalAt: mark },
    ] satisfies ReadonlyArray<Revision>
  ) {
    const after = dayAfter(NO_DAY, revision);
    assert.deepStrictEqual([after.provisional, after.provisionalAt], [1, mark]);
  }
  const cleared = dayAfter(day, {
    kind: "cleaned",
    void: true,
    kwh: null,
    sourceKind: "CLEANED",
    provisionalAt: null,
  });
  assert.deepStrictEqual([cleared.provisional, cleared.provisionalAt], [0, null]);
});

// --- The SQL gives what the rule gives.

const kwh = fc.option(
  fc.integer({ min: 0, max: 99_999_999 }).map((n) => (n / 10_000).toFixed(4)),
  { nil: null },
);
const instant = fc.option(
  fc.integer({ min: 1, max: 28 }).map((d) => `2026-02-${String(d).padStart(2, "0")} 06:30:00+00`),
  { nil: null },
);
const sourceKind = fc.constantFrom("CLEANED", "MANUAL_UPLOAD");
const facts: fc.Arbitrary<DayFacts> = fc.record({
  legacyKwh: kwh,
  cleanedKwh: kwh,
  cleanedSourceKind: fc.option(sourceKind, { nil: null }),
  isVoid: fc.boolean(),
  provisional: fc.constantFrom(0, 1),
  provisionalAt: instant,
});

// One case: a day (none: NULLs, as a relation holds them for a day without a row) and a revision.
const kase = fc.record({
  before: fc.option(facts, { nil: null }),
  void: fc.boolean(),
  kwh,
  sourceKind,
  mark: instant,
});
type Case = typeof kase extends fc.Arbitrary<infer A> ? A : never;

const db = await PGlite.create();

// The day after each case's revision, as the database computes it for all the cases in one
// statement (timestamps and decimals as their text).
const inDatabase = async (
  cases: ReadonlyArray<Case>,
  revision: RevisionSql,
  before: "relation" | "no day",
): Promise<Array<DayFacts>> => {
  const input = JSON.stringify(cases.map((c, i) => ({
    i,
    legacy_kwh: c.before?.legacyKwh ?? null,
    cleaned_kwh: c.before?.cleanedKwh ?? null,
    cleaned_source_kind: c.before?.cleanedSourceKind ?? null,
    is_void: c.before?.isVoid ?? null,
    provisional: c.before?.provisional ?? null,
    provisional_at: c.before?.provisionalAt ?? null,
    void: c.void,
    kwh: c.kwh,
    source_kind: c.sourceKind,
    mark: c.mark,
  })));
  const { rows } = await db.query<Record<string, unknown>>(
    `SELECT a.legacy_kwh::text AS "legacyKwh", a.cleaned_kwh::text AS "cleanedKwh",
       a.cleaned_source_kind AS "cleanedSourceKind", a.is_void AS "isVoid",
       a.provisional::int AS provisional, a.provisional_at::text AS "provisionalAt"
     FROM json_to_recordset($1::json) AS b(i int, legacy_kwh numeric, cleaned_kwh numeric,
       cleaned_source_kind text, is_void boolean, provisional smallint,
       provisional_at timestamptz, void boolean, kwh numeric, source_kind text,
       mark timestamptz)
     CROSS JOIN LATERAL (
       SELECT ${dayAfterColumns(before === "relation" ? factsOf("b") : NO_DAY_SQL, revision)}
     ) a
     ORDER BY b.i`,
    [input],
  );
  return rows as unknown as Array<DayFacts>;
};

const revisionOf = (c: Case, shape: Shape): Revision =>
  shape.kind === "legacy"
    ? { kind: "legacy", kwh: c.kwh, ...(shape.marked ? { provisionalAt: c.mark } : {}) }
    : {
      kind: "cleaned",
      void: c.void,
      kwh: c.kwh,
      sourceKind: c.sourceKind,
      ...(shape.marked ? { provisionalAt: c.mark } : {}),
    };

interface Shape {
  readonly kind: "legacy" | "cleaned";
  readonly marked: boolean;
}

const revisionSql = (shape: Shape): RevisionSql => {
  const mark = shape.marked ? { provisionalAt: "b.mark" } : {};
  return shape.kind === "legacy"
    ? { kind: "legacy", kwh: "b.kwh", ...mark }
    : { kind: "cleaned", void: "b.void", kwh: "b.kwh", sourceKind: "b.source_kind", ...mark };
};

const SHAPES: ReadonlyArray<Shape> = [
  { kind: "cleaned", marked: false },
  { kind: "cleaned", marked: true },
  { kind: "legacy", marked: false },
  { kind: "legacy", marked: true },
];

Deno.test("the SQL rule gives the TypeScript rule's day for every day and revision", async () => {
  await fc.assert(
    fc.asyncProperty(fc.array(kase, { minLength: 1, maxLength: 60 }), async (cases) => {
      for (const shape of SHAPES) {
        // A legacy revision is only stated over a day that exists or no day at all.
        const given = shape.kind === "legacy"
          ? cases.map((c) => ({ ...c, before: c.before ?? day }))
          : cases;
        const found = await inDatabase(given, revisionSql(shape), "relation");
        const expected = given.map((c) => dayAfter(c.before ?? NO_DAY, revisionOf(c, shape)));
        assert.deepStrictEqual(found, expected, JSON.stringify(shape));
        const fromNoDay = await inDatabase(given, revisionSql(shape), "no day");
        assert.deepStrictEqual(
          fromNoDay,
          given.map((c) => dayAfter(NO_DAY, revisionOf(c, shape))),
          `from no day: ${JSON.stringify(shape)}`,
        );
      }
    }),
    { numRuns: 60 },
  );
});

Deno.test("the snapshot's cleaned revision follows its legacy one", async () => {
  // The loader's two states of a day, as the loader states them.
  const legacy: RevisionSql = { kind: "legacy", kwh: "b.kwh", provisionalAt: "b.mark" };
  const after = dayAfterFacts(NO_DAY_SQL, legacy);
  const { rows } = await db.query<Record<string, unknown>>(
    `SELECT (${after.legacyKwh})::text AS legacy, ${after.cleanedKwh} AS cleaned,
       ${after.isVoid} AS void, ${after.provisional} AS provisional
     FROM (VALUES (1.5::numeric, '2026-01-01 00:00:00+00'::timestamptz)) AS b(kwh, mark)`,
  );
  assert.deepStrictEqual(rows, [{ legacy: "1.5", cleaned: null, void: false, provisional: 1 }]);
});

Deno.test("close the database", async () => {
  await db.close();
});
