// The import template workbook (one worksheet per brand) and the columns and limits it documents.
// The export workbook has the same sheet shape (exports/xlsx_stream.ts), and the import reader
// reads it back (imports/xlsx_reader.ts).
import { type Language, pick, type Text, text as t } from "../domain/language.ts";
import { loadExcel } from "./excel.ts";
import { MAX_FILE_BYTES, MAX_IMPORT_ROWS } from "../domain/imports.ts";
import { compareNames, MAX_SHEET_NAME_CHARS, sheetNamesFor } from "./sheet_names.ts";

export const STORE_NAME_HEADER = "门店名称";

export interface TemplateInput {
  readonly brands: ReadonlyArray<{ readonly name: string; readonly stores: ReadonlyArray<string> }>;
  // YYYY-MM-DD, ascending.
  readonly days: ReadonlyArray<string>;
  // Every brand name the file will be resolved against (the whole catalog, visible or not). Sheet
  // names are computed over these plus `brands`, so that a template limited to some brands names
  // its sheets exactly as the resolver's `brandForSheet` over the catalog expects. Defaults to the
  // names of `brands`.
  readonly namingBrands?: ReadonlyArray<string>;
}

export interface TemplateSheet {
  readonly name: string;
  readonly brand: string;
  readonly stores: number;
}

export interface BuiltTemplate {
  readonly bytes: Uint8Array;
  readonly sheets: ReadonlyArray<TemplateSheet>;
}

// The `columns` field of the Template response.
const TEMPLATE_COLUMN_TEXTS: Record<string, Text> = {
  "A": t(
    `${STORE_NAME_HEADER} (store name, prefilled from the current store profiles; keep as is)`,
    `${STORE_NAME_HEADER}（门店名称，按当前门店资料预填；请保持不变）`,
  ),
  "B..": t(
    "one column per day, headed YYYY-MM-DD (or 7月9日: the most recent such date on or before the dataset's end); a cell holds kWh as a number >= 0 with at most 4 decimals, VOID or 作废 to void the day, or stays blank to skip it",
    "每天一列，标题为 YYYY-MM-DD（或 7月9日：数据集结束日当天或之前最近的该日期）；单元格填写 kWh 数值（>= 0，最多 4 位小数），填 VOID 或 作废 表示作废该日，留空表示跳过",
  ),
};

// The `columns` field of the Template response, in a language (the column names are the file's).
export const templateColumns = (language: Language): Record<string, string> =>
  Object.fromEntries(
    Object.entries(TEMPLATE_COLUMN_TEXTS).map(([column, text]) => [column, pick(text, language)]),
  );

export const TEMPLATE_COLUMNS: Record<string, string> = templateColumns("en");

// The `limits` field of the Template response (service-spec part 8).
export const templateLimits = (): Record<string, number> => ({
  max_rows: MAX_IMPORT_ROWS,
  max_file_bytes: MAX_FILE_BYTES,
  max_decimals: 4,
  max_filename_chars: 255,
  max_reason_chars: 500,
  max_sheet_name_chars: MAX_SHEET_NAME_CHARS,
});

// Approximate display width: East Asian wide characters take two columns.
const displayWidth = (text: string): number =>
  Array.from(text).reduce((w, c) => w + (c.codePointAt(0)! >= 0x1100 ? 2 : 1), 0);

export const TEMPLATE_DAY_COLUMN_WIDTH = 12;
const MIN_STORE_COLUMN_WIDTH = 12;
const MAX_STORE_COLUMN_WIDTH = 60;

// The width of column A: its widest name, within bounds (also the export's, exports/xlsx_stream.ts).
export const storeColumnWidth = (stores: ReadonlyArray<string>): number =>
  Math.min(
    MAX_STORE_COLUMN_WIDTH,
    stores.reduce(
      (widest, store) => Math.max(widest, displayWidth(store)),
      Math.max(MIN_STORE_COLUMN_WIDTH, displayWidth(STORE_NAME_HEADER)),
    ) + 2,
  );

// Text as a shared string holds it for a reader that decodes the format's escapes (_xHHHH_: Excel,
// exceljs, the plain reader): a "_x0041_" in a store's name is kept by escaping its underscore
// (_x005F_), else it would read back as "A" and match no store.
const literalText = (text: string) => text.replace(/_x([0-9A-F]{4})_/g, "_x005F_x$1_");

/**
 * Builds the template: brands in code-unit order of their names, one worksheet each (names from
 * `sheetNamesFor` over `namingBrands` and the brands); A1 = 门店名称, B1.. = the days as text
 * cells; column A holds the brand's store names in code-unit order; all value cells are empty.
 * Row 1 and column A are frozen.
 */
export const buildTemplate = async (input: TemplateInput): Promise<BuiltTemplate> => {
  const brands = [...input.brands].sort((a, b) => compareNames(a.name, b.name));
  const naming = [...new Set([...(input.namingBrands ?? []), ...brands.map((b) => b.name)])];
  const sheetOf = new Map(sheetNamesFor(naming).map((m) => [m.brand, m.sheet]));
  const workbook = new (await loadExcel()).Workbook();
  const sheets: Array<TemplateSheet> = [];
  for (const brand of brands) {
    const name = sheetOf.get(brand.name)!;
    const stores = [...brand.stores].sort(compareNames);
    const sheet = workbook.addWorksheet(name, {
      views: [{ state: "frozen", xSplit: 1, ySplit: 1, topLeftCell: "B2", activeCell: "B2" }],
    });
    sheet.getColumn(1).width = storeColumnWidth(stores);
    // Text format keeps store names such as "001" or "2026-07-09" from being retyped by Excel.
    sheet.getColumn(1).numFmt = "@";
    const header = sheet.getRow(1);
    header.font = { bold: true };
    const a1 = header.getCell(1);
    a1.value = STORE_NAME_HEADER;
    a1.numFmt = "@";
    input.days.forEach((day, d) => {
      sheet.getColumn(d + 2).width = TEMPLATE_DAY_COLUMN_WIDTH;
      // A text cell with format "@" stays the text YYYY-MM-DD instead of becoming a date serial.
      const cell = header.getCell(d + 2);
      cell.value = day;
      cell.numFmt = "@";
    });
    stores.forEach((store, r) => {
      sheet.getCell(r + 2, 1).value = literalText(store);
    });
    sheets.push({ name, brand: brand.name, stores: stores.length });
  }
  const buffer = await workbook.xlsx.writeBuffer();
  return { bytes: new Uint8Array(buffer), sheets };
};
