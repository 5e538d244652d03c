// Shared by the import readers: header dates, and the collector that numbers FileRows, enforces the
// row limit and gathers located problems. The energy text -> CellValue grammar (rules.md §1) is
// the file layout's (files/cell_text.ts), re-exported here for the readers.
import { Effect } from "effect";
import { MAX_IMPORT_ROWS } from "../domain/imports.ts";
import type { Text } from "../domain/language.ts";
import { Problems } from "./problem_texts.ts";
import {
  type CellLocation,
  type CheckRow,
  type FileProblem,
  FileRejected,
  type FileRow,
  type NoteField,
  type ReadFile,
} from "./model.ts";

export { BLANK, energyFromXlsxNumber, isProblem, parseEnergyText } from "../files/cell_text.ts";

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
  message: Text,
  at: Partial<Omit<FileProblem, "message">> = {},
): FileProblem => ({
  sheet: at.sheet ?? null,
  row: at.row ?? null,
  column: at.column ?? null,
  date: at.date ?? null,
  raw: at.raw ?? null,
  message,
});

export const reject = (message: Text): Effect.Effect<never, FileRejected> =>
  Effect.fail(new FileRejected({ problems: [problem(message)] }));

export const describeLocation = (l: CellLocation): Text => Problems.cell(l.sheet, l.row, l.column);

// Gathers the rows and problems of one file in reading order.
export class Collector {
  readonly rows: Array<FileRow> = [];
  readonly checks: Array<CheckRow> = [];
  readonly problems: Array<FileProblem> = [];
  // Worksheets in workbook order (XLSX), to sort every problem of the file by where it is.
  readonly sheets: Array<string> = [];
  // Set once the file holds more values than MAX_IMPORT_ROWS: the readers stop there.
  stopped = false;
  // The problem that says so: a file over the limit is refused with it alone.
  private overLimit: FileProblem | undefined;
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
    this.overLimit = problem(Problems.tooManyValues(MAX_IMPORT_ROWS), at);
    this.add(this.overLimit);
    return false;
  }

  // Whether this store-day was given before (by a row or by a refused row): then one problem, and
  // the caller drops the row.
  private repeated(
    row: { brand: string; storeName: string; date: string; location: CellLocation },
    raw: string | null,
  ): boolean {
    const key = `${row.brand}\u0000${row.storeName}\u0000${row.date}`;
    const first = this.seen.get(key);
    if (first === undefined) {
      this.seen.set(key, row.location);
      return false;
    }
    this.add(problem(
      Problems.duplicateInFile(row.brand, row.storeName, row.date, describeLocation(first)),
      { ...row.location, date: row.date, raw },
    ));
    return true;
  }

  addRow(row: Omit<FileRow, "rowNumber">): void {
    if (this.repeated(row, row.rawEnergy)) return;
    this.rows.push({ ...row, rowNumber: this.rows.length + 1 });
  }

  // A row whose value or date was refused (already reported): its brand, store and date are still
  // checked by the resolver, and a store-day it repeats is reported now, not once the value is
  // fixed.
  addCheck(row: Omit<CheckRow, "rowNumber">): void {
    if (row.date !== null && this.repeated({ ...row, date: row.date }, null)) return;
    // Between the rows read before and after it, for the resolver's reading order.
    this.checks.push({ ...row, rowNumber: this.rows.length + 0.5 });
  }

  finish(format: ReadFile["format"], noteField: NoteField | null): Effect.Effect<
    ReadFile,
    FileRejected
  > {
    if (this.problems.length === 0 && this.rows.length === 0) {
      this.add(problem(Problems.noValues()));
    }
    return this.problems.length > 0
      ? Effect.fail(
        // A file over the row limit is refused for that alone: the problems found in the rows
        // before it are not listed (they could hide it), nor are its rows resolved.
        new FileRejected({
          problems: this.overLimit === undefined ? this.problems : [this.overLimit],
          rows: this.stopped ? [] : this.rows,
          checks: this.stopped ? [] : this.checks,
          sheets: this.sheets,
        }),
      )
      : Effect.succeed({ format, noteField, rows: this.rows, sheets: this.sheets });
  }
}
