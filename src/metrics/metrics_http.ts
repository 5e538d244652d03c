// Handlers of the metrics group: targets, metrics, period overviews, each a conditional read whose
// statements check the pending caller's credential (PendingAuthentication) along with the data.
// Answers are encoded here (JSON.stringify of the contract's types, the days a month at a time:
// encoding a 366-day metrics answer through its schema costs ten times computing it; the tests
// check every shape).
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder";
import { Effect } from "effect";
import { Api } from "../api/api.ts";
import { DataSeal } from "../auth/data_seal.ts";
import { PendingCaller } from "../domain/auth.ts";
import { asOfOf } from "../domain/as_of.ts";
import { rangeOf, type RangeRequest } from "../domain/range.ts";
import { conditionalRead } from "../reads/conditional_read.ts";
import { ReadCache } from "../reads/read_cache.ts";
import { SHAPE_TAG } from "../routines.ts";
import { MetricsService } from "./metrics_service.ts";

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
            const pending = yield* PendingCaller;
            const asOf = yield* asOfOf(q, open);
            const range = rangeOf(path.store_id, q);
            return yield* conditionalRead(seal, cache, {
              kind: "t",
              tag: SHAPE_TAG,
              key: rangeKey(range),
              asOf,
              items: "days",
              read: (held) => service.targets(pending, range, asOf, held),
              version: service.currentVersion(pending, range),
            });
          }))
        .handle("metrics", ({ path, urlParams: q }) =>
          Effect.gen(function* () {
            const pending = yield* PendingCaller;
            const asOf = yield* asOfOf(q, open);
            const range = rangeOf(path.store_id, q);
            return yield* conditionalRead(seal, cache, {
              kind: "m",
              tag: SHAPE_TAG,
              key: rangeKey(range),
              asOf,
              items: "days",
              read: (held) => service.metrics(pending, range, asOf, held),
              version: service.currentVersion(pending, range),
            });
          }))
        .handle("periods", ({ path, urlParams: q }) =>
          Effect.gen(function* () {
            const pending = yield* PendingCaller;
            const asOf = yield* asOfOf(q, open);
            return yield* conditionalRead(seal, cache, {
              kind: "p",
              tag: SHAPE_TAG,
              key: `${path.store_id}|${q.scope_id}|${q.as_of}`,
              asOf,
              items: "days",
              read: (held) =>
                service.periods(pending, path.store_id, q.scope_id, q.as_of, asOf, held),
              version: service.periodsVersion(pending, path.store_id, q.scope_id, q.as_of),
            });
          }));
    }),
);
