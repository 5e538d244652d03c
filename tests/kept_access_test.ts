// Targets, metrics and periods once kept: a kept answer is sent only to a key that may read its
// store now (live, the read permission, the store among the key's), and a change of the inputs
// is never answered with the kept bytes (src/reads/read_cache.ts).
import assert from "node:assert/strict";
import { Effect } from "effect";
import { addDays } from "../src/domain/range.ts";
import { generateSnapshot } from "../src/seed/generate.ts";
import { loadSnapshot } from "../src/seed/load.ts";
import { assertErrorBody, makeTestApp, setKeyExpiry } from "./helpers.ts";
import { commitDay, storesOf } from "./import_helpers.ts";

const snapshot = generateSnapshot({ stores: 2 });
const end = snapshot.dataset.end;
const app = await makeTestApp((db) =>
  db.run(Effect.asVoid(loadSnapshot(snapshot, { reset: false })))
);
const writer = await app.key(["read", "write"]);
const [first, second] = await storesOf(app, writer.key);

const paths = (store: { id: number; scope_id: number }) => [
  `/api/v1/stores/${store.id}/metrics?scope_id=${store.scope_id}&start=${
    addDays(end, -60)
  }&end=${end}`,
  `/api/v1/stores/${store.id}/targets?scope_id=${store.scope_id}&start=${
    addDays(end, -60)
  }&end=${end}`,
  `/api/v1/stores/${store.id}/periods?scope_id=${store.scope_id}&as_of=${end}`,
];

for (const [i, path] of paths(first).entries()) {
  Deno.test(`${path.split("?")[0].split("/").at(-1)}: a kept answer goes only to keys that may read it now`, async () => {
    const reader = await app.key(["read"]);
    const built = await app.call("GET", path, { key: reader.key });
    assert.equal(built.status, 200, JSON.stringify(built.body));
    // Asked twice, the answer is kept; the third ask is answered from it.
    await app.call("GET", path, { key: reader.key });
    const again = await app.call("GET", path, { key: reader.key });
    assert.equal(again.status, 200);
    assert.deepEqual(again.body, built.body);
    assert.equal(again.headers.get("etag"), built.headers.get("etag"));
    assert.equal(again.headers.get("data-token"), built.headers.get("data-token"));

    // A key of the other store only: 403, not the kept answer.
    const other = await app.key(["read"], { stores: [second.id] });
    assertErrorBody(await app.call("GET", path, { key: other.key }), 403, "STORE_FORBIDDEN");
    // A key without the read permission: 403.
    const raw = await app.key(["raw"]);
    assertErrorBody(await app.call("GET", path, { key: raw.key }), 403, "PERMISSION_MISSING");

    // A commit inside the range: a new answer (another ETag), not the kept one.
    await commitDay(app, writer.key, first, addDays(end, -3 - i), `${41 + i}.5`);
    const changed = await app.call("GET", path, { key: reader.key });
    assert.equal(changed.status, 200);
    assert.notEqual(changed.headers.get("etag"), built.headers.get("etag"));

    // The reader's key expires: 401, not the kept answer.
    await app.db.run(setKeyExpiry(reader.id, -1));
    assertErrorBody(await app.call("GET", path, { key: reader.key }), 401, "INVALID_CREDENTIAL");
  });
}

Deno.test("close the test app", () => app.close());
