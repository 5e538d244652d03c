// GET /metrics: absent without METRICS_TOKEN, 401 without the right bearer token, and counts of
// requests by route template (never a raw path or id), imports, the database and the process.
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { SqlClient } from "@effect/sql";
import { ConfigProvider, Effect, Layer, Option, Redacted } from "effect";
import { makeHandler } from "../src/app.ts";
import { issueKey } from "../src/auth/keys.ts";
import { AppConfig } from "../src/config.ts";
import { apiRoutes } from "../src/http/routes.ts";
import { OpsMetrics } from "../src/ops/metrics.ts";
import { noReplica, ReadReplica } from "../src/db/read_replica.ts";
import { generateSnapshot } from "../src/seed/generate.ts";
import { loadSnapshot } from "../src/seed/load.ts";
import { databaseKind, makeTestDatabase } from "./db.ts";
import { assertErrorBody, BASE, quietLog } from "./helpers.ts";

const TOKEN = `metrics-${crypto.randomUUID()}`;
const snapshot = generateSnapshot({ stores: 3 });
const db = await makeTestDatabase();
await db.run(Effect.asVoid(loadSnapshot(snapshot, { reset: false })));
const infrastructure = Layer.merge(db.layer, AppConfig.make({}));
const app = makeHandler(infrastructure, { log: quietLog, metricsToken: Redacted.make(TOKEN) });
const bare = makeHandler(infrastructure, { log: quietLog });
const { key } = await db.run(issueKey({
  member: "metrics-reader",
  permissions: ["read", "write", "raw"],
  stores: null,
  lifetime: null,
}));

const call = async (
  handler: (request: Request) => Promise<Response>,
  path: string,
  init: RequestInit = {},
) => {
  const response = await handler(new Request(BASE + path, init));
  const text = await response.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // the exposition format
  }
  return { status: response.status, headers: response.headers, body, text };
};

const api = (path: string, init: RequestInit = {}) =>
  call(app.handler, path, {
    ...init,
    headers: { authorization: `Bearer ${key}`, ...(init.headers ?? {}) },
  });

const scrape = async () => {
  const answer = await call(app.handler, "/metrics", {
    headers: { authorization: `Bearer ${TOKEN}` },
  });
  assert.equal(answer.status, 200, answer.text);
  assert.match(answer.headers.get("content-type") ?? "", /^text\/plain; version=0\.0\.4/);
  return answer.text;
};

interface Sample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

// The samples of an exposition, every line checked against the format.
const parse = (text: string): Array<Sample> => {
  const samples: Array<Sample> = [];
  for (const line of text.split("\n")) {
    if (line === "" || line.startsWith("# HELP ") || line.startsWith("# TYPE ")) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    assert.ok(m, `not a sample line: ${line}`);
    const labels: Record<string, string> = {};
    for (const [, k, v] of (m[2] ?? "").matchAll(/([a-zA-Z_]\w*)="((?:[^"\\]|\\.)*)"/g)) {
      labels[k] = v;
    }
    const value = Number(m[3].replace("+Inf", "Infinity"));
    assert.ok(!Number.isNaN(value), line);
    samples.push({ name: m[1], labels, value });
  }
  return samples;
};

const valueOf = (
  samples: ReadonlyArray<Sample>,
  name: string,
  labels: Readonly<Record<string, string>> = {},
) =>
  samples.find((s) =>
    s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v)
  )?.value;

const stores = (await api("/api/v1/stores")).body as {
  stores: Array<{ id: number; scope_id: number; name: string; brand_name: string }>;
};
const [store] = stores.stores;
const end = snapshot.dataset.end;

Deno.test("METRICS_TOKEN unset or empty: /metrics does not exist", async () => {
  const answer = await call(bare.handler, "/metrics", {
    headers: { authorization: `Bearer ${TOKEN}` },
  });
  assertErrorBody(answer, 404, "NOT_FOUND");
  const tokenOf = (value: string | undefined) =>
    Effect.runSync(
      AppConfig.fromEnv.pipe(
        Effect.withConfigProvider(
          ConfigProvider.fromMap(new Map(value === undefined ? [] : [["METRICS_TOKEN", value]])),
        ),
        Effect.map((c) => Option.map(c.metricsToken, Redacted.value)),
      ),
    );
  assert.deepEqual(tokenOf(undefined), Option.none());
  assert.deepEqual(tokenOf(""), Option.none());
  assert.deepEqual(tokenOf("   "), Option.none());
  assert.deepEqual(tokenOf("s3cret-token"), Option.some("s3cret-token"));
});

Deno.test("a missing or wrong token is 401 with the error body, and nothing is echoed", async () => {
  assertErrorBody(await call(app.handler, "/metrics"), 401, "MISSING_CREDENTIAL");
  const wrong = [
    `Bearer ${TOKEN}x`,
    `Bearer ${TOKEN.slice(0, -1)}`,
    `Bearer ${key}`,
    `Basic ${btoa(`metrics:${TOKEN}`)}`,
    TOKEN,
    `Bearer ${"A".repeat(5_000)}`,
  ];
  for (const authorization of wrong) {
    const answer = await call(app.handler, "/metrics", { headers: { authorization } });
    assertErrorBody(answer, 401, "INVALID_CREDENTIAL");
    assert.ok(!answer.text.includes(TOKEN.slice(8)), "the token is not echoed");
    assert.ok(!answer.text.includes("AAAA"), "the value sent is not echoed");
    assert.ok(!answer.text.includes(key.slice(4)), "the key is not echoed");
  }
  // An API key is not the metrics token, and the scrape token opens nothing else.
  const withKey = await call(app.handler, "/api/v1/stores", {
    headers: { authorization: `Bearer ${TOKEN}` },
  });
  assertErrorBody(withKey, 401);
  // Exact path and methods, like every other path.
  assertErrorBody(await call(app.handler, "/metrics/"), 404, "NOT_FOUND");
  assertErrorBody(await call(app.handler, "/METRICS"), 404, "NOT_FOUND");
  const post = await call(app.handler, "/metrics", {
    method: "POST",
    headers: { authorization: `Bearer ${TOKEN}` },
  });
  assertErrorBody(post, 405, "METHOD_NOT_ALLOWED");
  assert.equal(post.headers.get("allow"), "GET, HEAD");
  const head = await app.handler(
    new Request(BASE + "/metrics", {
      method: "HEAD",
      headers: { authorization: `Bearer ${TOKEN}` },
    }),
  );
  assert.equal(head.status, 200);
  assert.equal(await head.text(), "");
});

Deno.test("request counts and latencies move, labelled by route template, never a raw path", async () => {
  const energyRoute = "/api/v1/stores/:store_id/energy";
  const referenceRoute = "/api/v1/stores/:store_id/reference";
  const before = parse(await scrape());
  const energy =
    `/api/v1/stores/${store.id}/energy?scope_id=${store.scope_id}&start=${end}&end=${end}`;
  assert.equal((await api(energy)).status, 200);
  assert.equal((await api(energy)).status, 200);
  assert.equal((await api("/api/v1/stores/987654/reference")).status, 404);
  assert.equal((await call(app.handler, "/nowhere/424242?secret=hunter2")).status, 404);
  const text = await scrape();
  const after = parse(text);

  const ok = { route: energyRoute, method: "GET", status: "200" };
  const delta = (name: string, labels: Record<string, string>) =>
    (valueOf(after, name, labels) ?? 0) - (valueOf(before, name, labels) ?? 0);
  assert.equal(delta("http_requests_total", ok), 2);
  assert.equal(delta("http_request_duration_seconds_count", ok), 2);
  assert.equal(delta("http_request_duration_seconds_bucket", { ...ok, le: "+Inf" }), 2);
  assert.ok(delta("http_request_duration_seconds_sum", ok) > 0);
  assert.equal(
    delta("http_requests_total", { route: referenceRoute, method: "GET", status: "404" }),
    1,
  );
  assert.equal(
    delta("http_requests_total", { route: "(unmatched)", method: "GET", status: "404" }),
    1,
  );

  // Buckets are cumulative and end at the count.
  const buckets = after.filter((s) =>
    s.name === "http_request_duration_seconds_bucket" && s.labels.route === energyRoute &&
    s.labels.status === "200"
  );
  assert.ok(buckets.length > 5);
  for (let i = 1; i < buckets.length; i++) assert.ok(buckets[i].value >= buckets[i - 1].value);
  assert.equal(buckets.at(-1)!.value, valueOf(after, "http_requests_total", ok));

  // Every route label is a template of the route table or one of the fixed names.
  const known = new Set([
    ...apiRoutes().map((r) => r.path),
    "/metrics",
    "(unmatched)",
    "(console)",
  ]);
  for (const s of after.filter((s) => s.labels.route !== undefined)) {
    assert.ok(known.has(s.labels.route), `unknown route label ${s.labels.route}`);
  }
  for (const raw of [`/stores/${store.id}/`, "987654", "424242", "nowhere", "hunter2", end]) {
    assert.ok(!text.includes(raw), `the exposition holds ${raw}`);
  }
  assert.equal(valueOf(after, "http_requests_in_flight"), 1, "the scrape itself is in flight");
});

Deno.test("imports are counted by operation and outcome", async () => {
  const before = parse(await scrape());
  const csv = `品牌,门店,日期,日能耗\r\n${store.brand_name},${store.name},${end},作废\r\n`;
  const preview = await api("/api/v1/imports/preview", {
    method: "POST",
    headers: { "content-type": "application/json", "idempotency-key": crypto.randomUUID() },
    body: JSON.stringify({
      filename: "void.csv",
      content_base64: Buffer.from(csv, "utf8").toString("base64"),
      reason: "metrics test",
    }),
  });
  assert.equal(preview.status, 200, preview.text);
  const batchId = (preview.body as { id: number }).id;
  const refused = await api("/api/v1/imports/preview", {
    method: "POST",
    headers: { "content-type": "application/json", "idempotency-key": crypto.randomUUID() },
    body: JSON.stringify({ filename: "x.csv", content_base64: "not base64!", reason: "bad" }),
  });
  assert.equal(refused.status, 400);
  const commit = (id: number) =>
    api(`/api/v1/imports/${id}/commit`, {
      method: "POST",
      headers: { "content-type": "application/json", "idempotency-key": crypto.randomUUID() },
      body: "{}",
    });
  assert.equal((await commit(batchId)).status, 200);
  assert.equal((await commit(batchId)).status, 409);
  const after = parse(await scrape());
  const delta = (operation: string, outcome: string) =>
    (valueOf(after, "imports_total", { operation, outcome }) ?? 0) -
    (valueOf(before, "imports_total", { operation, outcome }) ?? 0);
  assert.equal(delta("preview", "ok"), 1);
  assert.equal(delta("preview", "invalid"), 1);
  assert.equal(delta("commit", "ok"), 1);
  assert.equal(delta("commit", "conflict"), 1);
  assert.equal(
    valueOf(after, "import_duration_seconds_count", { operation: "commit", outcome: "ok" }),
    valueOf(after, "imports_total", { operation: "commit", outcome: "ok" }),
  );
  // The committed revision moves the revision counter.
  assert.ok(
    (valueOf(after, "energy_revisions_last_id") ?? 0) >=
      (valueOf(before, "energy_revisions_last_id") ?? 0),
  );
});

Deno.test("the database, its pool and the process are reported", async () => {
  const samples = parse(await scrape());
  assert.equal(valueOf(samples, "db_up"), 1);
  assert.equal(valueOf(samples, "db_info", { driver: databaseKind }), 1);
  // Read at most a few seconds ago: between the revisions of the snapshot and the newest one.
  const [{ newest }] = await db.run(
    Effect.flatMap(
      SqlClient.SqlClient,
      (sql) => sql<{ newest: number }>`SELECT max(id)::int AS newest FROM energy_revisions`,
    ),
  );
  const lastId = valueOf(samples, "energy_revisions_last_id") ?? 0;
  assert.ok(lastId > 0 && lastId <= newest, `${lastId} of ${newest}`);
  assert.ok((valueOf(samples, "process_resident_memory_bytes") ?? 0) > 10_000_000);
  assert.ok((valueOf(samples, "deno_heap_used_bytes") ?? 0) > 0);
  // Allocation since the start: it only grows, and a scrape (an answer built) adds to it.
  const allocated = valueOf(samples, "deno_heap_allocated_bytes_total") ?? 0;
  assert.ok(allocated > 0);
  const again = valueOf(parse(await scrape()), "deno_heap_allocated_bytes_total") ?? 0;
  assert.ok(again > allocated, `${again} after ${allocated}`);
  assert.ok((valueOf(samples, "process_cpu_seconds_total") ?? 0) > 0);
  if (databaseKind === "postgres") {
    // The pool of the primary, by its label: each pool's series apart (a replica's has its own).
    const primary = { pool: "primary" };
    assert.equal(valueOf(samples, "db_pool_max_connections", primary), 30);
    const idle = valueOf(samples, "db_pool_connections", { ...primary, state: "idle" }) ?? -1;
    const used = valueOf(samples, "db_pool_connections", { ...primary, state: "in_use" }) ?? -1;
    assert.ok(idle >= 0 && used >= 0 && idle + used <= 30);
    assert.ok((valueOf(samples, "db_pool_checkouts_total", primary) ?? 0) > 0);
    assert.equal(valueOf(samples, "db_pool_max_connections", { pool: "replica" }), undefined);
    assert.ok((valueOf(samples, "db_server_connections") ?? 0) >= 1);
  } else {
    assert.equal(valueOf(samples, "db_pool_max_connections"), undefined);
  }
});

Deno.test("with a read replica, /metrics says whether reads go to it", async () => {
  let used = true;
  const replica = Layer.succeed(ReadReplica, {
    ...noReplica,
    configured: true,
    status: Effect.sync(() => ({ used, reason: used ? undefined : "replica unreachable" })),
  });
  const withReplica = makeHandler(Layer.merge(infrastructure, replica), {
    log: quietLog,
    metricsToken: Redacted.make(TOKEN),
  });
  const replicaUsed = async () => {
    const answer = await call(withReplica.handler, "/metrics", {
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    return valueOf(parse(answer.text), "db_replica_used");
  };
  try {
    // The layers are built on the first request, as start-up's readiness check builds them.
    assert.equal((await call(withReplica.handler, "/health/ready")).status, 200);
    assert.equal(await replicaUsed(), 1);
    used = false;
    assert.equal(await replicaUsed(), 0);
    // Without a replica there is no such series.
    assert.equal(valueOf(parse(await scrape()), "db_replica_used"), undefined);
  } finally {
    await withReplica.dispose();
  }
});

Deno.test("with a read replica, each pool is reported apart, so that a full one shows", async () => {
  const registry = new OpsMetrics();
  registry.setSources({
    pool: () => [
      { role: "primary", total: 10, idle: 0, waiting: 3, max: 10, checkouts: 500 },
      { role: "replica", total: 2, idle: 2, waiting: 0, max: 10, checkouts: 40 },
    ],
  });
  const samples = parse(await registry.render());
  const inUse = (pool: string) =>
    valueOf(samples, "db_pool_connections", { pool, state: "in_use" });
  const max = (pool: string) => valueOf(samples, "db_pool_max_connections", { pool });
  // The alert's ratio, per pool: the primary's is full, whatever the replica's.
  assert.equal(inUse("primary")! / max("primary")!, 1);
  assert.equal(inUse("replica")! / max("replica")!, 0);
  assert.equal(valueOf(samples, "db_pool_waiting", { pool: "primary" }), 3);
  assert.equal(valueOf(samples, "db_pool_checkouts_total", { pool: "replica" }), 40);
});

Deno.test("kept answers are reported: their cost, and how many requests they answered", async () => {
  const stores = (await api("/api/v1/stores")).body as {
    stores: Array<{ id: number; scope_id: number }>;
  };
  const [store] = stores.stores;
  const end = snapshot.dataset.end;
  const path =
    `/api/v1/stores/${store.id}/energy?scope_id=${store.scope_id}&start=${end}&end=${end}`;
  const before = parse(await scrape());
  for (let i = 0; i < 3; i++) assert.equal((await api(path)).status, 200);
  const after = parse(await scrape());
  const grew = (name: string) => (valueOf(after, name) ?? 0) - (valueOf(before, name) ?? 0);
  assert.equal(valueOf(after, "answer_cache_budget_bytes"), 32 * 1024 * 1024);
  assert.equal(grew("answer_cache_lookups_total"), 3);
  // The first read made the answer; the next two were answered by it.
  assert.ok(grew("answer_cache_found_total") >= 2);
  assert.ok(grew("answer_cache_served_total") >= 2);
  const bytes = valueOf(after, "answer_cache_bytes") ?? 0;
  assert.ok(bytes > 0 && bytes <= 32 * 1024 * 1024, `${bytes}`);
  assert.ok((valueOf(after, "answer_cache_entries") ?? 0) >= 1);
});

Deno.test({
  name: "close",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    await app.dispose();
    await bare.dispose();
    await db.close();
  },
});
