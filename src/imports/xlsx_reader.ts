// XLSX wide-table reader: one worksheet per brand, A1 门店名称, B1.. day headers, one row per store.
import type { Text } from "../domain/language.ts";
import { clipDetail, Problems } from "./problem_texts.ts";
import type ExcelJS from "exceljs";
import { loadExcel } from "../files/excel.ts";
import { columnLetter } from "../files/layout.ts";
import { STORE_NAME_HEADER } from "../files/template.ts";
import { Duration, Effect } from "effect";
import { FileRejected, type ReadContext, type ReadFile } from "./model.ts";
import { type PlainSheet, readPlainWorkbook } from "./xlsx_direct.ts";
import { decodeAddress, WorkbookScan } from "./xlsx_scan.ts";
import { readZip, type ZipLimits } from "./zip.ts";
import {
  defineEastAsianFormats,
  literalLetterFormats,
  misreadCell,
  sharedStringsMissing,
  STYLES_PART,
} from "./xlsx_parts.ts";
import { concat, ZipStream } from "../files/zip_stream.ts";
import {
  BLANK,
  Collector,
  energyFromXlsxNumber,
  isProblem,
  parseEnergyText,
  problem,
  reject,
  resolveHeaderDate,
  utcDateText,
} from "./cell_values.ts";

// A filled template of 10,000 values unpacks to 0.4-1.7 MiB (exceljs's output; Excel's adds some
// attributes): 16 MiB leaves room for pictures and styles, and bounds what JSZip inflates.
const ZIP_LIMITS: ZipLimits = { maxEntries: 1_000, maxUnpackedBytes: 16 * 1024 * 1024 };
// exceljs works on promises and streams; a workbook it cannot finish is refused, not awaited.
const LOAD_TIMEOUT = Duration.seconds(20);

// Why the workbook library could not read a file: its own words when it refused the file, a
// general one when it failed in its own code (a TypeError such as "Cannot read properties of
// undefined" says nothing a user can act on).
const message = (e: unknown): Text | string =>
  e instanceof TypeError || e instanceof RangeError || e instanceof ReferenceError
    ? Problems.partMissing()
    : clipDetail(e instanceof Error ? e.message : String(e));

// The archive as JSZip will read it, and every entry's XML within the bounds exceljs can build;
// its entries, inflated, when it is.
const readArchive = (
  bytes: Uint8Array,
): { readonly problem: Text } | { readonly entries: Map<string, Uint8Array> } => {
  const scan = new WorkbookScan();
  const entries = new Map<string, Uint8Array>();
  const problem = readZip(bytes, ZIP_LIMITS, (file) => {
    entries.set(file.name, file.data);
    return scan.check(file.name, file.data);
  });
  return problem === undefined ? { entries } : { problem: Problems.notReadable(problem) };
};

// The entries as one archive again (with styles that define the formats exceljs lacks).
const rezip = (entries: ReadonlyMap<string, Uint8Array>) => {
  const zip = new ZipStream();
  return concat([...Array.from(entries, ([name, data]) => zip.file(name, data)), zip.finish()]);
};

// One cell as the readers see it. `text` is trimmed and non-empty.
type Cell =
  | { readonly kind: "blank" }
  | { readonly kind: "text"; readonly text: string }
  | { readonly kind: "number"; readonly n: number }
  | { readonly kind: "date"; readonly ymd: string }
  | { readonly kind: "bad"; readonly raw: string | null; readonly message: Text };

const BLANK_CELL: Cell = { kind: "blank" };

const textCell = (s: string): Cell => {
  const text = s.trim();
  return text === "" ? BLANK_CELL : { kind: "text", text };
};

const rawOf = (cell: Cell): string | null =>
  cell.kind === "text"
    ? cell.text
    : cell.kind === "number"
    ? String(cell.n)
    : cell.kind === "date"
    ? cell.ymd
    : cell.kind === "bad"
    ? cell.raw
    : null;

// exceljs cell values: null, number, string, boolean, Date, {formula|sharedFormula, result},
// {richText}, {text, hyperlink}, {error}. A formula counts as its cached result.
const classifyValue = (v: unknown, depth = 0): Cell => {
  if (v === null || v === undefined) return BLANK_CELL;
  if (typeof v === "number") {
    return Number.isFinite(v) ? { kind: "number", n: v } : {
      kind: "bad",
      raw: String(v),
      message: Problems.notFinite(),
    };
  }
  if (typeof v === "string") return textCell(v);
  if (typeof v === "boolean") {
    return { kind: "bad", raw: v ? "TRUE" : "FALSE", message: Problems.booleanCell() };
  }
  if (v instanceof Date) {
    return Number.isNaN(v.getTime())
      ? { kind: "bad", raw: null, message: Problems.invalidDate() }
      : { kind: "date", ymd: utcDateText(v) };
  }
  if (typeof v !== "object" || depth > 3) {
    return { kind: "bad", raw: null, message: Problems.unsupportedCell() };
  }
  const o = v as Record<string, unknown>;
  if ("error" in o) {
    return { kind: "bad", raw: String(o.error), message: Problems.errorCell() };
  }
  if ("formula" in o || "sharedFormula" in o) {
    if (o.result === undefined || o.result === null) {
      return {
        kind: "bad",
        raw: `=${String(o.formula ?? o.sharedFormula)}`,
        message: Problems.formulaWithoutResult(),
      };
    }
    return classifyValue(o.result, depth + 1);
  }
  if (Array.isArray(o.richText)) {
    return textCell(o.richText.map((r) => String((r as { text?: unknown })?.text ?? "")).join(""));
  }
  if ("text" in o) return classifyValue(o.text, depth + 1);
  return { kind: "bad", raw: null, message: Problems.unsupportedCell() };
};

// ExcelJS.ValueType.Merge, without loading exceljs to read an enum.
const MERGE = 1 as ExcelJS.ValueType.Merge;

const classifyCell = (cell: ExcelJS.Cell): Cell => {
  if (cell.type === MERGE && cell.master !== cell) {
    const master = classifyValue(cell.master.value);
    return master.kind === "blank" ? BLANK_CELL : {
      kind: "bad",
      raw: rawOf(master),
      message: Problems.mergedCell(cell.master.address),
    };
  }
  return classifyValue(cell.value);
};

interface DayColumn {
  readonly col: number;
  readonly letter: string;
  readonly date: string;
  readonly rawDate: string;
}

interface SheetRow {
  readonly rn: number;
  // Non-blank cells by column, in column order.
  readonly cells: Map<number, Cell>;
}

// A worksheet's non-blank cells as exceljs built them.
const excelRows = (ws: ExcelJS.Worksheet): Array<SheetRow> => {
  const rows: Array<SheetRow> = [];
  ws.eachRow((row, rn) => {
    const cells = new Map<number, Cell>();
    row.eachCell((cell, col) => {
      const k = classifyCell(cell);
      if (k.kind !== "blank") cells.set(col, k);
    });
    if (cells.size > 0) rows.push({ rn, cells });
  });
  return rows;
};

// A worksheet's non-blank cells as read from its XML (xlsx_direct.ts).
const plainRows = (sheet: PlainSheet): Array<SheetRow> => {
  const rows: Array<SheetRow> = [];
  for (const { rn, cells: values } of sheet.rows) {
    const cells = new Map<number, Cell>();
    for (const [col, value] of values) {
      const k = classifyValue(value);
      if (k.kind !== "blank") cells.set(col, k);
    }
    if (cells.size > 0) rows.push({ rn, cells });
  }
  return rows;
};

// Reads one worksheet's rows into the collector; false when the sheet holds no cell at all.
const readSheet = (
  sheet: string,
  rows: ReadonlyArray<SheetRow>,
  datasetEnd: string,
  c: Collector,
): boolean => {
  if (rows.length === 0) return false;

  const header = rows[0].rn === 1 ? rows[0].cells : new Map<number, Cell>();
  const a1 = header.get(1);
  if (a1?.kind !== "text" || a1.text !== STORE_NAME_HEADER) {
    c.add(problem(Problems.a1Header(STORE_NAME_HEADER), {
      sheet,
      row: 1,
      column: "A",
      raw: a1 === undefined ? null : rawOf(a1),
    }));
    return true;
  }

  const days: Array<DayColumn> = [];
  // Columns with a header that is not a usable date: already reported, their cells are not.
  const refused = new Set<number>();
  const byDate = new Map<string, string>();
  for (const [col, k] of header) {
    if (col === 1) continue;
    const letter = columnLetter(col);
    const date = k.kind === "date"
      ? k.ymd
      : k.kind === "text"
      ? resolveHeaderDate(k.text, datasetEnd)
      : undefined;
    const at = { sheet, row: 1, column: letter, raw: rawOf(k), date: date ?? null };
    if (date === undefined) {
      refused.add(col);
      c.add(problem(k.kind === "bad" ? k.message : Problems.headerNotDate(), at));
    } else if (byDate.has(date)) {
      refused.add(col);
      c.add(problem(Problems.secondColumnForDate(date, byDate.get(date)!), at));
    } else {
      byDate.set(date, letter);
      days.push({ col, letter, date, rawDate: k.kind === "date" ? k.ymd : rawOf(k)! });
    }
  }
  if (days.length === 0 && refused.size === 0) {
    c.add(problem(Problems.noDateColumns(), { sheet, row: 1 }));
    return true;
  }
  const dayColumns = new Set(days.map((d) => d.col));

  const stores = new Map<string, number>();
  for (const { rn, cells } of rows) {
    if (rn === 1) continue;
    const a = cells.get(1);
    if (a === undefined || a.kind === "bad" || a.kind === "date") {
      c.add(problem(
        a === undefined
          ? Problems.blankStoreName()
          : a.kind === "bad"
          ? a.message
          : Problems.storeNameDate(),
        { sheet, row: rn, column: "A", raw: a === undefined ? null : rawOf(a) },
      ));
      continue;
    }
    const storeName = rawOf(a)!;
    const first = stores.get(storeName);
    if (first !== undefined) {
      c.add(problem(Problems.storeRepeated(storeName, first), {
        sheet,
        row: rn,
        column: "A",
        raw: storeName,
      }));
      continue;
    }
    stores.set(storeName, rn);
    for (const [col, k] of cells) {
      if (col !== 1 && !dayColumns.has(col) && !refused.has(col)) {
        c.add(problem(Problems.valueWithoutDate(), {
          sheet,
          row: rn,
          column: columnLetter(col),
          raw: rawOf(k),
        }));
      }
    }
    for (const day of days) {
      const location = { sheet, row: rn, column: day.letter };
      if (!c.count(location)) return true;
      const k = cells.get(day.col) ?? BLANK_CELL;
      const raw = rawOf(k);
      const value = k.kind === "blank"
        ? BLANK
        : k.kind === "number"
        ? energyFromXlsxNumber(k.n)
        : k.kind === "text"
        ? parseEnergyText(k.text)
        : { problem: k.kind === "date" ? Problems.dateNotEnergy() : k.message };
      if (isProblem(value)) {
        c.add(problem(value.problem, { ...location, date: day.date, raw }));
        c.addCheck({ brand: sheet, storeName, date: day.date, rawDate: day.rawDate, location });
        continue;
      }
      c.addRow({
        brand: sheet,
        storeName,
        date: day.date,
        rawDate: day.rawDate,
        rawEnergy: raw,
        value,
        note: undefined,
        location,
      });
    }
  }
  return true;
};

// A workbook's values: read from its XML when it is plain (xlsx_direct.ts), else by exceljs.
export const readXlsx = (
  bytes: Uint8Array,
  context: ReadContext,
): Effect.Effect<ReadFile, FileRejected> => readWorkbook(bytes, context, true);

// The same, always by exceljs (tests compare the two readings).
export const readXlsxWithExcel = (
  bytes: Uint8Array,
  context: ReadContext,
): Effect.Effect<ReadFile, FileRejected> => readWorkbook(bytes, context, false);

// A worksheet as the readers walk it: its name and its rows, each read when asked for (exceljs
// builds its objects lazily, and an odd workbook can throw while it is walked).
interface SheetSource {
  readonly name: () => string;
  readonly rows: () => ReadonlyArray<SheetRow>;
}

// Reads the worksheets in order into the collector, and finishes it.
const readSheets = (sheets: ReadonlyArray<SheetSource>, datasetEnd: string, c: Collector) => {
  let used = false;
  for (const source of sheets) {
    if (c.stopped) break;
    let sheet: string | null = null;
    try {
      sheet = source.name();
      c.sheets.push(sheet);
      if (readSheet(sheet, source.rows(), datasetEnd, c)) used = true;
    } catch (e) {
      c.add(problem(Problems.sheetUnreadable(message(e)), { sheet }));
      used = true;
    }
  }
  if (!used && c.problems.length === 0) {
    c.add(problem(Problems.noSheetWithData()));
  }
  return c.finish("XLSX", "ABSENT_WIDE_TABLE");
};

const readWorkbook = (
  bytes: Uint8Array,
  context: ReadContext,
  direct: boolean,
): Effect.Effect<ReadFile, FileRejected> =>
  Effect.gen(function* () {
    const archive = readArchive(bytes);
    if ("problem" in archive) return yield* reject(archive.problem);
    if (sharedStringsMissing(archive.entries)) {
      return yield* reject(Problems.notReadable(Problems.partMissing()));
    }
    const entries = archive.entries;
    let defined: Uint8Array | undefined;
    for (const fix of [defineEastAsianFormats, literalLetterFormats]) {
      const styles = entries.get(STYLES_PART);
      const fixed = styles === undefined ? undefined : fix(styles);
      if (fixed !== undefined) entries.set(STYLES_PART, defined = fixed);
    }
    const plain = direct ? readPlainWorkbook(entries) : undefined;
    if (plain !== undefined) {
      return yield* readSheets(
        plain.map((sheet) => ({ name: () => sheet.name, rows: () => plainRows(sheet) })),
        context.datasetEnd,
        new Collector(),
      );
    }
    const misread = misreadCell(entries);
    if (misread !== undefined) {
      const at = misread.cell === null ? undefined : decodeAddress(misread.cell);
      return yield* Effect.fail(
        new FileRejected({
          problems: [problem(Problems.notReadAsWritten(), {
            sheet: misread.sheet,
            row: at?.row ?? null,
            column: at?.col === undefined ? null : columnLetter(at.col),
            raw: misread.raw,
          })],
        }),
      );
    }
    const workbook = yield* Effect.tryPromise({
      // JSZip accepts a Uint8Array; exceljs's typing names its own Buffer.
      try: async () =>
        new (await loadExcel()).Workbook().xlsx.load(
          (defined === undefined ? bytes : rezip(entries)) as unknown as ExcelJS.Buffer,
        ),
      catch: (e) => new FileRejected({ problems: [problem(Problems.notReadable(message(e)))] }),
    }).pipe(
      Effect.timeoutFail({
        duration: LOAD_TIMEOUT,
        onTimeout: () => new FileRejected({ problems: [problem(Problems.readingUnfinished())] }),
      }),
    );
    const c = new Collector();
    let sheets: Array<ExcelJS.Worksheet> = [];
    try {
      sheets = workbook.worksheets;
    } catch (e) {
      c.add(problem(Problems.notReadable(message(e))));
    }
    return yield* readSheets(
      sheets.map((ws) => ({ name: () => ws.name, rows: () => excelRows(ws) })),
      context.datasetEnd,
      c,
    );
  });
