// Contract plumbing: error bodies, unknown paths, validation, 500/503, health, OpenAPI, docs, and the
// dataset/stores/catalog endpoints against their strict schemas.
import assert from "node:assert/strict";
import { SqlClient } from "@effect/sql";
import { Chunk, Effect, Layer, Option, Stream } from "effect";
import { DatabaseLoss } from "../src/db/database.ts";
import { makeHandler } from "../src/app.ts";
import { issueKey } from "../src/auth/keys.ts";
import { AppConfig } from "../src/config.ts";
import { prepareDatabase } from "../src/routines.ts";
import { layerPglite } from "../src/db/pglite_client.ts";
import { startPgliteWorker } from "../src/db/pglite_worker.ts";
import { CatalogResponse, Dataset, StoresResponse } from "../src/domain/stores.ts";
import { generateSnapshot } from "../src/seed/generate.ts";
import { loadSnapshot } from "../src/seed/load.ts";
import { StoreRepo } from "../src/stores/store_repo.ts";
import { assertErrorBody, assertSchema, makeTestApp } from "./helpers.ts";

const snapshot = generateSnapshot({ stores: 6 });
const app = await makeTestApp((db) =>
  db.run(Effect.asVoid(loadSnapshot(snapshot, { reset: false })))
);
const reader = await app.key(["read"]);
const writer = await app.key(["read", "write", "raw"]);
const firstStore = (await app.call("GET", "/api/v1/stores", { key: reader.key })).body.stores[0];

Deno.test("every answer carries X-Request-ID", async () => {
  for (const path of ["/health/live", "/api/v1/stores", "/nowhere"]) {
    const answer = await app.call("GET", path, { key: reader.key });
    assert.match(answer.headers.get("x-request-id") ?? "", /^[0-9a-f-]{36}$/);
  }
});

Deno.test("an unknown path is 404 and a wrong method 405 with Allow, both with the Error body", async () => {
  assertErrorBody(await app.call("GET", "/api/v1/nowhere", { key: reader.key }), 404, "NOT_FOUND");
  const wrong = await app.call("DELETE", "/api/v1/stores", { key: reader.key });
  assertErrorBody(wrong, 405, "METHOD_NOT_ALLOWED");
  assert.equal(wrong.headers.get("allow"), "GET, HEAD");
});

Deno.test("bad ids, dates and parameters are 400 with the Error body", async () => {
  const s = firstStore.id;
  const q = `scope_id=${firstStore.scope_id}`;
  const cases = [
    `/api/v1/stores/abc/energy?${q}&start=2026-01-01&end=2026-01-02`,
    `/api/v1/stores/0/energy?${q}&start=2026-01-01&end=2026-01-02`,
    `/api/v1/stores/${s}/energy?${q}&start=2026-02-30&end=2026-03-01`,
    `/api/v1/stores/${s}/energy?${q}&start=2026-1-01&end=2026-03-01`,
    `/api/v1/stores/${s}/energy?start=2026-01-01&end=2026-01-02`,
    `/api/v1/stores/${s}/metrics?scope_id=x&start=2026-01-01&end=2026-01-02`,
    `/api/v1/stores/${s}/periods?${q}`,
    `/api/v1/energy/-4/history`,
  ];
  for (const path of cases) {
    const answer = await app.call("GET", path, { key: writer.key });
    assertErrorBody(answer, 400, "INVALID_REQUEST");
  }
});

Deno.test("a scope_id that is not the store's scope is 400", async () => {
  const other = snapshot.stores.map((x) => x.scope.id).find((id) => id !== firstStore.scope_id);
  const answer = await app.call(
    "GET",
    `/api/v1/stores/${firstStore.id}/energy?scope_id=${other}&start=2026-01-01&end=2026-01-02`,
    { key: reader.key },
  );
  assertErrorBody(answer, 400, "INVALID_SCOPE");
});

Deno.test("request bodies reject unknown fields, bad JSON and values out of range", async () => {
  const path = `/api/v1/stores/${firstStore.id}/profile`;
  const bodies = [
    { name: "a", address: "b", expected_version: 1, extra: true },
    { name: "   ", address: "b", expected_version: 1 },
    { name: "a".repeat(81), address: "b", expected_version: 1 },
    { name: "a", address: "b" },
    "{not json",
  ];
  for (const body of bodies) {
    assertErrorBody(await app.call("PATCH", path, { key: writer.key, body }), 400);
  }
  const commit = await app.call("POST", "/api/v1/imports/1/commit", {
    key: writer.key,
    body: { force: true },
    headers: { "idempotency-key": "k1" },
  });
  assertErrorBody(commit, 400);
  const longKey = await app.call("POST", "/api/v1/imports/1/commit", {
    key: writer.key,
    body: {},
    headers: { "idempotency-key": "k".repeat(65) },
  });
  assertErrorBody(longKey, 400);
});

Deno.test("dataset, stores and catalog match their strict schemas", async () => {
  const dataset = assertSchema(
    Dataset,
    (await app.call("GET", "/api/v1/dataset", { key: reader.key })).body,
  );
  assert.equal(dataset.start, snapshot.dataset.start);
  assert.equal(dataset.end, snapshot.dataset.end);
  const stores = assertSchema(
    StoresResponse,
    (await app.call("GET", "/api/v1/stores", { key: reader.key })).body,
  );
  assert.deepEqual(
    stores.stores.map((s) => s.id),
    snapshot.stores.map((s) => s.id).sort((a, b) => a - b),
  );
  const catalog = assertSchema(
    CatalogResponse,
    (await app.call("GET", "/api/v1/catalog", { key: reader.key })).body,
  );
  assert.equal(catalog.stores.length, snapshot.stores.length);
  for (const store of catalog.stores) {
    const devices = snapshot.devices.filter((d) => d.store_id === store.id);
    assert.equal(store.device_count, devices.length);
    assert.equal(store.online_count, devices.filter((d) => d.online_status === "ONLINE").length);
    assert.equal(store.offline_count, devices.filter((d) => d.online_status === "OFFLINE").length);
    assert.equal(store.unknown_count, devices.filter((d) => d.online_status === "UNKNOWN").length);
    assert.equal(
      store.device_count,
      store.online_count + store.offline_count + store.unknown_count,
    );
    assert.equal(store.key_store_status, store.is_key_store ? "MARKED" : "UNCONFIRMED");
  }
});

// Lists are read page by page as they are sent (a catalog of 2,000 stores is 1.5 MB): the pages,
// at any page size, join into the same answer, also for a key limited to some stores.
Deno.test("stores and catalog read page by page give the same answer at any page size", async () => {
  const some = [snapshot.stores[1].id, snapshot.stores[4].id].sort((a, b) => a - b);
  const limited = await app.key(["read"], { stores: some });
  for (const [key, storeIds] of [[reader.key, null], [limited.key, some]] as const) {
    for (const list of ["stores", "catalog"] as const) {
      const answer = (await app.call("GET", `/api/v1/${list}`, { key })).body;
      for (const size of [1, 2, 4, 250]) {
        const pages = await app.db.run(
          Effect.gen(function* () {
            const repo = yield* StoreRepo;
            const rows = yield* repo[list](storeIds, size);
            return Chunk.toReadonlyArray(yield* Stream.runCollect(rows));
          }).pipe(Effect.provide(StoreRepo.Default)),
        );
        assert.deepEqual(
          JSON.parse(`{"stores" : [${pages.join(", ")}]}`),
          answer,
          `${list} ${size}`,
        );
      }
    }
  }
});

Deno.test("health: live and ready", async () => {
  assert.deepEqual((await app.call("GET", "/health/live")).body, { status: "ok" });
  assert.deepEqual((await app.call("GET", "/health/ready")).body, { status: "ready" });
});

Deno.test("health: live fails once the embedded database is lost for good", async () => {
  let why: string | undefined;
  const lost = await makeTestApp(undefined, {
    wrapDatabase: (layer) =>
      Layer.merge(
        layer,
        Layer.succeed(DatabaseLoss, { lost: Effect.sync(() => Option.fromNullable(why)) }),
      ),
  });
  try {
    assert.deepEqual((await lost.call("GET", "/health/live")).body, { status: "ok" });
    why = "PGlite's worker stopped: the worker exited";
    const answer = await lost.call("GET", "/health/live");
    assertErrorBody(answer, 503, "NOT_READY");
    assert.match(answer.body.error.message, /start the service again/);
  } finally {
    await lost.close();
  }
});

Deno.test("/openapi.json declares every contract endpoint with strict schemas and Error bodies", async () => {
  const spec = (await app.call("GET", "/openapi.json")).body;
  const expected: Array<[string, string]> = [
    ["get", "/api/v1/dataset"],
    ["get", "/api/v1/catalog"],
    ["get", "/api/v1/stores"],
    ["get", "/api/v1/stores/{store_id}/periods"],
    ["get", "/api/v1/stores/{store_id}/reference"],
    ["patch", "/api/v1/stores/{store_id}/profile"],
    ["get", "/api/v1/stores/{store_id}/targets"],
    ["get", "/api/v1/stores/{store_id}/metrics"],
    ["get", "/api/v1/stores/{store_id}/energy"],
    ["get", "/api/v1/stores/{store_id}/energy/{business_date}/versions"],
    ["get", "/api/v1/imports/template"],
    ["post", "/api/v1/imports/preview"],
    ["post", "/api/v1/imports/{batch_id}/commit"],
    ["get", "/api/v1/imports/{batch_id}"],
    ["get", "/api/v1/import-rows/{import_row_id}/lineage"],
    ["get", "/api/v1/energy/{energy_id}/history"],
    ["post", "/auth/session"],
    ["post", "/auth/logout"],
  ];
  for (const [method, path] of expected) {
    const operation = spec.paths[path]?.[method];
    assert.ok(operation, `${method} ${path} is declared`);
    // Each operation's own statuses are checked in openapi_test.ts; these, every one has.
    for (const status of ["403", "500", "503"]) {
      assert.ok(operation.responses[status], `${method} ${path} declares ${status}`);
    }
  }
  const errorSchema = spec.components.schemas.NotFound;
  assert.deepEqual(errorSchema.required, ["error"]);
  assert.deepEqual(errorSchema.properties.error.required, ["code", "message"]);
  for (const name of ["Store", "CatalogStore", "DailyRow", "MetricDay", "ImportRow", "Dataset"]) {
    const schema = spec.components.schemas[name];
    assert.equal(schema.additionalProperties, false, `${name} is strict`);
    assert.deepEqual(
      [...schema.required].sort(),
      Object.keys(schema.properties).sort(),
      `${name}: all required`,
    );
  }
  const preview = spec.paths["/api/v1/imports/preview"].post;
  assert.ok(
    preview.parameters.some((p: { name: string; in: string }) =>
      p.name === "idempotency-key" && p.in === "header"
    ),
  );
});

Deno.test("/api-docs is a page that needs no internet", async () => {
  const answer = await app.call("GET", "/api-docs");
  assert.equal(answer.status, 200);
  assert.match(answer.body, /<html/i);
  assert.doesNotMatch(answer.body, /<script[^>]+src=["']?https?:/i);
  assert.doesNotMatch(answer.body, /<link[^>]+href=["']?https?:/i);
});

Deno.test("an unexpected database failure is 500 with X-Request-ID in header and message", async () => {
  const broken = await makeTestApp(async (db) => {
    await db.run(Effect.asVoid(loadSnapshot(generateSnapshot({ stores: 3 }), { reset: false })));
  });
  try {
    const { key } = await broken.key(["read"]);
    await broken.db.run(
      Effect.flatMap(SqlClient.SqlClient, (sql) => sql`DROP TABLE devices CASCADE`),
    );
    const answer = await broken.call("GET", "/api/v1/catalog", { key });
    assertErrorBody(answer, 500, "INTERNAL");
    const requestId = answer.headers.get("x-request-id") ?? "";
    assert.match(requestId, /^[0-9a-f-]{36}$/);
    assert.ok(answer.body.error.message.includes(requestId));
    assert.ok(!answer.body.error.message.includes("devices"), "no SQL detail leaks");
  } finally {
    await broken.close();
  }
});

Deno.test("a database that went away is 503, for readiness and for business endpoints", async () => {
  const pglite = await startPgliteWorker(undefined, []);
  const layer = layerPglite(pglite);
  const issued = await Effect.runPromise(Effect.provide(
    Effect.zipRight(
      prepareDatabase,
      issueKey({ member: "m", permissions: ["read"], stores: null, lifetime: null }),
    ),
    layer,
  ));
  const { handler, dispose } = makeHandler(Layer.merge(layer, AppConfig.make({})));
  try {
    assert.equal((await handler(new Request("http://x/health/ready"))).status, 200);
    await pglite.close();
    const ready = await handler(new Request("http://x/health/ready"));
    assert.equal(ready.status, 503);
    await ready.body?.cancel();
    const stores = await handler(
      new Request("http://x/api/v1/stores", { headers: { authorization: `Bearer ${issued.key}` } }),
    );
    const body = await stores.json();
    assertErrorBody({ status: stores.status, headers: stores.headers, body }, 503, "NOT_READY");
  } finally {
    await dispose();
  }
});

Deno.test({
  name: "close the test app",
  fn: () => app.close(),
  sanitizeOps: false,
  sanitizeResources: false,
});
