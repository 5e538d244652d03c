// The export file, cell by cell: each day of the energy read written in the import's own grammar
// (files/cell_text.ts), so that an export sent back untouched previews as UNCHANGED and
// SKIP_MISSING rows only (rules.md §8), and the CSV text of a row.
import { energyFromXlsxNumber, parseEnergyText, protectText } from "../files/cell_text.ts";
import { CSV_COLUMNS, CSV_NOTE_COLUMN } from "../files/layout.ts";

export const XLSX_MEDIA_TYPE = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet";
export const CSV_MEDIA_TYPE = "text/csv; charset=utf-8";

export type ExportFormat = "xlsx" | "csv";

// What the import reads as a void (rules.md §8: VOID or 作废).
export const VOID_TEXT = "VOID";

// A stored day as the energy read serves it (energy_days' served value, status and source).
export interface ExportDay {
  // Printed with 4 decimals, as the energy read prints it; null when void or empty.
  readonly served: string | null;
  readonly status: "AVAILABLE" | "NO_DATA" | "VOID";
  readonly sourceKind: string | null;
  // An intraday rolling value (rules.md §2), not yet the day's.
  readonly provisional: boolean;
  readonly note: string | null;
}

export type ExportCell =
  | { readonly kind: "blank" }
  // A cleaned or uploaded value: sent back, the same number is UNCHANGED.
  | { readonly kind: "number"; readonly kwh: string }
  // Sent back, VOID on a void day is UNCHANGED.
  | { readonly kind: "void" };

const BLANK_CELL: ExportCell = { kind: "blank" };
const VOID_CELL: ExportCell = { kind: "void" };

// What an export writes for a day served from its sealed legacy value. In the import's grammar a
// number over a legacy value is RELINK or UPDATE (a new revision, rules.md §8) and any text but a
// number or VOID is a file error (rules.md §1), so no cell can both show the legacy value and
// leave the day alone: by default the cell is blank (SKIP_MISSING: the legacy value keeps
// serving); with "values" it holds the number, which sent back confirms the value (RELINK).
export type LegacyCells = "blank" | "values";

// The cell of one store-day; undefined: no stored day (no data, left blank).
export const exportCell = (
  day: ExportDay | undefined,
  legacy: LegacyCells = "blank",
): ExportCell => {
  if (day === undefined) return BLANK_CELL;
  if (day.status === "VOID") return VOID_CELL;
  if (day.status !== "AVAILABLE" || day.served === null) return BLANK_CELL;
  // A legacy value is confirmed only when asked for, and never while it is provisional: sent back,
  // a part of a day's energy would be settled as the whole day's.
  if (day.sourceKind === "LEGACY_DIRECT" && (legacy === "blank" || day.provisional)) {
    return BLANK_CELL;
  }
  return { kind: "number", kwh: day.served };
};

// The text of a cell (every CSV cell; the XLSX text cells).
export const cellText = (cell: ExportCell): string => {
  switch (cell.kind) {
    case "blank":
      return "";
    case "number":
      return cell.kwh;
    case "void":
      return VOID_TEXT;
  }
};

// A value goes into an XLSX cell as a number when the double reads back as the same decimal (the
// reader takes a numeric cell's shortest round-trip text, rules.md §1); else as text, which the
// reader parses as the decimal it is.
export const xlsxNumber = (kwh: string): number | undefined => {
  const n = Number(kwh);
  const back = energyFromXlsxNumber(n);
  const exact = parseEnergyText(kwh);
  return "kind" in back && back.kind === "NUMBER" && "kind" in exact && exact.kind === "NUMBER" &&
      back.kwh === exact.kwh
    ? n
    : undefined;
};

// --- CSV (RFC 4180, UTF-8 with a BOM so that spreadsheet programs read it as UTF-8).

export const CSV_BOM = "\uFEFF";
export const CSV_HEADER_FIELDS: ReadonlyArray<string> = [...CSV_COLUMNS, CSV_NOTE_COLUMN];

const NEEDS_QUOTES = /[",\r\n]/;

const csvField = (text: string) =>
  NEEDS_QUOTES.test(text) ? `"${text.replaceAll('"', '""')}"` : text;

export const csvLine = (fields: ReadonlyArray<string>) => `${fields.map(csvField).join(",")}\r\n`;

// One store-day of the long table. Free text is protected against formula evaluation.
export const csvRow = (
  brand: string,
  store: string,
  date: string,
  day: ExportDay | undefined,
  legacy: LegacyCells = "blank",
) =>
  csvLine([
    protectText(brand),
    protectText(store),
    date,
    cellText(exportCell(day, legacy)),
    protectText(day?.note ?? ""),
  ]);

export const exportFilename = (start: string, end: string, format: ExportFormat) =>
  `energy-export-${start}-${end}.${format}`;
