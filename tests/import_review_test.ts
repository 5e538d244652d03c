// The clerk's review of a preview (docs/imports.md, "Reviewing a preview"): every problem of a
// file in one answer, rows named by their place in the file, paging, filters and a CSV of the
// rows, plausibility warnings computed exactly, and discarding a preview.
import assert from "node:assert/strict";
import ExcelJS from "exceljs";
import { Decimal } from "decimal.js";
import { Effect } from "effect";
import { addDays } from "../src/domain/range.ts";
import { DiscardResult, Import, ImportReview } from "../src/domain/imports.ts";
import { generateSnapshot } from "../src/seed/generate.ts";
import { loadSnapshot } from "../src/seed/load.ts";
import { resolveRows } from "../src/imports/resolver.ts";
import type { PlannedRow } from "../src/imports/model.ts";
import {
  MIN_RECENT_DAYS,
  plausibility,
  RECENT_DAYS,
  warningText,
} from "../src/imports/plausibility.ts";
import { ImportRepo, RECENT_PAGE_DAYS, recentIntervals } from "../src/imports/import_repo.ts";
import { assertErrorBody, assertSchema, makeTestApp } from "./helpers.ts";
import { b64, countsOf, type StoreInfo, storesOf } from "./import_helpers.ts";

const snapshot = generateSnapshot({ stores: 6 });
const app = await makeTestApp((db) =>
  db.run(Effect.asVoid(loadSnapshot(snapshot, { reset: false })))
);
const writer = await app.key(["read", "write"], { member: "review-clerk" });
const reader = await app.key(["read", "raw"]);
const { start, end } = snapshot.dataset;
const counts = countsOf(app);
const stores = await storesOf(app, writer.key);
const HEADER = ["品牌", "门店", "日期", "日能耗"];

const csvFile = (lines: ReadonlyArray<ReadonlyArray<string>>) =>
  lines.map((l) => l.join(",")).join("\r\n") + "\r\n";

const preview = (content: string | Uint8Array, key = writer.key) =>
  app.call("POST", "/api/v1/imports/preview", {
    key,
    headers: { "idempotency-key": crypto.randomUUID() },
    body: { filename: "review.csv", content_base64: b64(content), reason: "review test" },
  });

const commit = (batchId: number, key = writer.key) =>
  app.call("POST", `/api/v1/imports/${batchId}/commit`, {
    key,
    headers: { "idempotency-key": crypto.randomUUID() },
    body: {},
  });

const review = (batchId: number, query = "", key = writer.key) =>
  app.call("GET", `/api/v1/imports/${batchId}/review${query === "" ? "" : `?${query}`}`, { key });

const discard = (batchId: number, key = writer.key, body: unknown = {}) =>
  app.call("POST", `/api/v1/imports/${batchId}/discard`, { key, body });

type Day = { business_date: string; energy_kwh: string | null; status: string };
const energyOf = async (store: StoreInfo, first: string, last: string) => {
  const answer = await app.call(
    "GET",
    `/api/v1/stores/${store.id}/energy?scope_id=${store.scope_id}&start=${first}&end=${last}`,
    { key: writer.key },
  );
  assert.equal(answer.status, 200);
  return answer.body.days as Day[];
};

// The rule of docs/imports.md stated again independently: the served values of the 28 days before
// `date`, how many and their sum.
const recentOf = async (store: StoreInfo, date: string) => {
  const values = (await energyOf(store, addDays(date, -RECENT_DAYS), addDays(date, -1)))
    .filter((d) => d.energy_kwh !== null)
    .map((d) => new Decimal(d.energy_kwh!));
  return { days: values.length, sum: values.reduce((a, b) => a.plus(b), new Decimal(0)) };
};

Deno.test("a repeated store-day is named with the other problems, also when a value is refused", async () => {
  const [a, b] = stores;
  const day = addDays(end, -3);
  const file = csvFile([
    HEADER,
    [a.brand_name, a.name, day, "12x"], // row 2: not a number
    [a.brand_name, a.name, day, "3"], // row 3: the same store-day again
    [b.brand_name, b.name, day, "4"], // row 4
    [b.brand_name, b.name, day, "4,5"], // row 5: a field too many, not a store-day
    [b.brand_name, b.name, addDays(day, -1), "oops"], // row 6: not a number
    [b.brand_name, b.name, addDays(day, -1), "oops"], // row 7: repeats row 6
  ]);
  const before = await counts();
  const answer = await preview(file);
  assertErrorBody(answer, 400, "INVALID_FILE");
  const lines = (answer.body.error.message as string).split("\n").slice(1);
  const expected: Array<[number, RegExp]> = [
    [2, /not a number/],
    [3, /duplicate store-day.*already given at row 2/],
    [5, /fields/],
    [6, /not a number/],
    [7, /not a number/],
    [7, /duplicate store-day.*already given at row 6/],
  ];
  assert.equal(lines.length, expected.length, lines.join("\n"));
  expected.forEach(([row, pattern], i) => {
    assert.match(lines[i], new RegExp(`^- row ${row}\\b`), lines[i]);
    assert.match(lines[i], pattern, lines[i]);
  });
  assert.deepEqual(await counts(), before, "a refused file stores nothing");

  // The resolver too: a refused row's store-day reached again through another worksheet name.
  const resolved = resolveRows(
    [{
      rowNumber: 1,
      brand: a.brand_name,
      storeName: a.name,
      date: day,
      rawDate: day,
      rawEnergy: "1",
      value: { kind: "NUMBER", kwh: "1" },
      note: undefined,
      location: { sheet: null, row: 3, column: "日能耗" },
    }],
    {
      stores: stores.map((s) => ({
        storeId: s.id,
        scopeId: s.scope_id,
        brandName: s.brand_name,
        storeName: s.name,
      })),
      datasetStart: start,
      datasetEnd: end,
      today: end,
    },
    [{
      rowNumber: 0.5,
      brand: a.brand_name,
      storeName: a.name,
      date: day,
      rawDate: day,
      location: { sheet: null, row: 2, column: "日能耗" },
    }],
  );
  assert.equal(resolved.problems.length, 1);
  assert.match(resolved.problems[0].message.en, /has two values for .*: row 2 and row 3/);
});

Deno.test("review rows are named by worksheet, row and column; pages and filters; a CSV of them", async () => {
  // A workbook of two brands' worksheets, three days each, some cells blank.
  const brands = [...new Set(stores.map((s) => s.brand_name))].slice(0, 2);
  const days = [addDays(end, -12), addDays(end, -11), addDays(end, -10)];
  const workbook = new ExcelJS.Workbook();
  for (const brand of brands) {
    const sheet = workbook.addWorksheet(brand);
    sheet.addRow(["门店名称", ...days]);
    for (const store of stores.filter((s) => s.brand_name === brand)) {
      sheet.addRow([store.name, 25.5, null, "VOID"]);
    }
  }
  const bytes = new Uint8Array(await workbook.xlsx.writeBuffer());
  const answer = await preview(bytes);
  assert.equal(answer.status, 200, JSON.stringify(answer.body));
  const batch = assertSchema(Import, answer.body);

  const whole = assertSchema(ImportReview, (await review(batch.id)).body);
  assert.equal(whole.total_rows, batch.total_rows);
  assert.equal(whole.matched_rows, batch.total_rows);
  assert.equal(whole.rows.length, batch.total_rows);
  assert.deepEqual(whole.action_counts, batch.action_counts);
  assert.equal(
    whole.changing_rows,
    ["INSERT", "UPDATE", "RELINK", "RESTORE", "VOID"].reduce(
      (n, a) => n + (batch.action_counts[a] ?? 0),
      0,
    ),
  );
  assert.deepEqual(whole.rows.map((r) => r.id), batch.rows.map((r) => r.id), "file order");
  // The first worksheet's first store: row 2, columns B, C and D.
  const first = stores.find((s) => s.brand_name === brands[0])!;
  assert.deepEqual(
    whole.rows.slice(0, 3).map((r) => [r.sheet, r.file_row, r.column, r.store_name, r.raw_energy]),
    [
      [brands[0], 2, "B", first.name, "25.5"],
      [brands[0], 2, "C", first.name, null],
      [brands[0], 2, "D", first.name, "VOID"],
    ],
  );
  assert.deepEqual(whole.rows.slice(0, 3).map((r) => r.business_date), days);
  assert.equal(whole.rows.at(-1)!.sheet, brands[1]);

  // Pages of every row are slices of the whole; the counters always count every row.
  for (const [offset, limit] of [[0, 2], [2, 3], [whole.total_rows - 1, 10]]) {
    const page = assertSchema(
      ImportReview,
      (await review(batch.id, `row_offset=${offset}&row_limit=${limit}`)).body,
    );
    assert.deepEqual(page.rows, whole.rows.slice(offset, offset + limit));
    assert.equal(page.row_offset, offset);
    assert.equal(page.matched_rows, whole.total_rows);
    assert.deepEqual(page.action_counts, whole.action_counts);
  }
  assert.deepEqual((await review(batch.id, `row_offset=${whole.total_rows}`)).body.rows, []);

  // Filtered by action, then paged among the matching rows.
  const skipped = whole.rows.filter((r) => r.action === "SKIP_MISSING");
  assert.ok(skipped.length >= 2);
  const bySkip = assertSchema(ImportReview, (await review(batch.id, "action=SKIP_MISSING")).body);
  assert.deepEqual(bySkip.rows, skipped);
  assert.equal(bySkip.matched_rows, skipped.length);
  const secondSkip = (await review(batch.id, "action=SKIP_MISSING&row_offset=1&row_limit=1")).body;
  assert.deepEqual(secondSkip.rows, [skipped[1]]);
  const two = (await review(batch.id, "action=SKIP_MISSING,VOID,SKIP_MISSING")).body;
  assert.deepEqual(
    two.rows,
    whole.rows.filter((r) => r.action === "SKIP_MISSING" || r.action === "VOID"),
  );

  // The same rows as a CSV file, named by their place.
  const csv = await app.handler(
    new Request(`http://service.test/api/v1/imports/${batch.id}/review?download=csv`, {
      headers: { authorization: `Bearer ${writer.key}` },
    }),
  );
  assert.equal(csv.status, 200);
  assert.match(csv.headers.get("content-type") ?? "", /^text\/csv/);
  assert.match(csv.headers.get("content-disposition") ?? "", /attachment; filename="review-UP-/);
  const csvBytes = new Uint8Array(await csv.arrayBuffer());
  assert.deepEqual([...csvBytes.subarray(0, 3)], [0xef, 0xbb, 0xbf], "a BOM for spreadsheets");
  const text = new TextDecoder().decode(csvBytes);
  assert.ok(text.startsWith("sheet,row,column,brand,store,date,"), text.slice(0, 80));
  const lines = text.trim().split("\r\n");
  assert.equal(lines.length, whole.total_rows + 1);
  assert.ok(lines[1].startsWith(`${brands[0]},2,B,${brands[0]},${first.name},${days[0]},25.5,`));
  const filtered = await app.handler(
    new Request(
      `http://service.test/api/v1/imports/${batch.id}/review?download=csv&action=SKIP_MISSING`,
      { headers: { authorization: `Bearer ${writer.key}` } },
    ),
  );
  assert.equal((await filtered.text()).trim().split("\r\n").length, skipped.length + 1);

  // A CSV upload: no worksheet, the file's line and the energy column's header.
  const store = stores[1];
  const csvBatch = assertSchema(
    Import,
    (await preview(csvFile([HEADER, [store.brand_name, store.name, days[0], ""]]))).body,
  );
  const csvRows = (await review(csvBatch.id)).body.rows;
  assert.deepEqual(
    csvRows.map((r: { sheet: string; file_row: number; column: string }) => [
      r.sheet,
      r.file_row,
      r.column,
    ]),
    [[null, 2, "日能耗"]],
  );

  // Refused requests: a bad filter or page, another store's batch, no write permission.
  for (
    const bad of [
      "action=FOO",
      "action=",
      "action=UPDATE;INSERT",
      "row_offset=-1",
      "row_limit=0",
      "download=xlsx",
      "warned=yes",
    ]
  ) {
    assertErrorBody(await review(batch.id, bad), 400, "INVALID_REQUEST");
  }
  assertErrorBody(await review(batch.id, "", reader.key), 403, "PERMISSION_MISSING");
  // The clerk's own key limited to one store: the batch of two stores is refused for its scope.
  const scoped = await app.key(["read", "write"], { stores: [store.id], member: "review-clerk" });
  assertErrorBody(await review(batch.id, "", scoped.key), 403, "STORE_FORBIDDEN");
  assert.equal((await review(csvBatch.id, "", scoped.key)).status, 200);
  assertErrorBody(await review(999999), 404, "NOT_FOUND");
});

Deno.test("plausibility: the rule of docs/imports.md on its edges", () => {
  const planned = (
    action: PlannedRow["action"],
    proposed: string | null,
    before: string | null,
  ): PlannedRow => ({
    row: {
      rowNumber: 1,
      brand: "b",
      storeName: "s",
      date: "2026-07-09",
      rawDate: "2026-07-09",
      rawEnergy: proposed,
      value: proposed === null ? { kind: "BLANK" } : { kind: "NUMBER", kwh: proposed },
      note: undefined,
      location: { sheet: null, row: 2, column: "日能耗" },
      storeId: 1,
      scopeId: 1,
    },
    action,
    beforeKwh: before,
    beforeIsVoid: before === null ? null : false,
    beforeRevisionNo: before === null ? null : 1,
    energyId: before === null ? null : 1,
    proposedKwh: proposed,
    proposedVoid: false,
    qualityStatus: "REVIEWED",
    qualityNote: null,
    noteField: null,
  });
  // Seven days of 210 kWh in all: a mean of 30.
  const recent = { days: MIN_RECENT_DAYS, total: "210.0000" };
  const codes = (p: PlannedRow, r = recent as typeof recent | undefined) =>
    plausibility(p, r).map((w) => w.code);
  assert.deepEqual(codes(planned("UPDATE", "99999.9", "31")), ["FAR_ABOVE_RECENT"]);
  assert.deepEqual(codes(planned("UPDATE", "90", "31")), [], "3 x the mean is not far");
  assert.deepEqual(codes(planned("UPDATE", "90.0001", "31")), ["FAR_ABOVE_RECENT"]);
  assert.deepEqual(codes(planned("INSERT", "10", null)), [], "a third of the mean is not far");
  assert.deepEqual(codes(planned("INSERT", "9.9999", null)), ["FAR_BELOW_RECENT"]);
  assert.deepEqual(codes(planned("UPDATE", "0", "40.7")), ["DROP_TO_ZERO"]);
  assert.deepEqual(codes(planned("UPDATE", "0", "40.7"), undefined), ["DROP_TO_ZERO"]);
  assert.deepEqual(codes(planned("INSERT", "0", null)), ["DROP_TO_ZERO"], "against the mean");
  assert.deepEqual(codes(planned("UPDATE", "0", "0")), [], "zero was zero");
  assert.deepEqual(codes(planned("INSERT", "0", null), { days: 9, total: "0.0000" }), []);
  assert.deepEqual(codes(planned("INSERT", "0.5", null), { days: 9, total: "0.0000" }), [
    "FAR_ABOVE_RECENT",
  ]);
  // Too few recent days: no range rule (a drop from the day's own value still counts).
  const few = { days: MIN_RECENT_DAYS - 1, total: "180.0000" };
  assert.deepEqual(codes(planned("UPDATE", "99999.9", "31"), few), []);
  assert.deepEqual(codes(planned("INSERT", "0", null), few), []);
  // Rows whose value the commit does not write are not checked.
  for (const action of ["UNCHANGED", "KEEP_CLEANED", "SKIP_MISSING", "VOID"] as const) {
    assert.deepEqual(
      codes(planned(action, action === "SKIP_MISSING" ? null : "99999.9", "31")),
      [],
    );
  }
  const [w] = plausibility(planned("RESTORE", "99999.9", null), recent);
  assert.deepEqual(
    w,
    {
      code: "FAR_ABOVE_RECENT",
      value_kwh: "99999.9000",
      before_kwh: null,
      recent_mean_kwh: "30.0000",
      recent_days: MIN_RECENT_DAYS,
    },
  );
  assert.match(
    warningText(w, "2026-11-01").en,
    /more than 3 times the store's mean of 30\.0000 kWh/,
  );
  // The mean shown is exact, rounded half-up to 4 decimals: 0.0004 over 8 days is 0.00005.
  const [tiny] = plausibility(planned("INSERT", "0", null), { days: 8, total: "0.0004" });
  assert.equal(tiny.recent_mean_kwh, "0.0001");
  const [third] = plausibility(planned("INSERT", "99", null), { days: 9, total: "0.0004" });
  assert.equal(third.recent_mean_kwh, "0.0000");
});

Deno.test("the recent days of any set of days are read exactly, in merged windows", async () => {
  // Runs of days, days far apart, the dataset's first days, and a day given twice.
  const keys: Array<{ store: StoreInfo; date: string }> = [];
  for (const [i, store] of stores.entries()) {
    for (const back of [1, 2, 3, 29 + i, 31 + i, 90, 200]) {
      keys.push({ store, date: addDays(end, -back) });
    }
    keys.push({ store, date: start }, { store, date: addDays(start, 5) });
  }
  keys.push(keys[0]);
  const found = await app.db.run(Effect.provide(
    Effect.flatMap(
      ImportRepo,
      (repo) => repo.recentLevels(keys.map((k) => ({ scopeId: k.store.scope_id, date: k.date }))),
    ),
    ImportRepo.Default,
  ));
  const byKey = new Map(found.map((l) => [`${l.scopeId}|${l.date}`, l]));
  assert.equal(byKey.size, keys.length - 1, "one answer per store-day");
  for (const k of keys) {
    const expected = await recentOf(k.store, k.date);
    const level = byKey.get(`${k.store.scope_id}|${k.date}`)!;
    assert.equal(level.days, expected.days, `${k.store.id} ${k.date}`);
    if (expected.days === 0) assert.equal(level.total, null);
    else assert.ok(new Decimal(level.total!).eq(expected.sum), `${k.store.id} ${k.date}`);
  }

  // Windows that touch are one interval; pages hold whole intervals.
  const pages = recentIntervals([
    { scopeId: 1, date: "2026-03-01" },
    { scopeId: 1, date: "2026-03-30" },
    { scopeId: 1, date: "2026-04-28" },
    { scopeId: 1, date: "2026-05-28" },
    { scopeId: 2, date: "2026-03-01" },
  ]);
  assert.equal(pages.length, 1);
  assert.deepEqual(pages[0].firsts, ["2026-02-01", "2026-04-30", "2026-02-01"]);
  assert.deepEqual(pages[0].lasts, ["2026-04-28", "2026-05-28", "2026-03-01"]);
  assert.deepEqual(pages[0].keyIntervals, [1, 1, 1, 2, 3]);
  const many = recentIntervals(
    Array.from({ length: 400 }, (_, i) => ({ scopeId: i + 1, date: "2026-03-01" })),
  );
  assert.ok(many.length > 1);
  for (const page of many) {
    assert.ok(page.scopeIds.length * (RECENT_DAYS + 1) <= RECENT_PAGE_DAYS);
    assert.equal(page.keyIntervals.at(-1), page.scopeIds.length);
  }
});

Deno.test("a preview's warnings are the store's own recent days, exactly; they never block", async () => {
  // Days with at least MIN_RECENT_DAYS served days before them and a served value of their own.
  const candidates: Array<{ store: StoreInfo; day: Day; sum: Decimal; days: number }> = [];
  for (const store of stores) {
    for (const day of await energyOf(store, addDays(end, -60), addDays(end, -20))) {
      if (day.energy_kwh === null || new Decimal(day.energy_kwh).isZero()) continue;
      const recent = await recentOf(store, day.business_date);
      if (recent.days < MIN_RECENT_DAYS || recent.sum.isZero()) continue;
      candidates.push({ store, day, ...recent });
      if (candidates.filter((c) => c.store === store).length >= 4) break;
    }
    if (candidates.length >= 4) break;
  }
  assert.ok(candidates.length >= 4, "the snapshot has days with recent history");
  const [above, edge, zero, below] = candidates;
  // The largest value of 4 decimals that is not above 3 x the mean, and the next one.
  const threeMeans = (c: (typeof candidates)[number]) =>
    c.sum.times(3).div(c.days).toDecimalPlaces(4, Decimal.ROUND_DOWN);
  const far = threeMeans(above).plus("0.0001").toFixed(4);
  const atEdge = threeMeans(edge).toFixed(4);
  // The smallest value of 4 decimals that is not below a third of the mean, less 0.0001.
  const third = below.sum.div(3 * below.days).toDecimalPlaces(4, Decimal.ROUND_UP).minus("0.0001");
  assert.ok(third.gt(0) && third.times(3 * below.days).lt(below.sum));
  const row = (c: (typeof candidates)[number], value: string) => [
    c.store.brand_name,
    c.store.name,
    c.day.business_date,
    value,
  ];
  // A day near the dataset's start has too few recent days: no range warning.
  const early = stores[2];
  const file = csvFile([
    HEADER,
    row(above, far),
    row(edge, atEdge),
    row(zero, "0"),
    row(below, third.toFixed(4)),
    [early.brand_name, early.name, addDays(start, 2), "99999.9"],
  ]);
  const answer = await preview(file);
  assert.equal(answer.status, 200, JSON.stringify(answer.body));
  const batch = assertSchema(Import, answer.body);
  const seen = assertSchema(ImportReview, (await review(batch.id)).body);
  const warnings = seen.rows.map((r) => r.warnings.map((w) => w.code));
  assert.deepEqual(warnings, [
    ["FAR_ABOVE_RECENT"],
    [],
    ["DROP_TO_ZERO"],
    ["FAR_BELOW_RECENT"],
    [],
  ]);
  const [w] = seen.rows[0].warnings;
  assert.equal(
    w.recent_mean_kwh,
    above.sum.div(above.days).toDecimalPlaces(4, Decimal.ROUND_HALF_UP).toFixed(4),
  );
  assert.equal(w.recent_days, above.days);
  assert.equal(w.value_kwh, new Decimal(far).toFixed(4));
  assert.equal(w.before_kwh, new Decimal(above.day.energy_kwh!).toFixed(4));
  assert.equal(seen.rows[2].warnings[0].before_kwh, new Decimal(zero.day.energy_kwh!).toFixed(4));
  assert.equal(seen.warned_rows, 3);
  assert.deepEqual(seen.warning_counts, {
    FAR_ABOVE_RECENT: 1,
    FAR_BELOW_RECENT: 1,
    DROP_TO_ZERO: 1,
  });
  const warned = assertSchema(ImportReview, (await review(batch.id, "warned=1")).body);
  assert.deepEqual(warned.rows.map((r) => r.file_row), [2, 4, 5]);
  assert.equal(warned.matched_rows, 3);

  // Warnings do not block: the commit writes every row.
  const committed = await commit(batch.id);
  assert.equal(committed.status, 200, JSON.stringify(committed.body));
  const [day] = await energyOf(above.store, above.day.business_date, above.day.business_date);
  assert.equal(day.energy_kwh, new Decimal(far).toFixed(4));
});

Deno.test("a discarded preview expires at once and can never be committed", async () => {
  const store = stores[3];
  const file = csvFile([HEADER, [store.brand_name, store.name, addDays(end, -4), "17.25"]]);
  const batch = assertSchema(Import, (await preview(file)).body);
  const before = await counts();
  assertErrorBody(await discard(batch.id, reader.key), 403, "PERMISSION_MISSING");
  assertErrorBody(await discard(batch.id, writer.key, { now: true }), 400, "INVALID_REQUEST");
  const scoped = await app.key(["read", "write"], { stores: [stores[0].id] });
  assertErrorBody(await discard(batch.id, scoped.key), 403, "STORE_FORBIDDEN");
  assertErrorBody(await discard(999999), 404, "NOT_FOUND");

  const first = await discard(batch.id);
  assert.equal(first.status, 200, JSON.stringify(first.body));
  const result = assertSchema(DiscardResult, first.body);
  assert.equal(result.status, "EXPIRED");
  assert.equal(result.batch_no, batch.batch_no);
  // Again: the same answer, the first instant kept.
  assert.deepEqual((await discard(batch.id)).body, first.body);
  assert.equal(
    (await app.call("GET", `/api/v1/imports/${batch.id}`, { key: reader.key })).body
      .status,
    "EXPIRED",
  );
  assert.equal((await review(batch.id)).body.status, "EXPIRED");
  const refused = await commit(batch.id);
  assertErrorBody(refused, 409, "BATCH_EXPIRED");
  assert.match(refused.body.error.message, /discarded/);
  assert.deepEqual(await counts(), before, "nothing is written");

  // A committed batch cannot be discarded; nor can a platform batch.
  const other = assertSchema(
    Import,
    (await preview(csvFile([HEADER, [store.brand_name, store.name, addDays(end, -5), "18"]])))
      .body,
  );
  assert.equal((await commit(other.id)).status, 200);
  assertErrorBody(await discard(other.id), 409, "ALREADY_COMMITTED");
  const [day] = await energyOf(store, addDays(end, -40), addDays(end, -40));
  const platform = await app.call(
    "GET",
    `/api/v1/stores/${store.id}/energy/${day.business_date}/versions`,
    { key: (await app.key(["read", "raw"])).key },
  );
  const platformBatch = platform.body.versions[0].batch.id as number;
  assertErrorBody(await discard(platformBatch), 409, "NOT_COMMITTABLE");
  // A platform batch's rows are import detail: raw, then 409 (it holds no preview to review).
  assertErrorBody(await review(platformBatch), 403, "PERMISSION_MISSING");
  const auditor = await app.key(["read", "write", "raw"]);
  assertErrorBody(await review(platformBatch, "", auditor.key), 409, "NOT_COMMITTABLE");
});

Deno.test("a batch's review is its own clerk's; another member's needs raw (rules.md §9)", async () => {
  const store = stores[4];
  const file = csvFile([HEADER, [store.brand_name, store.name, addDays(end, -6), "19.5"]]);
  const batch = assertSchema(Import, (await preview(file)).body);
  const colleague = await app.key(["read", "write"], { member: "review-colleague" });
  const auditor = await app.key(["read", "write", "raw"], { member: "review-auditor" });
  for (const committed of [false, true]) {
    if (committed) assert.equal((await commit(batch.id)).status, 200);
    const own = await review(batch.id);
    assert.equal(own.status, 200, JSON.stringify(own.body));
    assert.equal(assertSchema(ImportReview, own.body).rows.length, 1);
    for (const query of ["", "download=csv"]) {
      const refused = await review(batch.id, query, colleague.key);
      assertErrorBody(refused, 403, "PERMISSION_MISSING");
      assert.match(refused.body.error.message, /\braw\b/);
      const audited = await review(batch.id, query, auditor.key);
      assert.equal(audited.status, 200, JSON.stringify(audited.body));
    }
  }
});

Deno.test({
  name: "close the test app",
  fn: () => app.close(),
  sanitizeOps: false,
  sanitizeResources: false,
});
