// Access keys, bearer and session authentication, permissions and store scope (contract part 5, rules.md §9).
import assert from "node:assert/strict";
import { SqlClient } from "@effect/sql";
import { Effect, Option } from "effect";
import { revokeKey } from "../src/auth/keys.ts";
import { generateSnapshot } from "../src/seed/generate.ts";
import { loadSnapshot } from "../src/seed/load.ts";
import { assertErrorBody, BASE, makeTestApp, setKeyExpiry } from "./helpers.ts";

const app = await makeTestApp((db) =>
  db.run(Effect.asVoid(loadSnapshot(generateSnapshot({ stores: 6 }), { reset: false })))
);
const storeIds = (await app.call("GET", "/api/v1/stores", { key: (await app.key(["read"])).key }))
  .body.stores.map((s: { id: number }) => s.id) as number[];
const sql = <A>(f: (sql: SqlClient.SqlClient) => Effect.Effect<A, unknown>) =>
  app.db.run(Effect.flatMap(SqlClient.SqlClient, f));

const origin = new URL(BASE).origin;

const session = async (key: string, headers: Record<string, string> = { origin }) => {
  const response = await app.handler(
    new Request(`${BASE}/auth/session`, {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      body: JSON.stringify({ access_key: key }),
    }),
  );
  return {
    status: response.status,
    setCookie: response.headers.get("set-cookie"),
    body: await response.json(),
  };
};

const cookieOf = (setCookie: string | null) => {
  assert.ok(setCookie, "a Set-Cookie header");
  return setCookie.split(";")[0];
};

Deno.test("a request without any credential is 401", async () => {
  const answer = await app.call("GET", "/api/v1/stores");
  assertErrorBody(answer, 401, "MISSING_CREDENTIAL");
});

Deno.test("an unknown, malformed or empty bearer key is 401 and never echoed", async () => {
  for (const authorization of ["Bearer esk_not-a-real-key", "Basic abc", "Bearer ", "esk_x"]) {
    const answer = await app.call("GET", "/api/v1/stores", { headers: { authorization } });
    assertErrorBody(answer, 401);
    assert.ok(!JSON.stringify(answer.body).includes("esk_"), "the message never echoes a key");
  }
});

Deno.test("a valid read key lists every store", async () => {
  const { key } = await app.key(["read"]);
  const answer = await app.call("GET", "/api/v1/stores", { key });
  assert.equal(answer.status, 200);
  assert.equal(answer.body.stores.length, 6);
});

Deno.test("an expired key is 401 from the moment it expires", async () => {
  const { id, key } = await app.key(["read"]);
  assert.equal((await app.call("GET", "/api/v1/stores", { key })).status, 200);
  await app.db.run(setKeyExpiry(id, -1));
  assertErrorBody(await app.call("GET", "/api/v1/stores", { key }), 401, "INVALID_CREDENTIAL");
});

Deno.test("a revoked key is 401 on the next request", async () => {
  const { id, key } = await app.key(["read"]);
  assert.equal((await app.call("GET", "/api/v1/catalog", { key })).status, 200);
  const result = await app.db.run(revokeKey(id));
  assert.equal(result.alreadyRevoked, false);
  assertErrorBody(await app.call("GET", "/api/v1/catalog", { key }), 401, "INVALID_CREDENTIAL");
  assert.equal((await app.db.run(revokeKey(id))).alreadyRevoked, true);
});

Deno.test("a key without read permission is 403 on read endpoints", async () => {
  const { key } = await app.key(["raw"]);
  for (const path of ["/api/v1/stores", "/api/v1/catalog", "/api/v1/dataset"]) {
    assertErrorBody(await app.call("GET", path, { key }), 403, "PERMISSION_MISSING");
  }
});

Deno.test("a key limited to stores sees only those stores", async () => {
  const allowed = [storeIds[1], storeIds[3]];
  const { key } = await app.key(["read"], { stores: allowed });
  const stores = await app.call("GET", "/api/v1/stores", { key });
  assert.deepEqual(stores.body.stores.map((s: { id: number }) => s.id), allowed);
  const catalog = await app.call("GET", "/api/v1/catalog", { key });
  assert.deepEqual(catalog.body.stores.map((s: { id: number }) => s.id), allowed);
});

Deno.test("a store outside the key's stores is 403, an unknown store 404", async () => {
  const { key } = await app.key(["read", "raw"], { stores: [storeIds[0]] });
  const outside = await app.call("GET", `/api/v1/stores/${storeIds[2]}/reference`, { key });
  assertErrorBody(outside, 403, "STORE_FORBIDDEN");
  const unknown = await app.call("GET", `/api/v1/stores/999999/reference`, { key });
  assertErrorBody(unknown, 404);
});

Deno.test("write needs the write permission and a member role that allows writes", async () => {
  const body = { name: "x", address: "y", expected_version: 1 };
  const path = `/api/v1/stores/${storeIds[0]}/profile`;
  const reader = await app.key(["read"]);
  assertErrorBody(
    await app.call("PATCH", path, { key: reader.key, body }),
    403,
    "PERMISSION_MISSING",
  );
  const writer = await app.key(["read", "write"], { member: "role-check" });
  await sql((s) => s`UPDATE members SET db_role = 'READER' WHERE login_name = 'role-check'`);
  assertErrorBody(await app.call("PATCH", path, { key: writer.key, body }), 403, "ROLE_READ_ONLY");
});

Deno.test("a session needs a same-origin Origin header and a live key", async () => {
  const { key } = await app.key(["read"]);
  assertErrorBody({ ...(await session(key, {})), headers: new Headers() }, 403, "ORIGIN_REQUIRED");
  const foreign = await session(key, { origin: "http://evil.example" });
  assert.equal(foreign.status, 403);
  assert.equal(foreign.setCookie, null);
  const bad = await session("esk_wrong");
  assert.equal(bad.status, 401);
  assert.equal(bad.setCookie, null);
});

Deno.test("a session cookie is signed, HttpOnly, SameSite=Strict, 8 hours, and authenticates reads", async () => {
  const { key } = await app.key(["read"]);
  const made = await session(key);
  assert.equal(made.status, 200);
  assert.equal(made.body.status, "SESSION_CREATED");
  const setCookie = made.setCookie ?? "";
  assert.match(setCookie, /^svc05_session=[^;]+\./);
  assert.match(setCookie, /HttpOnly/i);
  assert.match(setCookie, /SameSite=Strict/i);
  assert.match(setCookie, /Max-Age=28800/i);
  const cookie = cookieOf(made.setCookie);
  const answer = await app.call("GET", "/api/v1/stores", { headers: { cookie } });
  assert.equal(answer.status, 200);
  assert.equal(answer.body.stores.length, 6);
  const [name, value] = cookie.split("=");
  const tampered = `${name}=${value.slice(0, -2)}${value.endsWith("AA") ? "BB" : "AA"}`;
  assertErrorBody(await app.call("GET", "/api/v1/stores", { headers: { cookie: tampered } }), 401);
});

Deno.test("a session dies with its key's revocation, its own expiry, and logout", async () => {
  const first = await app.key(["read"]);
  const cookie1 = cookieOf((await session(first.key)).setCookie);
  await app.db.run(revokeKey(first.id));
  assertErrorBody(await app.call("GET", "/api/v1/stores", { headers: { cookie: cookie1 } }), 401);

  const second = await app.key(["read"]);
  const cookie2 = cookieOf((await session(second.key)).setCookie);
  await sql((s) =>
    s`UPDATE sessions SET expires_at = now() - interval '1 second' WHERE key_id = ${second.id}`
  );
  assertErrorBody(await app.call("GET", "/api/v1/stores", { headers: { cookie: cookie2 } }), 401);

  const third = await app.key(["read"]);
  const cookie3 = cookieOf((await session(third.key)).setCookie);
  assert.equal(
    (await app.call("GET", "/api/v1/stores", { headers: { cookie: cookie3 } })).status,
    200,
  );
  const noOrigin = await app.call("POST", "/auth/logout", { headers: { cookie: cookie3 } });
  assertErrorBody(noOrigin, 403, "ORIGIN_REQUIRED");
  const out = await app.call("POST", "/auth/logout", { headers: { cookie: cookie3, origin } });
  assert.equal(out.status, 200);
  assert.match(out.headers.get("set-cookie") ?? "", /Max-Age=0/);
  assertErrorBody(await app.call("GET", "/api/v1/stores", { headers: { cookie: cookie3 } }), 401);
});

Deno.test("a write through a session cookie needs a same-origin Origin header", async () => {
  const { key } = await app.key(["read", "write"]);
  const cookie = cookieOf((await session(key)).setCookie);
  const path = `/api/v1/stores/${storeIds[0]}/profile`;
  const body = { name: "x", address: "y", expected_version: 1 };
  const without = await app.call("PATCH", path, { headers: { cookie }, body });
  assertErrorBody(without, 403, "ORIGIN_REQUIRED");
  const foreign = await app.call("PATCH", path, {
    headers: { cookie, origin: "https://other.example" },
    body,
  });
  assertErrorBody(foreign, 403, "ORIGIN_REQUIRED");
  // An Origin header is an origin alone: one with a path, a query, a fragment, credentials or a
  // trailing slash is not the service's, even when it begins with it.
  const host = new URL(origin).host;
  for (
    const near of [
      `${origin}/`,
      `${origin}/evil`,
      `${origin}?x=1`,
      `${origin}#x`,
      `http://u@${host}`,
    ]
  ) {
    const refused = await app.call("PATCH", path, { headers: { cookie, origin: near }, body });
    assertErrorBody(refused, 403, "ORIGIN_REQUIRED");
  }
  const same = await app.call("PATCH", path, { headers: { cookie, origin }, body });
  assert.notEqual(same.status, 401);
  assert.notEqual(same.status, 403);
});

Deno.test("an Authorization header of another scheme is not a credential: the cookie decides", async () => {
  const { key } = await app.key(["read"]);
  const cookie = cookieOf((await session(key)).setCookie);
  // A browser signed in to a proxy in front of the console sends its Basic credentials.
  const authorization = `Basic ${btoa("proxy-user:proxy-password")}`;
  const withCookie = await app.call("GET", "/api/v1/stores", {
    headers: { cookie, authorization },
  });
  assert.equal(withCookie.status, 200);
  const alone = await app.call("GET", "/api/v1/stores", { headers: { authorization } });
  assertErrorBody(alone, 401, "MISSING_CREDENTIAL");
  // A Bearer header without its token, or a key without a scheme, is still a bad credential.
  for (const bad of ["Bearer", "Bearer a b", key]) {
    const answer = await app.call("GET", "/api/v1/stores", {
      headers: { cookie, authorization: bad },
    });
    assertErrorBody(answer, 401, "INVALID_CREDENTIAL");
  }
});

Deno.test("a bearer key is preferred over a cookie, and a bad bearer is not rescued by a good cookie", async () => {
  const { key } = await app.key(["read"]);
  const cookie = cookieOf((await session(key)).setCookie);
  const answer = await app.call("GET", "/api/v1/stores", {
    headers: { cookie, authorization: "Bearer esk_wrong" },
  });
  assertErrorBody(answer, 401, "INVALID_CREDENTIAL");
});

// Daily energy checks its credential in the same statement as its data: the refusals must be the
// ones, and in the order, of every other endpoint.
Deno.test("energy: credential, permission, store and scope refusals keep their order", async () => {
  const stores = (await app.call("GET", "/api/v1/stores", { key: (await app.key(["read"])).key }))
    .body.stores as { id: number; scope_id: number }[];
  const [a, b] = stores;
  const energy = (storeId: number, scopeId: number, start = "2026-11-01", end = "2026-11-10") =>
    `/api/v1/stores/${storeId}/energy?scope_id=${scopeId}&start=${start}&end=${end}`;
  const unknown = 999_999;

  assertErrorBody(await app.call("GET", energy(a.id, a.scope_id)), 401, "MISSING_CREDENTIAL");
  const revoked = await app.key(["read"]);
  await app.db.run(revokeKey(revoked.id));
  for (const path of [energy(a.id, a.scope_id), energy(unknown, 1), energy(a.id, b.scope_id)]) {
    assertErrorBody(await app.call("GET", path, { key: revoked.key }), 401, "INVALID_CREDENTIAL");
    assertErrorBody(
      await app.call("GET", path, { key: "esk_not-a-real-key" }),
      401,
      "INVALID_CREDENTIAL",
    );
  }
  const expired = await app.key(["read"], { seconds: -1 });
  assertErrorBody(await app.call("GET", energy(a.id, a.scope_id), { key: expired.key }), 401);

  const rawOnly = await app.key(["raw"]);
  assertErrorBody(
    await app.call("GET", energy(unknown, 1), { key: rawOnly.key }),
    403,
    "PERMISSION_MISSING",
  );
  const reader = await app.key(["read"]);
  assertErrorBody(await app.call("GET", energy(unknown, 1), { key: reader.key }), 404);
  const limited = await app.key(["read"], { stores: [a.id] });
  assertErrorBody(
    await app.call("GET", energy(b.id, b.scope_id), { key: limited.key }),
    403,
    "STORE_FORBIDDEN",
  );
  assertErrorBody(
    await app.call("GET", energy(a.id, b.scope_id), { key: limited.key }),
    400,
    "INVALID_SCOPE",
  );
  assert.equal((await app.call("GET", energy(a.id, a.scope_id), { key: limited.key })).status, 200);

  // A bad range is refused only once the credential and the store pass.
  const tooLong = energy(a.id, a.scope_id, "2025-01-01", "2026-01-02");
  assertErrorBody(await app.call("GET", tooLong, { key: revoked.key }), 401);
  assertErrorBody(
    await app.call("GET", energy(b.id, b.scope_id, "2026-11-10", "2026-11-01"), {
      key: limited.key,
    }),
    403,
    "STORE_FORBIDDEN",
  );
  assertErrorBody(await app.call("GET", tooLong, { key: reader.key }), 400, "RANGE_TOO_LONG");

  // Sessions go through the same statement: live cookie reads, a dead one is 401.
  const cookie = cookieOf((await session(reader.key)).setCookie);
  const viaCookie = await app.call("GET", energy(a.id, a.scope_id), { headers: { cookie } });
  assert.equal(viaCookie.status, 200);
  assert.equal(viaCookie.body.days.length, 10);
  await sql((s) =>
    s`UPDATE sessions SET ended_at = now() WHERE key_id = ${reader.id} AND ended_at IS NULL`
  );
  assertErrorBody(await app.call("GET", energy(a.id, a.scope_id), { headers: { cookie } }), 401);
});

Deno.test("GET /auth/session tells who the credential is and what it may do, never more", async () => {
  assertErrorBody(await app.call("GET", "/auth/session"), 401, "MISSING_CREDENTIAL");
  const scoped = await app.key(["read", "write"], { stores: [storeIds[2]], member: "whoami-1" });
  const byKey = await app.call("GET", "/auth/session", { key: scoped.key });
  assert.equal(byKey.status, 200);
  assert.equal(byKey.body.member, "whoami-1");
  assert.deepEqual([...byKey.body.permissions].sort(), ["read", "write"]);
  assert.deepEqual(byKey.body.store_ids, [storeIds[2]]);
  assert.equal(byKey.body.can_write, true);
  assert.equal(byKey.body.via, "key");
  assert.ok(!JSON.stringify(byKey.body).includes("esk_"), "the key is never echoed");

  const reader = await app.key(["read", "raw"]);
  const cookie = cookieOf((await session(reader.key)).setCookie);
  const bySession = await app.call("GET", "/auth/session", { headers: { cookie } });
  assert.equal(bySession.status, 200);
  assert.equal(bySession.body.via, "session");
  assert.equal(bySession.body.store_ids, null);
  assert.equal(bySession.body.can_write, false);
  await app.db.run(revokeKey(reader.id));
  assertErrorBody(await app.call("GET", "/auth/session", { headers: { cookie } }), 401);
});

Deno.test("the session cookie is Secure when the service is reached over HTTPS, not over HTTP", async () => {
  const { key } = await app.key(["read"]);
  const plain = await session(key);
  assert.doesNotMatch(plain.setCookie ?? "", /;\s*Secure/i);
  // Behind a TLS proxy the service learns its scheme from PUBLIC_ORIGIN.
  const tls = await makeTestApp(undefined, {
    config: { publicOrigin: Option.some("https://service.test") },
  });
  try {
    const issued = await tls.key(["read"]);
    const response = await tls.handler(
      new Request(`${BASE}/auth/session`, {
        method: "POST",
        headers: { "content-type": "application/json", origin: "https://service.test" },
        body: JSON.stringify({ access_key: issued.key }),
      }),
    );
    assert.equal(response.status, 200);
    await response.body?.cancel();
    assert.match(response.headers.get("set-cookie") ?? "", /;\s*Secure/i);
  } finally {
    await tls.close();
  }
});

Deno.test("without PUBLIC_ORIGIN a cookie write from another site's name is refused", async () => {
  const own = await makeTestApp(undefined, {
    config: { publicOrigin: Option.none(), host: "0.0.0.0", port: 8000 },
  });
  try {
    const { key } = await own.key(["read"]);
    const attempt = (host: string) =>
      own.handler(
        new Request(`http://${host}/auth/session`, {
          method: "POST",
          headers: { "content-type": "application/json", origin: `http://${host}` },
          body: JSON.stringify({ access_key: key }),
        }),
      );
    const local = await attempt("localhost:8000");
    assert.equal(local.status, 200);
    await local.body?.cancel();
    const rebound = await attempt("evil.test:8000");
    const body = await rebound.json();
    assert.equal(rebound.status, 403);
    assert.equal(body.error.code, "ORIGIN_REQUIRED");
    assert.match(body.error.message, /PUBLIC_ORIGIN/);
  } finally {
    await own.close();
  }
});

Deno.test({
  name: "close the test app",
  fn: () => app.close(),
  sanitizeOps: false,
  sanitizeResources: false,
});
