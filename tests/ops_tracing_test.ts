// OpenTelemetry traces: with an OTLP endpoint the spans of a request reach a collector (here a small
// OTLP/HTTP receiver) with the route template and the request id; without one, nothing is set up.
import assert from "node:assert/strict";
import { ConfigProvider, Effect, Layer, Option, Redacted } from "effect";
import { makeHandler } from "../src/app.ts";
import { issueKey } from "../src/auth/keys.ts";
import { AppConfig, type TracingSettings } from "../src/config.ts";
import { generateSnapshot } from "../src/seed/generate.ts";
import { loadSnapshot } from "../src/seed/load.ts";
import { makeTestDatabase } from "./db.ts";
import { BASE, quietLog } from "./helpers.ts";

interface OtlpAttribute {
  readonly key: string;
  readonly value: { readonly stringValue?: string; readonly intValue?: string | number };
}

interface OtlpSpan {
  readonly traceId: string;
  readonly spanId: string;
  readonly parentSpanId?: string;
  readonly name: string;
  readonly kind: number;
  readonly attributes: ReadonlyArray<OtlpAttribute>;
  readonly links?: ReadonlyArray<{ readonly traceId: string; readonly spanId: string }>;
}

interface Received {
  readonly serviceName: string | undefined;
  readonly spans: ReadonlyArray<OtlpSpan>;
  readonly headers: Headers;
}

// A collector that keeps what is POSTed to /v1/traces.
const startReceiver = () => {
  const received: Array<Received> = [];
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    async (request) => {
      const url = new URL(request.url);
      if (request.method !== "POST" || url.pathname !== "/v1/traces") {
        return new Response("not here", { status: 404 });
      }
      const body = await request.json();
      for (const resource of body.resourceSpans ?? []) {
        const serviceName = (resource.resource?.attributes ?? []).find((
          a: OtlpAttribute,
        ) => a.key === "service.name")?.value.stringValue;
        received.push({
          serviceName,
          spans: (resource.scopeSpans ?? []).flatMap((s: { spans: Array<OtlpSpan> }) => s.spans),
          headers: request.headers,
        });
      }
      return new Response("{}", { headers: { "content-type": "application/json" } });
    },
  );
  return { received, url: `http://127.0.0.1:${server.addr.port}`, close: () => server.shutdown() };
};

const attribute = (span: OtlpSpan, key: string) => {
  const value = span.attributes.find((a) => a.key === key)?.value;
  return value?.stringValue ?? (value?.intValue === undefined ? undefined : Number(value.intValue));
};

const snapshot = generateSnapshot({ stores: 2 });
const db = await makeTestDatabase();
await db.run(Effect.asVoid(loadSnapshot(snapshot, { reset: false })));
const { key } = await db.run(issueKey({
  member: "tracing-reader",
  permissions: ["read"],
  stores: null,
  lifetime: null,
}));

const settings = (url: string, ratio = 1): TracingSettings => ({
  tracesUrl: `${url}/v1/traces`,
  serviceName: "energy-test",
  headers: Redacted.make({ "x-collector-key": "collector-secret" }),
  ratio,
  exportIntervalMs: 100,
});

// A traced service over the test database; dispose() sends what is left.
const tracedApp = (tracing: Option.Option<TracingSettings>) =>
  makeHandler(Layer.merge(db.layer, AppConfig.make({ tracing })), { log: quietLog });

const firstStore = async (handler: (r: Request) => Promise<Response>) => {
  const answer = await handler(
    new Request(BASE + "/api/v1/stores", { headers: { authorization: `Bearer ${key}` } }),
  );
  assert.equal(answer.status, 200);
  return (await answer.json()).stores[0] as { id: number; scope_id: number };
};

Deno.test("the spans of a request reach the collector with the route template and request id", async () => {
  const receiver = startReceiver();
  const app = tracedApp(Option.some(settings(receiver.url)));
  try {
    const store = await firstStore(app.handler);
    const end = snapshot.dataset.end;
    const answer = await app.handler(
      new Request(
        BASE +
          `/api/v1/stores/${store.id}/energy?scope_id=${store.scope_id}&start=${end}&end=${end}`,
        { headers: { authorization: `Bearer ${key}` } },
      ),
    );
    assert.equal(answer.status, 200);
    await answer.arrayBuffer();
    // A key pasted into a path is not traced either (a 404 is traced as any answer).
    const pasted = await app.handler(
      new Request(BASE + `/api/v1/stores/${key}/energy`, {
        headers: { authorization: `Bearer ${key}` },
      }),
    );
    await pasted.arrayBuffer();
    const requestId = answer.headers.get("x-request-id");
    // Exported every 100 ms: both requests' server spans arrive while the service runs (a slow
    // machine's last flush at the stop is not what is tested here).
    const ids = [requestId, pasted.headers.get("x-request-id")];
    for (let waited = 0; waited < 30_000; waited += 50) {
      const arrived = receiver.received.flatMap((r) => r.spans)
        .map((span) => attribute(span, "http.request_id"));
      if (ids.every((id) => arrived.includes(id ?? ""))) break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    await app.dispose();

    const spans = receiver.received.flatMap((r) => r.spans);
    assert.ok(receiver.received.every((r) => r.serviceName === "energy-test"));
    assert.ok(
      receiver.received.every((r) => r.headers.get("x-collector-key") === "collector-secret"),
    );
    const server = spans.find((s) => attribute(s, "http.request_id") === requestId);
    assert.ok(server, `no span of the request among ${spans.map((s) => s.name).join(", ")}`);
    assert.equal(attribute(server, "http.route"), "/api/v1/stores/:store_id/energy");
    assert.equal(attribute(server, "http.response.status_code"), 200);
    assert.equal(attribute(server, "http.request.method"), "GET");
    assert.equal(attribute(server, "url.path"), `/api/v1/stores/${store.id}/energy`);
    // The query string stays in the process; so does the credential.
    assert.equal(attribute(server, "url.query"), undefined);
    assert.ok(!String(attribute(server, "url.full")).includes("?"));
    const all = JSON.stringify(spans);
    assert.ok(!all.includes(key), "no key leaves the process");
    assert.ok(!all.includes(`scope_id=${store.scope_id}`), "no query value leaves the process");
    // The work under it (service, repository, SQL) is in the same trace.
    const children = spans.filter((s) =>
      s.traceId === server.traceId && s.spanId !== server.spanId
    );
    assert.ok(children.length > 0, "the request's inner spans are exported");
    assert.ok(children.some((s) => s.parentSpanId === server.spanId));
  } finally {
    await receiver.close();
  }
});

// A shared statement (src/db/batched.ts) runs apart from the requests it answers: with some of them
// sampled, it is a span in the first one's trace, its SQL under it, linked to the others' spans;
// with none sampled it is not exported.
Deno.test("a shared statement is traced in a sampled caller's trace, linked to the others", async () => {
  const receiver = startReceiver();
  // New traces are never sampled: only the callers' own sampled traces are kept.
  const app = tracedApp(Option.some(settings(receiver.url, 0)));
  try {
    const writer = await db.run(issueKey({
      member: "tracing-writer",
      permissions: ["read", "write"],
      stores: null,
      lifetime: null,
    }));
    const store = await firstStore(app.handler);
    const write = (traceparent?: string) =>
      app.handler(
        new Request(BASE + `/api/v1/stores/${store.id}/profile`, {
          method: "PATCH",
          headers: {
            authorization: `Bearer ${writer.key}`,
            "content-type": "application/json",
            ...(traceparent === undefined ? {} : { traceparent }),
          },
          body: JSON.stringify({ name: "x", address: "y", expected_version: 999_999 }),
        }),
      );
    // Eight sampled callers and four unsampled requests at once: their credentials share statements.
    const traceIds = Array.from({ length: 8 }, (_, i) => `4bf92f3577b34da6a3ce929d0e0e47${10 + i}`);
    const answers = await Promise.all([
      ...traceIds.map((id) => write(`00-${id}-00f067aa0ba902b7-01`)),
      ...Array.from({ length: 4 }, () => write()),
    ]);
    for (const answer of answers) {
      assert.equal(answer.status, 409);
      await answer.arrayBuffer();
    }
    const statementsOf = () =>
      receiver.received.flatMap((r) => r.spans).filter((s) => s.name === "Batched.statement");
    const shared = () => statementsOf().find((s) => (s.links ?? []).length > 0);
    for (let waited = 0; waited < 30_000 && shared() === undefined; waited += 50) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    await app.dispose();
    const spans = receiver.received.flatMap((r) => r.spans);
    assert.ok(spans.every((s) => traceIds.includes(s.traceId)), "only the callers' traces");
    const statement = shared();
    assert.ok(statement, "a statement shared by sampled callers");
    const verify = spans.find((s) => s.spanId === statement.parentSpanId);
    assert.equal(verify?.name, "Auth.verify", "under the credential check of the first caller");
    for (const link of statement.links ?? []) {
      assert.notEqual(link.traceId, statement.traceId);
      assert.equal(spans.find((s) => s.spanId === link.spanId)?.name, "Auth.verify");
    }
    assert.ok(
      spans.some((s) => s.parentSpanId === statement.spanId && s.name === "sql.execute"),
      "its SQL under it",
    );
  } finally {
    await receiver.close();
  }
});

Deno.test("a new trace is sampled by ratio; a sampled caller's trace is always kept", async () => {
  const receiver = startReceiver();
  const app = tracedApp(Option.some(settings(receiver.url, 0)));
  try {
    const traceId = "4bf92f3577b34da6a3ce929d0e0e4736";
    for (const traceparent of [undefined, `00-${traceId}-00f067aa0ba902b7-01`]) {
      const answer = await app.handler(
        new Request(BASE + "/api/v1/dataset", {
          headers: {
            authorization: `Bearer ${key}`,
            ...(traceparent === undefined ? {} : { traceparent }),
          },
        }),
      );
      assert.equal(answer.status, 200);
      await answer.arrayBuffer();
    }
    await app.dispose();
    const spans = receiver.received.flatMap((r) => r.spans);
    assert.ok(spans.length > 0);
    assert.ok(spans.every((s) => s.traceId === traceId), "only the caller's trace is exported");
    assert.ok(spans.some((s) => attribute(s, "http.route") === "/api/v1/dataset"));
  } finally {
    await receiver.close();
  }
});

Deno.test("tracing is configured by the OTEL_* variables, and off without an endpoint", () => {
  const tracingOf = (env: Record<string, string>) =>
    Effect.runSync(
      AppConfig.fromEnv.pipe(
        Effect.withConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(env)))),
        Effect.map((c) => c.tracing),
        Effect.either,
      ),
    );
  const on = (env: Record<string, string>) => {
    const result = tracingOf(env);
    assert.ok(result._tag === "Right" && Option.isSome(result.right), JSON.stringify(env));
    return result.right.value;
  };
  const off = tracingOf({});
  assert.ok(off._tag === "Right" && Option.isNone(off.right));
  const empty = tracingOf({ OTEL_EXPORTER_OTLP_ENDPOINT: "" });
  assert.ok(empty._tag === "Right" && Option.isNone(empty.right));
  const disabled = tracingOf({
    OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318",
    OTEL_SDK_DISABLED: "true",
  });
  assert.ok(disabled._tag === "Right" && Option.isNone(disabled.right));

  const base = on({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318/" });
  assert.equal(base.tracesUrl, "http://collector:4318/v1/traces");
  assert.equal(base.serviceName, "energy-saving-service");
  assert.equal(base.ratio, 1);
  const full = on({
    OTEL_EXPORTER_OTLP_ENDPOINT: "http://ignored:4318",
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "https://collector.example/otlp/traces",
    OTEL_SERVICE_NAME: "energy-eu",
    OTEL_EXPORTER_OTLP_HEADERS: "api-key=a%20b,x-tenant=7",
    OTEL_TRACES_SAMPLER: "parentbased_traceidratio",
    OTEL_TRACES_SAMPLER_ARG: "0.25",
  });
  assert.equal(full.tracesUrl, "https://collector.example/otlp/traces");
  assert.equal(full.serviceName, "energy-eu");
  assert.deepEqual(Redacted.value(full.headers), { "api-key": "a b", "x-tenant": "7" });
  assert.equal(full.ratio, 0.25);

  const bads: Array<Record<string, string>> = [
    { OTEL_EXPORTER_OTLP_ENDPOINT: "collector:4318" },
    { OTEL_EXPORTER_OTLP_ENDPOINT: "ftp://collector" },
    { OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318", OTEL_EXPORTER_OTLP_HEADERS: "s3cret-no-name" },
    {
      OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318",
      OTEL_TRACES_SAMPLER: "traceidratio",
      OTEL_TRACES_SAMPLER_ARG: "2",
    },
    // A mistyped sampler would have kept every trace.
    { OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318", OTEL_TRACES_SAMPLER: "bogus" },
    { OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318", OTEL_TRACES_SAMPLER: "traceidratio0.1" },
  ];
  for (const bad of bads) {
    const result = tracingOf(bad);
    assert.equal(result._tag, "Left", JSON.stringify(bad));
    assert.ok(!String(result.left).includes("s3cret"), "a header value is not echoed");
  }
});

Deno.test({
  name: "close",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: () => db.close(),
});
