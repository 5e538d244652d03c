// Conditional reads: every read of store data carries a strong ETag made of the data's version;
// If-None-Match with it answers 304 without a body; a commit or a profile edit changes the ETag of
// exactly the reads it affects.
import assert from "node:assert/strict";
import { Effect } from "effect";
import { addDays } from "../src/domain/range.ts";
import { generateSnapshot } from "../src/seed/generate.ts";
import { loadSnapshot } from "../src/seed/load.ts";
import { type Answer, assertErrorBody, makeTestApp } from "./helpers.ts";
import { b64, storesOf } from "./import_helpers.ts";

const snapshot = generateSnapshot({ stores: 4 });
const app = await makeTestApp((db) =>
  db.run(Effect.asVoid(loadSnapshot(snapshot, { reset: false })))
);
const writer = await app.key(["read", "write", "raw"], { member: "conditional-writer" });
const reader = await app.key(["read"]);
const stores = await storesOf(app, writer.key);
const end = snapshot.dataset.end;
const [a, b] = stores;

const range = (store: { id: number; scope_id: number }, from: string, to: string) =>
  `scope_id=${store.scope_id}&start=${from}&end=${to}`;
const readsOf = (store: { id: number; scope_id: number }) => [
  `/api/v1/stores/${store.id}/energy?${range(store, addDays(end, -30), end)}`,
  `/api/v1/stores/${store.id}/targets?${range(store, addDays(end, -30), end)}`,
  `/api/v1/stores/${store.id}/metrics?${range(store, addDays(end, -30), end)}`,
  `/api/v1/stores/${store.id}/periods?scope_id=${store.scope_id}&as_of=${end}`,
  `/api/v1/stores/${store.id}/reference`,
];
const LISTS = ["/api/v1/dataset", "/api/v1/stores", "/api/v1/catalog"];

const get = (path: string, key = reader.key, headers: Record<string, string> = {}) =>
  app.call("GET", path, { key, headers });
const etagOf = (answer: Answer) => {
  assert.equal(answer.status, 200);
  const etag = answer.headers.get("etag");
  assert.ok(etag !== null && /^"[^"]+"$/.test(etag), `a strong ETag: ${etag}`);
  assert.equal(answer.headers.get("cache-control"), "private, no-cache");
  return etag;
};
const etags = async (paths: ReadonlyArray<string>, key = reader.key) => {
  const found: Record<string, string> = {};
  for (const path of paths) found[path] = etagOf(await get(path, key));
  return found;
};

Deno.test("every read of store data carries an ETag; If-None-Match with it is 304 and no body", async () => {
  for (const path of [...LISTS, ...readsOf(a)]) {
    const first = await get(path);
    const etag = etagOf(first);
    assert.equal(etagOf(await get(path)), etag, `${path}: the same data, the same ETag`);
    for (const header of [etag, `W/${etag}`, `"other", ${etag}`, "*"]) {
      const again = await get(path, reader.key, { "if-none-match": header });
      assert.equal(again.status, 304, `${path} with If-None-Match ${header}`);
      assert.equal(again.body, null, "no body");
      assert.equal(again.headers.get("etag"), etag);
    }
    const stale = await get(path, reader.key, { "if-none-match": '"something-else"' });
    assert.equal(stale.status, 200);
    assert.deepEqual(stale.body, first.body);
  }
});

Deno.test("a 304 is given only after the credential, permission and scope checks", async () => {
  const path = readsOf(a)[0];
  const etag = etagOf(await get(path));
  const headers = { "if-none-match": etag };
  assertErrorBody(await app.call("GET", path, { headers }), 401);
  const raw = await app.key(["raw"]);
  assertErrorBody(await get(path, raw.key, headers), 403, "PERMISSION_MISSING");
  const elsewhere = await app.key(["read"], { stores: [b.id] });
  assertErrorBody(await get(path, elsewhere.key, headers), 403, "STORE_FORBIDDEN");
  for (const other of readsOf(a).slice(1)) {
    assertErrorBody(
      await get(other, elsewhere.key, { "if-none-match": etagOf(await get(other)) }),
      403,
      "STORE_FORBIDDEN",
    );
  }
});

// An ETag is compared for one URL only; where one URL answers differently to different keys, the
// ETag differs too.
Deno.test("keys that see different answers at one URL get different ETags", async () => {
  const limited = await app.key(["read"], { stores: [a.id] });
  assert.notEqual(
    etagOf(await get("/api/v1/stores", limited.key)),
    etagOf(await get("/api/v1/stores")),
  );
  // can_edit_profile differs between a reader and a writer: so does the reference's ETag.
  assert.notEqual(
    etagOf(await get(`/api/v1/stores/${a.id}/reference`, writer.key)),
    etagOf(await get(`/api/v1/stores/${a.id}/reference`)),
  );
});

Deno.test("a commit changes the ETags of the reads it affects, and only those", async () => {
  const before = await etags([...LISTS, ...readsOf(a), ...readsOf(b)]);
  const day = addDays(end, -3);
  const file = `品牌,门店,日期,日能耗\r\n${a.brand_name},${a.name},${day},4321.5\r\n`;
  const preview = await app.call("POST", "/api/v1/imports/preview", {
    key: writer.key,
    headers: { "idempotency-key": crypto.randomUUID() },
    body: { filename: "fix.csv", content_base64: b64(file), reason: "meter fix" },
  });
  assert.equal(preview.status, 200);
  assert.deepEqual(await etags([...LISTS, ...readsOf(a), ...readsOf(b)]), before, "a preview");
  const commit = await app.call("POST", `/api/v1/imports/${preview.body.id}/commit`, {
    key: writer.key,
    headers: { "idempotency-key": crypto.randomUUID() },
    body: {},
  });
  assert.equal(commit.status, 200);
  const after = await etags([...LISTS, ...readsOf(a), ...readsOf(b)]);
  // The committed store's energy, targets, metrics and periods now differ; nothing else does.
  for (const path of readsOf(a).slice(0, 4)) {
    assert.notEqual(after[path], before[path], path);
    assert.equal((await get(path, reader.key, { "if-none-match": before[path] })).status, 200);
  }
  for (const path of [...LISTS, readsOf(a)[4], ...readsOf(b)]) {
    assert.equal(after[path], before[path], path);
  }
  // A range that does not hold the committed day keeps its ETag.
  const elsewhere = `/api/v1/stores/${a.id}/energy?${
    range(a, addDays(end, -60), addDays(end, -40))
  }`;
  const etag = etagOf(await get(elsewhere));
  assert.equal(etagOf(await get(elsewhere)), etag);
});

Deno.test("a profile edit changes the store's reference and the lists, not its energy", async () => {
  const before = await etags([...LISTS, ...readsOf(b)]);
  const reference = await get(`/api/v1/stores/${b.id}/reference`, writer.key);
  const edit = await app.call("PATCH", `/api/v1/stores/${b.id}/profile`, {
    key: writer.key,
    body: {
      name: `${reference.body.profile.name}（新）`,
      address: "上海市 新地址 1 号",
      expected_version: reference.body.profile.version,
    },
  });
  assert.equal(edit.status, 200);
  const after = await etags([...LISTS, ...readsOf(b)]);
  for (const path of ["/api/v1/stores", "/api/v1/catalog", readsOf(b)[4]]) {
    assert.notEqual(after[path], before[path], path);
  }
  for (const path of ["/api/v1/dataset", ...readsOf(b).slice(0, 4)]) {
    assert.equal(after[path], before[path], path);
  }
});

Deno.test({
  name: "close the test app",
  fn: () => app.close(),
  sanitizeOps: false,
  sanitizeResources: false,
});
