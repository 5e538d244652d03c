// CSV long-table reader: UTF-8 text with columns 品牌, 门店, 日期, 日能耗 and optional 备注.
// Types from csv_parse_sync.d.ts (why: see there); the runtime module is csv-parse's own.
// @ts-types="./csv_parse_sync.d.ts"
import { CsvError, parse } from "csv-parse/sync";
import { Effect } from "effect";
import { isProblem, parseEnergyText, unprotectText } from "../files/cell_text.ts";
import { CSV_COLUMNS, CSV_NOTE_COLUMN } from "../files/layout.ts";
import type { FileRejected, ReadContext, ReadFile } from "./model.ts";
import { Collector, problem, resolveHeaderDate } from "./cell_values.ts";
import type { Text } from "../domain/language.ts";
import { Problems } from "./problem_texts.ts";

// The columns are the file layout's (files/layout.ts), which exports write too.
export { CSV_COLUMNS, CSV_NOTE_COLUMN };

const RAW_ROW_CHARS = 200;
// A 备注 note becomes the day's quality note, served with it on every read of the day.
export const MAX_NOTE_CHARS = 500;
// What a note may not hold: control characters other than tab and line breaks, the noncharacters
// U+FFFE and U+FFFF, and the controls that reorder the text shown around them. The note is shown in
// the console and written into exports as it was read.
const NOTE_UNPRINTABLE = /(?![\t\n\r])[\p{Cc}\u202A-\u202E\u2066-\u2069\uFFFE\uFFFF]/u;

// Thrown from csv-parse's on_record to stop reading (row limit, unusable header).
class Stop {}

interface Columns {
  readonly brand: number;
  readonly store: number;
  readonly date: number;
  readonly energy: number;
  readonly note: number | undefined;
  readonly width: number;
  // Columns with an empty header name: tolerated (spreadsheets add them) while their cells are blank.
  readonly unnamed: ReadonlyArray<number>;
}

const isBlankRecord = (record: ReadonlyArray<string>) => record.every((f) => f.trim() === "");

const KNOWN_COLUMNS: ReadonlyArray<string> = [...CSV_COLUMNS, CSV_NOTE_COLUMN];
// Separators a spreadsheet may have used instead of commas (problem_texts.ts names them).
const SEPARATORS = [";", "\t", "|"] as const;

// A first line that names none of the columns: the file is not this CSV at all (one problem, not
// one per missing column); a known header split by another separator says which one.
const foreignHeader = (record: ReadonlyArray<string>): Text | undefined => {
  if (record.some((field) => KNOWN_COLUMNS.includes(field.trim()))) return undefined;
  const line = record.join(",");
  for (const separator of SEPARATORS) {
    if (line.split(separator).some((field) => KNOWN_COLUMNS.includes(field.trim()))) {
      return Problems.separator(separator);
    }
  }
  return Problems.foreignCsv();
};

const readHeader = (
  record: ReadonlyArray<string>,
  line: number,
  c: Collector,
): Columns | undefined => {
  const foreign = foreignHeader(record);
  if (foreign !== undefined) {
    c.add(problem(foreign, { row: line }));
    return undefined;
  }
  const at = new Map<string, number>();
  const unnamed: Array<number> = [];
  let ok = true;
  record.forEach((field, i) => {
    const name = field.trim();
    if (name === "") {
      unnamed.push(i);
    } else if (!(CSV_COLUMNS as ReadonlyArray<string>).includes(name) && name !== CSV_NOTE_COLUMN) {
      ok = false;
      c.add(
        problem(Problems.unknownColumn(name), { row: line, column: name, raw: field }),
      );
    } else if (at.has(name)) {
      ok = false;
      c.add(problem(Problems.duplicatedColumn(name), { row: line, column: name, raw: field }));
    } else {
      at.set(name, i);
    }
  });
  for (const name of CSV_COLUMNS) {
    if (!at.has(name)) {
      ok = false;
      c.add(problem(Problems.missingColumn(name), { row: line, column: name }));
    }
  }
  if (!ok) return undefined;
  return {
    brand: at.get("品牌")!,
    store: at.get("门店")!,
    date: at.get("日期")!,
    energy: at.get("日能耗")!,
    note: at.get(CSV_NOTE_COLUMN),
    width: record.length,
    unnamed,
  };
};

const rawRow = (record: ReadonlyArray<string>) => {
  const raw = record.join(",");
  return raw.length > RAW_ROW_CHARS ? `${raw.slice(0, RAW_ROW_CHARS)}…` : raw;
};

const readRecord = (
  record: ReadonlyArray<string>,
  line: number,
  cols: Columns,
  context: ReadContext,
  c: Collector,
) => {
  if (!c.count({ sheet: null, row: line, column: "日能耗" })) throw new Stop();
  if (record.length !== cols.width) {
    c.add(problem(Problems.fieldCount(record.length, cols.width), {
      row: line,
      raw: rawRow(record),
    }));
    return;
  }
  let ok = true;
  for (const i of cols.unnamed) {
    if (record[i].trim() !== "") {
      ok = false;
      c.add(problem(Problems.unnamedColumnValue(i + 1), {
        row: line,
        column: `#${i + 1}`,
        raw: record[i].trim(),
      }));
    }
  }
  // Free text may carry a spreadsheet's text mark (an exported name or note beginning with "=").
  const brand = unprotectText(record[cols.brand].trim());
  const storeName = unprotectText(record[cols.store].trim());
  const rawDate = record[cols.date].trim();
  const rawEnergy = record[cols.energy].trim();
  const date = resolveHeaderDate(rawDate, context.datasetEnd);
  const value = parseEnergyText(rawEnergy);
  const where = { row: line, date: date ?? null };
  if (brand === "") {
    ok = false;
    c.add(problem(Problems.blankBrand(), { ...where, column: "品牌" }));
  }
  if (storeName === "") {
    ok = false;
    c.add(problem(Problems.blankStore(), { ...where, column: "门店" }));
  }
  if (date === undefined) {
    c.add(problem(
      rawDate === "" ? Problems.blankDate() : Problems.notADate(),
      { ...where, column: "日期", raw: rawDate === "" ? null : rawDate },
    ));
  }
  if (isProblem(value)) {
    c.add(problem(value.problem, { ...where, column: "日能耗", raw: rawEnergy }));
  }
  const note = cols.note === undefined ? undefined : unprotectText(record[cols.note].trim());
  if (note !== undefined && note.length > MAX_NOTE_CHARS) {
    ok = false;
    c.add(problem(Problems.noteTooLong(MAX_NOTE_CHARS), { ...where, column: "备注", raw: note }));
  }
  const unprintable = note === undefined ? null : NOTE_UNPRINTABLE.exec(note);
  if (unprintable !== null) {
    ok = false;
    const code = unprintable[0].codePointAt(0)!.toString(16).toUpperCase().padStart(4, "0");
    c.add(problem(Problems.noteUnprintable(`U+${code}`), { ...where, column: "备注", raw: note }));
  }
  if (brand === "" || storeName === "") return;
  if (!ok || date === undefined || isProblem(value)) {
    c.addCheck({
      brand,
      storeName,
      date: date ?? null,
      rawDate,
      location: { sheet: null, row: line, column: "日能耗" },
    });
    return;
  }
  c.addRow({
    brand,
    storeName,
    date,
    rawDate,
    rawEnergy: rawEnergy === "" ? null : rawEnergy,
    value,
    note,
    location: { sheet: null, row: line, column: "日能耗" },
  });
};

const lineBreaks = (text: string) => text.match(/\r\n|\r|\n/g)?.length ?? 0;

const QUOTE = 0x22;
const COMMA = 0x2c;
const LF = 0x0a;
const CR = 0x0d;
const utf8 = new TextDecoder("utf-8", { ignoreBOM: true });

const hasLoneCr = (bytes: Uint8Array) => {
  for (let at = bytes.indexOf(CR); at >= 0; at = bytes.indexOf(CR, at + 1)) {
    if (bytes[at + 1] !== LF) return true;
  }
  return false;
};

// The fields of a line (commas split it; no field is quoted).
const lineFields = (line: Uint8Array) => {
  const fields: Array<string> = [];
  for (let at = 0;;) {
    const comma = line.indexOf(COMMA, at);
    fields.push(utf8.decode(line.subarray(at, comma < 0 ? line.length : comma)));
    if (comma < 0) return fields;
    at = comma + 1;
  }
};

/**
 * Each record of a CSV file with the line it ends on, as csv-parse gives them (relax_column_count;
 * empty lines are records of one empty field). `bytes` is UTF-8 text without its BOM, checked
 * already. A file without a double quote or a lone carriage return is only lines of fields (its
 * CRLFs, outside any field, are line ends): it is split on line feeds and commas and each field
 * decoded on its own, which reads it the same way several times faster and keeps no text of the
 * whole file or its lines alive through the fields (tests/csv_records_test.ts compares both). Any
 * other file is csv-parse's.
 */
export const forEachRecord = (
  bytes: Uint8Array,
  onRecord: (record: Array<string>, lines: number) => void,
) => {
  if (bytes.includes(QUOTE) || hasLoneCr(bytes)) {
    parse(utf8.decode(bytes), {
      relax_column_count: true,
      // Any line end ends a record, as in the split below: csv-parse would otherwise take the
      // first line's for the whole file and refuse a quoted field after a line of another kind.
      record_delimiter: ["\r\n", "\n", "\r"],
      on_record: (record: Array<string>, info: { lines: number }) => {
        onRecord(record, info.lines);
        return null;
      },
    });
    return;
  }
  if (bytes.length === 0) return;
  // A final line feed ends the last record; it does not begin another.
  const end = bytes[bytes.length - 1] === LF ? bytes.length - 1 : bytes.length;
  let line = 0;
  for (let at = 0; at <= end;) {
    let next = bytes.indexOf(LF, at);
    if (next < 0 || next > end) next = end;
    onRecord(
      lineFields(bytes.subarray(at, next > at && bytes[next - 1] === CR ? next - 1 : next)),
      ++line,
    );
    at = next + 1;
  }
};

// `bytes` is UTF-8 text without its BOM, checked already. Records are handled as they are read, so
// that reading stops at the row limit.
export const readCsv = (
  bytes: Uint8Array,
  context: ReadContext,
): Effect.Effect<ReadFile, FileRejected> =>
  Effect.suspend(() => {
    const c = new Collector();
    let columns: Columns | undefined;
    // A record starts on the line after the previous one ended (empty lines are records too, as
    // skip_empty_lines is off) and ends as many lines later as its fields hold line breaks (a CRLF
    // is one, as a spreadsheet shows it; csv-parse would count it as two). The fields keep their
    // line breaks as written.
    let lastLine = 0;
    try {
      forEachRecord(bytes, (record) => {
        const line = lastLine + 1;
        lastLine = line + record.reduce((n, field) => n + lineBreaks(field), 0);
        if (isBlankRecord(record)) return;
        if (columns === undefined) {
          columns = readHeader(record, line, c);
          if (columns === undefined) throw new Stop();
        } else {
          readRecord(record, line, columns, context, c);
        }
      });
    } catch (e) {
      if (e instanceof CsvError) {
        // The record after the last one read.
        c.add(problem(Problems.malformedCsv(e.message), { row: lastLine + 1 }));
      } else if (!(e instanceof Stop)) {
        throw e;
      }
    }
    if (columns === undefined && c.problems.length === 0) {
      c.add(problem(Problems.emptyFile()));
    }
    return c.finish("CSV", columns?.note === undefined ? "ABSENT_NO_COLUMN" : null);
  });
