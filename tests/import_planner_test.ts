// Pure import planner: the rules.md §8 decision table, before/after fields, notes, counts and properties.
import assert from "node:assert/strict";
import { Decimal } from "decimal.js";
import { FastCheck as fc } from "effect";
import { ImportAction } from "../src/domain/imports.ts";
import type {
  CellValue,
  CurrentDay,
  NoteField,
  PlannedRow,
  ResolvedRow,
} from "../src/imports/model.ts";
import { CHANGING_ACTIONS } from "../src/domain/imports.ts";
import {
  countActions,
  decideAction,
  planImport,
  sameKwh,
  SOURCE_KIND_UPLOAD,
  UPLOAD_QUALITY_STATUS,
} from "../src/imports/planner.ts";

const BLANK: CellValue = { kind: "BLANK" };
const VOID: CellValue = { kind: "VOID" };
const num = (kwh: string): CellValue => ({ kind: "NUMBER", kwh });

const rawOf = (value: CellValue): string | null =>
  value.kind === "BLANK" ? null : value.kind === "VOID" ? "VOID" : value.kwh;

const fileRow = (
  value: CellValue,
  opts: { note?: string; rowNumber?: number; scopeId?: number; date?: string } = {},
): ResolvedRow => ({
  rowNumber: opts.rowNumber ?? 1,
  brand: "Brand A",
  storeName: "Store 1",
  date: opts.date ?? "2026-07-09",
  rawDate: opts.date ?? "2026-07-09",
  rawEnergy: rawOf(value),
  value,
  note: opts.note,
  location: { sheet: null, row: (opts.rowNumber ?? 1) + 1, column: "日能耗" },
  storeId: 11,
  scopeId: opts.scopeId ?? 101,
});

// The value a stored day serves, as energy_days.served_kwh holds it (rules.md §2; the planner
// takes it from the database and does not restate the rule).
const served = (d: Omit<CurrentDay, "servedKwh">) => {
  const value = (kwh: string | null) => kwh === null || kwh.trim() === "" ? null : kwh;
  return d.isVoid ? null : value(d.cleanedKwh) ?? value(d.legacyKwh);
};

const day = (fields: Partial<Omit<CurrentDay, "servedKwh">> = {}): CurrentDay => {
  const facts = {
    energyId: 500,
    legacyKwh: null,
    cleanedKwh: null,
    isVoid: false,
    revisionNo: 3,
    qualityStatus: "UNREVIEWED",
    qualityNote: "stored note",
    ...fields,
  };
  return { ...facts, servedKwh: served(facts) };
};

// Kinds of current day, for the rows of the table that say "any".
const NO_ROW = undefined;
const EMPTY = day({ qualityStatus: null, qualityNote: null });
const LEGACY = day({ legacyKwh: "12.5000" });
const CLEANED = day({ cleanedKwh: "12.5000", legacyKwh: "10.0000", qualityStatus: "REVIEWED" });
const CLEANED_ONLY = day({ cleanedKwh: "0.0000", qualityStatus: "CLEANED" });
const VOIDED = day({ isVoid: true, qualityStatus: "VOIDED", qualityNote: "meter broken" });
const VOIDED_WITH_VALUES = day({ isVoid: true, legacyKwh: "3", cleanedKwh: "4" });
const ALL_DAYS: ReadonlyArray<[string, CurrentDay | undefined]> = [
  ["no row", NO_ROW],
  ["row without values", EMPTY],
  ["legacy only", LEGACY],
  ["cleaned and legacy", CLEANED],
  ["cleaned only", CLEANED_ONLY],
  ["void", VOIDED],
  ["void with values", VOIDED_WITH_VALUES],
];

const plan1 = (
  value: CellValue,
  current: CurrentDay | undefined,
  noteField: NoteField | null = "ABSENT_NO_COLUMN",
  note?: string,
): PlannedRow => {
  const rows = planImport(noteField, [fileRow(value, { note })], () => current);
  assert.equal(rows.length, 1);
  return rows[0];
};

const actionOf = (value: CellValue, current: CurrentDay | undefined) =>
  plan1(value, current).action;

// A row without effect shows the day exactly as it is now.
const assertNoEffect = (p: PlannedRow, current: CurrentDay | undefined) => {
  assert.ok(!CHANGING_ACTIONS.has(p.action), p.action);
  assert.equal(p.qualityStatus, current?.qualityStatus ?? "UNREVIEWED");
  assert.equal(p.qualityNote, current?.qualityNote ?? null);
};

Deno.test("constants: source kind, upload status, changing actions", () => {
  assert.equal(SOURCE_KIND_UPLOAD, "MANUAL_UPLOAD");
  assert.equal(UPLOAD_QUALITY_STATUS, "REVIEWED");
  assert.deepEqual(
    [...CHANGING_ACTIONS].sort(),
    ["INSERT", "RELINK", "RESTORE", "UPDATE", "VOID"],
  );
  for (const a of ["UNCHANGED", "SKIP_MISSING", "KEEP_CLEANED"] as const) {
    assert.ok(!CHANGING_ACTIONS.has(a));
  }
});

Deno.test("§8 blank: SKIP_MISSING on every kind of day, nothing proposed, nothing changed", () => {
  for (const [label, current] of ALL_DAYS) {
    for (const noteField of [null, "ABSENT_NO_COLUMN", "ABSENT_WIDE_TABLE"] as const) {
      const p = plan1(BLANK, current, noteField, noteField === null ? "file note" : undefined);
      assert.equal(p.action, "SKIP_MISSING", label);
      assert.equal(p.proposedKwh, null, label);
      assert.equal(p.proposedVoid, false, label);
      assert.equal(p.noteField, noteField, label);
      assertNoEffect(p, current);
    }
  }
});

Deno.test("§8 number on no row or a row without value: INSERT, 0 included", () => {
  for (const kwh of ["12.5", "0", "0.0001", "3.1416"]) {
    assert.equal(actionOf(num(kwh), NO_ROW), "INSERT", kwh);
    assert.equal(actionOf(num(kwh), EMPTY), "INSERT", kwh);
  }
  const p = plan1(num("0"), NO_ROW);
  assert.equal(p.proposedKwh, "0");
  assert.equal(p.proposedVoid, false);
  assert.equal(p.qualityStatus, UPLOAD_QUALITY_STATUS);
  assert.equal(p.qualityNote, null);
  // An empty string is no value (rules.md §2: "non-empty cleaned value").
  assert.equal(actionOf(num("5"), day({ legacyKwh: "", cleanedKwh: "" })), "INSERT");
  assert.equal(actionOf(num("5"), day({ legacyKwh: "5", cleanedKwh: "" })), "RELINK");
});

Deno.test("§8 number on legacy only: UPDATE when different, RELINK when equal (exact decimals)", () => {
  const cases: ReadonlyArray<[string, string, ImportAction]> = [
    ["12.5", "12.5000", "RELINK"],
    ["12.5", "12.5", "RELINK"],
    ["12.5000", "12.5", "RELINK"],
    ["0", "0.0000", "RELINK"],
    ["0", "0", "RELINK"],
    ["3", "3.0", "RELINK"],
    ["0", "3", "UPDATE"],
    ["0", "3.0000", "UPDATE"],
    ["3", "0.0000", "UPDATE"],
    ["12.5", "12.4999", "UPDATE"],
    ["12.5001", "12.5000", "UPDATE"],
    ["0.0001", "0", "UPDATE"],
    // Beyond a double's integer precision: a float comparison would call these equal.
    ["9007199254740993", "9007199254740992", "UPDATE"],
    ["123456789012345678901234.5", "123456789012345678901234.5001", "UPDATE"],
    ["123456789012345678901234.5", "123456789012345678901234.5000", "RELINK"],
  ];
  for (const [file, legacy, expected] of cases) {
    const current = day({ legacyKwh: legacy });
    const p = plan1(num(file), current);
    assert.equal(p.action, expected, `${file} on legacy ${legacy}`);
    assert.equal(p.proposedKwh, file);
    assert.equal(p.beforeKwh, legacy);
    assert.equal(p.qualityStatus, UPLOAD_QUALITY_STATUS);
  }
});

Deno.test("§8 number on a cleaned value: UNCHANGED when equal, KEEP_CLEANED when different", () => {
  const cases: ReadonlyArray<[string, string, string | null, ImportAction]> = [
    ["12.5", "12.5000", null, "UNCHANGED"],
    ["12.5000", "12.5", "3", "UNCHANGED"],
    ["0", "0.0000", null, "UNCHANGED"],
    ["0.0000", "0", "7", "UNCHANGED"],
    ["12.6", "12.5000", null, "KEEP_CLEANED"],
    ["0", "5", null, "KEEP_CLEANED"],
    ["0.0001", "0.0000", null, "KEEP_CLEANED"],
    // The file equals the legacy value, but the cleaned value rules: never overwritten.
    ["10", "12.5", "10.0000", "KEEP_CLEANED"],
    ["9007199254740993", "9007199254740992", null, "KEEP_CLEANED"],
  ];
  for (const [file, cleaned, legacy, expected] of cases) {
    const current = day({ cleanedKwh: cleaned, legacyKwh: legacy, qualityStatus: "CLEANED" });
    const p = plan1(num(file), current, null, "a new note");
    assert.equal(p.action, expected, `${file} on cleaned ${cleaned}`);
    // The file's value is shown even though nothing is written.
    assert.equal(p.proposedKwh, file);
    assert.equal(p.proposedVoid, false);
    assert.equal(p.beforeKwh, cleaned);
    assertNoEffect(p, current);
  }
});

Deno.test("§8 number on a void day: RESTORE whatever the stored values (void checked first)", () => {
  const voids = [
    VOIDED,
    VOIDED_WITH_VALUES,
    day({ isVoid: true, legacyKwh: "12.5" }),
    day({ isVoid: true, cleanedKwh: "12.5" }),
  ];
  for (const current of voids) {
    for (const kwh of ["12.5", "12.5000", "0", "4"]) {
      const p = plan1(num(kwh), current);
      assert.equal(p.action, "RESTORE");
      assert.equal(p.proposedKwh, kwh);
      assert.equal(p.proposedVoid, false);
      assert.equal(p.beforeKwh, null);
      assert.equal(p.beforeIsVoid, true);
      assert.equal(p.qualityStatus, UPLOAD_QUALITY_STATUS);
    }
  }
});

Deno.test("§8 VOID cell: VOID on any day that is not void, including no row", () => {
  for (const [label, current] of ALL_DAYS) {
    if (current?.isVoid) continue;
    const p = plan1(VOID, current);
    assert.equal(p.action, "VOID", label);
    assert.equal(p.proposedKwh, null, label);
    assert.equal(p.proposedVoid, true, label);
    assert.equal(p.qualityStatus, UPLOAD_QUALITY_STATUS, label);
    assert.equal(p.beforeIsVoid, current === undefined ? null : false, label);
  }
  // A cleaned value does not protect a day from an explicit VOID.
  const p = plan1(VOID, CLEANED);
  assert.equal(p.action, "VOID");
  assert.equal(p.beforeKwh, "12.5000");
});

Deno.test("VOID cell on a day already void: UNCHANGED, no effect (our reading)", () => {
  for (const current of [VOIDED, VOIDED_WITH_VALUES]) {
    const p = plan1(VOID, current, null, "another note");
    assert.equal(p.action, "UNCHANGED");
    assert.equal(p.proposedVoid, true);
    assert.equal(p.proposedKwh, null);
    assert.equal(p.beforeKwh, null);
    assert.equal(p.beforeIsVoid, true);
    assertNoEffect(p, current);
  }
});

Deno.test("before* fields: effective value before, void flag, revision and energy id", () => {
  const none = plan1(num("1"), NO_ROW);
  assert.deepEqual(
    [none.beforeKwh, none.beforeIsVoid, none.beforeRevisionNo, none.energyId],
    [null, null, null, null],
  );
  const empty = plan1(num("1"), day({ energyId: 9, revisionNo: 1 }));
  assert.deepEqual(
    [empty.beforeKwh, empty.beforeIsVoid, empty.beforeRevisionNo, empty.energyId],
    [null, false, 1, 9],
  );
  const legacy = plan1(BLANK, day({ legacyKwh: "7.2500", energyId: 42, revisionNo: 5 }));
  assert.deepEqual(
    [legacy.beforeKwh, legacy.beforeIsVoid, legacy.beforeRevisionNo, legacy.energyId],
    ["7.2500", false, 5, 42],
  );
  const cleaned = plan1(num("1"), day({ legacyKwh: "7.25", cleanedKwh: "0.0000" }));
  assert.equal(cleaned.beforeKwh, "0.0000"); // cleaned wins, and 0 is a value
  const voided = plan1(VOID, VOIDED_WITH_VALUES);
  assert.deepEqual([voided.beforeKwh, voided.beforeIsVoid], [null, true]);
  assert.equal(voided.beforeRevisionNo, VOIDED_WITH_VALUES.revisionNo);
  assert.equal(voided.energyId, VOIDED_WITH_VALUES.energyId);
});

Deno.test("notes: a note column sets the note of changed days; '' clears it", () => {
  const current = day({ legacyKwh: "3", qualityNote: "old note" });
  const set = plan1(num("4"), current, null, "checked on site");
  assert.equal(set.action, "UPDATE");
  assert.equal(set.noteField, null);
  assert.equal(set.qualityStatus, UPLOAD_QUALITY_STATUS);
  assert.equal(set.qualityNote, "checked on site");

  const cleared = plan1(num("4"), current, null, "");
  assert.equal(cleared.qualityNote, null);

  const inserted = plan1(num("4"), NO_ROW, null, "first value");
  assert.equal(inserted.action, "INSERT");
  assert.equal(inserted.qualityNote, "first value");

  for (const [value, target] of [[VOID, current], [num("3.0"), current], [num("1"), VOIDED]]) {
    const p = plan1(value as CellValue, target as CurrentDay, null, "from file");
    assert.ok(CHANGING_ACTIONS.has(p.action), p.action);
    assert.equal(p.qualityNote, "from file");
  }
});

Deno.test("notes: without a note column the stored note is kept on changed days", () => {
  for (const noteField of ["ABSENT_NO_COLUMN", "ABSENT_WIDE_TABLE"] as const) {
    const current = day({ legacyKwh: "3", qualityNote: "old note", qualityStatus: "UNREVIEWED" });
    const p = plan1(num("4"), current, noteField);
    assert.equal(p.action, "UPDATE");
    assert.equal(p.noteField, noteField);
    assert.equal(p.qualityStatus, UPLOAD_QUALITY_STATUS);
    assert.equal(p.qualityNote, "old note");

    const relinked = plan1(num("3.0000"), day({ legacyKwh: "3", qualityNote: null }), noteField);
    assert.equal(relinked.action, "RELINK");
    assert.equal(relinked.qualityNote, null);

    const inserted = plan1(num("4"), NO_ROW, noteField);
    assert.equal(inserted.qualityNote, null);

    const restored = plan1(num("4"), VOIDED, noteField);
    assert.equal(restored.action, "RESTORE");
    assert.equal(restored.qualityNote, "meter broken");
  }
});

Deno.test("notes: rows without effect keep the current status and note whatever the file says", () => {
  const cases: ReadonlyArray<[CellValue, CurrentDay | undefined, ImportAction]> = [
    [BLANK, LEGACY, "SKIP_MISSING"],
    [BLANK, NO_ROW, "SKIP_MISSING"],
    [num("99"), CLEANED, "KEEP_CLEANED"],
    [num("12.5"), CLEANED, "UNCHANGED"],
    [VOID, VOIDED, "UNCHANGED"],
  ];
  for (const [value, current, action] of cases) {
    for (const note of ["replacement", ""]) {
      const p = plan1(value, current, null, note);
      assert.equal(p.action, action);
      assertNoEffect(p, current);
    }
  }
  // A stored row without a status is shown as UNREVIEWED.
  const p = plan1(BLANK, day({ qualityStatus: null, qualityNote: "n" }));
  assert.equal(p.qualityStatus, "UNREVIEWED");
  assert.equal(p.qualityNote, "n");
  assert.equal(plan1(BLANK, NO_ROW).qualityStatus, "UNREVIEWED");
});

Deno.test("planImport looks up each row's own (scope, date) and keeps the file's order", () => {
  const days = new Map<string, CurrentDay>([
    ["101|2026-07-09", day({ energyId: 1, legacyKwh: "5" })],
    ["101|2026-07-10", day({ energyId: 2, cleanedKwh: "5" })],
    ["202|2026-07-09", day({ energyId: 3, isVoid: true })],
  ]);
  const asked: Array<string> = [];
  const rows = [
    fileRow(num("5"), { rowNumber: 1, scopeId: 202, date: "2026-07-09" }),
    fileRow(num("5"), { rowNumber: 2, scopeId: 101, date: "2026-07-10" }),
    fileRow(num("5"), { rowNumber: 3, scopeId: 101, date: "2026-07-09" }),
    fileRow(num("5"), { rowNumber: 4, scopeId: 303, date: "2026-07-09" }),
    fileRow(BLANK, { rowNumber: 5, scopeId: 101, date: "2026-07-09" }),
    fileRow(VOID, { rowNumber: 6, scopeId: 101, date: "2026-07-10" }),
  ];
  const planned = planImport("ABSENT_WIDE_TABLE", rows, (scopeId, date) => {
    asked.push(`${scopeId}|${date}`);
    return days.get(`${scopeId}|${date}`);
  });
  assert.deepEqual(
    planned.map((p) => [p.row.rowNumber, p.action, p.energyId]),
    [
      [1, "RESTORE", 3],
      [2, "UNCHANGED", 2],
      [3, "RELINK", 1],
      [4, "INSERT", null],
      [5, "SKIP_MISSING", 1],
      [6, "VOID", 2],
    ],
  );
  planned.forEach((p, i) => assert.equal(p.row, rows[i]));
  assert.deepEqual(asked, rows.map((r) => `${r.scopeId}|${r.date}`));
  assert.ok(planned.every((p) => p.noteField === "ABSENT_WIDE_TABLE"));
  assert.deepEqual(planImport(null, [], () => undefined), []);
});

Deno.test("countActions: every action present, 0 when none", () => {
  const zero = countActions([]);
  assert.deepEqual(Object.keys(zero).sort(), [...ImportAction.literals].sort());
  assert.ok(Object.values(zero).every((n) => n === 0));

  const planned = planImport("ABSENT_NO_COLUMN", [
    fileRow(num("1"), { rowNumber: 1, date: "2026-07-01" }),
    fileRow(num("2"), { rowNumber: 2, date: "2026-07-02" }),
    fileRow(BLANK, { rowNumber: 3, date: "2026-07-03" }),
    fileRow(VOID, { rowNumber: 4, date: "2026-07-04" }),
    fileRow(num("12.5"), { rowNumber: 5, date: "2026-07-05" }),
  ], (_scope, date) => (date === "2026-07-05" ? CLEANED : undefined));
  assert.deepEqual(countActions(planned), {
    INSERT: 2,
    UPDATE: 0,
    UNCHANGED: 1,
    VOID: 1,
    RESTORE: 0,
    RELINK: 0,
    SKIP_MISSING: 1,
    KEEP_CLEANED: 0,
  });
});

// A decimal of at most 4 places, and the same number written in another (padded) way.
const kwhArb = fc
  .tuple(fc.integer({ min: 0, max: 2_000_000 }), fc.integer({ min: 0, max: 4 }))
  .map(([n, dp]) => new Decimal(n).div(new Decimal(10).pow(dp)).toFixed());
const respell = (kwh: string, pad: number): string =>
  new Decimal(kwh).toFixed(Math.max(pad, new Decimal(kwh).decimalPlaces()));
const cellArb: fc.Arbitrary<CellValue> = fc.oneof(
  fc.constant(BLANK),
  fc.constant(VOID),
  kwhArb.map(num),
  fc.constantFrom("0", "12.5", "3").map(num),
);
// A stored value: none, "", some number, or the same number as the cell written differently.
const storedArb = (cell: CellValue): fc.Arbitrary<string | null> =>
  fc.oneof(
    fc.constant(null),
    fc.constant(""),
    kwhArb,
    fc.constantFrom("0.0000", "12.5000", "3.0000"),
    fc.integer({ min: 0, max: 4 }).map((pad) =>
      cell.kind === "NUMBER" ? respell(cell.kwh, pad) : "1.0000"
    ),
  );
const currentArb = (cell: CellValue): fc.Arbitrary<CurrentDay | undefined> =>
  fc.option(
    fc.record({
      energyId: fc.integer({ min: 1, max: 1_000_000 }),
      legacyKwh: storedArb(cell),
      cleanedKwh: storedArb(cell),
      isVoid: fc.boolean(),
      revisionNo: fc.integer({ min: 1, max: 50 }),
      qualityStatus: fc.option(fc.constantFrom("UNREVIEWED", "REVIEWED", "CLEANED"), {
        nil: null,
      }),
      qualityNote: fc.option(fc.string({ maxLength: 6 }), { nil: null }),
    }).map((facts) => ({ ...facts, servedKwh: served(facts) })),
    { nil: undefined },
  );
const pairArb = cellArb.chain((cell) => currentArb(cell).map((current) => ({ cell, current })));
const noteFieldArb = fc.constantFrom<NoteField | null>(
  null,
  "ABSENT_NO_COLUMN",
  "ABSENT_WIDE_TABLE",
);
const caseArb = fc.record({
  pair: pairArb,
  noteField: noteFieldArb,
  note: fc.constantFrom("", "from file", "  "),
});
const hasValue = (v: string | null) => v !== null && v.trim() !== "";
type Case = typeof caseArb extends fc.Arbitrary<infer T> ? T : never;
const planCase = (c: Case) =>
  plan1(c.pair.cell, c.pair.current, c.noteField, c.noteField === null ? c.note : undefined);

const RUNS = { numRuns: 200 };
const TABLE_ACTIONS = new Set<ImportAction>(ImportAction.literals);

Deno.test("property: the action is always one of the table's and matches an independent reading", () => {
  fc.assert(
    fc.property(caseArb, (c) => {
      const p = planCase(c);
      assert.ok(TABLE_ACTIONS.has(p.action));
      assert.equal(p.action, decideAction(c.pair.cell, c.pair.current));
      const { cell, current } = c.pair;
      const eff = current === undefined || current.isVoid
        ? null
        : hasValue(current.cleanedKwh)
        ? current.cleanedKwh
        : hasValue(current.legacyKwh)
        ? current.legacyKwh
        : null;
      assert.equal(p.beforeKwh, eff);
      if (cell.kind === "BLANK") assert.equal(p.action, "SKIP_MISSING");
      if (cell.kind === "VOID") {
        assert.equal(p.action, current?.isVoid ? "UNCHANGED" : "VOID");
      }
      if (cell.kind === "NUMBER") {
        const expected: ImportAction = current?.isVoid
          ? "RESTORE"
          : eff === null
          ? "INSERT"
          : hasValue(current!.cleanedKwh)
          ? (new Decimal(eff).minus(cell.kwh).isZero() ? "UNCHANGED" : "KEEP_CLEANED")
          : (new Decimal(eff).minus(cell.kwh).isZero() ? "RELINK" : "UPDATE");
        assert.equal(p.action, expected);
        assert.equal(p.proposedKwh, cell.kwh);
      } else {
        assert.equal(p.proposedKwh, null);
      }
      assert.equal(p.proposedVoid, cell.kind === "VOID");
      assert.equal(p.beforeIsVoid, current === undefined ? null : current.isVoid);
      assert.equal(p.beforeRevisionNo, current?.revisionNo ?? null);
      assert.equal(p.energyId, current?.energyId ?? null);
      assert.equal(p.noteField, c.noteField);
    }),
    RUNS,
  );
});

Deno.test("property: KEEP_CLEANED, UNCHANGED and SKIP_MISSING rows change nothing", () => {
  fc.assert(
    fc.property(caseArb, (c) => {
      const p = planCase(c);
      if (CHANGING_ACTIONS.has(p.action)) {
        assert.equal(p.qualityStatus, UPLOAD_QUALITY_STATUS);
        const expectedNote = c.noteField === null
          ? (c.note.trim() === "" ? null : c.note)
          : c.pair.current?.qualityNote ?? null;
        assert.equal(p.qualityNote, expectedNote);
      } else {
        assert.ok(["KEEP_CLEANED", "UNCHANGED", "SKIP_MISSING"].includes(p.action));
        assertNoEffect(p, c.pair.current);
      }
    }),
    RUNS,
  );
});

Deno.test("property: a cleaned, not void day is never changed except by a VOID cell", () => {
  fc.assert(
    fc.property(caseArb, (c) => {
      const { cell, current } = c.pair;
      const p = planCase(c);
      if (current !== undefined && !current.isVoid && hasValue(current.cleanedKwh)) {
        if (cell.kind === "VOID") assert.equal(p.action, "VOID");
        else assert.ok(!CHANGING_ACTIONS.has(p.action), p.action);
      }
    }),
    RUNS,
  );
});

Deno.test("property: planning is deterministic, row-wise and keeps the file's order", () => {
  const batchArb = fc.array(fc.tuple(pairArb, fc.constantFrom("", "n1", "n2")), {
    maxLength: 30,
  });
  fc.assert(
    fc.property(batchArb, noteFieldArb, (batch, noteField) => {
      const rows = batch.map(([{ cell }, note], i) =>
        fileRow(cell, {
          rowNumber: i + 1,
          date: `2026-07-${String((i % 28) + 1).padStart(2, "0")}`,
          scopeId: 100 + Math.floor(i / 28),
          note: noteField === null ? note : undefined,
        })
      );
      const lookup = (scopeId: number, date: string) =>
        batch[(scopeId - 100) * 28 + Number(date.slice(8)) - 1][0].current;
      const first = planImport(noteField, rows, lookup);
      const second = planImport(noteField, rows, lookup);
      assert.deepEqual(first, second);
      assert.equal(first.length, rows.length);
      first.forEach((p, i) => {
        assert.equal(p.row, rows[i]);
        assert.deepEqual(p, planImport(noteField, [rows[i]], lookup)[0]);
      });
    }),
    RUNS,
  );
});

Deno.test("property: countActions sums to the number of rows and counts each action", () => {
  fc.assert(
    fc.property(fc.array(caseArb, { maxLength: 40 }), (cases) => {
      const planned = cases.map(planCase);
      const counts = countActions(planned);
      assert.deepEqual(Object.keys(counts).sort(), [...ImportAction.literals].sort());
      assert.equal(Object.values(counts).reduce((a, b) => a + b, 0), planned.length);
      for (const a of ImportAction.literals) {
        assert.equal(counts[a], planned.filter((p) => p.action === a).length);
      }
    }),
    RUNS,
  );
});

Deno.test("sameKwh: plain decimal texts compare as the decimals they write", () => {
  const digits = (min: number, max: number) =>
    fc.array(fc.constantFrom("0", "0", "1", "5", "9"), { minLength: min, maxLength: max }).map(
      (d) => d.join(""),
    );
  const plain = fc.tuple(digits(1, 4), fc.option(digits(1, 5), { nil: undefined })).map((
    [whole, fraction],
  ) => fraction === undefined ? whole : `${whole}.${fraction}`);
  fc.assert(
    fc.property(plain, plain, (a, b) => {
      assert.equal(sameKwh(a, b), new Decimal(a).eq(new Decimal(b)), `${a} ${b}`);
    }),
    { numRuns: 5_000 },
  );
  assert.equal(sameKwh("0", "0.0000"), true);
  assert.equal(sameKwh("007.50", "7.5"), true);
  assert.equal(sameKwh("10", "1.0"), false);
  assert.equal(sameKwh("1e1", "10"), true);
});
