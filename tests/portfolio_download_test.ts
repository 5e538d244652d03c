// The portfolio as a file: each CSV row is the JSON row of the same store (or roll-up) field for
// field, catalog text a spreadsheet would evaluate is protected, the XLSX holds the same cells,
// filters and earlier instants apply, and refusals are the JSON error answers.
import assert from "node:assert/strict";
import ExcelJS from "exceljs";
// @ts-types="../src/imports/csv_parse_sync.d.ts"
import { parse } from "csv-parse/sync";
import { Effect } from "effect";
import { PortfolioResponse } from "../src/domain/portfolio.ts";
import { addDays } from "../src/domain/range.ts";
import { protectText } from "../src/files/cell_text.ts";
import { CSV_MEDIA_TYPE, XLSX_MEDIA_TYPE } from "../src/exports/layout.ts";
import { PORTFOLIO_COLUMNS } from "../src/portfolio/portfolio_file.ts";
import { generateSnapshot } from "../src/seed/generate.ts";
import { loadSnapshot } from "../src/seed/load.ts";
import { assertErrorBody, assertSchema, BASE, makeTestApp } from "./helpers.ts";
import { sqlOf } from "./import_helpers.ts";

const snapshot = generateSnapshot({ stores: 8 });
const app = await makeTestApp((db) =>
  db.run(Effect.asVoid(loadSnapshot(snapshot, { reset: false })))
);
const { key } = await app.key(["read"]);
const end = snapshot.dataset.end;
const start = addDays(end, -365);
const sql = sqlOf(app);

// Catalog text a spreadsheet would evaluate, set before the first read.
const FORMULA_STORE = '=HYPERLINK("http://x","点我")';
const FORMULA_BRAND = "@SUM(1)";
const FORMULA_CITY = "+86 城";
const first = snapshot.stores[0];
await sql((s) => s`UPDATE stores SET name = ${FORMULA_STORE} WHERE id = ${first.id}`);
await sql((s) => s`UPDATE brands SET name = ${FORMULA_BRAND} WHERE id = ${first.brand_id}`);
await sql((s) => s`UPDATE stores SET city = ${FORMULA_CITY} WHERE id = ${first.id}`);

type Portfolio = typeof PortfolioResponse.Type;

const json = async (query: string): Promise<Portfolio> => {
  const answer = await app.call("GET", `/api/v1/portfolio?${query}`, { key });
  assert.equal(answer.status, 200, JSON.stringify(answer.body));
  return assertSchema(PortfolioResponse, answer.body);
};

const download = async (query: string, headers: Record<string, string> = {}) => {
  const response = await app.handler(
    new Request(`${BASE}/api/v1/portfolio?${query}`, {
      headers: { authorization: `Bearer ${key}`, ...headers },
    }),
  );
  return {
    status: response.status,
    headers: response.headers,
    bytes: new Uint8Array(await response.arrayBuffer()),
  };
};

const csvRecords = (bytes: Uint8Array): Array<Array<string>> => {
  const records: Array<Array<string>> = [];
  const text = new TextDecoder("utf-8", { ignoreBOM: true }).decode(bytes);
  assert.ok(text.startsWith("\uFEFF"), "a BOM, so that spreadsheets read UTF-8");
  parse(text.slice(1), {
    on_record: (record: Array<string>) => {
      records.push(record);
      return null;
    },
  });
  return records;
};

const SUMMARY_FIELDS = PORTFOLIO_COLUMNS.slice(
  PORTFOLIO_COLUMNS.indexOf("store_count") + 1,
  PORTFOLIO_COLUMNS.indexOf("provisional_days"),
);

type Figures = Pick<Portfolio["total"], "summary" | "provisional_days" | "data_quality">;

const text = (v: unknown) => v === null || v === undefined ? "" : String(v);

// What the file's row says, from the JSON row: every field as text, catalog text protected.
const expectedFigures = (f: Figures) => [
  ...SUMMARY_FIELDS.map((k) => text(f.summary[k as keyof Figures["summary"]])),
  String(f.provisional_days),
  String(f.data_quality.flagged_days),
];

const free = (v: string | null) => v === null ? "" : protectText(v);

const expectedRecords = (p: Portfolio): Array<Array<string>> => [
  [...PORTFOLIO_COLUMNS],
  ...p.stores.map((s) => [
    "store",
    String(s.store_id),
    String(s.scope_id),
    free(s.store_code),
    free(s.name),
    String(s.brand_id),
    free(s.brand_name),
    free(s.city),
    "",
    ...expectedFigures(s),
  ]),
  ...p.brands.map((b) => [
    "brand",
    "",
    "",
    "",
    "",
    String(b.brand_id),
    free(b.brand_name),
    "",
    String(b.store_count),
    ...expectedFigures(b),
  ]),
  ...p.cities.map((c) => [
    "city",
    "",
    "",
    "",
    "",
    "",
    "",
    free(c.city),
    String(c.store_count),
    ...expectedFigures(c),
  ]),
  ["all", "", "", "", "", "", "", "", String(p.total.store_count), ...expectedFigures(p.total)],
];

Deno.test("portfolio file: each CSV row is the JSON row of its store, then the roll-ups", async () => {
  const query = `start=${start}&end=${end}`;
  const answer = await json(query);
  const file = await download(`${query}&format=csv`);
  assert.equal(file.status, 200, new TextDecoder().decode(file.bytes));
  assert.equal(file.headers.get("content-type"), CSV_MEDIA_TYPE);
  assert.equal(
    file.headers.get("content-disposition"),
    `attachment; filename="portfolio-${start}-${end}.csv"`,
  );
  assert.equal(file.headers.get("cache-control"), "private, no-store");
  assert.equal(file.headers.get("etag"), null, "a file is never conditional");
  const records = csvRecords(file.bytes);
  assert.deepEqual(records, expectedRecords(answer));
  assert.equal(
    records.length,
    1 + answer.stores.length + answer.brands.length +
      answer.cities.length + 1,
  );
  // Exact decimals: a store's actual kWh is the JSON's string, four decimals and all.
  const column = PORTFOLIO_COLUMNS.indexOf("actual_kwh");
  const withActual = answer.stores.find((s) => s.summary.actual_kwh !== null)!;
  assert.match(withActual.summary.actual_kwh!, /^\d+\.\d{4}$/);
  assert.equal(
    records.find((r) => r[0] === "store" && r[1] === String(withActual.store_id))![column],
    withActual.summary.actual_kwh,
  );
});

Deno.test("portfolio file: catalog text a spreadsheet would evaluate is written as text", async () => {
  const records = csvRecords((await download(`start=${start}&end=${end}&format=csv`)).bytes);
  const row = records.find((r) => r[0] === "store" && r[1] === String(first.id))!;
  const at = (name: string) => row[PORTFOLIO_COLUMNS.indexOf(name)];
  assert.equal(at("store"), `'${FORMULA_STORE}`);
  assert.equal(at("brand"), `'${FORMULA_BRAND}`);
  assert.equal(at("city"), `'${FORMULA_CITY}`);
  for (const record of records) {
    for (const field of record) {
      assert.ok(!/^\s*[=+@]/.test(field), `no field begins a formula: ${field}`);
    }
  }
});

Deno.test("portfolio file: the XLSX opens with exceljs and holds the same cells", async () => {
  const query = `start=${start}&end=${end}`;
  const csv = csvRecords((await download(`${query}&format=csv`)).bytes);
  const file = await download(`${query}&format=xlsx`, { "accept-language": "zh-CN" });
  assert.equal(file.status, 200, new TextDecoder().decode(file.bytes));
  assert.equal(file.headers.get("content-type"), XLSX_MEDIA_TYPE);
  assert.equal(
    file.headers.get("content-disposition"),
    `attachment; filename="portfolio-${start}-${end}.xlsx"`,
  );
  const workbook = new ExcelJS.Workbook();
  await workbook.xlsx.load(file.bytes.slice().buffer);
  assert.equal(workbook.worksheets.length, 1);
  const sheet = workbook.worksheets[0];
  assert.equal(sheet.rowCount, csv.length);
  csv.forEach((record, r) => {
    const row = sheet.getRow(r + 1);
    record.forEach((field, c) => {
      const value = row.getCell(c + 1).value;
      // A text cell is never a formula: XLSX needs no mark; a decimal stays the exact string.
      if (typeof value === "string") assert.equal(protectText(value), field, `${r + 1}:${c + 1}`);
      else if (typeof value === "number") assert.equal(String(value), field, `${r + 1}:${c + 1}`);
      else assert.equal(value, null, `${r + 1}:${c + 1}`);
      if (value === null) assert.equal(field, "", `${r + 1}:${c + 1}`);
    });
  });
  // Column names are fixed whatever the language.
  assert.deepEqual(csv[0], [...PORTFOLIO_COLUMNS]);
  const actual = PORTFOLIO_COLUMNS.indexOf("actual_kwh") + 1;
  assert.equal(typeof sheet.getRow(2).getCell(actual).value, "string");
});

Deno.test("portfolio file: filters and an earlier instant give the rows of the same JSON read", async () => {
  const brand = snapshot.stores[1].brand_id;
  const query = `start=${addDays(end, -30)}&end=${end}&brand_id=${brand}`;
  const answer = await json(query);
  assert.ok(answer.stores.length > 0);
  const file = await download(`${query}&format=csv`);
  assert.equal(
    file.headers.get("content-disposition"),
    `attachment; filename="portfolio-${addDays(end, -30)}-${end}-brand-${brand}.csv"`,
  );
  assert.deepEqual(csvRecords(file.bytes), expectedRecords(answer));
  const token = (await app.call("GET", `/api/v1/portfolio?${query}`, { key })).headers.get(
    "data-token",
  )!;
  const asOf = `${query}&data_token=${encodeURIComponent(token)}`;
  const earlier = await download(`${asOf}&format=csv`);
  assert.equal(earlier.status, 200);
  assert.ok(earlier.headers.get("data-known-at") !== null);
  assert.deepEqual(csvRecords(earlier.bytes), expectedRecords(await json(asOf)));
});

Deno.test("portfolio file: refusals are the JSON error answers", async () => {
  const cases: Array<[string, string]> = [
    [`start=${end}&end=${start}&format=csv`, "INVALID_RANGE"],
    [`start=${addDays(end, -366)}&end=${end}&format=xlsx`, "RANGE_TOO_LONG"],
    [`start=${start}&end=${end}&format=pdf`, "INVALID_REQUEST"],
  ];
  for (const [query, code] of cases) {
    assertErrorBody(await app.call("GET", `/api/v1/portfolio?${query}`, { key }), 400, code);
  }
  const path = `/api/v1/portfolio?start=${start}&end=${end}&format=csv`;
  assertErrorBody(await app.call("GET", path), 401);
  const raw = await app.key(["raw"]);
  assertErrorBody(await app.call("GET", path, { key: raw.key }), 403, "PERMISSION_MISSING");
});

Deno.test({
  name: "portfolio file: close",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: () => app.close(),
});
