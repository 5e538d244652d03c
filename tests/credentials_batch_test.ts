// Writes asked at once look their credentials up in shared statements (src/auth/auth_service.ts,
// src/db/batched.ts): each request is still decided for its own credential, as it is alone, and a
// flood of writes costs the database a few statements, not one each.
import assert from "node:assert/strict";
import { Effect } from "effect";
import { revokeKey } from "../src/auth/keys.ts";
import { generateSnapshot } from "../src/seed/generate.ts";
import { loadSnapshot } from "../src/seed/load.ts";
import { BASE, makeTestApp, setKeyExpiry } from "./helpers.ts";
import { storesOf } from "./import_helpers.ts";
import { countingStatements } from "./statements.ts";

const statements: Array<string> = [];
const app = await makeTestApp(
  (db) => db.run(Effect.asVoid(loadSnapshot(generateSnapshot({ stores: 2 }), { reset: false }))),
  { wrapDatabase: countingStatements(statements) },
);
const origin = new URL(BASE).origin;

const sessionCookie = async (key: string) => {
  const response = await app.handler(
    new Request(`${BASE}/auth/session`, {
      method: "POST",
      headers: { "content-type": "application/json", origin },
      body: JSON.stringify({ access_key: key }),
    }),
  );
  await response.body?.cancel();
  const cookie = response.headers.get("set-cookie");
  assert.ok(cookie, "a session cookie");
  return cookie.split(";")[0];
};

Deno.test("writes asked at once share credential statements and each is decided for its own credential", async () => {
  const admin = await app.key(["read", "write"]);
  const stores = await storesOf(app, admin.key);
  const firstOnly = await app.key(["read", "write"], { stores: [stores[0].id] });
  const reader = await app.key(["read"]);
  const expired = await app.key(["read", "write"]);
  await app.db.run(setKeyExpiry(expired.id, -1));
  const revoked = await app.key(["read", "write"]);
  const cookie = await sessionCookie(admin.key);
  const revokedCookie = await sessionCookie(revoked.key);
  await app.db.run(Effect.asVoid(revokeKey(revoked.id)));

  const credentials: ReadonlyArray<Record<string, string>> = [
    { authorization: `Bearer ${admin.key}` },
    { authorization: `Bearer ${firstOnly.key}` },
    { authorization: `Bearer ${reader.key}` },
    { authorization: `Bearer ${expired.key}` },
    { authorization: `Bearer ${revoked.key}` },
    { authorization: "Bearer esk_unknown" },
    { cookie, origin },
    { cookie },
    { cookie: revokedCookie, origin },
  ];
  // A profile change at a version that is not the store's: refused after the credential is
  // decided, so nothing changes and every request can be asked again.
  const requests = credentials.flatMap((headers) =>
    stores.map((store) => ({ headers, path: `/api/v1/stores/${store.id}/profile` }))
  );
  const body = { name: "x", address: "y", expected_version: 999_999 };
  const ask = async ({ headers, path }: (typeof requests)[number]) => {
    const answer = await app.call("PATCH", path, { headers, body });
    return { status: answer.status, code: answer.body?.error?.code };
  };
  const lookups = () => statements.filter((sql) => sql.includes("q(key_hash, session_hash")).length;

  const alone = [];
  for (const request of requests) alone.push(await ask(request));
  assert.deepEqual(
    [...new Set(alone.map((a) => a.status))].sort(),
    [401, 403, 409],
  );
  // Each credential decides as it should: the stale version only once the caller may write there.
  assert.deepEqual(alone.map((a) => a.code), [
    "STALE_VERSION",
    "STALE_VERSION",
    "STALE_VERSION",
    "STORE_FORBIDDEN",
    "PERMISSION_MISSING",
    "PERMISSION_MISSING",
    "INVALID_CREDENTIAL",
    "INVALID_CREDENTIAL",
    "INVALID_CREDENTIAL",
    "INVALID_CREDENTIAL",
    "INVALID_CREDENTIAL",
    "INVALID_CREDENTIAL",
    "STALE_VERSION",
    "STALE_VERSION",
    "ORIGIN_REQUIRED",
    "ORIGIN_REQUIRED",
    "INVALID_CREDENTIAL",
    "INVALID_CREDENTIAL",
  ]);

  // The same requests four times over, all at once.
  const many = [...requests, ...requests, ...requests, ...requests];
  statements.length = 0;
  const together = await Promise.all(many.map(ask));
  assert.deepEqual(together, [...alone, ...alone, ...alone, ...alone]);
  assert.ok(lookups() >= 1, "the credentials were looked up");
  assert.ok(
    lookups() <= many.length / 4,
    `${lookups()} credential statements for ${many.length} requests`,
  );
});

Deno.test("a key revoked while writes are under way is refused to every write asked after it", async () => {
  const writer = await app.key(["read", "write"]);
  const [store] = await storesOf(app, writer.key);
  const path = `/api/v1/stores/${store.id}/profile`;
  const body = { name: "x", address: "y", expected_version: 999_999 };
  const wave = () =>
    Array.from({ length: 40 }, () => app.call("PATCH", path, { key: writer.key, body }));
  // The first wave is in line or under way when the key is revoked: each of its writes is decided
  // either way. Every write of the second wave, asked after the revocation, is refused.
  const first = wave();
  await app.db.run(Effect.asVoid(revokeKey(writer.id)));
  const second = wave();
  for (const answer of await Promise.all(first)) {
    assert.ok(
      ["STALE_VERSION", "INVALID_CREDENTIAL"].includes(answer.body?.error?.code),
      JSON.stringify(answer.body),
    );
  }
  const after = await Promise.all(second);
  assert.deepEqual(
    after.map((a) => [a.status, a.body?.error?.code]),
    after.map(() => [401, "INVALID_CREDENTIAL"]),
  );
});

Deno.test("close the test app", () => app.close());
