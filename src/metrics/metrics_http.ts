// Handlers of the metrics group: targets, metrics, period overviews, each a conditional read.
// Answers are encoded here (JSON.stringify of the contract's types, the days a month at a time:
// encoding a 366-day metrics answer through its schema costs ten times computing it; the tests
// check every shape).
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder";
import * as HttpServerRequest from "@effect/platform/HttpServerRequest";
import * as HttpServerResponse from "@effect/platform/HttpServerResponse";
import { Effect } from "effect";
import { Api } from "../api/api.ts";
import {
  chunkedJson,
  dataHeaders,
  encodeParts,
  etagMatches,
  etagOf,
  heldVersion,
  jsonBytes,
  jsonHeaders,
  notModifiedHeaders,
} from "../api/json_response.ts";
import { DataSeal } from "../auth/data_seal.ts";
import type { Versioned } from "../domain/answers.ts";
import { Caller } from "../domain/auth.ts";
import { type AsOf, asOfOf } from "../domain/as_of.ts";
import { rangeOf, type RangeRequest } from "../domain/range.ts";
import { ReadCache } from "../reads/read_cache.ts";
import { SHAPE_TAG } from "../routines.ts";
import { MetricsService } from "./metrics_service.ts";

// What a read answers: the body in parts with its headers, or 304 when the client holds it.
type Reply =
  | { readonly status: 304; readonly headers: Record<string, string> }
  | {
    readonly status: 200;
    readonly parts: ReadonlyArray<string>;
    readonly headers: Record<string, string>;
  };

// A conditional read of one kind of answer: the version the client holds goes to the service,
// which builds nothing when it is current.
// An answer as of an earlier instant has no ETag: it says which commit it shows. `token`: the
// answer's Data-Token (sealed).
const replyFor = <A>(
  kind: string,
  header: string | undefined,
  answer: Versioned<A>,
  token: string | undefined,
): Reply => {
  const headers = dataHeaders(token, answer.asOf);
  const body = (value: A) => chunkedJson(value as Readonly<Record<string, unknown>>, "days");
  if (answer.asOf !== undefined) {
    return { status: 200, parts: body(answer.value!), headers: jsonHeaders(undefined, headers) };
  }
  const etag = etagOf(kind, answer.version, SHAPE_TAG);
  return answer.value === undefined || etagMatches(header, etag)
    ? { status: 304, headers: notModifiedHeaders(etag, headers) }
    : { status: 200, parts: body(answer.value), headers: jsonHeaders(etag, headers) };
};

// A read of the current data, kept (src/reads/read_cache.ts) under `key`: a request without
// If-None-Match whose answer is kept asks only for the version its inputs are at now (`version`)
// and, while they are still at it, the kept bytes are the answer. Otherwise the version the client
// holds goes to the service (`read`), which builds nothing when it is current. A read as of an
// earlier instant is neither kept nor conditional.
const conditional = <A, E, R, E2, R2>(
  seal: DataSeal,
  cache: ReadCache,
  kind: string,
  key: string,
  asOf: AsOf,
  read: (held: string | undefined) => Effect.Effect<Versioned<A>, E, R>,
  version: Effect.Effect<{ readonly version: string; readonly token?: string }, E2, R2>,
) =>
  Effect.gen(function* () {
    const header = (yield* HttpServerRequest.HttpServerRequest).headers["if-none-match"];
    const current = asOf.kind === "current";
    const kept = current && header === undefined ? yield* cache.get(`${kind}|${key}`) : undefined;
    if (kept !== undefined) {
      const now = yield* version;
      if (now.version === kept.version) {
        yield* cache.served;
        const token = yield* seal.dataToken(now.token);
        return jsonBytes(kept.bytes, etagOf(kind, now.version, SHAPE_TAG), dataHeaders(token));
      }
    }
    return yield* cache.build(Effect.gen(function* () {
      const answer = yield* read(heldVersion(header, kind, SHAPE_TAG));
      const reply = replyFor(kind, header, answer, yield* seal.dataToken(answer.token));
      if (reply.status === 304) {
        return HttpServerResponse.empty({ status: 304, headers: reply.headers });
      }
      const bytes = encodeParts(reply.parts);
      if (current) yield* cache.set(`${kind}|${key}`, answer.version, bytes);
      return jsonBytes(bytes, undefined, reply.headers);
    }));
  });

const rangeKey = (r: RangeRequest) => `${r.storeId}|${r.scopeId}|${r.start}|${r.end}`;

export const MetricsHttpLive = HttpApiBuilder.group(
  Api,
  "metrics",
  (handlers) =>
    Effect.gen(function* () {
      const service = yield* MetricsService;
      const seal = yield* DataSeal;
      const cache = yield* ReadCache;
      const open = (token: string) => seal.open("data-token", token);
      return handlers
        .handle("targets", ({ path, urlParams: q }) =>
          Effect.gen(function* () {
            const caller = yield* Caller;
            const asOf = yield* asOfOf(q, open);
            const range = rangeOf(path.store_id, q);
            return yield* conditional(
              seal,
              cache,
              "t",
              rangeKey(range),
              asOf,
              (held) => service.targets(caller, range, asOf, held),
              service.currentVersion(caller, range),
            );
          }))
        .handle("metrics", ({ path, urlParams: q }) =>
          Effect.gen(function* () {
            const caller = yield* Caller;
            const asOf = yield* asOfOf(q, open);
            const range = rangeOf(path.store_id, q);
            return yield* conditional(
              seal,
              cache,
              "m",
              rangeKey(range),
              asOf,
              (held) => service.metrics(caller, range, asOf, held),
              service.currentVersion(caller, range),
            );
          }))
        .handle("periods", ({ path, urlParams: q }) =>
          Effect.gen(function* () {
            const caller = yield* Caller;
            const asOf = yield* asOfOf(q, open);
            return yield* conditional(
              seal,
              cache,
              "p",
              `${path.store_id}|${q.scope_id}|${q.as_of}`,
              asOf,
              (held) => service.periods(caller, path.store_id, q.scope_id, q.as_of, asOf, held),
              service.periodsVersion(caller, path.store_id, q.scope_id, q.as_of),
            );
          }));
    }),
);
