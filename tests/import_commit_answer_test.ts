// A commit's answer of a batch larger than one page: its rows are read while the commit runs, page
// by page, and the answer is the batch as a read of it gives it afterwards, byte for byte.
import assert from "node:assert/strict";
import { Effect } from "effect";
import { addDays } from "../src/domain/range.ts";
import { IMPORT_PAGE_ROWS } from "../src/imports/import_service.ts";
import { generateSnapshot } from "../src/seed/generate.ts";
import { loadSnapshot } from "../src/seed/load.ts";
import { makeTestApp } from "./helpers.ts";
import { b64, storesOf } from "./import_helpers.ts";

const snapshot = generateSnapshot({ stores: 12 });
const app = await makeTestApp((db) =>
  db.run(Effect.asVoid(loadSnapshot(snapshot, { reset: false })))
);
const writer = await app.key(["read", "write", "raw"], { member: "large-commit" });
const stores = await storesOf(app, writer.key);
const end = snapshot.dataset.end;

const call = (path: string, key: string) =>
  app.handler(
    new Request(`http://service.test${path}`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${writer.key}`,
        "idempotency-key": key,
        "content-type": "application/json",
      },
      body: path.endsWith("/preview")
        ? JSON.stringify({ filename: "large.csv", content_base64: csv, reason: "a large batch" })
        : "{}",
    }),
  );

// Every store, 2.5 pages of days in all; values of every kind (numbers, blanks, VOID).
const days = Math.ceil((IMPORT_PAGE_ROWS * 2.5) / stores.length);
const lines = ["品牌,门店,日期,日能耗"];
for (const store of stores) {
  for (let i = 0; i < days; i++) {
    const value = i % 97 === 0 ? "" : i % 89 === 0 ? "作废" : `${(i * 7.3 + store.id).toFixed(2)}`;
    lines.push(`${store.brand_name},${store.name},${addDays(end, -days + i)},${value}`);
  }
}
const csv = b64(lines.join("\n") + "\n");

Deno.test("a commit of more rows than a page answers every row, as the batch reads afterwards", async () => {
  const previewed = await call("/api/v1/imports/preview", "large-preview");
  assert.equal(previewed.status, 200);
  const batch = JSON.parse(await previewed.text());
  assert.ok(batch.total_rows > 2 * IMPORT_PAGE_ROWS, `${batch.total_rows} rows`);
  const committed = await call(`/api/v1/imports/${batch.id}/commit`, "large-commit");
  assert.equal(committed.status, 200);
  const answer = await committed.text();
  const rows = JSON.parse(answer).rows as Array<{ row_number: number }>;
  assert.deepEqual(rows.map((r) => r.row_number), rows.map((_, i) => i + 1));
  assert.equal(rows.length, batch.total_rows);
  const read = await app.handler(
    new Request(`http://service.test/api/v1/imports/${batch.id}`, {
      headers: { authorization: `Bearer ${writer.key}` },
    }),
  );
  assert.equal(await read.text(), answer);
});

Deno.test({
  name: "close the test app",
  fn: () => app.close(),
  sanitizeOps: false,
  sanitizeResources: false,
});
