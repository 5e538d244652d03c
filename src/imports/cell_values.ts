// Shared by the import readers: energy text -> CellValue (rules.md §1), header dates, and the
// collector that numbers FileRows, enforces the row limit and gathers located problems.
import { Effect } from "effect";
import { MAX_IMPORT_ROWS } from "../domain/imports.ts";
import {
  type CellLocation,
  type CellValue,
  type CheckRow,
  type FileProblem,
  FileRejected,
  type FileRow,
  type NoteField,
  type ReadFile,
} from "./model.ts";

export const BLANK: CellValue = { kind: "BLANK" };
export const VOID: CellValue = { kind: "VOID" };

// A daily energy above 10^15 kWh is not a meter reading; the bound also keeps "1e999999" from
// expanding into a huge string, and keeps values well inside the metrics engine's precision.
const MAX_INTEGER_DIGITS = 15;
const MAX_DECIMALS = 4;

const NOT_A_NUMBER =
  "not a number: write a decimal such as 12.5, VOID or 作废, or leave the cell blank";

const isDigit = (c: number) => c >= 48 && c <= 57;

// Decimal text -> canonical kwh. Accepted: an optional sign, digits with an optional fractional
// part where either side of the point may be empty but not both ("12", "12.5", ".5", "5."), and,
// only for the text of an XLSX number (String(n) writes very large or small doubles so), an
// exponent ("1.5e3"); a person's text with an exponent is not a plain decimal. Refused:
// thousands separators, spaces inside, NaN/Infinity, a negative value, more than 4 decimals.
// The decimal count is the value's, not the writing's: "12.50000" is 12.5 and accepted.
// Canonical form: no sign, no exponent, no leading zeros, no trailing fractional zeros and no
// trailing point ("0012.50" -> "12.5", "0.0000" -> "0", "-0" -> "0", "1.5e3" -> "1500"); it is
// what decimal.js's toFixed() prints for the same value, computed here with string operations.
const parseDecimal = (text: string, exponentAllowed: boolean): CellValue | { problem: string } => {
  const n = text.length;
  let i = 0;
  let negative = false;
  if (text[0] === "+" || text[0] === "-") {
    negative = text[0] === "-";
    i = 1;
  }
  const intStart = i;
  while (i < n && isDigit(text.charCodeAt(i))) i++;
  const intDigits = text.slice(intStart, i);
  let fracDigits = "";
  if (text[i] === ".") {
    const fracStart = ++i;
    while (i < n && isDigit(text.charCodeAt(i))) i++;
    fracDigits = text.slice(fracStart, i);
  }
  if (intDigits === "" && fracDigits === "") return { problem: notANumber(text) };
  let exponent = 0;
  if ((text[i] === "e" || text[i] === "E") && exponentAllowed) {
    i++;
    let expNegative = false;
    if (text[i] === "+" || text[i] === "-") {
      expNegative = text[i] === "-";
      i++;
    }
    const expStart = i;
    while (i < n && isDigit(text.charCodeAt(i))) i++;
    if (i === expStart) return { problem: notANumber(text) };
    // Number() of a long digit run is huge or Infinity: either way it fails the bounds below.
    exponent = Number(text.slice(expStart, i)) * (expNegative ? -1 : 1);
  }
  if (i !== n) return { problem: notANumber(text) };

  // digits with the decimal point after `point` of them.
  let digits = intDigits + fracDigits;
  let point = intDigits.length + exponent;
  let lead = 0;
  while (lead < digits.length && digits.charCodeAt(lead) === 48) lead++;
  if (lead === digits.length) return { kind: "NUMBER", kwh: "0" };
  let trail = digits.length;
  while (digits.charCodeAt(trail - 1) === 48) trail--;
  digits = digits.slice(lead, trail);
  point -= lead;
  if (negative) return { problem: "negative energy value" };
  if (digits.length - point > MAX_DECIMALS) {
    return { problem: `more than ${MAX_DECIMALS} decimals` };
  }
  if (point > MAX_INTEGER_DIGITS) {
    return { problem: `too large: at most ${MAX_INTEGER_DIGITS} digits before the decimal point` };
  }
  const kwh = point <= 0
    ? `0.${"0".repeat(-point)}${digits}`
    : point >= digits.length
    ? digits + "0".repeat(point - digits.length)
    : `${digits.slice(0, point)}.${digits.slice(point)}`;
  return { kind: "NUMBER", kwh };
};

const THOUSANDS = /^[+-]?\d{1,3}(,\d{3})+(\.\d*)?$/;

const EXPONENT = /^[+-]?(\d+\.?\d*|\.\d+)[eE][+-]?\d+$/;

// Only on the failure path: name the common mistake.
const notANumber = (text: string) =>
  THOUSANDS.test(text)
    ? "thousands separators are not accepted: write 1234.5"
    : EXPONENT.test(text)
    ? "exponent notation is not accepted: write the plain decimal, such as 1500"
    : NOT_A_NUMBER;

// An energy cell's text (CSV cell, XLSX text cell) -> BLANK, VOID, NUMBER or a problem.
export const parseEnergyText = (input: string): CellValue | { problem: string } => {
  const text = input.trim();
  if (text === "") return BLANK;
  if (text === "作废" || (text.length === 4 && text.toUpperCase() === "VOID")) return VOID;
  return parseDecimal(text, false);
};

// Spreadsheet formula injection: a CSV field beginning with =, +, - or @ (also after spaces), a
// tab or a carriage return is evaluated by spreadsheet programs that open the file. A writer puts
// an apostrophe before such a text, and before such a text already preceded by apostrophes, so
// that the mark is never ambiguous; spreadsheets show it as text, and the CSV reader drops that
// one apostrophe. Only fields that begin with apostrophes and then one of these are read
// differently from what they say (docs/imports.md).
const FORMULA_START = /^'*(\s*[=+\-@]|[\t\r])/;

export const protectText = (text: string): string => FORMULA_START.test(text) ? `'${text}` : text;

// The inverse of protectText for a field read back (already trimmed by the reader).
export const unprotectText = (field: string): string =>
  field.startsWith("'") && FORMULA_START.test(field.slice(1)) ? field.slice(1) : field;

// An XLSX numeric cell is a binary double: its shortest round-trip text is the value (rules.md §1).
export const energyFromXlsxNumber = (n: number): CellValue | { problem: string } =>
  Number.isFinite(n) ? parseDecimal(String(n), true) : { problem: NOT_A_NUMBER };

export const isProblem = (v: CellValue | { problem: string }): v is { problem: string } =>
  "problem" in v;

const pad2 = (n: number) => (n < 10 ? `0${n}` : String(n));

const isLeap = (y: number) => (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0;

const daysIn = (y: number, m: number) =>
  m === 2 ? (isLeap(y) ? 29 : 28) : m === 4 || m === 6 || m === 9 || m === 11 ? 30 : 31;

const ymd = (y: number, m: number, d: number) =>
  `${String(y).padStart(4, "0")}-${pad2(m)}-${pad2(d)}`;

// A Date cell of exceljs: the calendar day it encodes is its UTC date.
export const utcDateText = (d: Date): string =>
  ymd(d.getUTCFullYear(), d.getUTCMonth() + 1, d.getUTCDate());

const ISO_DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const MONTH_DAY = /^(\d{1,2})月(\d{1,2})日$/;

// "2026-07-09" (a real calendar date) or "7月9日" (the most recent such date on or before
// datasetEnd, rules.md §8; 2月29日 -> the most recent leap day on or before it). Else undefined.
export const resolveHeaderDate = (input: string, datasetEnd: string): string | undefined => {
  const text = input.trim();
  const iso = ISO_DATE.exec(text);
  if (iso !== null) {
    const y = Number(iso[1]), m = Number(iso[2]), d = Number(iso[3]);
    return m >= 1 && m <= 12 && d >= 1 && d <= daysIn(y, m) ? text : undefined;
  }
  const md = MONTH_DAY.exec(text);
  const end = ISO_DATE.exec(datasetEnd);
  if (md === null || end === null) return undefined;
  const m = Number(md[1]), d = Number(md[2]);
  if (m < 1 || m > 12 || d < 1 || d > daysIn(2000, m)) return undefined;
  const endY = Number(end[1]), endM = Number(end[2]), endD = Number(end[3]);
  let y = m < endM || (m === endM && d <= endD) ? endY : endY - 1;
  // Only 2月29日 can need to go back further: leap years are at most 8 years apart.
  while (d > daysIn(y, m)) y--;
  return ymd(y, m, d);
};

export const problem = (
  message: string,
  at: Partial<Omit<FileProblem, "message">> = {},
): FileProblem => ({
  sheet: at.sheet ?? null,
  row: at.row ?? null,
  column: at.column ?? null,
  date: at.date ?? null,
  raw: at.raw ?? null,
  message,
});

export const reject = (message: string): Effect.Effect<never, FileRejected> =>
  Effect.fail(new FileRejected({ problems: [problem(message)] }));

export const describeLocation = (l: CellLocation): string =>
  `${l.sheet === null ? "" : `sheet "${l.sheet}" `}row ${l.row} column ${l.column}`;

// Gathers the rows and problems of one file in reading order.
export class Collector {
  readonly rows: Array<FileRow> = [];
  readonly checks: Array<CheckRow> = [];
  readonly problems: Array<FileProblem> = [];
  // Worksheets in workbook order (XLSX), to sort every problem of the file by where it is.
  readonly sheets: Array<string> = [];
  // Set once the file holds more values than MAX_IMPORT_ROWS: the readers stop there.
  stopped = false;
  private values = 0;
  private readonly seen = new Map<string, CellLocation>();

  add(p: FileProblem): void {
    this.problems.push(p);
  }

  // Counts one value about to be read; false (and one problem) past the limit.
  count(at: CellLocation): boolean {
    if (this.stopped) return false;
    if (++this.values <= MAX_IMPORT_ROWS) return true;
    this.stopped = true;
    this.add(
      problem(
        `more than ${MAX_IMPORT_ROWS} values: a file may hold at most ${MAX_IMPORT_ROWS}; ` +
          "reading stopped here",
        at,
      ),
    );
    return false;
  }

  addRow(row: Omit<FileRow, "rowNumber">): void {
    const key = `${row.brand}\u0000${row.storeName}\u0000${row.date}`;
    const first = this.seen.get(key);
    if (first !== undefined) {
      this.add(problem(
        `duplicate store-day: brand "${row.brand}", store "${row.storeName}", ${row.date} is ` +
          `already given at ${describeLocation(first)}`,
        { ...row.location, date: row.date, raw: row.rawEnergy },
      ));
      return;
    }
    this.seen.set(key, row.location);
    this.rows.push({ ...row, rowNumber: this.rows.length + 1 });
  }

  // A row whose value or date was refused (already reported): its brand, store and date are still
  // checked by the resolver.
  addCheck(row: Omit<CheckRow, "rowNumber">): void {
    this.checks.push({ ...row, rowNumber: this.rows.length + 1 });
  }

  finish(format: ReadFile["format"], noteField: NoteField | null): Effect.Effect<
    ReadFile,
    FileRejected
  > {
    if (this.problems.length === 0 && this.rows.length === 0) {
      this.add(problem("the file holds no values to import"));
    }
    return this.problems.length > 0
      ? Effect.fail(
        // A file over the row limit is refused for that alone: its rows are not resolved.
        new FileRejected({
          problems: this.problems,
          rows: this.stopped ? [] : this.rows,
          checks: this.stopped ? [] : this.checks,
          sheets: this.sheets,
        }),
      )
      : Effect.succeed({ format, noteField, rows: this.rows, sheets: this.sheets });
  }
}
