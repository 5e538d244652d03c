// Handlers of the metrics group: targets, metrics, period overviews.
import { HttpApiBuilder } from "@effect/platform";
import { Effect } from "effect";
import { Api } from "../api/api.ts";
import { Caller } from "../domain/auth.ts";
import { notImplemented } from "../domain/errors.ts";
import { StoreAccess } from "../stores/access.ts";

export const MetricsHttpLive = HttpApiBuilder.group(
  Api,
  "metrics",
  (handlers) =>
    Effect.gen(function* () {
      const access = yield* StoreAccess;
      return handlers
        .handle("targets", ({ path, urlParams }) =>
          Effect.gen(function* () {
            yield* access.scope(yield* Caller, path.store_id, urlParams.scope_id, "read");
            return yield* notImplemented("GET /stores/{store_id}/targets");
          }))
        .handle("metrics", ({ path, urlParams }) =>
          Effect.gen(function* () {
            yield* access.scope(yield* Caller, path.store_id, urlParams.scope_id, "read");
            return yield* notImplemented("GET /stores/{store_id}/metrics");
          }))
        .handle("periods", ({ path, urlParams }) =>
          Effect.gen(function* () {
            yield* access.scope(yield* Caller, path.store_id, urlParams.scope_id, "read");
            return yield* notImplemented("GET /stores/{store_id}/periods");
          }));
    }),
);
