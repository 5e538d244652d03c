// Pure import planner: (resolved file rows, current days) -> one action per row (rules.md §8).
import { Decimal } from "decimal.js";
import { CHANGING_ACTIONS, ImportAction } from "../domain/imports.ts";
import type { CellValue, CurrentDay, NoteField, PlannedRow, ResolvedRow } from "./model.ts";

export const SOURCE_KIND_UPLOAD = "MANUAL_UPLOAD";
// The quality status of a value written by an upload.
export const UPLOAD_QUALITY_STATUS = "REVIEWED";
// The quality status shown for a day that has no row yet.
export const NO_ROW_QUALITY_STATUS = "UNREVIEWED";

// rules.md §2: only a non-empty value counts; "" from a driver or a legacy export is no value.
const valueOf = (kwh: string | null): string | null =>
  kwh === null || kwh.trim() === "" ? null : kwh;

// Plain decimal texts (a reader's value, a stored numeric's text) are equal numbers exactly when
// they are equal without leading zeros of the whole part and trailing zeros of the fraction; other
// texts are compared as decimals.
const PLAIN_DECIMAL = /^\d+(?:\.\d+)?$/;
const canonicalDecimal = (text: string): string => {
  const dot = text.indexOf(".");
  let whole = dot < 0 ? text : text.slice(0, dot);
  let fraction = dot < 0 ? "" : text.slice(dot + 1);
  let i = 0;
  while (i < whole.length - 1 && whole[i] === "0") i++;
  whole = whole.slice(i);
  let j = fraction.length;
  while (j > 0 && fraction[j - 1] === "0") j--;
  fraction = fraction.slice(0, j);
  return fraction === "" ? whole : `${whole}.${fraction}`;
};
export const sameKwh = (a: string, b: string): boolean =>
  PLAIN_DECIMAL.test(a) && PLAIN_DECIMAL.test(b)
    ? canonicalDecimal(a) === canonicalDecimal(b)
    : new Decimal(a).eq(new Decimal(b));

// The decision table of rules.md §8; the void flag is checked before any value.
export const decideAction = (
  value: CellValue,
  current: CurrentDay | undefined,
): ImportAction => {
  switch (value.kind) {
    case "BLANK":
      return "SKIP_MISSING";
    case "VOID":
      // Our reading (the table is silent): voiding a day that is already void changes nothing.
      return current?.isVoid === true ? "UNCHANGED" : "VOID";
    case "NUMBER": {
      if (current === undefined) return "INSERT";
      if (current.isVoid) return "RESTORE";
      const cleaned = valueOf(current.cleanedKwh);
      if (cleaned !== null) return sameKwh(value.kwh, cleaned) ? "UNCHANGED" : "KEEP_CLEANED";
      const legacy = valueOf(current.legacyKwh);
      if (legacy !== null) return sameKwh(value.kwh, legacy) ? "RELINK" : "UPDATE";
      return "INSERT";
    }
  }
};

// The note the day has after a changing row: the file's note when the file has a note column
// ("" clears it), else the stored note is kept (spec PreviewInput).
const noteAfterChange = (
  noteField: NoteField | null,
  row: ResolvedRow,
  current: CurrentDay | undefined,
): string | null => {
  if (noteField === null && row.note !== undefined) return row.note.trim() === "" ? null : row.note;
  return current?.qualityNote ?? null;
};

const planRow = (
  noteField: NoteField | null,
  row: ResolvedRow,
  current: CurrentDay | undefined,
): PlannedRow => {
  const action = decideAction(row.value, current);
  const changes = CHANGING_ACTIONS.has(action);
  return {
    row,
    action,
    beforeKwh: current?.servedKwh ?? null,
    beforeIsVoid: current === undefined ? null : current.isVoid,
    beforeRevisionNo: current?.revisionNo ?? null,
    energyId: current?.energyId ?? null,
    proposedKwh: row.value.kind === "NUMBER" ? row.value.kwh : null,
    proposedVoid: row.value.kind === "VOID",
    qualityStatus: changes
      ? UPLOAD_QUALITY_STATUS
      : current?.qualityStatus ?? NO_ROW_QUALITY_STATUS,
    qualityNote: changes ? noteAfterChange(noteField, row, current) : current?.qualityNote ?? null,
    noteField,
  };
};

// Plans every row against the current day of its (scope, date), preserving the file's order.
export const planImport = (
  noteField: NoteField | null,
  rows: ReadonlyArray<ResolvedRow>,
  current: (scopeId: number, date: string) => CurrentDay | undefined,
): ReadonlyArray<PlannedRow> =>
  rows.map((row) => planRow(noteField, row, current(row.scopeId, row.date)));

// Every action is present, 0 when no row has it.
export const countActions = (rows: ReadonlyArray<PlannedRow>): Record<ImportAction, number> => {
  const counts = Object.fromEntries(ImportAction.literals.map((a) => [a, 0])) as Record<
    ImportAction,
    number
  >;
  for (const planned of rows) counts[planned.action] += 1;
  return counts;
};
