// Handlers of the metrics group: targets, metrics, period overviews, each a conditional read.
// Answers are encoded here (JSON.stringify of the contract's types, the days a month at a time:
// encoding a 366-day metrics answer through its schema costs ten times computing it; the tests
// check every shape).
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder";
import * as HttpServerRequest from "@effect/platform/HttpServerRequest";
import { Effect } from "effect";
import { Api } from "../api/api.ts";
import {
  chunkedJson,
  dataHeaders,
  etagMatches,
  etagOf,
  heldVersion,
  jsonParts,
  notModified,
} from "../api/json_response.ts";
import type { Versioned } from "../domain/answers.ts";
import { Caller } from "../domain/auth.ts";
import { asOfOf } from "../domain/as_of.ts";
import { rangeOf } from "../domain/range.ts";
import { SHAPE_TAG } from "../routines.ts";
import { MetricsService } from "./metrics_service.ts";

// A conditional read of one kind of answer: the version the client holds goes to the service,
// which builds nothing when it is current.
// An answer as of an earlier instant has no ETag: it says which commit it shows.
const conditional = <A, E, R>(
  kind: string,
  read: (held: string | undefined) => Effect.Effect<Versioned<A>, E, R>,
) =>
  Effect.gen(function* () {
    const header = (yield* HttpServerRequest.HttpServerRequest).headers["if-none-match"];
    const answer = yield* read(heldVersion(header, kind, SHAPE_TAG));
    const headers = dataHeaders(answer.token, answer.asOf);
    const body = (value: A) => chunkedJson(value as Readonly<Record<string, unknown>>, "days");
    if (answer.asOf !== undefined) return jsonParts(body(answer.value!), undefined, headers);
    const etag = etagOf(kind, answer.version, SHAPE_TAG);
    return answer.value === undefined || etagMatches(header, etag)
      ? notModified(etag, headers)
      : jsonParts(body(answer.value), etag, headers);
  });

export const MetricsHttpLive = HttpApiBuilder.group(
  Api,
  "metrics",
  (handlers) =>
    Effect.gen(function* () {
      const service = yield* MetricsService;
      return handlers
        .handle("targets", ({ path, urlParams: q }) =>
          Effect.gen(function* () {
            const caller = yield* Caller;
            const asOf = yield* asOfOf(q);
            return yield* conditional(
              "t",
              (held) => service.targets(caller, rangeOf(path.store_id, q), asOf, held),
            );
          }))
        .handle("metrics", ({ path, urlParams: q }) =>
          Effect.gen(function* () {
            const caller = yield* Caller;
            const asOf = yield* asOfOf(q);
            return yield* conditional(
              "m",
              (held) => service.metrics(caller, rangeOf(path.store_id, q), asOf, held),
            );
          }))
        .handle("periods", ({ path, urlParams: q }) =>
          Effect.gen(function* () {
            const caller = yield* Caller;
            const asOf = yield* asOfOf(q);
            return yield* conditional(
              "p",
              (held) => service.periods(caller, path.store_id, q.scope_id, q.as_of, asOf, held),
            );
          }));
    }),
);
