// The resolver: file rows -> store-days of current stores, with the file errors of rules.md §8
// (unknown brand or store, a date outside the dataset or in the future, a duplicate store-day).
import type {
  CatalogStore,
  CheckRow,
  FileProblem,
  FileRow,
  ResolveContext,
  ResolvedRow,
} from "./model.ts";
import { sheetLookup } from "../files/sheet_names.ts";
import type { Text } from "../domain/language.ts";
import { Problems, q as quote } from "./problem_texts.ts";

// Where the XLSX wide table keeps store names, and the CSV headers (service-spec PreviewInput).
const XLSX_STORE_COLUMN = "A";
const CSV_BRAND_COLUMN = "品牌";
const CSV_STORE_COLUMN = "门店";
const CSV_DATE_COLUMN = "日期";

// At most this many row ranges are spelled out in one message.
const MAX_LISTED_RANGES = 10;

export interface Resolution {
  // Rows matched to a store, dated within the dataset, and not repeating an earlier store-day.
  // Only meaningful when `problems` is empty: any problem rejects the whole file.
  readonly rows: ReadonlyArray<ResolvedRow>;
  // In file order (by the first value each problem concerns).
  readonly problems: ReadonlyArray<FileProblem>;
}

type Kind =
  | "BRAND"
  | "STORE"
  | "AMBIGUOUS"
  | "BEFORE_START"
  | "AFTER_END"
  | "FUTURE"
  | "DUPLICATE";
const KIND_ORDER: Record<Kind, number> = {
  BRAND: 0,
  STORE: 1,
  AMBIGUOUS: 2,
  BEFORE_START: 3,
  AFTER_END: 4,
  FUTURE: 5,
  DUPLICATE: 6,
};

interface Group {
  readonly kind: Kind;
  readonly first: CheckRow;
  readonly fileRows: Set<number>;
  readonly build: (first: CheckRow, rows: Text) => FileProblem;
}

// The distinct rows in order, as runs of consecutive rows ("2-41", "45"), and how many rows.
const rowRuns = (rows: Iterable<number>) => {
  const sorted = [...new Set(rows)].sort((a, b) => a - b);
  const runs: Array<string> = [];
  for (let i = 0; i < sorted.length;) {
    let j = i;
    while (j + 1 < sorted.length && sorted[j + 1] === sorted[j] + 1) j++;
    runs.push(i === j ? `${sorted[i]}` : `${sorted[i]}-${sorted[j]}`);
    i = j + 1;
  }
  return { runs, count: sorted.length, listed: runs.slice(0, MAX_LISTED_RANGES) };
};

// "row 4", "rows 2-41, 45", "rows 2, 4, 6, … (120 rows)".
export const rowsText = (rows: Iterable<number>): string => {
  const { runs, count, listed } = rowRuns(rows);
  if (count === 1) return `row ${runs[0]}`;
  return runs.length <= MAX_LISTED_RANGES
    ? `rows ${runs.join(", ")}`
    : `rows ${listed.join(", ")}, … (${count} rows)`;
};

// "第 4 行", "第 2-41、45 行", "第 2、4、6……行（共 120 行）".
export const rowsTextZh = (rows: Iterable<number>): string => {
  const { runs, count, listed } = rowRuns(rows);
  return runs.length <= MAX_LISTED_RANGES
    ? `第 ${runs.join("、")} 行`
    : `第 ${listed.join("、")}……行（共 ${count} 行）`;
};

const rowsOf = (rows: Iterable<number>): Text => Problems.rows(rowsText(rows), rowsTextZh(rows));

// Where a row sits, for messages: worksheet + rows, or CSV rows.
const where = (row: CheckRow, rows: Text): Text =>
  row.location.sheet === null ? rows : Problems.rows(
    `worksheet ${quote(row.location.sheet)} ${rows.en}`,
    `工作表 ${quote(row.location.sheet)} ${rows.zh}`,
  );

const cellText = (row: CheckRow): Text =>
  row.location.sheet === null
    ? Problems.rows(`row ${row.location.row}`, `第 ${row.location.row} 行`)
    : Problems.rows(
      `worksheet ${
        quote(row.location.sheet)
      } row ${row.location.row} column ${row.location.column}`,
      `工作表 ${quote(row.location.sheet)} 第 ${row.location.row} 行 ${row.location.column} 列`,
    );

// One date of a worksheet column or of a CSV file, with the rows that carry it.
const dateProblem = (why: Text) => (first: CheckRow, rows: Text): FileProblem => {
  const { sheet, row, column } = first.location;
  return {
    sheet,
    row,
    column: sheet === null ? CSV_DATE_COLUMN : column,
    date: first.date,
    raw: first.rawDate,
    message: Problems.dateProblem(
      first.date!,
      first.rawDate ?? "",
      why,
      sheet === null ? rows : Problems.rows(
        `worksheet ${quote(sheet)} column ${column}, ${rows.en}`,
        `工作表 ${quote(sheet)} ${column} 列，${rows.zh}`,
      ),
    ),
  };
};

const storeKey = (brand: string, storeName: string) => `${brand}\u0000${storeName}`;

/**
 * Matches file rows to current stores (rules.md §8: brand + store name, trimmed, exact).
 *
 * - Only `context.stores` exist: the caller's stores (rules.md §9: a store outside the key's scope
 *   is answered as if it did not exist, and so is a brand with none of its stores in scope).
 * - Brand: an XLSX row's worksheet name goes through `brandForSheet` over `namingBrands` (the
 *   exact brand name, else the template's sheet name of a brand); a CSV row's 品牌 cell must equal
 *   a brand name exactly. One problem per unknown worksheet or CSV brand.
 * - Store: the brand's store with exactly that name. One problem per unknown (or, after profile
 *   renames, ambiguous) store name of a worksheet or CSV brand, naming its rows.
 * - Date: the dataset's dates only (rules.md §8). Before `datasetStart` or after `datasetEnd` is
 *   outside the dataset, after `today` is in the future; new days arrive with a new snapshot, not
 *   through an import. One problem per worksheet column or CSV date, naming its rows. Checked for
 *   every row, blank cells included.
 * - A store-day reached twice (two rows of one sheet or CSV, or two worksheet names leading to one
 *   brand) is one problem per repetition, naming both places.
 * - `checks`, rows the reader refused, get the brand, store and date checks only (a problem the
 *   reader found is not repeated).
 */
export const resolveRows = (
  rows: ReadonlyArray<FileRow>,
  context: ResolveContext,
  checks: ReadonlyArray<CheckRow> = [],
): Resolution => {
  const brandNames = [...new Set(context.stores.map((s) => s.brandName))];
  const csvBrands = new Set(brandNames);
  const sheetBrand = sheetLookup(context.namingBrands ?? brandNames);
  const brandOfSheet = (sheet: string) => {
    const brand = sheetBrand(sheet);
    return brand !== undefined && csvBrands.has(brand) ? brand : undefined;
  };
  const stores = new Map<string, Array<CatalogStore>>();
  for (const store of context.stores) {
    const key = storeKey(store.brandName, store.storeName);
    const same = stores.get(key);
    if (same === undefined) stores.set(key, [store]);
    else same.push(store);
  }

  const groups = new Map<string, Group>();
  const note = (
    kind: Kind,
    key: string,
    row: CheckRow,
    build: (first: CheckRow, rows: Text) => FileProblem,
  ) => {
    const id = `${kind}\u0000${key}`;
    const group = groups.get(id);
    if (group === undefined) {
      groups.set(id, { kind, first: row, fileRows: new Set([row.location.row]), build });
    } else group.fileRows.add(row.location.row);
  };

  const resolved: Array<ResolvedRow> = [];
  const seen = new Map<string, CheckRow>();
  // Check rows first in reading order with the others: a group's first row is the earliest.
  const all: Array<{ readonly row: CheckRow; readonly full: FileRow | undefined }> = [
    ...rows.map((row) => ({ row, full: row })),
    ...checks.map((row) => ({ row, full: undefined })),
  ].sort((a, b) => a.row.rowNumber - b.row.rowNumber);
  for (const [index, { row, full }] of all.entries()) {
    const xlsx = row.location.sheet !== null;
    const sheetKey = row.location.sheet ?? "";
    let ok = true;

    const dateKey = `${sheetKey}\u0000${row.location.column}\u0000${row.date}`;
    if (row.date === null) {
      ok = false;
    } else if (row.date < context.datasetStart) {
      ok = false;
      note(
        "BEFORE_START",
        dateKey,
        row,
        dateProblem(Problems.beforeStart(context.datasetStart)),
      );
    } else if (row.date > context.today) {
      ok = false;
      note("FUTURE", dateKey, row, dateProblem(Problems.future(context.today)));
    } else if (row.date > context.datasetEnd) {
      ok = false;
      note(
        "AFTER_END",
        dateKey,
        row,
        dateProblem(Problems.afterEnd(context.datasetEnd)),
      );
    }

    const brand = xlsx ? brandOfSheet(row.brand) : csvBrands.has(row.brand) ? row.brand : undefined;
    if (brand === undefined) {
      note("BRAND", `${xlsx}\u0000${row.brand}`, row, (first, rows) =>
        xlsx
          ? {
            sheet: first.location.sheet,
            row: null,
            column: null,
            date: null,
            raw: first.brand,
            message: Problems.unknownSheet(first.brand),
          }
          : {
            sheet: null,
            row: first.location.row,
            column: CSV_BRAND_COLUMN,
            date: null,
            raw: first.brand,
            message: Problems.unknownBrand(first.brand, rows),
          });
      continue;
    }

    const matches = stores.get(storeKey(brand, row.storeName)) ?? [];
    if (matches.length !== 1) {
      const kind = matches.length === 0 ? "STORE" : "AMBIGUOUS";
      note(kind, `${sheetKey}\u0000${brand}\u0000${row.storeName}`, row, (first, rows) => ({
        sheet: first.location.sheet,
        row: first.location.row,
        column: xlsx ? XLSX_STORE_COLUMN : CSV_STORE_COLUMN,
        date: null,
        raw: first.storeName,
        message: matches.length === 0
          ? Problems.unknownStore(first.storeName, brand, where(first, rows))
          : Problems.ambiguousStore(first.storeName, matches.length, brand, where(first, rows)),
      }));
      continue;
    }
    if (!ok) continue;

    // A refused row takes part too: a store-day it repeats is reported with its own problem.
    const store = matches[0];
    const dayKey = `${store.storeId}\u0000${row.date}`;
    const earlier = seen.get(dayKey);
    if (earlier !== undefined) {
      note("DUPLICATE", `${index}`, row, (first) => ({
        sheet: first.location.sheet,
        row: first.location.row,
        column: first.location.column,
        date: first.date,
        raw: full?.rawEnergy ?? null,
        message: Problems.twoValues(
          first.storeName,
          brand,
          first.date!,
          cellText(earlier),
          cellText(first),
        ),
      }));
      continue;
    }
    seen.set(dayKey, row);
    if (full === undefined) continue;
    resolved.push({ ...full, storeId: store.storeId, scopeId: store.scopeId });
  }

  const problems = [...groups.values()]
    .sort((a, b) =>
      a.first.rowNumber - b.first.rowNumber || KIND_ORDER[a.kind] - KIND_ORDER[b.kind]
    )
    .map((g) => g.build(g.first, rowsOf(g.fileRows)));
  return { rows: resolved, problems };
};
