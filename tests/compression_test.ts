// JSON answers of 1 KB or more are gzip-encoded for clients that accept it: the same JSON once
// decompressed, a weak ETag that still answers 304, Vary on every such answer; small answers and
// clients that refuse gzip get the bytes as they are; a kept answer's bytes are compressed once.
import assert from "node:assert/strict";
import { gunzipSync } from "node:zlib";
import { Effect } from "effect";
import { addDays } from "../src/domain/range.ts";
import { AnswerStore } from "../src/reads/read_cache.ts";
import { generateSnapshot } from "../src/seed/generate.ts";
import { loadSnapshot } from "../src/seed/load.ts";
import { BASE, makeTestApp } from "./helpers.ts";
import { storesOf } from "./import_helpers.ts";

const snapshot = generateSnapshot({ stores: 2 });
const app = await makeTestApp((db) =>
  db.run(Effect.asVoid(loadSnapshot(snapshot, { reset: false })))
);
const reader = await app.key(["read"], { member: "gzip-reader" });
const [store] = await storesOf(app, reader.key);
const end = snapshot.dataset.end;
const year = `/api/v1/stores/${store.id}/energy?scope_id=${store.scope_id}` +
  `&start=${addDays(end, -365)}&end=${end}`;

const get = (path: string, headers: Record<string, string> = {}) =>
  app.handler(
    new Request(BASE + path, { headers: { authorization: `Bearer ${reader.key}`, ...headers } }),
  );

Deno.test("a large JSON answer is gzip-encoded for a client that accepts it, the same JSON", async () => {
  const plain = await get(year);
  assert.equal(plain.status, 200);
  assert.equal(plain.headers.get("content-encoding"), null);
  assert.match(plain.headers.get("vary") ?? "", /accept-encoding/i);
  const text = await plain.text();
  for (const accept of ["gzip", "gzip, deflate, br", "br;q=1.0, gzip;q=0.5", "*"]) {
    const zipped = await get(year, { "accept-encoding": accept });
    assert.equal(zipped.status, 200, accept);
    assert.equal(zipped.headers.get("content-encoding"), "gzip", accept);
    assert.match(zipped.headers.get("vary") ?? "", /accept-encoding/i);
    const bytes = new Uint8Array(await zipped.arrayBuffer());
    assert.equal(zipped.headers.get("content-length"), String(bytes.byteLength));
    assert.ok(bytes.byteLength < text.length / 3, `${bytes.byteLength} of ${text.length}`);
    assert.equal(new TextDecoder().decode(gunzipSync(bytes)), text, accept);
    // A weak tag of the same version: If-None-Match with it is a 304.
    const etag = zipped.headers.get("etag")!;
    assert.equal(etag, `W/${plain.headers.get("etag")}`);
    const again = await get(year, { "accept-encoding": accept, "if-none-match": etag });
    assert.equal(again.status, 304);
    await again.body?.cancel();
  }
});

Deno.test("small answers and clients that refuse gzip get the bytes as they are", async () => {
  const small = await get("/api/v1/dataset", { "accept-encoding": "gzip" });
  assert.equal(small.status, 200);
  assert.equal(small.headers.get("content-encoding"), null);
  JSON.parse(await small.text());
  // An explicit gzip;q=0 wins over "*" (RFC 9110 12.5.3).
  for (
    const accept of ["identity", "gzip;q=0", "gzip; q=0.0, identity", "deflate", "gzip;q=0, *"]
  ) {
    const response = await get(year, { "accept-encoding": accept });
    assert.equal(response.headers.get("content-encoding"), null, accept);
    JSON.parse(await response.text());
  }
  // Errors are as they are too.
  const refused = await app.handler(
    new Request(BASE + year, { headers: { "accept-encoding": "gzip" } }),
  );
  assert.equal(refused.status, 401);
  assert.equal(refused.headers.get("content-encoding"), null);
  await refused.body?.cancel();
});

Deno.test("every answer names accept-encoding in Vary once, documents too", async () => {
  for (const path of [year, "/openapi.json"]) {
    for (const accept of [{}, { "accept-encoding": "gzip" }] as Array<Record<string, string>>) {
      const response = await get(path, accept);
      assert.equal(response.status, 200, path);
      const vary = (response.headers.get("vary") ?? "").toLowerCase().split(/\s*,\s*/);
      assert.equal(vary.filter((v) => v === "accept-encoding").length, 1, `${path}: ${vary}`);
      await response.body?.cancel();
    }
  }
});

Deno.test("documents: the gzip form has a weak ETag of its own; gzip;q=0 gets the plain bytes", async () => {
  const plain = await get("/openapi.json", { "accept-encoding": "gzip;q=0, *" });
  assert.equal(plain.headers.get("content-encoding"), null);
  const tag = plain.headers.get("etag")!;
  assert.ok(!tag.startsWith("W/"), tag);
  JSON.parse(await plain.text());
  const zipped = await get("/openapi.json", { "accept-encoding": "gzip" });
  assert.equal(zipped.headers.get("content-encoding"), "gzip");
  assert.equal(zipped.headers.get("etag"), `W/${tag}`);
  await zipped.body?.cancel();
  for (const match of [tag, `W/${tag}`]) {
    const again = await get("/openapi.json", { "accept-encoding": "gzip", "if-none-match": match });
    assert.equal(again.status, 304, match);
  }
});

Deno.test("kept answers are compressed once, within the budget", () => {
  const store = new AnswerStore(1024 * 1024);
  const bytes = new TextEncoder().encode(JSON.stringify({ days: Array(500).fill("x") }));
  store.set("k", "1", bytes);
  store.set("k", "1", bytes);
  const kept = store.get("k")!.bytes;
  let made = 0;
  const encode = (b: Uint8Array) => {
    made++;
    return b.slice(0, 10);
  };
  const first = store.gzipOf(kept, encode);
  assert.equal(store.gzipOf(kept, encode), first);
  assert.equal(made, 1);
  assert.equal(store.facts().bytes > kept.byteLength + 10, true);
  // Bytes that are no kept answer's are not compressed here.
  assert.equal(store.gzipOf(bytes.slice(), encode), undefined);
  assert.equal(made, 1);
});

Deno.test("close the test app", async () => {
  await app.close();
});
