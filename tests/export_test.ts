// Exports in the import file's layout: an untouched export previews as no change (property over
// ranges, store subsets, scoped keys and both formats), edits are honoured, free text is never a
// formula, the limits and refusals, the streaming workbook writer, and the cell grammar it uses.
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { Decimal } from "decimal.js";
import ExcelJS from "exceljs";
// @ts-types="../src/imports/csv_parse_sync.d.ts"
import { parse } from "csv-parse/sync";
import { SqlClient } from "@effect/sql";
import { Chunk, Effect, Either, Exit, FastCheck as fc, Stream } from "effect";
import { EnergyResponse } from "../src/domain/energy.ts";
import { Import } from "../src/domain/imports.ts";
import { addDays, dayIndex } from "../src/domain/range.ts";
import { parseEnergyText, protectText, unprotectText } from "../src/files/cell_text.ts";
import { readImportFile } from "../src/imports/readers.ts";
import { readPlainWorkbook } from "../src/imports/xlsx_direct.ts";
import { readXlsxWithExcel } from "../src/imports/xlsx_reader.ts";
import { sheetNamesFor } from "../src/files/sheet_names.ts";
import { checkExportSize, EXPORT_MAX_VALUES } from "../src/exports/export_service.ts";
import {
  cellText,
  CSV_MEDIA_TYPE,
  csvLine,
  exportCell,
  VOID_TEXT,
  XLSX_MEDIA_TYPE,
  xlsxNumber,
} from "../src/exports/layout.ts";
import { type XlsxRow, xlsxStream } from "../src/exports/xlsx_stream.ts";
import { generateSnapshot } from "../src/seed/generate.ts";
import { loadSnapshot } from "../src/seed/load.ts";
import { assertErrorBody, assertSchema, BASE, makeTestApp } from "./helpers.ts";
import { b64, sqlOf, storesOf } from "./import_helpers.ts";
import { unzipped } from "./import_zip_fixtures.ts";

const snapshot = generateSnapshot({ stores: 6 });
const app = await makeTestApp((db) =>
  db.run(Effect.asVoid(loadSnapshot(snapshot, { reset: false })))
);
const writer = await app.key(["read", "write", "raw"], { member: "exporter" });
const first = snapshot.dataset.start;
const last = snapshot.dataset.end;
const sql = sqlOf(app);

// --- Awkward free text: names and notes a spreadsheet would evaluate.

// Set in the database before the service reads a list, as a snapshot with such names would load
// them: the lists' version (their ETag, and the answers kept) follows the service's own
// writes (profile edits, loads), not edits made beside it.
const initial = await sql((s) => s<{ id: number }>`SELECT id FROM stores ORDER BY id`);
const FORMULA_NAMES = ['=HYPERLINK("http://x","点我")', "+86 门店", "-1 店", "@SUM(1)", "'=引号店"];
const FORMULA_BRAND = "=品牌(A1)";
for (const [i, name] of FORMULA_NAMES.entries()) {
  await sql((s) => s`UPDATE stores SET name = ${name} WHERE id = ${initial[i].id}`);
}
await sql((s) =>
  s`UPDATE brands SET name = ${FORMULA_BRAND}
    WHERE id = (SELECT brand_id FROM stores WHERE id = ${initial[5].id})`
);
// A name holding the workbook format's escape text: the XLSX writer escapes it, the reader decodes.
const ESCAPE_NAME = "店_x0041_名";
await sql((s) => s`UPDATE stores SET name = ${ESCAPE_NAME} WHERE id = ${initial[5].id}`);
const stores = await storesOf(app, writer.key);
const storeIds = stores.map((s) => s.id);

type Day = typeof EnergyResponse.Type["days"][number];

const energyOf = async (storeId: number, scopeId: number, start: string, end: string) => {
  const answer = await app.call(
    "GET",
    `/api/v1/stores/${storeId}/energy?scope_id=${scopeId}&start=${start}&end=${end}`,
    { key: writer.key },
  );
  assert.equal(answer.status, 200);
  return assertSchema(EnergyResponse, answer.body).days;
};

let idem = 0;
const preview = (bytes: Uint8Array, filename: string, key = writer.key) =>
  app.call("POST", "/api/v1/imports/preview", {
    key,
    headers: { "idempotency-key": `export-test-${++idem}-${crypto.randomUUID()}` },
    body: { filename, content_base64: b64(bytes), reason: "export round trip" },
  });

const commit = (batchId: number) =>
  app.call("POST", `/api/v1/imports/${batchId}/commit`, {
    key: writer.key,
    headers: { "idempotency-key": `export-commit-${++idem}` },
    body: {},
  });

// Uploaded days with notes that begin with formula characters (and need CSV quoting), one
// uploaded void: the snapshot's cleaned and legacy days are there already.
const NOTES = ["=1+1", "-负数备注", '+plus, "quoted"\nsecond line', "@作废说明"];
const recent = await energyOf(stores[0].id, stores[0].scope_id, addDays(last, -40), last);
const legacyDays = recent.filter((d) => d.source_kind === "LEGACY_DIRECT").slice(0, 4);
assert.equal(legacyDays.length, 4, "the snapshot has recent legacy days");
const setupCsv = csvLine(["品牌", "门店", "日期", "日能耗", "备注"]) +
  legacyDays.map((d, i) =>
    csvLine([
      stores[0].brand_name,
      stores[0].name,
      d.business_date,
      i === 3 ? "VOID" : ["12.3456", "7", "0"][i],
      NOTES[i],
    ])
  ).join("");
{
  const batch = await preview(new TextEncoder().encode(setupCsv), "setup.csv");
  assert.equal(batch.status, 200, JSON.stringify(batch.body));
  assert.equal((await commit(batch.body.id)).status, 200);
}

// Every served day of every store, as GET /stores/{id}/energy serves it.
const served = new Map<string, Day>();
for (const store of stores) {
  for (let from = first; from <= last; from = addDays(from, 366)) {
    const to = addDays(from, 365) < last ? addDays(from, 365) : last;
    for (const day of await energyOf(store.id, store.scope_id, from, to)) {
      served.set(`${store.id}|${day.business_date}`, day);
    }
  }
}
assert.deepEqual(
  NOTES.map((_note, i) =>
    served.get(`${stores[0].id}|${legacyDays[i].business_date}`)?.quality_note
  ),
  NOTES,
  "the setup notes are stored as written",
);

const download = async (query: string, key = writer.key) => {
  const response = await app.handler(
    new Request(`${BASE}/api/v1/stores/export?${query}`, {
      headers: { authorization: `Bearer ${key}` },
    }),
  );
  return {
    status: response.status,
    headers: response.headers,
    bytes: new Uint8Array(await response.arrayBuffer()),
  };
};

const exported = async (query: string, key = writer.key) => {
  const file = await download(query, key);
  assert.equal(file.status, 200, new TextDecoder().decode(file.bytes));
  return file;
};

const csvRecords = (bytes: Uint8Array): Array<Array<string>> => {
  const records: Array<Array<string>> = [];
  parse(new TextDecoder().decode(bytes).replace(/^\uFEFF/, ""), {
    on_record: (record: Array<string>) => {
      records.push(record);
      return null;
    },
  });
  return records;
};

const b64decode = (text: string) => new Uint8Array(Buffer.from(text, "base64"));

const loadWorkbook = async (bytes: Uint8Array) => {
  const workbook = new ExcelJS.Workbook();
  await workbook.xlsx.load(bytes.slice().buffer);
  return workbook;
};

type PreviewRow = typeof Import.Type["rows"][number];

// What a preview row of an untouched export must be, given the day GET energy serves.
const assertNoChange = (row: PreviewRow, day: Day, where: string) => {
  if (day.status === "VOID") {
    assert.equal(row.action, "UNCHANGED", where);
    assert.equal(row.raw_energy, VOID_TEXT, where);
  } else if (day.status === "NO_DATA") {
    assert.equal(row.action, "SKIP_MISSING", where);
    assert.equal(row.raw_energy, null, where);
  } else if (day.source_kind === "LEGACY_DIRECT") {
    // Blank by default: the legacy value keeps serving.
    assert.equal(row.action, "SKIP_MISSING", where);
    assert.equal(row.raw_energy, null, where);
  } else {
    assert.equal(row.action, "UNCHANGED", where);
    assert.ok(new Decimal(row.raw_energy!).eq(day.energy_kwh!), where);
    assert.equal(row.proposed_energy_kwh, day.energy_kwh, where);
  }
  assert.equal(row.before_energy_kwh, day.energy_kwh, where);
};

const queryOf = (start: string, end: string, format: string, ids?: ReadonlyArray<number>) =>
  `start=${start}&end=${end}&format=${format}` +
  (ids === undefined ? "" : `&store_ids=${ids.join(",")}`);

// Exports, previews back, and checks every row against the served day; the kinds of day seen.
const roundTrip = async (
  format: "xlsx" | "csv",
  start: string,
  end: string,
  ids: ReadonlyArray<number> | undefined,
  key: { key: string; stores: ReadonlyArray<number> | null },
) => {
  const file = await exported(queryOf(start, end, format, ids), key.key);
  assert.equal(
    file.headers.get("content-type"),
    format === "csv" ? CSV_MEDIA_TYPE : XLSX_MEDIA_TYPE,
  );
  assert.equal(
    file.headers.get("content-disposition"),
    `attachment; filename="energy-export-${start}-${end}.${format}"`,
  );
  const answer = await preview(file.bytes, `export.${format}`, key.key);
  assert.equal(answer.status, 200, JSON.stringify(answer.body));
  const batch = assertSchema(Import, answer.body);
  const expected = ids ?? key.stores ?? storeIds;
  const days = dayIndex(end) - dayIndex(start) + 1;
  assert.equal(batch.total_rows, expected.length * days);
  assert.equal(batch.rows.length, expected.length * days);
  const kinds = new Set<string>();
  const seen = new Set<string>();
  for (const row of batch.rows) {
    const id = `${row.resolved_store_id}|${row.business_date}`;
    assert.ok(!seen.has(id), `${id} once`);
    seen.add(id);
    assert.ok(expected.includes(row.resolved_store_id), id);
    assert.ok(row.business_date >= start && row.business_date <= end, id);
    const day = served.get(id)!;
    assertNoChange(row, day, `${format} ${id}`);
    kinds.add(day.status === "AVAILABLE" ? day.source_kind! : day.status);
  }
  assert.deepEqual(
    Object.entries(batch.action_counts).filter(([, n]) => n > 0).map(([a]) => a).sort()
      .filter((a) => a !== "UNCHANGED" && a !== "SKIP_MISSING"),
    [],
  );
  if (format === "csv") {
    // The notes are the served notes, read back exactly (formula marks dropped).
    const records = csvRecords(file.bytes);
    assert.deepEqual(records[0], ["品牌", "门店", "日期", "日能耗", "备注"]);
    assert.equal(records.length - 1, expected.length * days);
    for (const [brand, store, date, , note] of records.slice(1)) {
      const found = stores.find((s) =>
        s.brand_name === unprotectText(brand) && s.name === unprotectText(store)
      )!;
      assert.equal(unprotectText(note), served.get(`${found.id}|${date}`)!.quality_note ?? "");
    }
  }
  return kinds;
};

const unscoped = { key: writer.key, stores: null };
const scopedKeys = new Map<string, { key: string; stores: ReadonlyArray<number> }>();
const scopedKey = async (ids: ReadonlyArray<number>) => {
  const id = [...ids].sort((a, b) => a - b).join(",");
  if (!scopedKeys.has(id)) {
    const issued = await app.key(["read", "write"], { stores: ids });
    scopedKeys.set(id, { key: issued.key, stores: ids });
  }
  return scopedKeys.get(id)!;
};

const DATASET_DAYS = dayIndex(last) - dayIndex(first) + 1;

Deno.test("an untouched export previews as UNCHANGED and SKIP_MISSING only (property)", async () => {
  const kinds = new Set<string>();
  const run = fc.record({
    format: fc.constantFrom("xlsx" as const, "csv" as const),
    back: fc.integer({ min: 0, max: DATASET_DAYS - 1 }),
    days: fc.oneof(fc.integer({ min: 1, max: 45 }), fc.integer({ min: 1, max: 366 })),
    subset: fc.option(fc.shuffledSubarray(storeIds, { minLength: 1 }), { nil: undefined }),
    scope: fc.option(fc.shuffledSubarray(storeIds, { minLength: 1 }), { nil: undefined }),
  });
  await fc.assert(
    fc.asyncProperty(run, async ({ format, back, days, subset, scope }) => {
      const end = addDays(last, -back);
      const start = [addDays(end, 1 - days), first].sort()[1];
      // A scoped key asks for stores of its scope (another store is refused, tested below).
      const key = scope === undefined ? unscoped : await scopedKey([...scope, ...(subset ?? [])]);
      for (const kind of await roundTrip(format, start, end, subset, key)) kinds.add(kind);
    }),
    {
      numRuns: 40,
      // The days the setup wrote, every store, both formats.
      examples: [
        [{ format: "csv", back: 0, days: 60, subset: undefined, scope: undefined }],
        [{ format: "xlsx", back: 0, days: 60, subset: undefined, scope: undefined }],
      ],
    },
  );
  // Every kind of day was exported and read back.
  assert.deepEqual(
    [...kinds].sort(),
    ["CLEANED", "LEGACY_DIRECT", "MANUAL_UPLOAD", "NO_DATA", "VOID"],
  );
});

Deno.test("free text is written so that spreadsheets never evaluate it, and still matches", async () => {
  const query = queryOf(addDays(last, -40), last, "csv");
  const records = csvRecords((await exported(query)).bytes);
  // No field of the CSV begins (after spaces) with a character that starts a formula.
  for (const record of records) {
    for (const field of record) assert.doesNotMatch(field, /^(\s*[=+\-@]|[\t\r])/, field);
  }
  const names = new Set(records.slice(1).map((r) => r[1]));
  for (const name of FORMULA_NAMES) assert.ok(names.has(`'${name}`), name);
  assert.ok(records.some((r) => r[0] === `'${FORMULA_BRAND}`));
  const notes = new Set(records.slice(1).map((r) => r[4]));
  for (const note of NOTES) assert.ok(notes.has(`'${note}`), note);

  const workbook = await loadWorkbook(
    (await exported(queryOf(addDays(last, -40), last, "xlsx"))).bytes,
  );
  const brandSheet = sheetNamesFor([...new Set(stores.map((s) => s.brand_name))])
    .find((m) => m.brand === FORMULA_BRAND)!.sheet;
  assert.ok(workbook.getWorksheet(brandSheet), "the brand's sheet");
  const found = new Set<string>();
  workbook.eachSheet((sheet) =>
    sheet.eachRow((row) =>
      row.eachCell((cell) => {
        assert.notEqual(cell.type, ExcelJS.ValueType.Formula, cell.address);
        if (Number(cell.col) === 1) {
          // A string cell in text format: a person editing it keeps text, not a formula.
          assert.equal(cell.type, ExcelJS.ValueType.String, cell.address);
          assert.equal(cell.numFmt, "@", cell.address);
          found.add(String(cell.value));
        }
      })
    )
  );
  for (const name of FORMULA_NAMES) assert.ok(found.has(name), name);
  // The round trip with these names is part of the property (its first examples).
});

Deno.test("edits to an export are honoured: a number over a legacy day, a legacy value confirmed, a void", async () => {
  const store = stores[1];
  const start = addDays(last, -30);
  const days = await energyOf(store.id, store.scope_id, start, last);
  const legacy = days.filter((d) => d.source_kind === "LEGACY_DIRECT");
  assert.ok(legacy.length >= 2, "legacy days to edit");
  const [changed, confirmed] = legacy;

  // CSV: a value typed into one blank legacy day; the other's number, as legacy=values writes
  // it, kept.
  const shown = new TextDecoder().decode(
    (await exported(`${queryOf(start, last, "csv", [store.id])}&legacy=values`)).bytes,
  );
  assert.ok(shown.includes(`${confirmed.business_date},${confirmed.energy_kwh},`));
  // A provisional legacy day stays blank: sent back, it is left alone (SKIP_MISSING), not settled.
  const provisional = await app.db.run(
    Effect.flatMap(SqlClient.SqlClient, (sql) =>
      sql<{ day: string }>`
      SELECT business_date::text AS day FROM energy_days
      WHERE scope_id = ${store.scope_id} AND business_date BETWEEN ${start}::date AND ${last}::date
        AND provisional = 1 AND source_kind = 'LEGACY_DIRECT'`),
  );
  assert.ok(provisional.length > 0, "a provisional legacy day");
  for (const { day } of provisional) assert.ok(shown.includes(`,${day},,`), day);
  const confirmedLine = shown.split("\r\n").find((l) => l.includes(confirmed.business_date))!;
  const text = new TextDecoder().decode(
    (await exported(queryOf(start, last, "csv", [store.id]))).bytes,
  )
    .replace(`${changed.business_date},,`, `${changed.business_date},99.5,`)
    .split("\r\n")
    .map((l) => l.includes(confirmed.business_date) ? confirmedLine : l)
    .join("\r\n");
  const csv = assertSchema(
    Import,
    (await preview(new TextEncoder().encode(text), "edited.csv")).body,
  );
  const acting = csv.rows.filter((r) => r.action !== "UNCHANGED" && r.action !== "SKIP_MISSING");
  assert.deepEqual(
    acting.map((r) => [r.business_date, r.action, r.proposed_energy_kwh]),
    [
      [changed.business_date, "UPDATE", "99.5000"],
      [confirmed.business_date, "RELINK", confirmed.energy_kwh],
    ].sort((a, b) => a[0]! < b[0]! ? -1 : 1),
  );

  // XLSX: a number typed over a legacy cell, VOID typed over another.
  const workbook = await loadWorkbook(
    (await exported(queryOf(start, last, "xlsx", [store.id]))).bytes,
  );
  const sheet = workbook.worksheets[0];
  const column = (date: string) => dayIndex(date) - dayIndex(start) + 2;
  assert.equal(sheet.getCell(2, column(changed.business_date)).value, null);
  sheet.getCell(2, column(changed.business_date)).value = 42.25;
  sheet.getCell(2, column(confirmed.business_date)).value = "作废";
  const edited = new Uint8Array(await workbook.xlsx.writeBuffer());
  const xlsx = assertSchema(Import, (await preview(edited, "edited.xlsx")).body);
  assert.deepEqual(
    xlsx.rows.filter((r) => r.action !== "UNCHANGED" && r.action !== "SKIP_MISSING")
      .map((r) => [r.business_date, r.action]).sort(),
    [[changed.business_date, "UPDATE"], [confirmed.business_date, "VOID"]].sort(),
  );
  assert.equal(xlsx.total_rows, days.length);
});

Deno.test("store_ids and the key's stores: 404 unknown, 403 outside, the scope by default", async () => {
  const [a, b, c] = storeIds;
  const limited = await app.key(["read"], { stores: [a, b] });
  const range = `start=${addDays(last, -2)}&end=${last}&format=csv`;
  const rows = async (query: string, key: string) =>
    csvRecords((await exported(query, key)).bytes).slice(1);
  // Without store_ids: every store the key may see.
  const mine = new Set((await rows(range, limited.key)).map((r) => unprotectText(r[1])));
  assert.deepEqual(
    [...mine].sort(),
    stores.filter((s) => s.id === a || s.id === b).map((s) => s.name).sort(),
  );
  assert.equal((await rows(range, writer.key)).length, stores.length * 3);
  // Listed: only those, each once however often listed.
  assert.equal((await rows(`${range}&store_ids=${b},${b}`, limited.key)).length, 3);
  const outside = await download(`${range}&store_ids=${a},${c}`, limited.key);
  assert.equal(outside.status, 403);
  const body = JSON.parse(new TextDecoder().decode(outside.bytes));
  assert.equal(body.error.code, "STORE_FORBIDDEN");
  const unknown = await app.call("GET", `/api/v1/stores/export?${range}&store_ids=${a},999999`, {
    key: limited.key,
  });
  assertErrorBody(unknown, 404, "NOT_FOUND");
});

Deno.test("refusals: credential, permission, range, format, store_ids", async () => {
  const path = (q: string) => `/api/v1/stores/export?${q}`;
  const ok = `start=${addDays(last, -6)}&end=${last}&format=xlsx`;
  assertErrorBody(await app.call("GET", path(ok)), 401);
  const writeOnly = await app.key(["write"]);
  assertErrorBody(
    await app.call("GET", path(ok), { key: writeOnly.key }),
    403,
    "PERMISSION_MISSING",
  );
  const reader = await app.key(["read"]);
  assert.equal((await download(ok, reader.key)).status, 200, "read is enough");
  const refused: Array<[string, number, string]> = [
    [`start=${last}&end=${addDays(last, -1)}&format=csv`, 400, "INVALID_RANGE"],
    [`start=${addDays(last, -366)}&end=${last}&format=csv`, 400, "RANGE_TOO_LONG"],
    [`start=${addDays(first, -1)}&end=${first}&format=csv`, 400, "INVALID_RANGE"],
    [`start=${last}&end=${addDays(last, 1)}&format=csv`, 400, "INVALID_RANGE"],
    [`start=${last}&end=${last}&format=pdf`, 400, "INVALID_REQUEST"],
    [`start=${last}&end=${last}`, 400, "INVALID_REQUEST"],
    [`start=${last}&end=2026-02-30&format=csv`, 400, "INVALID_REQUEST"],
    [`${ok}&store_ids=`, 400, "INVALID_REQUEST"],
    [`${ok}&store_ids=1,,2`, 400, "INVALID_REQUEST"],
    [`${ok}&store_ids=0`, 400, "INVALID_REQUEST"],
    [`${ok}&store_ids=01`, 400, "INVALID_REQUEST"],
    [`${ok}&store_ids=1,a`, 400, "INVALID_REQUEST"],
    [`${ok}&store_ids=9999999999`, 400, "INVALID_REQUEST"],
    [
      `${ok}&store_ids=${Array.from({ length: 1001 }, (_, i) => i + 1).join(",")}`,
      400,
      "INVALID_REQUEST",
    ],
  ];
  for (const [query, status, code] of refused) {
    const answer = await app.call("GET", path(query), { key: writer.key });
    assertErrorBody(answer, status, code);
    assert.ok(answer.body.error.message.length < 400, query.slice(0, 80));
  }
  // 1000 ids are accepted (and answered 404 for the first unknown one, not echoing the list).
  const many = await app.call(
    "GET",
    path(`${ok}&store_ids=${Array.from({ length: 1000 }, (_, i) => i + 1).join(",")}`),
    { key: writer.key },
  );
  assertErrorBody(many, 404, "NOT_FOUND");
  assert.ok(many.body.error.message.length < 100);
});

Deno.test("the size cap: at most EXPORT_MAX_VALUES store-days per request", async () => {
  assert.equal(EXPORT_MAX_VALUES, 1_000_000);
  assert.ok(Exit.isSuccess(await Effect.runPromiseExit(checkExportSize(2732, 366))));
  const over = await Effect.runPromise(Effect.flip(checkExportSize(2733, 366)));
  assert.equal(over.code, "RANGE_TOO_LONG");
  assert.match(
    over.message,
    /2733 stores x 366 days are 1000278 values; an export holds at most 1000000/,
  );
});

// --- The streaming workbook writer on its own: many pages, several sheets, awkward values.

const decimals = fc.tuple(
  fc.bigInt({ min: 0n, max: 10n ** 15n - 1n }),
  fc.integer({ min: 0, max: 9999 }),
  fc.integer({ min: 0, max: 4 }),
).map(([whole, fraction, places]) =>
  places === 0 ? String(whole) : `${whole}.${String(fraction).padStart(4, "0").slice(0, places)}`
);

Deno.test("the workbook writer: rows page by page across sheets read back exactly", async () => {
  const days = Array.from({ length: 9 }, (_, i) => addDays("2026-07-01", i));
  await fc.assert(
    fc.asyncProperty(
      fc.array(
        fc.array(fc.oneof(decimals, fc.constant("VOID"), fc.constant("")), {
          minLength: 9,
          maxLength: 9,
        }),
        { minLength: 1, maxLength: 40 },
      ),
      fc.integer({ min: 1, max: 7 }),
      fc.integer({ min: 1, max: 3 }),
      async (table, pageSize, sheetCount) => {
        const sheets = Array.from({ length: sheetCount }, (_, i) => ({
          name: `品牌${i}`,
          stores: table.map((_, r) => `=店${r}`).filter((_, r) => r % sheetCount === i),
        }));
        const rows: Array<XlsxRow> = sheets.flatMap((sheet, s) =>
          sheet.stores.map((store) => {
            const r = Number(store.slice(2));
            return {
              sheet: s,
              store,
              cells: table[r].map((v, d) =>
                v === "VOID"
                  ? { kind: "void" as const }
                  : v === "" || d % 3 === 2
                  ? { kind: "blank" as const }
                  : { kind: "number" as const, kwh: v }
              ),
            };
          })
        );
        const pages = Array.from(
          { length: Math.ceil(rows.length / pageSize) },
          (_, i) => rows.slice(i * pageSize, (i + 1) * pageSize),
        );
        const chunks = await Effect.runPromise(
          Stream.runCollect(xlsxStream(sheets, days, Stream.fromIterable(pages))),
        );
        const bytes = new Uint8Array(
          Chunk.toReadonlyArray(chunks).reduce((n, c) => n + c.length, 0),
        );
        let at = 0;
        for (const c of chunks) {
          bytes.set(c, at);
          at += c.length;
        }
        const read = await Effect.runPromise(
          Effect.either(readImportFile("w.xlsx", bytes, { datasetEnd: "2026-12-31" })),
        );
        // The export is a plain workbook: read from its XML, to what exceljs reads.
        assert.ok(readPlainWorkbook(unzipped(bytes)) !== undefined);
        assert.deepStrictEqual(
          read,
          await Effect.runPromise(
            Effect.either(readXlsxWithExcel(bytes, { datasetEnd: "2026-12-31" })),
          ),
        );
        if (rows.every((r) => r.cells.every((c) => c.kind === "blank"))) return;
        assert.ok(Either.isRight(read), JSON.stringify(Either.isLeft(read) && read.left.problems));
        // Every sheet is written, one without stores as its header row.
        assert.deepEqual(read.right.sheets, sheets.map((s) => s.name));
        assert.equal(read.right.rows.length, rows.length * days.length);
        const byKey = new Map(
          read.right.rows.map((r) => [`${r.brand}|${r.storeName}|${r.date}`, r]),
        );
        for (const row of rows) {
          row.cells.forEach((cell, d) => {
            const back = byKey.get(`${sheets[row.sheet].name}|${row.store}|${days[d]}`)!;
            const expected = cell.kind === "number"
              ? parseEnergyText(cell.kwh)
              : cell.kind === "void"
              ? { kind: "VOID" }
              : { kind: "BLANK" };
            assert.deepEqual(back.value, expected, `${row.store} ${days[d]} ${cellText(cell)}`);
          });
        }
      },
    ),
    { numRuns: 25 },
  );
});

Deno.test("the workbook writer waits for its reader and stops when the reader goes away", async () => {
  const days = Array.from({ length: 366 }, (_, i) => addDays("2025-01-01", i));
  let produced = 0;
  // One page per element (Stream.range would hand them over in one chunk).
  const pages = Stream.range(1, 400, 1).pipe(
    Stream.map((p): ReadonlyArray<XlsxRow> => {
      produced = p;
      return [{
        sheet: 0,
        store: `店${p}`,
        cells: days.map((_, d) => ({ kind: "number" as const, kwh: `${p}.${d % 10}` })),
      }];
    }),
  );
  // Take a few chunks only: the writer must not run ahead through all 400 pages.
  const taken = await Effect.runPromise(
    Stream.runCollect(
      xlsxStream([{ name: "S", stores: ["店1"] }], days, pages).pipe(Stream.take(3)),
    ),
  );
  assert.equal(Chunk.size(taken), 3);
  await new Promise((resolve) => setTimeout(resolve, 200));
  assert.ok(produced < 400, `the writer stopped after ${produced} pages`);
});

// --- The cell grammar an export writes, read by the import.

Deno.test("cells: each served day becomes the import's no-change cell", () => {
  const day = (
    status: "AVAILABLE" | "NO_DATA" | "VOID",
    kind: string | null,
    served: string | null,
  ) => exportCell({ status, sourceKind: kind, served, provisional: false, note: null });
  assert.deepEqual(parseEnergyText(cellText(day("VOID", "LEGACY_DIRECT", null))), { kind: "VOID" });
  assert.deepEqual(parseEnergyText(cellText(day("NO_DATA", null, null))), { kind: "BLANK" });
  assert.deepEqual(parseEnergyText(cellText(exportCell(undefined))), { kind: "BLANK" });
  assert.deepEqual(parseEnergyText(cellText(day("AVAILABLE", "LEGACY_DIRECT", "12.5000"))), {
    kind: "BLANK",
  });
  // Asked for, a legacy value is written as its number (sent back: RELINK, rules.md §8).
  const legacy = { status: "AVAILABLE", sourceKind: "LEGACY_DIRECT", served: "0.0000" } as const;
  assert.deepEqual(
    exportCell({ ...legacy, provisional: false, note: null }, "values"),
    { kind: "number", kwh: "0.0000" },
  );
  // Not while it is provisional: sent back, a part of the day would be settled as the whole day.
  assert.deepEqual(exportCell({ ...legacy, provisional: true, note: null }, "values"), {
    kind: "blank",
  });
  for (const kind of ["CLEANED", "MANUAL_UPLOAD"]) {
    assert.deepEqual(parseEnergyText(cellText(day("AVAILABLE", kind, "12.5000"))), {
      kind: "NUMBER",
      kwh: "12.5",
    });
  }
});

Deno.test("cells: XLSX numbers only where the double reads back as the same decimal", () => {
  fc.assert(
    fc.property(decimals, (kwh) => {
      const n = xlsxNumber(kwh);
      const exact = parseEnergyText(kwh);
      if (n !== undefined) assert.deepEqual(parseEnergyText(String(n)), exact);
    }),
    { numRuns: 2000 },
  );
  assert.equal(xlsxNumber("12.5000"), 12.5);
  assert.equal(xlsxNumber("999999999999999.9999"), undefined);
});

Deno.test("text protection: marked when a spreadsheet would evaluate it, read back exactly", () => {
  const head = fc.constantFrom("=", "+", "-", "@", "'", "\t", "\r", " ", " =", "a", "中", "");
  fc.assert(
    fc.property(head, fc.string({ maxLength: 20 }), (start, rest) => {
      const text = start + rest;
      const written = protectText(text);
      // A spreadsheet opening the file sees no formula start.
      assert.doesNotMatch(written, /^(\s*[=+\-@]|[\t\r])/);
      // The CSV reader trims a field, then drops the mark: a trimmed text comes back exactly.
      if (text === text.trim()) assert.equal(unprotectText(written.trim()), text);
      // A field without the mark reads as it is.
      if (!text.startsWith("'")) assert.equal(unprotectText(text), text);
    }),
    { numRuns: 3000 },
  );
  assert.equal(protectText("=1+1"), "'=1+1");
  assert.equal(protectText("'=1"), "''=1");
  assert.equal(protectText("门店"), "门店");
  assert.equal(unprotectText("'=1+1"), "=1+1");
  assert.equal(unprotectText("''=1"), "'=1");
  // A person's own apostrophes before ordinary text are kept, written and read.
  assert.equal(protectText("'x"), "'x");
  assert.equal(unprotectText("'x"), "'x");
  assert.equal(unprotectText("''x"), "''x");
});

Deno.test("the template as a file, and for a chosen range", async () => {
  const get = (query: string, headers: Record<string, string> = {}) =>
    app.handler(
      new Request(`${BASE}/api/v1/imports/template${query}`, {
        headers: { authorization: `Bearer ${writer.key}`, ...headers },
      }),
    );
  const headerDays = async (bytes: Uint8Array) => {
    const sheet = (await loadWorkbook(bytes)).worksheets[0];
    const days: Array<string> = [];
    sheet.getRow(1).eachCell((cell, col) => {
      if (col > 1) days.push(String(cell.value));
    });
    return days;
  };
  const start = addDays(last, -9);
  for (
    const [query, headers] of [
      ["?download=1", {}],
      ["", { accept: XLSX_MEDIA_TYPE }],
      [`?start=${start}&end=${last}&download=1`, {}],
    ] as const
  ) {
    const response = await get(query, headers);
    assert.equal(response.status, 200, query);
    assert.equal(response.headers.get("content-type"), XLSX_MEDIA_TYPE);
    assert.match(
      response.headers.get("content-disposition")!,
      /^attachment; filename="[^"]+\.xlsx"$/,
    );
    const days = await headerDays(new Uint8Array(await response.arrayBuffer()));
    assert.equal(days.at(-1), last, query);
    if (query.includes("start")) assert.equal(days.length, 10);
  }
  // JSON by default, with the range too.
  const json = await app.call("GET", `/api/v1/imports/template?start=${start}&end=${last}`, {
    key: writer.key,
  });
  assert.equal(json.status, 200);
  const days = await headerDays(b64decode(json.body.content_base64));
  assert.deepEqual(days, Array.from({ length: 10 }, (_, i) => addDays(start, i)));
  for (const query of [`?start=${start}`, `?end=${last}`]) {
    assertErrorBody(
      await app.call("GET", `/api/v1/imports/template${query}`, { key: writer.key }),
      400,
      "INVALID_REQUEST",
    );
  }
  assertErrorBody(
    await app.call("GET", `/api/v1/imports/template?start=${last}&end=${start}`, {
      key: writer.key,
    }),
    400,
    "INVALID_RANGE",
  );
});

Deno.test({
  name: "export test app closes",
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    await app.close();
  },
});
