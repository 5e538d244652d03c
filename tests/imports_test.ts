// The import path end to end over HTTP: template, preview, commit, batch, lineage, idempotency,
// staleness, limits and permissions (contract parts 2-4 and 8, rules.md §8-9).
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import ExcelJS from "exceljs";
import { Effect, FastCheck as fc } from "effect";
import { addDays } from "../src/domain/range.ts";
import { EnergyResponse, EnergyVersions } from "../src/domain/energy.ts";
import { Import, Lineage, Template } from "../src/domain/imports.ts";
import { generateSnapshot } from "../src/seed/generate.ts";
import { loadSnapshot } from "../src/seed/load.ts";
import { IMPORT_PAGE_ROWS } from "../src/imports/import_service.ts";
import { SAVE_PAGE_ROWS } from "../src/imports/import_repo.ts";
import { buildTemplate } from "../src/files/template.ts";
import { checkReads, checkStoredDays } from "../src/energy/day_check.ts";
import { assertErrorBody, assertSchema, makeTestApp } from "./helpers.ts";
import { b64, countsOf, sqlOf, type StoreInfo, storesOf } from "./import_helpers.ts";
import {
  behindDecoy,
  handXlsx,
  inlineCell,
  numberCell,
  sheetXml,
  workbookEntries,
} from "./import_zip_fixtures.ts";

const snapshot = generateSnapshot({ stores: 6 });
const app = await makeTestApp((db) =>
  db.run(Effect.asVoid(loadSnapshot(snapshot, { reset: false })))
);
const writer = await app.key(["read", "write", "raw"], { member: "cleaner-1" });
const reader = await app.key(["read", "raw"]);
const end = snapshot.dataset.end;

const sql = sqlOf(app);
const counts = countsOf(app);
const stores = await storesOf(app, writer.key);

type Day = {
  business_date: string;
  energy_id: number | null;
  energy_kwh: string | null;
  status: string;
  source_kind: string | null;
  quality_note: string | null;
  revision_no: number | null;
};
const energyOf = async (store: StoreInfo, start: string, last: string) => {
  const answer = await app.call(
    "GET",
    `/api/v1/stores/${store.id}/energy?scope_id=${store.scope_id}&start=${start}&end=${last}`,
    { key: writer.key },
  );
  assert.equal(answer.status, 200);
  return assertSchema(EnergyResponse, answer.body).days as unknown as Day[];
};
const dayOf = async (store: StoreInfo, date: string) => (await energyOf(store, date, date))[0];

// Finds, across all stores, a day of each kind the §8 table distinguishes (each test asserts the
// kinds it uses: the small snapshot has few void days, and tests use them up).
const ALL_KINDS = ["void", "empty", "legacy", "legacy2", "legacy3", "cleaned"];
const findDays = async (taken: Set<string>, need: ReadonlyArray<string> = ALL_KINDS) => {
  const found: Record<string, { store: StoreInfo; day: Day }> = {};
  for (const store of stores) {
    for (const day of await energyOf(store, addDays(end, -365), addDays(end, -1))) {
      const id = `${store.id}|${day.business_date}`;
      if (taken.has(id)) continue;
      const kind = day.status === "VOID"
        ? "void"
        : day.status === "NO_DATA"
        ? "empty"
        : day.source_kind === "LEGACY_DIRECT"
        ? "legacy"
        : day.source_kind === "CLEANED"
        ? "cleaned"
        : undefined;
      if (kind === undefined) continue;
      const slot = kind === "legacy" && found.legacy !== undefined ? "legacy2" : kind;
      if (slot === "legacy2" && found.legacy2 !== undefined) {
        if (found.legacy3 === undefined) found.legacy3 = { store, day };
        continue;
      }
      if (found[slot] === undefined) {
        found[slot] = { store, day };
        taken.add(id);
      }
    }
  }
  for (const kind of need) assert.ok(found[kind], `the snapshot has a ${kind} day`);
  if (found.legacy3 !== undefined) {
    taken.add(`${found.legacy3.store.id}|${found.legacy3.day.business_date}`);
  }
  return found;
};

const csvFile = (lines: ReadonlyArray<ReadonlyArray<string>>, bom = false) =>
  (bom ? "\uFEFF" : "") + lines.map((l) => l.join(",")).join("\r\n") + "\r\n";

let keys = 0;
const newKey = () => `test-key-${++keys}-${crypto.randomUUID()}`;

const preview = (
  content: string | Uint8Array,
  options: { key?: string; idem?: string; filename?: string; reason?: string } = {},
) =>
  app.call("POST", "/api/v1/imports/preview", {
    key: options.key ?? writer.key,
    headers: { "idempotency-key": options.idem ?? newKey() },
    body: {
      filename: options.filename ?? "cleaning.csv",
      content_base64: b64(content),
      reason: options.reason ?? "monthly cleaning",
    },
  });

const commit = (batchId: number, options: { key?: string; idem?: string; body?: unknown } = {}) =>
  app.call("POST", `/api/v1/imports/${batchId}/commit`, {
    key: options.key ?? writer.key,
    headers: { "idempotency-key": options.idem ?? newKey() },
    body: options.body ?? {},
  });

const taken = new Set<string>();

Deno.test("every action of rules.md §8 is previewed, then committed as revisions", async () => {
  const d = await findDays(taken);
  const legacyValue = d.legacy.day.energy_kwh!;
  const cleanedValue = d.cleaned.day.energy_kwh!;
  const row = (x: { store: StoreInfo; day: Day }, value: string) => [
    x.store.brand_name,
    x.store.name,
    x.day.business_date,
    value,
  ];
  const file = csvFile([
    ["品牌", "门店", "日期", "日能耗"],
    row(d.empty, "0"), // INSERT: 0 is a value
    row(d.legacy, "123.4567"), // UPDATE
    row(d.legacy2, d.legacy2.day.energy_kwh! + "0"), // RELINK: equal, written differently
    row(d.cleaned, cleanedValue), // UNCHANGED
    row(d.void, "42"), // RESTORE
    row(d.legacy3, "作废"), // VOID
    [d.cleaned.store.brand_name, d.cleaned.store.name, addDays(end, -400), ""], // SKIP_MISSING
  ]);
  assert.notEqual(legacyValue, "123.4567");
  const before = await counts();
  const answer = await preview(file);
  assert.equal(answer.status, 200, JSON.stringify(answer.body));
  const batch = assertSchema(Import, answer.body);
  assert.equal(batch.status, "PREVIEWED");
  assert.equal(batch.committed_at, null);
  assert.deepEqual(batch.rows.map((r) => r.action), [
    "INSERT",
    "UPDATE",
    "RELINK",
    "UNCHANGED",
    "RESTORE",
    "VOID",
    "SKIP_MISSING",
  ]);
  assert.equal(batch.total_rows, 7);
  assert.equal(batch.insert_rows, 1);
  assert.equal(batch.update_rows, 1);
  assert.equal(batch.relink_rows, 1);
  assert.equal(batch.unchanged_rows, 1);
  assert.equal(batch.missing_rows, 1);
  assert.equal(batch.kept_cleaned_rows, 0);
  assert.equal(batch.action_counts.VOID, 1);
  assert.equal(batch.action_counts.RESTORE, 1);
  assert.equal(batch.action_counts.KEEP_CLEANED, 0);
  assert.equal(batch.rows[0].proposed_energy_kwh, "0.0000");
  assert.equal(batch.rows[1].before_energy_kwh, legacyValue);
  assert.equal(batch.rows[1].proposed_energy_kwh, "123.4567");
  assert.ok(batch.rows.every((r) => r.note_field === "ABSENT_NO_COLUMN"));
  // The preview's answer is exactly what the stored batch reads back as.
  const stored = await app.call("GET", `/api/v1/imports/${batch.id}`, { key: writer.key });
  assert.deepEqual(stored.body, answer.body);
  // Preview stores the source and the draft, and changes no effective energy.
  const afterPreview = await counts();
  assert.equal(afterPreview.files, before.files + 1);
  assert.equal(afterPreview.batches, before.batches + 1);
  assert.equal(afterPreview.revisions, before.revisions);
  assert.equal((await dayOf(d.legacy.store, d.legacy.day.business_date)).energy_kwh, legacyValue);

  const committed = await commit(batch.id);
  assert.equal(committed.status, 200, JSON.stringify(committed.body));
  const done = assertSchema(Import, committed.body);
  assert.equal(done.status, "COMMITTED");
  assert.ok(done.committed_at);
  const afterCommit = await counts();
  assert.equal(afterCommit.revisions, afterPreview.revisions + 5, "one revision per changed day");
  assert.equal(afterCommit.days, afterPreview.days + 1, "the empty day now has a row");

  const inserted = await dayOf(d.empty.store, d.empty.day.business_date);
  assert.equal(inserted.status, "AVAILABLE");
  assert.equal(inserted.energy_kwh, "0.0000");
  assert.equal(inserted.source_kind, "MANUAL_UPLOAD");
  assert.equal(inserted.revision_no, 1);
  const updated = await dayOf(d.legacy.store, d.legacy.day.business_date);
  assert.equal(updated.energy_kwh, "123.4567");
  assert.equal(updated.source_kind, "MANUAL_UPLOAD");
  assert.equal(updated.revision_no, d.legacy.day.revision_no! + 1);
  const relinked = await dayOf(d.legacy2.store, d.legacy2.day.business_date);
  assert.equal(relinked.energy_kwh, d.legacy2.day.energy_kwh);
  assert.equal(relinked.source_kind, "MANUAL_UPLOAD");
  const unchanged = await dayOf(d.cleaned.store, d.cleaned.day.business_date);
  assert.deepEqual(unchanged, d.cleaned.day);
  const restored = await dayOf(d.void.store, d.void.day.business_date);
  assert.equal(restored.status, "AVAILABLE");
  assert.equal(restored.energy_kwh, "42.0000");
  const voided = await dayOf(d.legacy3.store, d.legacy3.day.business_date);
  assert.equal(voided.status, "VOID");
  assert.equal(voided.energy_kwh, null);

  // Versions name the member who committed, the batch and the operation.
  const versions = await app.call(
    "GET",
    `/api/v1/stores/${d.legacy.store.id}/energy/${d.legacy.day.business_date}/versions`,
    { key: writer.key },
  );
  assert.equal(versions.status, 200);
  const v = assertSchema(EnergyVersions, versions.body);
  const last = v.versions[v.versions.length - 1] as unknown as Record<string, unknown>;
  assert.equal(last.operation, "UPDATE");
  assert.equal(last.after_kwh, "123.4567");
  assert.equal(last.before_kwh, legacyValue);
  assert.equal(JSON.stringify(last).includes("cleaner-1"), true, "the actor is the member");
  assert.equal(JSON.stringify(last).includes(batch.batch_no), true, "the batch is named");

  // Lineage leads back to the sealed source record of the uploaded file.
  const lineage = await app.call("GET", `/api/v1/import-rows/${batch.rows[1].id}/lineage`, {
    key: writer.key,
  });
  assert.equal(lineage.status, 200);
  const l = assertSchema(Lineage, lineage.body);
  assert.equal(l.action, "UPDATE");
  assert.equal(l.raw_energy, "123.4567");
  assert.equal(l.raw_store_name, d.legacy.store.name);
  assert.equal(l.sources.length, 1);
  // The row names its cell: the UPDATE is the second data line of the CSV (line 3).
  assert.deepEqual(
    [l.source_reference?.row, l.source_reference?.column, l.source_reference?.sheet],
    [3, "日能耗", undefined],
  );
  assert.equal(l.sources[0].record.format, "CSV");
  assert.equal(
    l.sources[0].file_sha256,
    createHash("sha256").update(new TextEncoder().encode(file)).digest("hex"),
  );

  // The batch reads back with the same rows and the commit's counters.
  const read = await app.call("GET", `/api/v1/imports/${batch.id}`, { key: writer.key });
  assert.equal(read.status, 200);
  assert.deepEqual(read.body, committed.body);

  // The committed days are stored in the shape a read returns, equal to the computed one.
  const check = await app.db.run(checkStoredDays());
  assert.deepEqual([check.mismatches, check.months], [[], []]);
  const touched = batch.rows.map((r) => {
    const store = stores.find((s) => s.id === r.resolved_store_id)!;
    return { scopeId: store.scope_id, start: addDays(r.business_date, -2), end: r.business_date };
  });
  assert.deepEqual(await app.db.run(checkReads(touched)), []);
});

Deno.test("a cleaned value is never overwritten: KEEP_CLEANED, nothing written", async () => {
  const d = await findDays(taken);
  const file = csvFile([
    ["日期", "日能耗", "品牌", "门店"],
    [d.cleaned.day.business_date, "99999.9", d.cleaned.store.brand_name, d.cleaned.store.name],
  ]);
  const batch = assertSchema(Import, (await preview(file)).body);
  assert.equal(batch.rows[0].action, "KEEP_CLEANED");
  assert.equal(batch.kept_cleaned_rows, 1);
  const before = await counts();
  assert.equal((await commit(batch.id)).status, 200);
  assert.equal((await counts()).revisions, before.revisions);
  assert.deepEqual(await dayOf(d.cleaned.store, d.cleaned.day.business_date), d.cleaned.day);
});

Deno.test("the 备注 column: present sets the note, absent keeps the stored note", async () => {
  const d = await findDays(taken);
  const withNote = csvFile([
    ["品牌", "门店", "日期", "日能耗", "备注"],
    [d.legacy.store.brand_name, d.legacy.store.name, d.legacy.day.business_date, "7.5", "换表"],
  ], true);
  const a = assertSchema(Import, (await preview(withNote)).body);
  assert.equal(a.rows[0].note_field, null);
  assert.equal(a.rows[0].quality_note, "换表");
  assert.equal((await commit(a.id)).status, 200);
  assert.equal((await dayOf(d.legacy.store, d.legacy.day.business_date)).quality_note, "换表");

  // The same day again, from a file without 备注: a cleaned value now, so KEEP_CLEANED, note kept;
  // a legacy day from that file gets its value and keeps its stored note.
  const stored = d.legacy2.day.quality_note;
  const noNote = csvFile([
    ["品牌", "门店", "日期", "日能耗"],
    [d.legacy2.store.brand_name, d.legacy2.store.name, d.legacy2.day.business_date, "8.25"],
  ]);
  const b = assertSchema(Import, (await preview(noNote)).body);
  assert.equal(b.rows[0].note_field, "ABSENT_NO_COLUMN");
  assert.equal(b.rows[0].quality_note, stored);
  assert.equal((await commit(b.id)).status, 200);
  const after = await dayOf(d.legacy2.store, d.legacy2.day.business_date);
  assert.equal(after.energy_kwh, "8.2500");
  assert.equal(after.quality_note, stored);
});

Deno.test("the template is a workbook per visible brand that previews back as XLSX", async () => {
  const answer = await app.call("GET", "/api/v1/imports/template", { key: writer.key });
  assert.equal(answer.status, 200, JSON.stringify(answer.body));
  const template = assertSchema(Template, answer.body);
  const workbook = new ExcelJS.Workbook();
  await workbook.xlsx.load(new Uint8Array(Buffer.from(template.content_base64, "base64")).buffer);
  const brands = [...new Set(stores.map((s) => s.brand_name))].sort();
  assert.equal(workbook.worksheets.length, brands.length);
  assert.deepEqual(template.sheets.map((s) => s.stores).reduce((a, b) => a + b, 0), stores.length);
  const sheet = workbook.worksheets[0];
  assert.equal(sheet.getCell("A1").text, "门店名称");
  assert.match(sheet.getCell("B1").text, /^\d{4}-\d{2}-\d{2}$/);
  const lastColumn = sheet.getRow(1).cellCount;
  assert.equal(sheet.getRow(1).getCell(lastColumn).text, end);
  assert.ok(template.limits.max_rows === 10000);

  // Fill one cell of the first store with a number, preview: one UPDATE/INSERT/..., the rest skipped.
  sheet.getCell("C2").value = 12.25;
  const bytes = new Uint8Array(await workbook.xlsx.writeBuffer());
  const previewed = await preview(bytes, { filename: "template.xlsx" });
  assert.equal(previewed.status, 200, JSON.stringify(previewed.body));
  const batch = assertSchema(Import, previewed.body);
  const readBack = await app.call("GET", `/api/v1/imports/${batch.id}`, { key: writer.key });
  assert.deepEqual(readBack.body, previewed.body);
  const acting = batch.rows.filter((r) => r.action !== "SKIP_MISSING");
  assert.equal(acting.length, 1);
  assert.equal(acting[0].proposed_energy_kwh, "12.2500");
  assert.equal(acting[0].raw_energy, "12.25");
  assert.ok(batch.rows.every((r) => r.note_field === "ABSENT_WIDE_TABLE"));

  // A key limited to one store gets a template with that store only.
  const limited = await app.key(["read", "write"], { stores: [stores[0].id] });
  const small = assertSchema(
    Template,
    (await app.call("GET", "/api/v1/imports/template", { key: limited.key })).body,
  );
  assert.deepEqual(small.sheets.map((s) => s.stores), [1]);
});

Deno.test("idempotency: same key and request replays, another request is 409", async () => {
  const d = await findDays(taken);
  const file = csvFile([
    ["品牌", "门店", "日期", "日能耗"],
    [d.legacy.store.brand_name, d.legacy.store.name, d.legacy.day.business_date, "1.1"],
  ]);
  const idem = newKey();
  const first = await preview(file, { idem });
  assert.equal(first.status, 200);
  const before = await counts();
  const again = await preview(file, { idem });
  assert.equal(again.status, 200);
  assert.equal(again.body.id, first.body.id);
  assert.deepEqual(await counts(), before, "a replay stores nothing");
  assertErrorBody(await preview(file, { idem, reason: "other" }), 409, "IDEMPOTENCY_KEY_REUSED");
  // Keys are per member: another member may use the same key.
  const other = await app.key(["read", "write"], { member: "cleaner-2" });
  const theirs = await preview(file, { idem, key: other.key });
  assert.equal(theirs.status, 200);
  assert.notEqual(theirs.body.id, first.body.id);

  const commitKey = newKey();
  const c1 = await commit(first.body.id, { idem: commitKey });
  assert.equal(c1.status, 200);
  const afterCommit = await counts();
  const c2 = await commit(first.body.id, { idem: commitKey });
  assert.equal(c2.status, 200);
  assert.deepEqual(c2.body, c1.body, "the first result again");
  assert.deepEqual(await counts(), afterCommit, "no second effect");
  assertErrorBody(await commit(first.body.id), 409, "ALREADY_COMMITTED");
  assertErrorBody(await commit(theirs.body.id, { idem: commitKey }), 409, "IDEMPOTENCY_KEY_REUSED");
  // The preview key cannot be reused for a commit either.
  assertErrorBody(await commit(theirs.body.id, { idem }), 409, "IDEMPOTENCY_KEY_REUSED");

  // After its 48 hours a key is forgotten: the same key may start another request.
  await sql((s) =>
    s`UPDATE idempotency_records SET expires_at = now() - interval '1 second'
      WHERE idem_key = ${idem}`
  );
  const reused = await preview(file, { idem, reason: "another month" });
  assert.equal(reused.status, 200);
  assert.notEqual(reused.body.id, first.body.id);
  const left = await sql((s) =>
    s<{ n: number }>`SELECT count(*)::int AS n FROM idempotency_records
      WHERE expires_at <= now()`
  );
  assert.equal(left[0].n, 1, "only the other member's expired record is left");
});

Deno.test("a day changed since the preview makes the commit 409, and nothing is written", async () => {
  const d = await findDays(taken);
  const line = (value: string) =>
    csvFile([
      ["品牌", "门店", "日期", "日能耗"],
      [d.legacy.store.brand_name, d.legacy.store.name, d.legacy.day.business_date, value],
      [d.empty.store.brand_name, d.empty.store.name, d.empty.day.business_date, "5"],
    ]);
  const a = assertSchema(Import, (await preview(line("10"))).body);
  const b = assertSchema(Import, (await preview(line("20"))).body);
  assert.equal((await commit(b.id)).status, 200);
  const before = await counts();
  assertErrorBody(await commit(a.id), 409, "STALE_PREVIEW");
  assert.deepEqual(await counts(), before);
  assert.equal((await dayOf(d.legacy.store, d.legacy.day.business_date)).energy_kwh, "20.0000");
  const read = assertSchema(
    Import,
    (await app.call("GET", `/api/v1/imports/${a.id}`, { key: writer.key })).body,
  );
  assert.equal(read.status, "PREVIEWED");

  // A plan without effect is stale too: VOID on a void day (UNCHANGED), then the day is restored
  // by another batch; committing the first must not report success for a day that is not void.
  const voidFile = (value: string) =>
    csvFile([
      ["品牌", "门店", "日期", "日能耗"],
      [d.void.store.brand_name, d.void.store.name, d.void.day.business_date, value],
    ]);
  const keepVoid = assertSchema(Import, (await preview(voidFile("VOID"))).body);
  assert.equal(keepVoid.rows[0].action, "UNCHANGED");
  const restore = assertSchema(Import, (await preview(voidFile("42"))).body);
  assert.equal(restore.rows[0].action, "RESTORE");
  assert.equal((await commit(restore.id)).status, 200);
  assertErrorBody(await commit(keepVoid.id), 409, "STALE_PREVIEW");
});

Deno.test("an expired preview cannot be committed", async () => {
  const d = await findDays(taken, ["legacy"]);
  const file = csvFile([
    ["品牌", "门店", "日期", "日能耗"],
    [d.legacy.store.brand_name, d.legacy.store.name, d.legacy.day.business_date, "3"],
  ]);
  const batch = assertSchema(Import, (await preview(file)).body);
  await sql((s) =>
    s`UPDATE import_batches SET expires_at = now() - interval '1 second' WHERE id = ${batch.id}`
  );
  const read = await app.call("GET", `/api/v1/imports/${batch.id}`, { key: writer.key });
  assert.equal(read.body.status, "EXPIRED");
  const before = await counts();
  assertErrorBody(await commit(batch.id), 409, "BATCH_EXPIRED");
  assert.deepEqual(await counts(), before);
});

Deno.test("bad files are 400 with every problem located, and nothing is stored", async () => {
  const store = stores[0];
  const craftedRows = `<row r="1">${inlineCell("A1", "门店名称")}${
    inlineCell("B1", addDays(end, -3))
  }</row><row r="2">${inlineCell("A2", store.name)}${numberCell("B2", 1)}</row>`;
  const cases: Array<[string, string | Uint8Array, RegExp]> = [
    [
      "unknown store",
      csvFile([["品牌", "门店", "日期", "日能耗"], [
        store.brand_name,
        "没有这个门店",
        addDays(end, -3),
        "1",
      ]]),
      /没有这个门店/,
    ],
    [
      "five decimals",
      csvFile([["品牌", "门店", "日期", "日能耗"], [
        store.brand_name,
        store.name,
        addDays(end, -3),
        "1.23456",
      ]]),
      /1\.23456/,
    ],
    [
      "negative",
      csvFile([["品牌", "门店", "日期", "日能耗"], [
        store.brand_name,
        store.name,
        addDays(end, -3),
        "-1",
      ]]),
      /-1/,
    ],
    [
      "future date",
      csvFile([["品牌", "门店", "日期", "日能耗"], [
        store.brand_name,
        store.name,
        "2099-01-01",
        "1",
      ]]),
      /2099-01-01/,
    ],
    [
      // Not in the future (the snapshot ends before today), but after the dataset's end.
      "after the dataset's end",
      csvFile([["品牌", "门店", "日期", "日能耗"], [
        store.brand_name,
        store.name,
        addDays(end, 1),
        "1",
      ]]),
      new RegExp(`Date ${addDays(end, 1)} .* outside the dataset, which ends on ${end}`),
    ],
    [
      "duplicate store-day",
      csvFile([
        ["品牌", "门店", "日期", "日能耗"],
        [store.brand_name, store.name, addDays(end, -3), "1"],
        [store.brand_name, store.name, addDays(end, -3), "2"],
      ]),
      /row 2|row 3/i,
    ],
    [
      "NUL in a note",
      csvFile([["品牌", "门店", "日期", "日能耗", "备注"], [
        store.brand_name,
        store.name,
        addDays(end, -3),
        "1",
        "a\u0000b",
      ]]),
      /binary/,
    ],
    ["wrong header", csvFile([["brand", "store", "date", "kwh"], ["a", "b", "c", "d"]]), /品牌/],
    ["not a table", new Uint8Array([0, 159, 146, 150, 1, 2, 3]), /XLSX|CSV/],
    ["empty", "", /XLSX|CSV/],
    ["broken zip", new Uint8Array([0x50, 0x4b, 0x03, 0x04, 1, 2, 3, 4, 5]), /XLSX|workbook/i],
    [
      "a workbook behind a decoy archive",
      behindDecoy(workbookEntries([{ name: store.brand_name, xml: sheetXml(craftedRows) }])),
      /ZIP directory is not where the archive declares it/,
    ],
    [
      "a row number past the limit",
      handXlsx([{
        name: store.brand_name,
        xml: sheetXml(craftedRows + `<row r="1000000000"><c r="A1000000000"/></row>`),
      }]),
      /row "1000000000" .* outside rows 1 to 20000/,
    ],
  ];
  const before = await counts();
  for (const [label, content, pattern] of cases) {
    const answer = await preview(content);
    assertErrorBody(answer, 400, "INVALID_FILE");
    assert.match(answer.body.error.message, pattern, label);
  }
  // Two problems in one file are both named.
  const two = await preview(csvFile([
    ["品牌", "门店", "日期", "日能耗"],
    [store.brand_name, store.name, addDays(end, -3), "abc"],
    [store.brand_name, store.name, addDays(end, -4), "1.00001"],
  ]));
  assertErrorBody(two, 400);
  assert.match(two.body.error.message, /abc/);
  assert.match(two.body.error.message, /1\.00001/);
  assert.deepEqual(await counts(), before);
});

Deno.test("limits of contract part 8 and the request shape", async () => {
  const store = stores[0];
  const ok = csvFile([["品牌", "门店", "日期", "日能耗"], [
    store.brand_name,
    store.name,
    addDays(end, -3),
    "1",
  ]]);
  const post = (body: unknown, headers: Record<string, string> = { "idempotency-key": newKey() }) =>
    app.call("POST", "/api/v1/imports/preview", { key: writer.key, headers, body });
  const valid = { filename: "a.csv", content_base64: b64(ok), reason: "r" };
  const before = await counts();
  assertErrorBody(await post(valid, {}), 400);
  assertErrorBody(await post(valid, { "idempotency-key": "x".repeat(65) }), 400);
  assertErrorBody(await post({ ...valid, filename: "x".repeat(256) }), 400);
  assertErrorBody(await post({ ...valid, reason: "" }), 400);
  assertErrorBody(await post({ ...valid, reason: "x".repeat(501) }), 400);
  assertErrorBody(await post({ ...valid, extra: 1 }), 400);
  assertErrorBody(await post({ ...valid, content_base64: "not base64!" }), 400, "INVALID_BASE64");
  const big = new Uint8Array(4 * 1024 * 1024 + 1);
  assertErrorBody(await post({ ...valid, content_base64: b64(big) }), 400, "FILE_TOO_LARGE");
  const rows = [["品牌", "门店", "日期", "日能耗"]];
  for (let i = 0; i < 10_001; i++) rows.push([store.brand_name, `店${i}`, addDays(end, -3), "1"]);
  const tooMany = await post({ ...valid, content_base64: b64(csvFile(rows)) });
  assertErrorBody(tooMany, 400);
  assert.match(tooMany.body.error.message, /10,?000/);
  assert.deepEqual(await counts(), before);

  assert.equal((await post({ ...valid, filename: "x".repeat(255) })).status, 200);
  // The contract sets a filename's greatest length only: an empty one is a name too.
  const unnamed = await post({ ...valid, filename: "" });
  assert.equal(unnamed.status, 200, JSON.stringify(unnamed.body));
  assert.equal(unnamed.body.filename, "");
  // Wrapped base64 (as MIME encoders write it) is the same file.
  const wrapped = b64(ok).replace(/.{1,76}/g, "$&\r\n");
  assert.notEqual(wrapped, b64(ok));
  assert.equal((await post({ ...valid, content_base64: wrapped })).status, 200);
  const batch = (await post(valid)).body;
  assertErrorBody(await commit(batch.id, { body: { force: true } }), 400);
  assertErrorBody(
    await app.call("POST", `/api/v1/imports/${batch.id}/commit`, { key: writer.key, body: {} }),
    400,
  );
});

Deno.test("permissions: write for template, preview and commit; raw for batch and lineage", async () => {
  const store = stores[0];
  const file = csvFile([["品牌", "门店", "日期", "日能耗"], [
    store.brand_name,
    store.name,
    addDays(end, -3),
    "1",
  ]]);
  assertErrorBody(await app.call("GET", "/api/v1/imports/template"), 401);
  assertErrorBody(
    await app.call("GET", "/api/v1/imports/template", { key: reader.key }),
    403,
    "PERMISSION_MISSING",
  );
  assertErrorBody(await preview(file, { key: reader.key }), 403);
  const batch = assertSchema(Import, (await preview(file)).body);
  assertErrorBody(await commit(batch.id, { key: reader.key }), 403);
  const writeOnly = await app.key(["read", "write"]);
  assertErrorBody(
    await app.call("GET", `/api/v1/imports/${batch.id}`, { key: writeOnly.key }),
    403,
  );
  assertErrorBody(
    await app.call("GET", `/api/v1/import-rows/${batch.rows[0].id}/lineage`, {
      key: writeOnly.key,
    }),
    403,
  );
  assert.equal(
    (await app.call("GET", `/api/v1/imports/${batch.id}`, { key: reader.key })).status,
    200,
  );
  assertErrorBody(await app.call("GET", "/api/v1/imports/999999", { key: reader.key }), 404);
  assertErrorBody(
    await app.call("GET", "/api/v1/import-rows/999999999/lineage", { key: reader.key }),
    404,
  );
  assertErrorBody(await commit(999999), 404);

  // write and raw build on read: a key without read sees no store names or values through them.
  const writeNoRead = await app.key(["write", "raw"]);
  for (
    const answer of [
      await app.call("GET", "/api/v1/imports/template", { key: writeNoRead.key }),
      await preview(file, { key: writeNoRead.key }),
      await commit(batch.id, { key: writeNoRead.key }),
      await app.call("GET", `/api/v1/imports/${batch.id}`, { key: writeNoRead.key }),
      await app.call("GET", `/api/v1/import-rows/${batch.rows[0].id}/lineage`, {
        key: writeNoRead.key,
      }),
    ]
  ) {
    assertErrorBody(answer, 403, "PERMISSION_MISSING");
    assert.match(answer.body.error.message, /read permission/);
  }

  // A key limited to other stores: the batch's store is outside it, and no message names it.
  const limited = await app.key(["read", "write", "raw"], { stores: [stores[1].id] });
  for (
    const answer of [
      await commit(batch.id, { key: limited.key }),
      await app.call("GET", `/api/v1/imports/${batch.id}`, { key: limited.key }),
      await app.call("GET", `/api/v1/import-rows/${batch.rows[0].id}/lineage`, {
        key: limited.key,
      }),
    ]
  ) {
    assertErrorBody(answer, 403, "STORE_FORBIDDEN");
    assert.doesNotMatch(answer.body.error.message, /\d/);
  }
});

Deno.test("a store outside the key's stores reads in a preview exactly as a store that does not exist", async () => {
  const [mine, theirs] = [stores[0], stores.find((s) => s.brand_name !== stores[0].brand_name)!];
  const limited = await app.key(["read", "write"], { stores: [mine.id] });
  const date = addDays(end, -3);
  const header = ["品牌", "门店", "日期", "日能耗"];
  const refusal = async (brand: string, name: string) => {
    const answer = await preview(csvFile([header, [brand, name, date, "1"]]), { key: limited.key });
    assertErrorBody(answer, 400, "INVALID_FILE");
    return answer.body.error.message as string;
  };
  const unknownBrand = "没有这个品牌";
  // A store of another brand: its brand has no store in scope, so the brand is unknown too.
  assert.equal(
    await refusal(theirs.brand_name, theirs.name),
    (await refusal(unknownBrand, theirs.name)).replaceAll(unknownBrand, theirs.brand_name),
  );
  // Another store of a brand in scope, when there is one: an unknown store of that brand.
  const sibling = stores.find((s) => s.brand_name === mine.brand_name && s.id !== mine.id);
  if (sibling !== undefined) {
    assert.equal(
      await refusal(mine.brand_name, sibling.name),
      (await refusal(mine.brand_name, "没有这个门店")).replaceAll("没有这个门店", sibling.name),
    );
  }
  // The key's own store is matched.
  const own = await preview(csvFile([header, [mine.brand_name, mine.name, date, "1"]]), {
    key: limited.key,
  });
  assert.equal(own.status, 200);
  assert.deepEqual(own.body.rows.map((r: { resolved_store_id: number }) => r.resolved_store_id), [
    mine.id,
  ]);
});

Deno.test("a preview names every problem of the file at once, each once, located", async () => {
  const [a, b] = stores;
  const header = ["品牌", "门店", "日期", "日能耗"];
  const file = csvFile([
    header,
    [a.brand_name, a.name, addDays(end, -1), "12.5x"], // row 2: not a number
    [a.brand_name, "没有这个门店", addDays(end, -2), "3"], // row 3: unknown store
    [b.brand_name, b.name, addDays(end, 1), "4"], // row 4: after the dataset's end
    [a.brand_name, a.name, addDays(end, -5), "1"], // row 5
    [a.brand_name, a.name, addDays(end, -5), "2"], // row 6: a second value for row 5's day
    ["没有这个品牌", a.name, addDays(end, -6), "1e3"], // row 7: unknown brand and exponent
    [a.brand_name, "另一个未知门店", addDays(end, -7), "-1"], // row 8: unknown store and negative
  ]);
  const before = await counts();
  const answer = await preview(file);
  assertErrorBody(answer, 400, "INVALID_FILE");
  const lines = (answer.body.error.message as string).split("\n").slice(1);
  const expected: Array<[number, RegExp]> = [
    [2, /12\.5x.*not a number/],
    [3, /Unknown store "没有这个门店"/],
    [4, new RegExp(`${addDays(end, 1)}.*outside the dataset`)],
    [6, /duplicate store-day/],
    [7, /1e3.*exponent notation is not accepted/],
    [7, /Unknown brand "没有这个品牌"/],
    [8, /negative energy value/],
    [8, /Unknown store "另一个未知门店"/],
  ];
  assert.equal(lines.length, expected.length, lines.join("\n"));
  expected.forEach(([row, pattern], i) => {
    assert.match(lines[i], new RegExp(`^- row ${row}\\b`), lines[i]);
    assert.match(lines[i], pattern, lines[i]);
  });
  assert.deepEqual(await counts(), before, "a refused file stores nothing");

  // Not a table at all, or a table with another separator: said so in one problem.
  for (
    const [content, pattern] of [
      ["hello", /not an XLSX workbook or a CSV table/],
      [`品牌;门店;日期;日能耗\n${a.brand_name};${a.name};${addDays(end, -1)};1\n`, /semicolons/],
    ] as const
  ) {
    const refused = await preview(content);
    assertErrorBody(refused, 400, "INVALID_FILE");
    assert.match(refused.body.error.message, /rejected with 1 problem:/);
    assert.match(refused.body.error.message, pattern);
  }
});

Deno.test("a reason of whitespace only is refused; a reason is stored trimmed", async () => {
  const d = await findDays(taken, ["legacy"]);
  const file = csvFile([
    ["品牌", "门店", "日期", "日能耗"],
    [d.legacy.store.brand_name, d.legacy.store.name, d.legacy.day.business_date, "5"],
  ]);
  for (const reason of [" ", " \t\n ", "\u3000"]) {
    assertErrorBody(await preview(file, { reason }), 400, "INVALID_REQUEST");
  }
  const batch = await preview(file, { reason: "  fixed meter  " });
  assert.equal(batch.status, 200);
  assert.equal(batch.body.change_reason, "fixed meter");
});

Deno.test("lineage of the snapshot's platform rows leads to their sealed legacy records", async () => {
  const store = stores[stores.length - 1];
  const row = (await energyOf(store, addDays(end, -365), addDays(end, -1)))
    .find((day) => day.source_kind === "LEGACY_DIRECT") as Day & { import_row_id: number };
  const lineage = await app.call("GET", `/api/v1/import-rows/${row.import_row_id}/lineage`, {
    key: reader.key,
  });
  assert.equal(lineage.status, 200);
  const l = assertSchema(Lineage, lineage.body);
  assert.equal(l.resolved_store_id, store.id);
  assert.equal(l.source_kind, "LEGACY_DIRECT");
  assert.equal(l.raw_energy !== null && Number(l.raw_energy) === Number(row.energy_kwh), true);
  assert.equal(l.sources.length, 1);
  assert.match(l.sources[0].file_sha256, /^[0-9a-f]{64}$/);
});

// A batch of any size is sent as its rows are read, page by page; row_offset and row_limit send a
// window of its rows in file order while the counters still count every row.
Deno.test("a batch streams every row, and row_offset/row_limit page through it", async () => {
  const store = stores[0];
  const day = (await energyOf(store, addDays(end, -10), addDays(end, -10)))[0] as Day & {
    import_row_id: number;
  };
  const lineage = await app.call("GET", `/api/v1/import-rows/${day.import_row_id}/lineage`, {
    key: reader.key,
  });
  const batchId = lineage.body.batch_id as number;
  const whole = await app.call("GET", `/api/v1/imports/${batchId}`, { key: reader.key });
  assert.equal(whole.status, 200);
  const batch = assertSchema(Import, whole.body);
  assert.ok(batch.rows.length > IMPORT_PAGE_ROWS, "more rows than one page");
  assert.equal(batch.rows.length, batch.total_rows);
  assert.deepEqual(batch.rows.map((r) => r.row_number), batch.rows.map((_, i) => i + 1));
  const counted = Object.values(batch.action_counts).reduce((a, n) => a + n, 0);
  assert.equal(counted, batch.total_rows);

  const page = async (query: string) => {
    const answer = await app.call("GET", `/api/v1/imports/${batchId}?${query}`, {
      key: reader.key,
    });
    assert.equal(answer.status, 200, query);
    const paged = assertSchema(Import, answer.body);
    const { rows: _rows, ...counters } = paged;
    const { rows: _all, ...wholeCounters } = batch;
    assert.deepEqual(counters, wholeCounters, `${query}: the counters count every row`);
    return paged.rows;
  };
  for (
    const [offset, limit] of [
      [0, 1],
      [IMPORT_PAGE_ROWS - 2, 5],
      [IMPORT_PAGE_ROWS, IMPORT_PAGE_ROWS + 1],
      [batch.total_rows - 1, 10],
    ]
  ) {
    assert.deepEqual(
      await page(`row_offset=${offset}&row_limit=${limit}`),
      batch.rows.slice(offset, offset + limit),
      `row_offset=${offset}&row_limit=${limit}`,
    );
  }
  assert.deepEqual(
    await page(`row_offset=${IMPORT_PAGE_ROWS + 3}`),
    batch.rows.slice(IMPORT_PAGE_ROWS + 3),
  );
  assert.deepEqual(await page(`row_offset=${batch.total_rows}`), []);
  assert.deepEqual(await page("row_offset=2147483647&row_limit=2147483647"), []);
  for (
    const bad of [
      "row_offset=-1",
      "row_limit=0",
      "row_offset=1e3",
      "row_limit=x",
      "row_offset=2147483648",
    ]
  ) {
    assertErrorBody(
      await app.call("GET", `/api/v1/imports/${batchId}?${bad}`, { key: reader.key }),
      400,
      "INVALID_REQUEST",
    );
  }
});

// A preview stores its rows in several statements once they are more than one statement's page:
// every row is stored once, in file order, linked to the one sealed record of its worksheet, whose
// counts cover exactly its rows.
Deno.test("a preview of several pages of rows links each row to its worksheet's record", async () => {
  const dayCount = Math.ceil((2 * SAVE_PAGE_ROWS + 1) / stores.length);
  assert.ok(addDays(end, -dayCount) >= snapshot.dataset.start, "the dataset holds the days");
  const brands = [...new Set(stores.map((s) => s.brand_name))];
  assert.ok(brands.length >= 2, "more than one worksheet");
  const built = await buildTemplate({
    brands: brands.map((name) => ({
      name,
      stores: stores.filter((s) => s.brand_name === name).map((s) => s.name),
    })),
    days: Array.from({ length: dayCount }, (_, i) => addDays(end, i - dayCount)),
  });
  const workbook = new ExcelJS.Workbook();
  await workbook.xlsx.load(built.bytes.buffer as ArrayBuffer);
  const last = workbook.worksheets[workbook.worksheets.length - 1];
  last.getCell(2, dayCount + 1).value = 31.5;
  workbook.worksheets[0].getCell(2, 2).value = 7.25;
  const previewed = await preview(new Uint8Array(await workbook.xlsx.writeBuffer()), {
    filename: "pages.xlsx",
  });
  assert.equal(previewed.status, 200, JSON.stringify(previewed.body).slice(0, 500));
  const batch = assertSchema(Import, previewed.body);
  assert.equal(batch.total_rows, stores.length * dayCount);
  assert.ok(batch.total_rows > 2 * SAVE_PAGE_ROWS, "more than two statements' pages");
  assert.deepEqual(
    batch.rows.filter((r) => r.raw_energy !== null).map((r) => r.raw_energy),
    ["7.25", "31.5"],
  );
  const readBack = await app.call("GET", `/api/v1/imports/${batch.id}`, { key: writer.key });
  assert.deepEqual(readBack.body, previewed.body);

  const stored = await sql((s) =>
    s<{ id: number; row_number: number; sheet: string; row: number; record_id: number }>`
      SELECT r.id, r.row_number, r.source_reference->>'sheet' AS sheet,
        (r.source_reference->>'row')::int AS "row",
        (r.source_reference->>'source_record_id')::int AS record_id
      FROM import_rows r WHERE r.batch_id = ${batch.id} ORDER BY r.row_number`
  );
  assert.deepEqual(stored.map((r) => r.row_number), batch.rows.map((_, i) => i + 1));
  assert.deepEqual(stored.map((r) => r.id), batch.rows.map((r) => r.id));
  const records = await sql((s) =>
    s<{ id: number; record: Record<string, unknown> }>`
      SELECT id, record FROM source_records
      WHERE id IN (SELECT (source_reference->>'source_record_id')::int
                   FROM import_rows WHERE batch_id = ${batch.id})
      ORDER BY id`
  );
  assert.equal(records.length, workbook.worksheets.length, "one record per worksheet");
  for (const record of records) {
    const own = stored.filter((r) => r.record_id === record.id);
    assert.ok(own.every((r) => r.sheet === record.record.sheet), "rows of the record's sheet");
    assert.deepEqual(
      {
        values: record.record.values,
        first_row: record.record.first_row,
        last_row: record.record.last_row,
      },
      {
        values: own.length,
        first_row: Math.min(...own.map((r) => r.row)),
        last_row: Math.max(...own.map((r) => r.row)),
      },
    );
  }
});

// Random damage to valid files: the answer is 200 or a 400 with the Error body, never a 500, and a
// refused file stores nothing.
Deno.test("randomly damaged files never give a 500 and a refused file stores nothing", async () => {
  const store = stores[0];
  const lines = [["品牌", "门店", "日期", "日能耗", "备注"]];
  for (let i = 1; i <= 5; i++) {
    lines.push([store.brand_name, store.name, addDays(end, -i), `${i}.5`, "ok"]);
  }
  const csv = new TextEncoder().encode(csvFile(lines));
  const workbook = new ExcelJS.Workbook();
  const sheet = workbook.addWorksheet(store.brand_name);
  sheet.addRow(["门店名称", addDays(end, -2), addDays(end, -1)]);
  sheet.addRow([store.name, 1.25, "VOID"]);
  const xlsx = new Uint8Array(await workbook.xlsx.writeBuffer());
  const damage = fc.tuple(
    fc.constantFrom(csv, xlsx),
    fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 }), fc.constantFrom("set", "cut")), {
      minLength: 1,
      maxLength: 6,
    }),
  ).map(([file, edits]) => {
    let bytes = file.slice();
    for (const [at, value, kind] of edits) {
      const i = at % Math.max(1, bytes.length);
      if (kind === "set") bytes[i] = value;
      else bytes = bytes.slice(0, i);
    }
    return bytes;
  });
  await fc.assert(
    fc.asyncProperty(damage, async (bytes) => {
      const before = await counts();
      const answer = await preview(bytes, { filename: "damaged.bin" });
      assert.ok(answer.status === 200 || answer.status === 400, `status ${answer.status}`);
      if (answer.status === 400) {
        assertErrorBody(answer, 400);
        assert.deepEqual(await counts(), before);
      }
    }),
    { numRuns: 40 },
  );
});

Deno.test({
  name: "close the test app",
  fn: () => app.close(),
  sanitizeOps: false,
  sanitizeResources: false,
});
