// Benchmark floor of the framework: a one-endpoint Effect HttpApi app, built with
// HttpApiBuilder.toWebHandler and served over the service's node:http bridge (src/http/serve.ts)
// as src/main.ts serves the service, answering
//   GET /api/v1/stores/{store_id}/energy?scope_id=&start=&end=
// with the service's path and query schemas and a fixed JSON body of FLOOR_BODY_BYTES (default
// 131,072) already encoded, sent as the service sends a kept answer (jsonBytes: a web Response
// made from a byte array would copy it for every request). No database, no credential,
// no front door: what any answer of this size costs through the same framework and server.
import * as HttpApi from "@effect/platform/HttpApi";
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder";
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint";
import * as HttpApiGroup from "@effect/platform/HttpApiGroup";
import * as HttpServer from "@effect/platform/HttpServer";
import { Effect, Layer, Schema } from "effect";
import { jsonBytes } from "../../src/api/json_response.ts";
import { RangeParams, StorePath } from "../../src/api/params.ts";
import { DEFAULT_LIMITS } from "../../src/config.ts";
import { appendHeaders } from "../../src/http/incoming.ts";
import { serve } from "../../src/http/serve.ts";
import { env, stopOnSignal } from "./server_process.ts";

const BODY_BYTES = Number(env("FLOOR_BODY_BYTES", "131072"));
if (!Number.isInteger(BODY_BYTES) || BODY_BYTES < 64) {
  throw new Error(`FLOOR_BODY_BYTES must be a whole number >= 64, got ${BODY_BYTES}`);
}

// Days in the shape of the energy read's, as many as fit, then a note that fills the body to its
// exact size.
const fixedBody = (size: number) => {
  const day = (i: number) => {
    const date = new Date(Date.UTC(2025, 0, 1 + i)).toISOString().slice(0, 10);
    return JSON.stringify({
      business_date: date,
      kwh: (100 + (i * 37) % 900 + (i % 10000) / 10000).toFixed(4),
      status: "AVAILABLE",
      source_kind: "CLEANED",
      source_label: "Cleaned value",
      provisional: 0,
      revision_no: 1 + (i % 3),
    });
  };
  const close = `],"note":""}`;
  let text = `{"store_id":1,"scope_id":1,"unit":"kWh","days":[`;
  for (let i = 0; text.length + day(i).length + 1 + close.length <= size; i++) {
    text += (i === 0 ? "" : ",") + day(i);
  }
  return text + close.replace('""', `"${"x".repeat(size - text.length - close.length)}"`);
};

const BODY = new TextEncoder().encode(fixedBody(BODY_BYTES)) as Uint8Array<ArrayBuffer>;

class FloorGroup extends HttpApiGroup.make("floor").add(
  HttpApiEndpoint.get("days", "/api/v1/stores/:store_id/energy")
    .setPath(StorePath)
    .setUrlParams(RangeParams)
    .addSuccess(Schema.Unknown),
) {}

class FloorApi extends HttpApi.make("floor").add(FloorGroup) {}

const FloorLive = HttpApiBuilder.group(
  FloorApi,
  "floor",
  (handlers) =>
    handlers.handle(
      "days",
      () => Effect.succeed(jsonBytes(BODY)),
    ),
);

const { handler, dispose } = HttpApiBuilder.toWebHandler(
  Layer.mergeAll(
    HttpApiBuilder.api(FloorApi).pipe(Layer.provide(FloorLive)),
    HttpServer.layerContext,
  ),
);

// The bridge gives a request without a body in its own light form; the HttpApi is given a web
// Request made from it, as the service's front door makes one.
const server = await serve(
  (incoming, controller) => {
    const request = new Request(incoming.url, {
      method: incoming.method,
      signal: controller.signal,
    });
    appendHeaders(incoming.headers, request.headers);
    return handler(request);
  },
  {
    port: Number(env("PORT", "18084")),
    hostname: env("HOST", "127.0.0.1"),
    headersMs: DEFAULT_LIMITS.headersMs,
    requestMs: DEFAULT_LIMITS.requestMs,
    idleMs: DEFAULT_LIMITS.idleMs,
  },
);
console.log(
  `floor app ready on http://${env("HOST", "127.0.0.1")}:${server.port} ` +
    `(body ${BODY.byteLength} bytes)`,
);

stopOnSignal(async () => {
  await server.shutdown();
  await dispose();
});
