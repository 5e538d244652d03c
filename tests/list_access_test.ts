// The store list and the catalog once kept: a kept list is answered only to a key that may read it
// now (live, with the read permission) and only the list of that key's stores; a matching
// If-None-Match is 304 for such a key only (src/reads/read_cache.ts).
import assert from "node:assert/strict";
import { Effect } from "effect";
import { generateSnapshot } from "../src/seed/generate.ts";
import { loadSnapshot } from "../src/seed/load.ts";
import { assertErrorBody, makeTestApp, setKeyExpiry } from "./helpers.ts";

const snapshot = generateSnapshot({ stores: 3 });
const app = await makeTestApp((db) =>
  db.run(Effect.asVoid(loadSnapshot(snapshot, { reset: false })))
);

const get = (path: string, key: string, etag?: string) =>
  app.call("GET", path, { key, headers: etag === undefined ? {} : { "if-none-match": etag } });

const storeIdsOf = (body: unknown) =>
  (body as { stores: Array<{ id: number }> }).stores.map((s) => s.id);

for (const path of ["/api/v1/stores", "/api/v1/catalog"]) {
  Deno.test(`${path}: a kept list answers the keys that may read it, each with its own stores`, async () => {
    const reader = await app.key(["read"]);
    // Built, then kept: the second answer is the kept bytes, the same as the first.
    const first = await get(path, reader.key);
    assert.equal(first.status, 200);
    const etag = first.headers.get("etag")!;
    const again = await get(path, reader.key);
    assert.equal(again.status, 200);
    assert.equal(again.headers.get("etag"), etag);
    assert.deepEqual(again.body, first.body);
    const all = storeIdsOf(first.body);
    assert.equal(all.length, 3);
    assert.equal((await get(path, reader.key, etag)).status, 304);

    // A key of one store: its own list, not the kept list of every store, nor its 304.
    const one = await app.key(["read"], { stores: [all[1]] });
    const limited = await get(path, one.key);
    assert.equal(limited.status, 200);
    assert.deepEqual(storeIdsOf(limited.body), [all[1]]);
    assert.notEqual(limited.headers.get("etag"), etag);
    assert.equal((await get(path, one.key, etag)).status, 200);

    // A key without the read permission: 403, whether or not it names the kept ETag.
    const raw = await app.key(["raw"]);
    assertErrorBody(await get(path, raw.key), 403, "PERMISSION_MISSING");
    assertErrorBody(await get(path, raw.key, etag), 403, "PERMISSION_MISSING");

    // The reader's key expires: 401, not the kept list nor a 304.
    await app.db.run(setKeyExpiry(reader.id, -1));
    assertErrorBody(await get(path, reader.key), 401, "INVALID_CREDENTIAL");
    assertErrorBody(await get(path, reader.key, etag), 401, "INVALID_CREDENTIAL");
    // An unknown key: 401.
    assertErrorBody(await get(path, "not-a-key-of-this-service"), 401, "INVALID_CREDENTIAL");
  });
}

Deno.test("close the test app", () => app.close());
