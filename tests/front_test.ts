// The front door against hostile and careless requests: body caps, media types, nesting, exact
// paths, 405, time limits, messages that echo nothing, compressed documents and the access log.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { gunzipSync } from "node:zlib";
import { SqlClient } from "@effect/sql";
import { Effect } from "effect";
import pg from "pg";
import { DEFAULT_LIMITS } from "../src/config.ts";
import { PREVIEW_JSON_BYTES, SMALL_JSON_BYTES } from "../src/http/routes.ts";
import { makeLog } from "../src/log.ts";
import { generateSnapshot } from "../src/seed/generate.ts";
import { loadSnapshot } from "../src/seed/load.ts";
import { databaseKind, type TestDatabase } from "./db.ts";
import { assertErrorBody, BASE, makeTestApp, readAnswer } from "./helpers.ts";

const logLines: Array<string> = [];
const threeStores = (db: TestDatabase) =>
  db.run(Effect.asVoid(loadSnapshot(generateSnapshot({ stores: 3 }), { reset: false })));
// Most tests run on `app`, with the service's own time limits, so that an ordinary request is not
// late on a busy machine; the tests of the limits themselves run on `timed`, whose limits are short.
const app = await makeTestApp(threeStores, {
  log: makeLog({ level: "info", format: "json", sink: (line) => logLines.push(line) }),
});
const timed = await makeTestApp(threeStores, {
  limits: { ...DEFAULT_LIMITS, bodyMs: 300, requestMs: 1_500 },
  // Its answers past the limits are what the tests expect: not logged.
  log: makeLog({ level: "error", format: "json", sink: () => {} }),
});
const reader = await app.key(["read"]);
const writer = await app.key(["read", "write", "raw"]);
const timedReader = await timed.key(["read"]);
const timedWriter = await timed.key(["read", "write"]);
const store = (await app.call("GET", "/api/v1/stores", { key: reader.key })).body.stores[0];

const send = async (request: Request) => readAnswer(await app.handler(request));
const sendTimed = async (request: Request) => readAnswer(await timed.handler(request));

// A body stream of `total` bytes made on demand, counting what the service pulled from it.
const lazyBody = (total: number, chunk = 64 * 1024, fill = 0x20) => {
  let made = 0;
  const stream = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (made >= total) return controller.close();
      const n = Math.min(chunk, total - made);
      made += n;
      controller.enqueue(new Uint8Array(n).fill(fill));
    },
  });
  return { stream, pulled: () => made };
};

const post = (path: string, body: BodyInit | null, headers: Record<string, string> = {}) =>
  new Request(BASE + path, {
    method: "POST",
    headers: { origin: BASE, ...headers },
    body,
  });

Deno.test("an announced oversized body is refused with 413 before any of it is read", async () => {
  const body = lazyBody(300 * 1024 * 1024);
  const answer = await send(
    new Request(BASE + "/auth/session", {
      method: "POST",
      headers: {
        origin: BASE,
        "content-type": "application/json",
        "content-length": String(300 * 1024 * 1024),
      },
      body: body.stream,
    }),
  );
  assertErrorBody(answer, 413, "PAYLOAD_TOO_LARGE");
  assert.equal(body.pulled() <= 64 * 1024, true, `read ${body.pulled()} bytes`);
});

Deno.test("the credential and its permission are decided before the body's size or coding: 401, 403, then 413", async () => {
  const oversized = (headers: Record<string, string>) => {
    const body = lazyBody(PREVIEW_JSON_BYTES + 1);
    return {
      body,
      request: post("/api/v1/imports/preview", body.stream, {
        "content-type": "application/json",
        "content-length": String(PREVIEW_JSON_BYTES + 1),
        "idempotency-key": "order-1",
        ...headers,
      }),
    };
  };
  const cases: Array<[Record<string, string>, number, string]> = [
    [{}, 401, "MISSING_CREDENTIAL"],
    [{ authorization: "Bearer esk_not_a_key_at_all" }, 401, "INVALID_CREDENTIAL"],
    [{ authorization: `Bearer ${reader.key}` }, 403, "PERMISSION_MISSING"],
    [{ authorization: `Bearer ${writer.key}` }, 413, "PAYLOAD_TOO_LARGE"],
    [{ "content-encoding": "gzip" }, 401, "MISSING_CREDENTIAL"],
    [
      { authorization: `Bearer ${reader.key}`, "content-encoding": "gzip" },
      403,
      "PERMISSION_MISSING",
    ],
  ];
  for (const [headers, status, code] of cases) {
    const { body, request } = oversized(headers);
    const answer = await send(request);
    assertErrorBody(answer, status, code);
    assert.equal(body.pulled() <= 64 * 1024, true, `read ${body.pulled()} bytes`);
  }
  // A body on a read that takes none: the credential first there too.
  const exportWithBody = (headers: Record<string, string>) =>
    send(
      new Request(`${BASE}/api/v1/stores/export?start=2026-01-01&end=2026-01-02&format=csv`, {
        method: "GET",
        headers: { "content-length": "5", ...headers },
      }),
    );
  assertErrorBody(await exportWithBody({}), 401, "MISSING_CREDENTIAL");
});

Deno.test("a raw endpoint refuses a key without raw (403) before it looks at a malformed parameter (400)", async () => {
  const paths = [
    `/api/v1/stores/${store.id}/energy/2025-13-01/versions`,
    "/api/v1/energy/0/history",
    "/api/v1/imports/0",
    "/api/v1/import-rows/0/lineage",
    "/api/v1/changes?after=x",
    "/api/v1/imports?limit=0",
    `/api/v1/stores/${store.id}/audit?limit=x`,
  ];
  for (const path of paths) {
    const get = (key?: string) =>
      send(new Request(BASE + path, { headers: key ? { authorization: `Bearer ${key}` } : {} }));
    assertErrorBody(await get(), 401, "MISSING_CREDENTIAL");
    assertErrorBody(await get(reader.key), 403, "PERMISSION_MISSING");
    const withRaw = await get(writer.key);
    assert.equal(withRaw.status, 400, `${path}: ${JSON.stringify(withRaw.body)}`);
  }
});

Deno.test("an unannounced oversized body stops being read at the cap (413)", async () => {
  for (
    const [path, cap] of [["/auth/session", SMALL_JSON_BYTES], [
      "/api/v1/imports/preview",
      PREVIEW_JSON_BYTES,
    ]] as const
  ) {
    const body = lazyBody(200 * 1024 * 1024);
    const answer = await send(
      post(path, body.stream, {
        "content-type": "application/json",
        authorization: `Bearer ${writer.key}`,
        "idempotency-key": "k1",
      }),
    );
    assertErrorBody(answer, 413, "PAYLOAD_TOO_LARGE");
    // The stream may run a chunk or two ahead of the reader.
    assert.ok(body.pulled() <= cap + 3 * 64 * 1024, `${path}: read ${body.pulled()} bytes`);
  }
});

Deno.test("a 4 MiB file whose base64 has a CRLF every 64 or 76 characters is read, not refused as too large", async () => {
  const file = new Uint8Array(4 * 1024 * 1024).fill(0x41);
  const base64 = btoa(String.fromCharCode(...file.subarray(0, 3 * 1024))).repeat(
    file.length / (3 * 1024),
  );
  for (const width of [64, 76]) {
    const lines = base64.match(new RegExp(`.{1,${width}}`, "g")) ?? [];
    const body = JSON.stringify({
      filename: "a.csv",
      content_base64: lines.join("\r\n"),
      reason: "wrapped",
    });
    const answer = await send(
      post("/api/v1/imports/preview", body, {
        "content-type": "application/json",
        authorization: `Bearer ${writer.key}`,
        "idempotency-key": crypto.randomUUID(),
      }),
    );
    // The file itself is not an import (one line of 4 MiB of "A"): refused as a file, once read.
    assertErrorBody(answer, 400, "INVALID_FILE");
  }
});

Deno.test("a body on an endpoint that takes none is refused", async () => {
  const answer = await send(
    new Request(BASE + "/api/v1/stores", {
      method: "GET",
      headers: { authorization: `Bearer ${reader.key}`, "content-length": "5" },
    }),
  );
  assertErrorBody(answer, 413, "PAYLOAD_TOO_LARGE");
});

Deno.test("a body that does not arrive in time is 408", async () => {
  const stream = new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(new TextEncoder().encode('{"access_key": "'));
    },
  });
  const started = Date.now();
  const answer = await sendTimed(
    post("/auth/session", stream, { "content-type": "application/json" }),
  );
  assertErrorBody(answer, 408, "REQUEST_TIMEOUT");
  assert.ok(Date.now() - started < 5_000);
});

Deno.test("form and multipart bodies are 415 (a preview without a credential is 401 first)", async () => {
  const form = new FormData();
  form.set("access_key", "x");
  const credentials: Array<Record<string, string>> = [{}, {
    authorization: `Bearer ${writer.key}`,
  }];
  for (const headers of credentials) {
    assertErrorBody(
      await send(post("/auth/session", form, headers)),
      415,
      "UNSUPPORTED_MEDIA_TYPE",
    );
    assertErrorBody(
      await send(post("/auth/session", "access_key=x", {
        ...headers,
        "content-type": "application/x-www-form-urlencoded",
      })),
      415,
      "UNSUPPORTED_MEDIA_TYPE",
    );
    // The preview checks its credential first (from the headers), then the media type.
    const withKey = headers.authorization !== undefined;
    assertErrorBody(
      await send(post("/api/v1/imports/preview", form, { ...headers, "idempotency-key": "k2" })),
      withKey ? 415 : 401,
      withKey ? "UNSUPPORTED_MEDIA_TYPE" : "MISSING_CREDENTIAL",
    );
  }
});

Deno.test("a JSON body sent as another media type is 415", async () => {
  for (const type of ["text/plain", "application/xml", "application/json; charset=latin1"]) {
    const answer = await send(
      post("/auth/session", JSON.stringify({ access_key: "esk_x" }), { "content-type": type }),
    );
    assertErrorBody(answer, 415, "UNSUPPORTED_MEDIA_TYPE");
  }
  const patch = await send(
    new Request(BASE + `/api/v1/stores/${store.id}/profile`, {
      method: "PATCH",
      headers: { authorization: `Bearer ${writer.key}`, "content-type": "text/plain" },
      body: JSON.stringify({ name: "a", address: "b", expected_version: 1 }),
    }),
  );
  assertErrorBody(patch, 415, "UNSUPPORTED_MEDIA_TYPE");
});

Deno.test("deeply nested JSON is 400 (or 413 past a small cap), never 500", async () => {
  const nested = "[".repeat(100_000) + "]".repeat(100_000);
  const preview = await send(
    post("/api/v1/imports/preview", nested, {
      "content-type": "application/json",
      authorization: `Bearer ${writer.key}`,
      "idempotency-key": "k3",
    }),
  );
  assertErrorBody(preview, 400, "INVALID_JSON");
  const session = await send(post("/auth/session", nested, { "content-type": "application/json" }));
  assertErrorBody(session, 413, "PAYLOAD_TOO_LARGE");
  const inObject = `{"access_key": ${"[".repeat(5_000)}${"]".repeat(5_000)}}`;
  assertErrorBody(
    await send(post("/auth/session", inObject, { "content-type": "application/json" })),
    400,
    "INVALID_JSON",
  );
  // Brackets inside strings are text, not nesting.
  const quoted = JSON.stringify({ access_key: "[".repeat(100) });
  const answer = await send(post("/auth/session", quoted, { "content-type": "application/json" }));
  assert.notEqual(answer.status, 400);
});

// The store's reference data, to see that a refused write changed nothing.
const referenceOf = async () =>
  (await app.call("GET", `/api/v1/stores/${store.id}/reference`, { key: writer.key })).body;
// A profile edit by the writer, with the body and headers given.
const patchProfile = (body: BodyInit, headers: Record<string, string>) =>
  send(
    new Request(BASE + `/api/v1/stores/${store.id}/profile`, {
      method: "PATCH",
      headers: { authorization: `Bearer ${writer.key}`, ...headers },
      body,
    }),
  );

Deno.test("a JSON body that is not UTF-8 is 400 INVALID_JSON, not stored with replacement characters", async () => {
  const reference = await referenceOf();
  // "深圳" in GBK, and a lone Latin-1 byte: neither is UTF-8.
  for (const name of [new Uint8Array([0xc9, 0xee, 0xdb, 0xda]), new Uint8Array([0xe9])]) {
    const body = new Uint8Array([
      ...new TextEncoder().encode('{"name":"'),
      ...name,
      ...new TextEncoder().encode(
        `","address":"x","expected_version":${reference.profile.version}}`,
      ),
    ]);
    const answer = await patchProfile(body, { "content-type": "application/json; charset=utf-8" });
    assertErrorBody(answer, 400, "INVALID_JSON");
    assert.match(answer.body.error.message, /not UTF-8/);
  }
  assert.deepEqual((await referenceOf()).profile, reference.profile, "nothing changed");
});

Deno.test("a body with a Content-Encoding is 415, neither read as JSON nor taken as plain", async () => {
  const reference = await referenceOf();
  const json = JSON.stringify({
    name: reference.profile.name,
    address: "编码测试路 1 号",
    expected_version: reference.profile.version,
  });
  for (const coding of ["gzip", "br", "deflate, gzip"]) {
    const answer = await patchProfile(json, {
      "content-type": "application/json",
      "content-encoding": coding,
    });
    assertErrorBody(answer, 415, "UNSUPPORTED_MEDIA_TYPE");
  }
  assert.deepEqual((await referenceOf()).profile, reference.profile, "nothing changed");
});

Deno.test("paths are matched exactly; a wrong method is 405 with Allow", async () => {
  for (
    const path of [
      "/API/V1/STORES",
      "//api/v1/stores",
      "/api/v1//stores",
      "/api/v1/stores/",
      "/Health/live",
    ]
  ) {
    const answer = await send(
      new Request(BASE + path, { headers: { authorization: `Bearer ${reader.key}` } }),
    );
    assertErrorBody(answer, 404, "NOT_FOUND");
    assert.equal(answer.headers.get("cache-control"), "private, no-store", path);
    assert.equal(answer.headers.get("x-content-type-options"), "nosniff", path);
  }
  const put = await send(
    new Request(BASE + `/api/v1/stores/${store.id}/profile`, {
      method: "PUT",
      headers: { authorization: `Bearer ${writer.key}` },
    }),
  );
  assertErrorBody(put, 405, "METHOD_NOT_ALLOWED");
  assert.equal(put.headers.get("allow"), "PATCH");
  assert.equal(put.headers.get("cache-control"), "private, no-store");
  assert.equal(put.headers.get("x-content-type-options"), "nosniff");
  const getPreview = await send(new Request(BASE + "/api/v1/imports/preview"));
  assertErrorBody(getPreview, 405, "METHOD_NOT_ALLOWED");
  assert.equal(getPreview.headers.get("allow"), "POST");
  const head = await app.handler(new Request(BASE + "/health/live", { method: "HEAD" }));
  assert.equal(head.status, 200);
  assert.equal(await head.text(), "");
});

Deno.test("no message echoes a credential, a long value or the query string", async () => {
  const secret = "esk_" + "S3cr3t".repeat(8);
  const bodies = [
    JSON.stringify({ access_key: [secret] }),
    JSON.stringify({ access_key: secret + " ".repeat(300) }),
    JSON.stringify({ access_key: { nested: secret } }),
    JSON.stringify({ access_key: "x", [secret]: 1 }),
    JSON.stringify({ [secret.repeat(20)]: secret }),
  ];
  for (const body of bodies) {
    const answer = await send(post("/auth/session", body, { "content-type": "application/json" }));
    assertErrorBody(answer, 400);
    const message = (answer.body as { error: { message: string } }).error.message;
    assert.ok(!message.includes("S3cr3t"), message);
    assert.ok(message.length < 400, message);
  }
  const text = await send(post("/auth/session", secret, { "content-type": "text/plain" }));
  assert.ok(!JSON.stringify(text.body).includes("S3cr3t"));
  const notFound = await send(new Request(BASE + `/api/v1/nowhere?access_key=${secret}`));
  assertErrorBody(notFound, 404, "NOT_FOUND");
  assert.ok(!JSON.stringify(notFound.body).includes("S3cr3t"));
  assert.ok(!JSON.stringify(notFound.body).includes("nowhere?"));
  const badHeader = await send(
    new Request(BASE + "/api/v1/stores", { headers: { authorization: `Bearer ${secret}` } }),
  );
  assertErrorBody(badHeader, 401);
  assert.ok(!JSON.stringify(badHeader.body).includes("S3cr3t"));
  const longKey = await send(
    post(
      "/api/v1/imports/preview",
      JSON.stringify({ filename: "a.csv", content_base64: "", reason: "r" }),
      {
        "content-type": "application/json",
        authorization: `Bearer ${writer.key}`,
        "idempotency-key": secret.repeat(3),
      },
    ),
  );
  assertErrorBody(longKey, 400);
  assert.ok(!JSON.stringify(longKey.body).includes("S3cr3t"));
});

Deno.test("the access log has one line per request, without keys, cookies or query values", async () => {
  logLines.length = 0;
  const answer = await send(
    new Request(
      BASE +
        `/api/v1/stores/${store.id}/energy?scope_id=${store.scope_id}&start=2026-07-01&end=2026-07-02`,
      { headers: { authorization: `Bearer ${reader.key}`, cookie: "svc05_session=abc.def" } },
    ),
  );
  assert.equal(answer.status, 200);
  await send(new Request(BASE + "/nowhere?token=hunter2"));
  // A key sent where a path segment or a query name goes is not logged either.
  await send(new Request(`${BASE}/${reader.key}`));
  await send(
    new Request(`${BASE}/api/v1/energy/${reader.key}/history`, {
      headers: { authorization: `Bearer ${reader.key}` },
    }),
  );
  await send(
    new Request(`${BASE}/api/v1/stores?${reader.key}`, {
      headers: { authorization: `Bearer ${reader.key}` },
    }),
  );
  assert.equal(logLines.length, 5);
  const [first, second, ...keyed] = logLines.map((l) => JSON.parse(l));
  assert.deepEqual(keyed.map((l) => [l.path, l.query]), [
    ["/…", undefined],
    ["/api/v1/energy/…/history", undefined],
    ["/api/v1/stores", "…"],
  ]);
  assert.equal(first.msg, "request");
  assert.equal(first.method, "GET");
  assert.equal(first.path, `/api/v1/stores/${store.id}/energy`);
  assert.equal(first.query, "scope_id,start,end");
  assert.equal(first.status, 200);
  assert.equal(typeof first.ms, "number");
  assert.ok(first.bytes > 0);
  assert.equal(first.request_id, answer.headers.get("x-request-id"));
  assert.equal(typeof first.member, "number");
  assert.equal(second.status, 404);
  assert.equal(second.member, null);
  const all = logLines.join("\n");
  for (const secret of [reader.key, "abc.def", "hunter2", "2026-07-01"]) {
    assert.ok(!all.includes(secret), `log holds ${secret}`);
  }
});

Deno.test("/openapi.json and /api-docs are gzip-compressed on request and carry an ETag", async () => {
  for (const path of ["/openapi.json", "/api-docs"]) {
    const plain = await app.handler(new Request(BASE + path));
    assert.equal(plain.status, 200);
    const plainBytes = new Uint8Array(await plain.arrayBuffer());
    const etag = plain.headers.get("etag");
    assert.match(etag ?? "", /^"[\w-]+"$/);
    const zipped = await app.handler(
      new Request(BASE + path, { headers: { "accept-encoding": "br, gzip;q=0.8" } }),
    );
    assert.equal(zipped.headers.get("content-encoding"), "gzip");
    // Another representation: the same tag, weak.
    assert.equal(zipped.headers.get("etag"), `W/${etag}`);
    const zippedBytes = new Uint8Array(await zipped.arrayBuffer());
    assert.ok(zippedBytes.length < plainBytes.length / 2);
    assert.deepEqual(new Uint8Array(gunzipSync(zippedBytes)), plainBytes);
    const again = await app.handler(
      new Request(BASE + path, { headers: { "if-none-match": etag! } }),
    );
    assert.equal(again.status, 304);
    assert.equal(await again.text(), "");
    // A cache may send the tag back weak, among others: If-None-Match compares weakly.
    const weak = await app.handler(
      new Request(BASE + path, { headers: { "if-none-match": `"other", W/${etag}` } }),
    );
    assert.equal(weak.status, 304);
    await weak.body?.cancel();
  }
});

Deno.test("/api-docs may not be framed and loads nothing from elsewhere", async () => {
  const page = await app.handler(new Request(BASE + "/api-docs"));
  await page.body?.cancel();
  const policy = page.headers.get("content-security-policy") ?? "";
  assert.match(policy, /frame-ancestors 'none'/);
  assert.match(policy, /default-src 'none'/);
  // Only this service is reached: no directive names another host.
  assert.doesNotMatch(policy, /https?:|\*/);
  assert.equal(page.headers.get("x-frame-options"), "DENY");
});

Deno.test("session ids are stored only as their hash", async () => {
  const answer = await app.handler(
    post("/auth/session", JSON.stringify({ access_key: reader.key }), {
      "content-type": "application/json",
    }),
  );
  assert.equal(answer.status, 200);
  const cookie = answer.headers.get("set-cookie") ?? "";
  const id = /svc05_session=([^.;]+)\./.exec(cookie)?.[1];
  assert.ok(id);
  const rows = await app.db.run(
    Effect.flatMap(SqlClient.SqlClient, (sql) => sql<{ id: string }>`SELECT id FROM sessions`),
  );
  assert.ok(rows.length > 0);
  assert.ok(rows.every((r) => r.id !== id));
  const hash = createHash("sha256").update(id).digest("hex");
  assert.ok(rows.some((r) => r.id === hash));
});

Deno.test("the Origin check compares scheme, host and port", async () => {
  const tryOrigin = (origin: string) =>
    send(post("/auth/session", JSON.stringify({ access_key: reader.key }), {
      "content-type": "application/json",
      origin,
    }));
  assert.equal((await tryOrigin("http://service.test")).status, 200);
  assert.equal((await tryOrigin("http://service.test:80")).status, 200);
  for (
    const origin of ["https://service.test", "http://service.test:8080", "http://evil.test", "null"]
  ) {
    assertErrorBody(await tryOrigin(origin), 403, "ORIGIN_REQUIRED");
  }
});

// A held lock in `timed`'s database: an open transaction holding an exclusive lock on the stores
// table (or, with `row`, on that store's row only), from outside the service's pool (PostgreSQL),
// or the embedded database's one connection held (PGlite).
const holdStores = async (ms: number, row?: number) => {
  if (databaseKind === "postgres") {
    const client = new pg.Client({ connectionString: timed.db.url });
    await client.connect();
    await client.query("BEGIN");
    if (row === undefined) await client.query("LOCK TABLE stores IN ACCESS EXCLUSIVE MODE");
    else await client.query("SELECT 1 FROM stores WHERE id = $1 FOR UPDATE", [row]);
    const release = new Promise<void>((resolve) =>
      setTimeout(async () => {
        await client.query("ROLLBACK");
        await client.end();
        resolve();
      }, ms)
    );
    return { release };
  }
  let held!: () => void;
  const taken = new Promise<void>((r) => (held = r));
  const release = timed.db.run(
    Effect.flatMap(SqlClient.SqlClient, (sql) =>
      sql.withTransaction(Effect.zipRight(
        Effect.sync(held),
        Effect.sleep(ms),
      ))),
  );
  await taken;
  return { release };
};

Deno.test("a request held past the time limit is answered 503 TIMEOUT with the Error body", async () => {
  const held = await holdStores(6_000);
  let released = false;
  held.release.then(() => (released = true));
  const answer = await sendTimed(
    new Request(BASE + "/api/v1/stores", {
      headers: { authorization: `Bearer ${timedReader.key}` },
    }),
  );
  // Answered while the lock is still held: the client is not kept waiting for it.
  assert.equal(released, false);
  await held.release;
  // On PostgreSQL the lock wait may end first (503 BUSY).
  assert.equal(answer.status, 503);
  assert.ok(["TIMEOUT", "BUSY"].includes((answer.body as { error: { code: string } }).error.code));
});

// On PostgreSQL the held row stops the edit itself, whose outcome is then not known when the limit
// passes; the embedded database's one connection held stops its credential's check first, before
// the endpoint is reached: the limit covers that wait too, and nothing was tried.
Deno.test("a write held past the time limit is 503 TIMEOUT saying whether its outcome is known", async () => {
  // The store's row only: the front door's read of the store goes by, the edit itself waits.
  const held = await holdStores(4_000, 1);
  const answer = await sendTimed(
    new Request(BASE + "/api/v1/stores/1/profile", {
      method: "PATCH",
      headers: {
        authorization: `Bearer ${timedWriter.key}`,
        "content-type": "application/json",
        origin: BASE,
      },
      // A version the store is not at: once the lock goes, the edit is refused and changes nothing.
      body: JSON.stringify({ name: "店", address: "路", expected_version: 999 }),
    }),
  );
  await held.release;
  assertErrorBody(answer, 503, "TIMEOUT");
  const message = (answer.body as { error: { message: string } }).error.message;
  if (databaseKind === "postgres") {
    assert.match(message, /may still have been applied/);
    assert.match(message, /same Idempotency-Key/);
  } else {
    assert.match(message, /took longer than 1500 ms; try again later/);
  }
});

Deno.test({
  name: "a held row lock makes a write fail with 503 BUSY, and does not starve other requests",
  ignore: databaseKind !== "postgres",
  fn: async () => {
    const busy = await makeTestApp(
      (db) =>
        db.run(Effect.asVoid(loadSnapshot(generateSnapshot({ stores: 2 }), { reset: false }))),
      { lockMs: 300 },
    );
    try {
      const key = await busy.key(["read", "write"]);
      const target = (await busy.call("GET", "/api/v1/stores", { key: key.key })).body.stores[0];
      const version =
        (await busy.call("GET", `/api/v1/stores/${target.id}/reference`, { key: key.key }))
          .body.profile.version;
      const client = new pg.Client({ connectionString: busy.db.url });
      await client.connect();
      await client.query("BEGIN");
      await client.query("SELECT 1 FROM stores WHERE id = $1 FOR UPDATE", [target.id]);
      try {
        const edits = await Promise.all(
          Array.from(
            { length: 40 },
            (_, i) =>
              busy.call("PATCH", `/api/v1/stores/${target.id}/profile`, {
                key: key.key,
                body: { name: `Name ${i}`, address: "Somewhere", expected_version: version },
              }),
          ),
        );
        for (const edit of edits) assertErrorBody(edit, 503, "BUSY");
        const list = await busy.call("GET", "/api/v1/stores", { key: key.key });
        assert.equal(list.status, 200);
      } finally {
        await client.query("ROLLBACK");
        await client.end();
      }
    } finally {
      await busy.close();
    }
  },
});

Deno.test("every answer of an endpoint tells caches to keep it private, and browsers not to sniff it", async () => {
  const paths = [
    "/auth/session",
    `/api/v1/stores/${store.id}/energy/2026-07-05/versions`,
    "/api/v1/imports/template?start=2026-07-01&end=2026-07-02&format=json",
    "/api/v1/imports",
    "/api/v1/changes",
    `/api/v1/stores/${store.id}/audit`,
    `/api/v1/stores/${store.id}/quality?start=2026-07-01&end=2026-07-02`,
    `/api/v1/stores/${store.id}/energy?scope_id=${store.scope_id}&start=2026-07-01&end=2026-07-02`,
  ];
  for (const path of paths) {
    for (const key of [writer.key, reader.key, undefined]) {
      const headers: Record<string, string> = {};
      if (key !== undefined) headers.authorization = `Bearer ${key}`;
      const answer = await app.handler(new Request(BASE + path, { headers }));
      await answer.body?.cancel();
      const policy = answer.headers.get("cache-control") ?? "";
      assert.match(policy, /private|no-store/, `${path} (${answer.status}): "${policy}"`);
      assert.equal(answer.headers.get("x-content-type-options"), "nosniff", path);
      if (answer.status === 401) {
        assert.match(answer.headers.get("www-authenticate") ?? "", /^Bearer /, path);
      }
    }
  }
});

Deno.test("HEAD has the headers GET has: documents, and a compressed answer", async () => {
  const cases: Array<[string, Record<string, string>]> = [
    ["/api-docs", {}],
    ["/openapi.json", { "accept-encoding": "gzip" }],
    ["/api/v1/stores", { authorization: `Bearer ${reader.key}`, "accept-encoding": "gzip" }],
    ["/api/v1/stores", { authorization: `Bearer ${reader.key}` }],
  ];
  for (const [path, headers] of cases) {
    const get = await app.handler(new Request(BASE + path, { headers }));
    await get.arrayBuffer();
    const head = await app.handler(new Request(BASE + path, { method: "HEAD", headers }));
    assert.equal(head.status, get.status, path);
    assert.equal(await head.text(), "", path);
    for (
      const name of [
        "content-type",
        "content-encoding",
        "content-length",
        "etag",
        "vary",
        "cache-control",
        "content-security-policy",
      ]
    ) {
      assert.equal(head.headers.get(name), get.headers.get(name), `${path}: ${name}`);
    }
  }
});

Deno.test({
  name: "close the test apps",
  fn: async () => {
    await app.close();
    await timed.close();
  },
  sanitizeOps: false,
  sanitizeResources: false,
});
