// Handlers of the metrics group: targets, metrics, period overviews, each a conditional read; and
// their lanes (src/http/lanes.ts).
// Answers are encoded here (JSON.stringify of the contract's types, the days a month at a time:
// encoding a 366-day metrics answer through its schema costs ten times computing it; the tests
// check every shape).
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder";
import * as HttpServerRequest from "@effect/platform/HttpServerRequest";
import { Context, Effect } from "effect";
import { Api } from "../api/api.ts";
import * as HttpServerResponse from "@effect/platform/HttpServerResponse";
import {
  chunkedJson,
  dataHeaders,
  encodeParts,
  etagMatches,
  etagOf,
  heldVersion,
  jsonHeaders,
  notModifiedHeaders,
} from "../api/json_response.ts";
import { mayReadStore } from "../auth/access.ts";
import { Auth } from "../auth/auth_service.ts";
import { DataSeal } from "../auth/data_seal.ts";
import { isCalendarDate } from "../domain/common.ts";
import {
  keptJson,
  keyRowSql,
  keyRowWith,
  type Lane,
  type LaneContext,
  laneJson,
  type LaneRequest,
  plainId,
  plainParams,
  plainRange,
  RANGE_PARAMS,
  runLane,
} from "../http/lanes.ts";
import type { Versioned } from "../domain/answers.ts";
import { Caller, type CallerShape } from "../domain/auth.ts";
import { asOfOf, CURRENT } from "../domain/as_of.ts";
import { rangeOf, type RangeRequest } from "../domain/range.ts";
import { SHAPE_TAG } from "../routines.ts";
import { metricVersionFromSql } from "./metrics_repo.ts";
import { MetricsService, periodsRange } from "./metrics_service.ts";

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

const conditional = <A, E, R>(
  seal: DataSeal,
  kind: string,
  read: (held: string | undefined) => Effect.Effect<Versioned<A>, E, R>,
) =>
  Effect.gen(function* () {
    const header = (yield* HttpServerRequest.HttpServerRequest).headers["if-none-match"];
    const answer = yield* read(heldVersion(header, kind, SHAPE_TAG));
    const reply = replyFor(kind, header, answer, yield* seal.dataToken(answer.token));
    return reply.status === 304
      ? HttpServerResponse.empty({ status: 304, headers: reply.headers })
      : HttpServerResponse.uint8Array(encodeParts(reply.parts), {
        contentType: "application/json",
        headers: reply.headers,
      });
  });

// The key's row beside the inputs' version (metric_version), for directKept.
const KEPT_VERSION_SQL = keyRowSql(
  "v.version, v.token",
  metricVersionFromSql("$2", "$3", "$4", "$5"),
);

// Whether a kept answer (of `range`, whose request was checked when it was kept: the store, its
// scope, the range) still answers a key on PostgreSQL, without a fiber: the key's row and the
// inputs' version (metric_version) in one statement (keyRowWith), then the decision on the row as
// access.ts states it (live, the read permission, the store in the key's stores). The version and
// data token when it does; undefined for anything else, which the lane's Effect path then decides.
// The fiber and @effect/sql's statements were most of what such a request allocated (periods: 267
// KB, against 97 KB for the energy read, which decides the same way).
const directKept = async (
  context: Pick<LaneContext<never>, "direct">,
  lane: LaneRequest,
  range: RangeRequest,
  kept: string,
) => {
  const read = await keyRowWith<{ readonly version: string; readonly token: string | null }>(
    context,
    lane,
    KEPT_VERSION_SQL,
    [range.storeId, range.scopeId, range.start, range.end],
  );
  const row = mayReadStore(read?.credential, range.storeId);
  if (read === undefined || row === undefined || read.version !== kept) return undefined;
  lane.note.memberId = row.member_id;
  return { version: read.version, token: read.token ?? undefined };
};

// The lane of a read of the current data (src/http/lanes.ts), for a verified caller: `parse` takes
// the plain form of the request (undefined for any other), `read` is the handler's service call and
// `version` the version its inputs are at now. A request without If-None-Match whose answer is kept
// in the lanes' answers (src/http/answer_cache.ts) asks only for that version: when the inputs are
// still at it, nothing is read or computed and the kept bytes are the answer.
const currentLane = <P>(
  context: LaneContext<MetricsService | Auth | DataSeal>,
  kind: string,
  path: RegExp,
  params: ReadonlyArray<string>,
  parse: (storeId: number, query: Record<string, string>) => P | undefined,
  read: (
    service: MetricsService,
    caller: CallerShape,
    request: P,
    held: string | undefined,
  ) => Effect.Effect<Versioned<unknown>, unknown>,
  version: (
    service: MetricsService,
    caller: CallerShape,
    request: P,
  ) => Effect.Effect<{ readonly version: string; readonly token?: string }, unknown>,
  // The store, scope and range whose inputs `version` reads.
  inputsRange: (request: P) => RangeRequest,
): Lane => {
  const seal = Context.get(context.runtime.context, DataSeal);
  return async (lane) => {
    // The sealing key, read once; while it cannot be read, the HttpApi answers.
    if (!seal.ready() && (await runLane(context, lane, () => seal.load)) === undefined) {
      return undefined;
    }
    const storeId = plainId(path.exec(lane.url.pathname)?.[1]);
    const query = plainParams(lane.url, params);
    const request = storeId === undefined || query === undefined
      ? undefined
      : parse(storeId, query);
    if (request === undefined) return undefined;
    const header = lane.request.headers.get("if-none-match") ?? undefined;
    const key = `${kind}|${JSON.stringify(request)}`;
    const kept = header === undefined ? context.answers.get(key) : undefined;
    if (kept !== undefined) {
      const now = await directKept(context, lane, inputsRange(request), kept.version);
      if (now !== undefined) {
        return keptJson(
          context.answers,
          kept,
          jsonHeaders(
            etagOf(kind, now.version, SHAPE_TAG),
            dataHeaders(seal.dataTokenNow(now.token)),
          ),
        );
      }
    }
    const result = await runLane(context, lane, (facts) =>
      Effect.gen(function* () {
        const caller = yield* (yield* Auth).authenticate(facts);
        const service = yield* MetricsService;
        if (kept !== undefined) {
          const now = yield* version(service, caller, request);
          if (now.version === kept.version) return { kind: "kept", now } as const;
        }
        const held = heldVersion(header, kind, SHAPE_TAG);
        return { kind: "read", answer: yield* read(service, caller, request, held) } as const;
      }));
    if (result === undefined) return undefined;
    if (result.kind === "kept") {
      const etag = etagOf(kind, result.now.version, SHAPE_TAG);
      return keptJson(
        context.answers,
        kept!,
        jsonHeaders(etag, dataHeaders(seal.dataTokenNow(result.now.token))),
      );
    }
    const reply = replyFor(kind, header, result.answer, seal.dataTokenNow(result.answer.token));
    if (reply.status === 304) return laneJson(304, reply.headers);
    const bytes = encodeParts(reply.parts);
    context.answers.set(key, result.answer.version, bytes);
    return laneJson(200, reply.headers, bytes);
  };
};

export const metricsLane = (context: LaneContext<MetricsService | Auth | DataSeal>) =>
  currentLane(
    context,
    "m",
    /^\/api\/v1\/stores\/([^/]+)\/metrics$/,
    RANGE_PARAMS,
    plainRange,
    (service, caller, range, held) => service.metrics(caller, range, CURRENT, held),
    (service, caller, range) => service.currentVersion(caller, range),
    (range) => range,
  );

export const targetsLane = (context: LaneContext<MetricsService | Auth | DataSeal>) =>
  currentLane(
    context,
    "t",
    /^\/api\/v1\/stores\/([^/]+)\/targets$/,
    RANGE_PARAMS,
    plainRange,
    (service, caller, range, held) => service.targets(caller, range, CURRENT, held),
    (service, caller, range) => service.currentVersion(caller, range),
    (range) => range,
  );

export const periodsLane = (context: LaneContext<MetricsService | Auth | DataSeal>) =>
  currentLane(
    context,
    "p",
    /^\/api\/v1\/stores\/([^/]+)\/periods$/,
    ["scope_id", "as_of"],
    (storeId, query) => {
      const scopeId = plainId(query.scope_id);
      return scopeId === undefined || !isCalendarDate(query.as_of)
        ? undefined
        : { storeId, scopeId, asOf: query.as_of };
    },
    (service, caller, p, held) =>
      service.periods(caller, p.storeId, p.scopeId, p.asOf, CURRENT, held),
    (service, caller, p) => service.periodsVersion(caller, p.storeId, p.scopeId, p.asOf),
    (p) => periodsRange(p.storeId, p.scopeId, p.asOf),
  );

export const MetricsHttpLive = HttpApiBuilder.group(
  Api,
  "metrics",
  (handlers) =>
    Effect.gen(function* () {
      const service = yield* MetricsService;
      const seal = yield* DataSeal;
      const open = (token: string) => seal.open("data-token", token);
      return handlers
        .handle("targets", ({ path, urlParams: q }) =>
          Effect.gen(function* () {
            const caller = yield* Caller;
            const asOf = yield* asOfOf(q, open);
            return yield* conditional(
              seal,
              "t",
              (held) => service.targets(caller, rangeOf(path.store_id, q), asOf, held),
            );
          }))
        .handle("metrics", ({ path, urlParams: q }) =>
          Effect.gen(function* () {
            const caller = yield* Caller;
            const asOf = yield* asOfOf(q, open);
            return yield* conditional(
              seal,
              "m",
              (held) => service.metrics(caller, rangeOf(path.store_id, q), asOf, held),
            );
          }))
        .handle("periods", ({ path, urlParams: q }) =>
          Effect.gen(function* () {
            const caller = yield* Caller;
            const asOf = yield* asOfOf(q, open);
            return yield* conditional(
              seal,
              "p",
              (held) => service.periods(caller, path.store_id, q.scope_id, q.as_of, asOf, held),
            );
          }));
    }),
);
