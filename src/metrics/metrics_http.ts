// Handlers of the metrics group: targets, metrics, period overviews.
import { HttpApiBuilder } from "@effect/platform";
import { Effect } from "effect";
import { Api } from "../api/api.ts";
import { Caller } from "../domain/auth.ts";
import { rangeOf } from "../domain/range.ts";
import { MetricsService } from "./metrics_service.ts";

export const MetricsHttpLive = HttpApiBuilder.group(
  Api,
  "metrics",
  (handlers) =>
    Effect.gen(function* () {
      const service = yield* MetricsService;
      return handlers
        .handle(
          "targets",
          ({ path, urlParams: q }) =>
            Effect.flatMap(Caller, (caller) => service.targets(caller, rangeOf(path.store_id, q))),
        )
        .handle(
          "metrics",
          ({ path, urlParams: q }) =>
            Effect.flatMap(Caller, (caller) => service.metrics(caller, rangeOf(path.store_id, q))),
        )
        .handle(
          "periods",
          ({ path, urlParams: q }) =>
            Effect.flatMap(Caller, (caller) =>
              service.periods(caller, path.store_id, q.scope_id, q.as_of)),
        );
    }),
);
