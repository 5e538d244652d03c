// A commit's answer of a batch larger than one page: its rows are read while the commit runs, page
// by page, and the answer is the batch as a read of it gives it afterwards, byte for byte.
import assert from "node:assert/strict";
import { Effect } from "effect";
import { addDays } from "../src/domain/range.ts";
import { IMPORT_PAGE_ROWS, wholeBatch } from "../src/imports/import_service.ts";
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

Deno.test("rows read while the batch was a preview answer for it only when they are all of them", () => {
  const counts = { INSERT: 2, UPDATE: 1, SKIP_MISSING: 1 };
  assert.equal(wholeBatch([1, 2, 3, 4], counts), true);
  // A concurrent commit of the batch ended the early read after its first pages.
  assert.equal(wholeBatch([1, 2], counts), false);
  assert.equal(wholeBatch([], {}), false);
  assert.equal(wholeBatch(undefined, counts), false);
});

// The same commit sent again while the first runs (a client's retry) is answered with the first
// result: every row, whichever answer it is (on the embedded database one of them may be 503 BUSY).
Deno.test("the same commit sent several times at once answers every row each time", async () => {
  for (let round = 1; round <= 3; round++) {
    const file = [
      lines[0],
      ...lines.slice(1).map((line) => line.replace(/,([\d.]+)$/, `,$1${round}`)),
    ];
    const previewed = await app.handler(
      new Request("http://service.test/api/v1/imports/preview", {
        method: "POST",
        headers: {
          authorization: `Bearer ${writer.key}`,
          "idempotency-key": `again-preview-${round}`,
          "content-type": "application/json",
        },
        body: JSON.stringify({
          filename: "again.csv",
          content_base64: b64(file.join("\n") + "\n"),
          reason: "sent again",
        }),
      }),
    );
    assert.equal(previewed.status, 200);
    const batch = JSON.parse(await previewed.text());
    const answers = await Promise.all(
      [0, 1, 2].map(async (n) => {
        await new Promise((r) => setTimeout(r, n * 15));
        const answer = await call(`/api/v1/imports/${batch.id}/commit`, `again-commit-${round}`);
        return { status: answer.status, body: JSON.parse(await answer.text()) };
      }),
    );
    const done = answers.filter((a) => a.status === 200);
    assert.ok(done.length >= 1, JSON.stringify(answers.map((a) => a.status)));
    for (const answer of done) {
      assert.equal(answer.body.rows.length, batch.total_rows, `round ${round}`);
    }
  }
});

Deno.test({
  name: "close the test app",
  fn: () => app.close(),
  sanitizeOps: false,
  sanitizeResources: false,
});
