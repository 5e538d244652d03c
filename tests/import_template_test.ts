// Import template: worksheet names for brands, the template workbook, and the row resolver.
import assert from "node:assert/strict";
import ExcelJS from "exceljs";
import { Effect, FastCheck as fc, Layer, Schema } from "effect";
import type { CallerShape } from "../src/domain/auth.ts";
import { addDays } from "../src/domain/range.ts";
import { CatalogRepo } from "../src/files/catalog_repo.ts";
import { TemplateService } from "../src/imports/template_service.ts";
import { Template } from "../src/domain/imports.ts";
import type { CatalogStore, CheckRow, FileRow, ResolveContext } from "../src/imports/model.ts";
import { resolveRows, rowsText, rowsTextZh } from "../src/imports/resolver.ts";
import {
  brandForSheet,
  isValidSheetName,
  MAX_SHEET_NAME_CHARS,
  sheetNamesFor,
} from "../src/files/sheet_names.ts";
import { buildTemplate, TEMPLATE_COLUMNS, templateLimits } from "../src/files/template.ts";

const FORBIDDEN = /[:\\/?*[\]]/;

const sheetOf = (brands: ReadonlyArray<string>) => sheetNamesFor(brands).map((s) => s.sheet);

const assertValidAndUnique = (brands: ReadonlyArray<string>) => {
  const mapped = sheetNamesFor(brands);
  assert.deepEqual(mapped.map((m) => m.brand), [...brands]);
  const keys = new Set<string>();
  for (const { brand, sheet } of mapped) {
    assert.ok(isValidSheetName(sheet), `invalid ${JSON.stringify(sheet)}`);
    assert.ok(sheet.length >= 1 && sheet.length <= MAX_SHEET_NAME_CHARS);
    assert.ok(Array.from(sheet).length <= MAX_SHEET_NAME_CHARS);
    assert.ok(!FORBIDDEN.test(sheet));
    assert.ok(!sheet.startsWith("'") && !sheet.endsWith("'"));
    assert.notEqual(sheet.toLowerCase(), "history");
    // No lone surrogate: the name survives a UTF-8 round trip.
    assert.equal(new TextDecoder().decode(new TextEncoder().encode(sheet)), sheet);
    const key = sheet.toUpperCase().toLowerCase();
    assert.ok(!keys.has(key), `duplicate ${sheet}`);
    keys.add(key);
    assert.equal(brandForSheet(sheet, brands), brand);
  }
};

Deno.test("sheet names: valid names are kept as they are", () => {
  const brands = ["麦当劳", "KFC", "Brand 'Quoted' Inside", "x".repeat(31)];
  assert.deepEqual(sheetOf(brands), brands);
  assertValidAndUnique(brands);
});

Deno.test("sheet names: forbidden characters become underscores", () => {
  assert.deepEqual(sheetOf(["a:b\\c/d?e*f[g]h"]), ["a_b_c_d_e_f_g_h"]);
  assert.deepEqual(sheetOf(["tab\there", "nul\u0000"]), ["tab_here", "nul_"]);
  assert.deepEqual(sheetOf(["lone\ud800"]), ["lone_"]);
});

Deno.test("sheet names: apostrophes at either end are stripped, inner ones kept", () => {
  assert.deepEqual(sheetOf(["'quoted'", "''x''", "it's"]), ["quoted", "x", "it's"]);
  assert.deepEqual(sheetOf(["'''"]), ["Sheet"]);
  // A cut that leaves an apostrophe at the end drops it too.
  assert.deepEqual(sheetOf(["a".repeat(30) + "'bc"]), ["a".repeat(30)]);
});

Deno.test("sheet names: empty results become Sheet, clashing with a brand named Sheet", () => {
  assert.deepEqual(sheetOf([""]), ["Sheet"]);
  assert.deepEqual(sheetOf(["Sheet", "''"]), ["Sheet", "Sheet~2"]);
  assertValidAndUnique(["Sheet", "''", "'"]);
});

Deno.test("sheet names: truncation to 31 counts code points and UTF-16 units", () => {
  const cjk = "中华人民共和国".repeat(6); // 42 characters, one unit each
  assert.deepEqual(sheetOf([cjk]), [cjk.slice(0, 31)]);
  const emoji = "😀".repeat(20); // 20 characters, 40 units
  const [cut] = sheetOf([emoji]);
  assert.equal(cut, "😀".repeat(15));
  assert.equal(cut.length, 30);
  const mixed = "a" + "😀".repeat(20);
  assert.equal(sheetOf([mixed])[0], "a" + "😀".repeat(15));
  assertValidAndUnique([cjk, emoji, mixed]);
});

Deno.test("sheet names: collisions get ~2, ~3 within 31 units, case-insensitively", () => {
  assert.deepEqual(sheetOf(["A:B", "A/B"]), ["A_B~2", "A_B"]); // "A/B" sorts first
  assert.deepEqual(sheetOf(["A/B", "A:B", "a?b"]), ["A_B", "A_B~2", "a_b~3"]);
  assert.deepEqual(sheetOf(["abc", "ABC"]), ["abc~2", "ABC"]); // "ABC" sorts first
  const long = "x".repeat(40);
  const names = sheetOf([long, long + "y", long + "z"]);
  assert.deepEqual(names, ["x".repeat(31), "x".repeat(29) + "~2", "x".repeat(29) + "~3"]);
  const emoji = "😀".repeat(20);
  const withEmoji = sheetOf([emoji, emoji + "!"]);
  assert.deepEqual(withEmoji, ["😀".repeat(15), "😀".repeat(14) + "~2"]);
  assertValidAndUnique(["A:B", "A/B", "a?b", "abc", "ABC", long, long + "y", emoji, emoji + "!"]);
});

Deno.test("sheet names: a brand's exact valid name wins over a derived one", () => {
  // "A_B" is a real brand: it keeps its name, the brands that need renaming go around it.
  assert.deepEqual(sheetOf(["A:B", "A_B", "A_B~2"]), ["A_B~3", "A_B", "A_B~2"]);
  assertValidAndUnique(["A:B", "A_B", "A_B~2", "a_b~3"]);
});

Deno.test("sheet names: History is reserved in any case", () => {
  assert.deepEqual(sheetOf(["History", "history", "HISTORY~2"]), [
    "History~3",
    "history~4",
    "HISTORY~2",
  ]);
  assert.equal(isValidSheetName("History"), false);
  assert.equal(isValidSheetName("History~2"), true);
  assertValidAndUnique(["History", "history"]);
});

Deno.test("sheet names: the mapping does not depend on the order of the brands", () => {
  const brands = ["A:B", "A/B", "A?B", "History", "''", "Sheet", "x".repeat(40)];
  const forward = new Map(sheetNamesFor(brands).map((m) => [m.brand, m.sheet]));
  const backward = new Map(sheetNamesFor([...brands].reverse()).map((m) => [m.brand, m.sheet]));
  assert.deepEqual(forward, backward);
});

Deno.test("brandForSheet: exact brand name, else the mapped name, else undefined", () => {
  const brands = ["A:B", "A/B", "History", "KFC"];
  for (const { brand, sheet } of sheetNamesFor(brands)) {
    assert.equal(brandForSheet(sheet, brands), brand);
  }
  assert.equal(brandForSheet("A:B", brands), "A:B"); // a file written by another tool
  assert.equal(brandForSheet("kfc", brands), undefined); // case-sensitive
  // Names are matched trimmed (rules.md §8): Excel keeps a worksheet name's end spaces.
  assert.equal(brandForSheet("KFC ", brands), "KFC");
  assert.equal(brandForSheet("\u3000A:B ", brands), "A:B");
  assert.equal(brandForSheet("A_B~3", brands), undefined);
  assert.equal(brandForSheet("Sheet1", brands), undefined);
  assert.equal(brandForSheet("x", []), undefined);
});

Deno.test("sheet names: property — valid, unique, and mapped back to their brand", () => {
  const pieces = fc.constantFrom(
    "A",
    "a",
    "b",
    "B",
    ":",
    "\\",
    "/",
    "?",
    "*",
    "[",
    "]",
    "'",
    " ",
    "~",
    "2",
    "History",
    "history",
    "Sheet",
    "中",
    "华",
    "😀",
    "\u0000",
    "\n",
    "\ud800",
    "x".repeat(15),
  );
  const brand = fc.array(pieces, { maxLength: 12 }).map((parts) => parts.join(""));
  const anyText = fc.string({ unit: "binary", maxLength: 40 });
  fc.assert(
    fc.property(fc.array(fc.oneof(brand, anyText), { maxLength: 12 }), (brands) => {
      assertValidAndUnique(brands);
      const workbook = new ExcelJS.Workbook();
      for (const { sheet } of sheetNamesFor(brands)) {
        assert.equal(workbook.addWorksheet(sheet).name, sheet); // exceljs would throw or truncate
      }
      // The same (distinct) brands in another order get the same names.
      const distinct = [...new Set(brands)];
      const names = new Map(sheetNamesFor(distinct).map((m) => [m.brand, m.sheet]));
      for (const { brand, sheet } of sheetNamesFor([...distinct].reverse())) {
        assert.equal(sheet, names.get(brand));
      }
    }),
    { numRuns: 500 },
  );
});

const loadWorkbook = async (bytes: Uint8Array) => {
  const workbook = new ExcelJS.Workbook();
  // exceljs types its input as an ArrayBuffer ("Buffer extends ArrayBuffer"); JSZip reads either.
  await workbook.xlsx.load(bytes.slice().buffer);
  return workbook;
};

Deno.test("template: one worksheet per brand, text day headers, stores in column A", async () => {
  const longBrand = "一个名字非常非常长的品牌用来测试工作表名称的三十一个字符限制是否生效";
  const days = ["2026-07-08", "2026-07-09", "2026-07-10"];
  const built = await buildTemplate({
    brands: [
      { name: "Z/Brand", stores: ["店B", "001", "店A"] },
      { name: longBrand, stores: ["长店一"] },
      { name: "Empty", stores: [] },
    ],
    days,
  });
  const longSheet = Array.from(longBrand).slice(0, 31).join("");
  assert.deepEqual(built.sheets, [
    { name: "Empty", brand: "Empty", stores: 0 },
    { name: "Z_Brand", brand: "Z/Brand", stores: 3 },
    { name: longSheet, brand: longBrand, stores: 1 },
  ]);

  const workbook = await loadWorkbook(built.bytes);
  assert.deepEqual(workbook.worksheets.map((w) => w.name), ["Empty", "Z_Brand", longSheet]);
  for (const { name, brand } of built.sheets) {
    assert.equal(brandForSheet(name, ["Z/Brand", longBrand, "Empty"]), brand);
  }

  const sheet = workbook.getWorksheet("Z_Brand")!;
  assert.equal(sheet.getCell("A1").value, "门店名称");
  days.forEach((day, i) => {
    const cell = sheet.getCell(1, i + 2);
    assert.equal(typeof cell.value, "string");
    assert.equal(cell.value, day);
    assert.equal(cell.numFmt, "@");
  });
  assert.equal(sheet.getCell(1, days.length + 2).value, null);
  assert.deepEqual([2, 3, 4].map((r) => sheet.getCell(r, 1).value), ["001", "店A", "店B"]);
  assert.equal(sheet.getCell(5, 1).value, null);
  for (let r = 2; r <= 4; r++) {
    for (let c = 2; c <= days.length + 1; c++) assert.equal(sheet.getCell(r, c).value, null);
  }
  const view = sheet.views[0] as { state: string; xSplit: number; ySplit: number };
  assert.equal(view.state, "frozen");
  assert.equal(view.xSplit, 1);
  assert.equal(view.ySplit, 1);
  assert.ok((sheet.getColumn(1).width ?? 0) >= 12);

  const long = workbook.getWorksheet(longSheet)!;
  assert.equal(long.getCell("A2").value, "长店一");
  assert.equal(workbook.getWorksheet("Empty")!.rowCount, 1);
});

Deno.test("template: awkward brand names survive a write and a read", async () => {
  const brands = ['A&B <"x">', "😀".repeat(20), "History", "it's", "'x'", "tab\there"];
  const built = await buildTemplate({
    brands: brands.map((name) => ({ name, stores: ["s"] })),
    days: ["2026-07-09"],
  });
  const workbook = await loadWorkbook(built.bytes);
  assert.deepEqual(workbook.worksheets.map((w) => w.name), built.sheets.map((s) => s.name));
  for (const { name, brand } of built.sheets) assert.equal(brandForSheet(name, brands), brand);
});

Deno.test("template: a store name holding the format's escape text reads back as written", async () => {
  const stores = ["店_x0041_名", "_x005F_", "店_xABCD_"];
  const built = await buildTemplate({ brands: [{ name: "品牌", stores }], days: ["2026-07-09"] });
  const names = (await loadWorkbook(built.bytes)).worksheets[0].getColumn(1).values.slice(2);
  // Column A holds the stores in code-unit order.
  assert.deepEqual(names, [...stores].sort());
});

Deno.test("template: sheet names follow the whole catalog when given", async () => {
  const catalog = ["A:B", "A/B", "KFC"];
  // A caller who sees only "A:B": alone it would be "A_B", which the catalog gives to "A/B".
  const alone = await buildTemplate({ brands: [{ name: "A:B", stores: ["s"] }], days: [] });
  assert.equal(alone.sheets[0].name, "A_B");
  assert.equal(brandForSheet("A_B", catalog), "A/B");
  const built = await buildTemplate({
    brands: [{ name: "A:B", stores: ["s"] }],
    days: [],
    namingBrands: catalog,
  });
  assert.deepEqual(built.sheets, [{ name: "A_B~2", brand: "A:B", stores: 1 }]);
  assert.equal(brandForSheet("A_B~2", catalog), "A:B");
});

Deno.test("template: columns and limits fit the Template response", async () => {
  const built = await buildTemplate({ brands: [{ name: "KFC", stores: ["a"] }], days: [] });
  const response = {
    filename: "template.xlsx",
    content_base64: btoa(String.fromCharCode(...built.bytes)),
    sheets: built.sheets.map((s) => ({ name: s.name, stores: s.stores })),
    columns: TEMPLATE_COLUMNS,
    limits: templateLimits(),
  };
  assert.deepEqual(Schema.decodeUnknownSync(Template)(response), response);
  assert.deepEqual(templateLimits(), {
    max_rows: 10000,
    max_file_bytes: 4194304,
    max_decimals: 4,
    max_filename_chars: 255,
    max_reason_chars: 500,
    max_sheet_name_chars: 31,
  });
  assert.ok("A" in TEMPLATE_COLUMNS && "B.." in TEMPLATE_COLUMNS);
});

// --- resolver ---

const store = (storeId: number, brandName: string, storeName: string): CatalogStore => ({
  storeId,
  scopeId: storeId * 10,
  brandName,
  storeName,
});

const context: ResolveContext = {
  stores: [
    store(1, "KFC", "店A"),
    store(2, "KFC", "店B"),
    store(3, "A:B", "店A"),
    store(4, "A/B", "店A"),
    store(5, "麦当劳", "同名"),
    store(6, "麦当劳", "同名"),
  ],
  datasetStart: "2026-03-01",
  datasetEnd: "2026-07-08",
  today: "2026-07-10",
};

let counter = 0;
const xlsxRow = (
  sheet: string,
  row: number,
  column: string,
  storeName: string,
  date: string,
): FileRow => ({
  rowNumber: ++counter,
  brand: sheet,
  storeName,
  date,
  rawDate: date,
  rawEnergy: "1.5",
  value: { kind: "NUMBER", kwh: "1.5" },
  note: undefined,
  location: { sheet, row, column },
});
const csvRow = (row: number, brand: string, storeName: string, date: string): FileRow => ({
  rowNumber: ++counter,
  brand,
  storeName,
  date,
  rawDate: date,
  rawEnergy: null,
  value: { kind: "BLANK" },
  note: "",
  location: { sheet: null, row, column: "日能耗" },
});

Deno.test("resolver: the happy path matches sheets, derived sheet names and CSV brands", () => {
  const [ab, aSlashB] = [
    sheetNamesFor(["A:B", "A/B"])[0].sheet,
    sheetNamesFor(["A:B", "A/B"])[1].sheet,
  ];
  const rows = [
    xlsxRow("KFC", 2, "B", "店A", "2026-03-01"),
    xlsxRow("KFC", 3, "B", "店B", "2026-03-01"),
    xlsxRow(ab, 2, "C", "店A", "2026-07-07"),
    xlsxRow(aSlashB, 2, "D", "店A", "2026-07-08"), // the dataset's last day
  ];
  const csv = [csvRow(2, "KFC", "店A", "2026-07-01"), csvRow(3, "A:B", "店A", "2026-07-01")];
  const result = resolveRows(rows, context);
  assert.deepEqual(result.problems, []);
  assert.deepEqual(result.rows.map((r) => [r.storeId, r.scopeId, r.date]), [
    [1, 10, "2026-03-01"],
    [2, 20, "2026-03-01"],
    [3, 30, "2026-07-07"],
    [4, 40, "2026-07-08"],
  ]);
  assert.deepEqual(result.rows[0].location, rows[0].location);
  const fromCsv = resolveRows(csv, context);
  assert.deepEqual(fromCsv.problems, []);
  assert.deepEqual(fromCsv.rows.map((r) => r.storeId), [1, 3]);
  assert.deepEqual(resolveRows([], context), { rows: [], problems: [] });
});

Deno.test("resolver: an unknown worksheet is one problem, not one per row", () => {
  const rows = [
    xlsxRow("Nope", 2, "B", "店A", "2026-07-01"),
    xlsxRow("Nope", 2, "C", "店A", "2026-07-02"),
    xlsxRow("Nope", 3, "B", "店B", "2026-07-01"),
    xlsxRow("kfc", 2, "B", "店A", "2026-07-01"), // names are case-sensitive
  ];
  const { problems, rows: resolved } = resolveRows(rows, context);
  assert.equal(resolved.length, 0);
  assert.deepEqual(problems.map((p) => [p.sheet, p.row, p.column, p.raw]), [
    ["Nope", null, null, "Nope"],
    ["kfc", null, null, "kfc"],
  ]);
  assert.match(problems[0].message.en, /Worksheet "Nope" matches no brand/);
});

Deno.test("resolver: an unknown CSV brand is one problem naming its rows", () => {
  const rows = [
    csvRow(2, "Nope", "店A", "2026-07-01"),
    csvRow(3, "Nope", "店A", "2026-07-02"),
    csvRow(4, "KFC", "店A", "2026-07-01"),
    csvRow(5, "Nope", "店B", "2026-07-01"),
    csvRow(6, "A_B", "店A", "2026-07-01"), // a sheet name is not a CSV brand
  ];
  const { problems } = resolveRows(rows, context);
  assert.deepEqual(problems.map((p) => [p.sheet, p.row, p.column, p.raw]), [
    [null, 2, "品牌", "Nope"],
    [null, 6, "品牌", "A_B"],
  ]);
  assert.match(problems[0].message.en, /Unknown brand "Nope": rows 2-3, 5/);
});

Deno.test("resolver: unknown and ambiguous stores, one problem per store row", () => {
  const rows = [
    xlsxRow("KFC", 4, "B", "店X", "2026-07-01"),
    xlsxRow("KFC", 4, "C", "店X", "2026-07-02"),
    xlsxRow("KFC", 5, "B", "店Y", "2026-07-01"),
    xlsxRow("麦当劳", 2, "B", "同名", "2026-07-01"),
    csvRow(7, "KFC", "店X", "2026-07-01"),
    csvRow(8, "KFC", "店X", "2026-07-02"),
  ];
  const { problems } = resolveRows(rows, context);
  assert.deepEqual(problems.map((p) => [p.sheet, p.row, p.column, p.raw]), [
    ["KFC", 4, "A", "店X"],
    ["KFC", 5, "A", "店Y"],
    ["麦当劳", 2, "A", "同名"],
    [null, 7, "门店", "店X"],
  ]);
  assert.equal(problems[0].message.en, 'Unknown store "店X" of brand "KFC": worksheet "KFC" row 4');
  assert.match(problems[2].message.en, /matches 2 stores of brand "麦当劳"/);
  assert.equal(problems[3].message.en, 'Unknown store "店X" of brand "KFC": rows 7-8');
});

Deno.test("resolver: dates before or after the dataset, or after today, per column", () => {
  const rows = [
    xlsxRow("KFC", 2, "B", "店A", "2026-02-28"),
    xlsxRow("KFC", 3, "B", "店B", "2026-02-28"),
    xlsxRow("KFC", 2, "C", "店A", "2026-07-11"),
    xlsxRow("KFC", 2, "D", "店A", "2026-07-10"),
    xlsxRow("KFC", 3, "D", "店B", "2026-07-10"),
    xlsxRow("KFC", 2, "E", "店A", "2026-07-08"),
    { ...csvRow(9, "KFC", "店A", "2026-07-12"), rawDate: "7月12日" },
    csvRow(10, "KFC", "店A", "2026-07-09"),
  ];
  const { problems, rows: resolved } = resolveRows(rows, context);
  assert.deepEqual(resolved.map((r) => r.date), ["2026-07-08"]);
  assert.deepEqual(problems.map((p) => [p.sheet, p.row, p.column, p.date, p.raw]), [
    ["KFC", 2, "B", "2026-02-28", "2026-02-28"],
    ["KFC", 2, "C", "2026-07-11", "2026-07-11"],
    ["KFC", 2, "D", "2026-07-10", "2026-07-10"],
    [null, 9, "日期", "2026-07-12", "7月12日"],
    [null, 10, "日期", "2026-07-09", "2026-07-09"],
  ]);
  assert.match(problems[0].message.en, /outside the dataset, which starts on 2026-03-01/);
  assert.match(problems[0].message.en, /worksheet "KFC" column B, rows 2-3/);
  assert.match(problems[1].message.en, /in the future \(today is 2026-07-10\)/);
  // After the dataset's end but not after today: still outside the dataset (rules.md §8).
  assert.match(problems[2].message.en, /outside the dataset, which ends on 2026-07-08/);
  assert.match(problems[2].message.en, /worksheet "KFC" column D, rows 2-3/);
  assert.match(problems[3].message.en, /written "7月12日".*row 9$/);
  assert.match(problems[4].message.en, /ends on 2026-07-08.*: row 10$/);
});

Deno.test("resolver: a store-day reached twice names both places", () => {
  const rows = [
    xlsxRow("A:B", 2, "B", "店A", "2026-07-01"), // exact brand name, as another tool may write
    xlsxRow("A_B~2", 3, "B", "店A", "2026-07-01"), // the template's name of "A:B"
    xlsxRow("KFC", 2, "B", "店A", "2026-07-01"),
    xlsxRow("KFC", 6, "B", "店A", "2026-07-01"),
    csvRow(2, "KFC", "店B", "2026-07-01"),
    csvRow(3, "KFC", "店B", "2026-07-01"),
  ];
  assert.equal(brandForSheet("A_B~2", ["KFC", "A:B", "A/B", "麦当劳"]), "A:B");
  const { problems, rows: resolved } = resolveRows(rows, context);
  assert.deepEqual(resolved.map((r) => r.storeId), [3, 1, 2]);
  assert.deepEqual(problems.map((p) => [p.sheet, p.row, p.column, p.date]), [
    ["A_B~2", 3, "B", "2026-07-01"],
    ["KFC", 6, "B", "2026-07-01"],
    [null, 3, "日能耗", "2026-07-01"],
  ]);
  assert.equal(
    problems[0].message.en,
    'Store "店A" of brand "A:B" has two values for 2026-07-01: worksheet "A:B" row 2 column B and worksheet "A_B~2" row 3 column B',
  );
  assert.match(problems[2].message.en, /: row 2 and row 3$/);
});

Deno.test("resolver: problems come in file order", () => {
  const rows = [
    csvRow(2, "KFC", "店A", "2026-07-01"),
    csvRow(3, "KFC", "店Z", "2026-07-01"),
    csvRow(4, "Nope", "店A", "2026-07-01"),
    csvRow(5, "KFC", "店A", "2026-01-01"),
    csvRow(6, "KFC", "店A", "2026-07-01"),
  ];
  const { problems } = resolveRows(rows, context);
  assert.deepEqual(problems.map((p) => p.row), [3, 4, 5, 6]);
});

Deno.test("rowsText: single rows, ranges, long lists", () => {
  assert.equal(rowsText([4]), "row 4");
  assert.equal(rowsText([5, 2, 3, 4, 9]), "rows 2-5, 9");
  const many = Array.from({ length: 30 }, (_, i) => 2 * i + 2);
  assert.equal(rowsText(many), "rows 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, … (30 rows)");
});

Deno.test("rowsTextZh: the same rows in Chinese", () => {
  assert.equal(rowsTextZh([4]), "第 4 行");
  assert.equal(rowsTextZh([5, 2, 3, 4, 9, 9]), "第 2-5、9 行");
  const many = Array.from({ length: 30 }, (_, i) => 2 * i + 2);
  assert.equal(rowsTextZh(many), "第 2、4、6、8、10、12、14、16、18、20……行（共 30 行）");
});

Deno.test("resolver: only the given stores exist; sheet names still follow every brand", () => {
  // A caller limited to store 4: brand A:B has no store in scope, so its sheet matches no brand,
  // while A/B's derived sheet name (made over both brands, as the template makes it) still maps.
  const [ab, aSlashB] = sheetNamesFor(["A:B", "A/B"]).map((s) => s.sheet);
  const limited: ResolveContext = {
    ...context,
    stores: context.stores.filter((s) => s.storeId === 4),
    namingBrands: [...new Set(context.stores.map((s) => s.brandName))],
  };
  const rows = [
    xlsxRow(aSlashB, 2, "B", "店A", "2026-07-01"),
    xlsxRow(ab, 2, "B", "店A", "2026-07-01"),
  ];
  const { problems, rows: resolved } = resolveRows(rows, limited);
  assert.deepEqual(resolved.map((r) => r.storeId), [4]);
  assert.equal(problems.length, 1);
  assert.match(problems[0].message.en, new RegExp(`Worksheet "${ab}" matches no brand`));
  // A CSV brand with no store in scope is unknown like any other.
  const csv = [csvRow(2, "KFC", "店A", "2026-07-01")];
  assert.match(resolveRows(csv, limited).problems[0].message.en, /Unknown brand "KFC"/);
});

Deno.test("resolver: rows the reader refused get the store and date checks only", () => {
  const checks: Array<CheckRow> = [
    { ...xlsxRow("KFC", 4, "B", "无此店", "2026-07-01"), date: "2026-07-01" },
    { ...csvRow(5, "KFC", "店A", "2026-07-09"), date: "2026-07-09" },
    { ...csvRow(6, "KFC", "无此店", "x"), date: null, rawDate: "x" },
    // A refused value of a known store on a good day: nothing more to say.
    { ...csvRow(7, "KFC", "店A", "2026-07-02"), date: "2026-07-02" },
  ];
  const rows = [csvRow(8, "KFC", "店A", "2026-07-01")];
  const { problems, rows: resolved } = resolveRows(rows, context, checks);
  assert.deepEqual(resolved.map((r) => r.location.row), [8], "check rows are never resolved");
  assert.deepEqual(problems.map((p) => [p.sheet, p.row, p.column]), [
    ["KFC", 4, "A"],
    [null, 5, "日期"],
    [null, 6, "门店"],
  ]);
  assert.match(problems[1].message.en, /outside the dataset, which ends on 2026-07-08/);
});

const everyStore: CallerShape = {
  memberId: 1,
  keyId: 1,
  loginName: "test",
  displayName: null,
  dbRole: "WRITER",
  permissions: new Set(["read", "write"]),
  storeIds: null,
  viaSession: false,
};

Deno.test("a template of a range is refused when it would hold more values than a file may", async () => {
  const stores = (n: number): Array<CatalogStore> =>
    Array.from({ length: n }, (_, i) => ({
      storeId: i + 1,
      scopeId: i + 1,
      brandName: "品牌A",
      storeName: `店${i + 1}`,
    }));
  const days = (n: number) => Array.from({ length: n }, (_, i) => addDays("2026-01-01", i));
  const run = (storeCount: number, dayCount: number) =>
    Effect.runPromise(
      Effect.either(
        Effect.flatMap(
          TemplateService,
          (t) => t.ranged(everyStore, "2026-01-01", days(dayCount).at(-1)!),
        ).pipe(
          Effect.provide(TemplateService.DefaultWithoutDependencies),
          Effect.provide(Layer.succeed(
            CatalogRepo,
            CatalogRepo.make({
              dataset: Effect.die("unused"),
              catalog: () => Effect.succeed(stores(storeCount)),
              datasetDays: () => Effect.succeed(days(dayCount)),
            } as unknown as CatalogRepo),
          )),
        ),
      ),
    );
  // 30 stores x 333 days = 9,990 values: made.
  const fits = await run(30, 333);
  assert.equal(fits._tag, "Right");
  // 30 stores x 334 days = 10,020: refused, saying how many days fit.
  const over = await run(30, 334);
  assert.equal(over._tag, "Left");
  const error = over._tag === "Left" ? over.left as { code?: string; message?: string } : {};
  assert.equal(error.code, "RANGE_TOO_LONG");
  assert.match(error.message ?? "", /at most 333 days/);
});
