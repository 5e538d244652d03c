// Handlers of the energy group: daily energy, per-day versions, revision history.
import { HttpApiBuilder } from "@effect/platform";
import { Effect } from "effect";
import { Api } from "../api/api.ts";
import { Caller } from "../domain/auth.ts";
import { notImplemented } from "../domain/errors.ts";
import { requirePermission, StoreAccess } from "../stores/access.ts";

export const EnergyHttpLive = HttpApiBuilder.group(
  Api,
  "energy",
  (handlers) =>
    Effect.gen(function* () {
      const access = yield* StoreAccess;
      return handlers
        .handle("days", ({ path, urlParams }) =>
          Effect.gen(function* () {
            yield* access.scope(yield* Caller, path.store_id, urlParams.scope_id, "read");
            return yield* notImplemented("GET /stores/{store_id}/energy");
          }))
        .handle("versions", ({ path }) =>
          Effect.gen(function* () {
            yield* access.store(yield* Caller, path.store_id, "raw");
            return yield* notImplemented("GET /stores/{store_id}/energy/{business_date}/versions");
          }))
        .handle("history", () =>
          Effect.gen(function* () {
            yield* requirePermission(yield* Caller, "raw");
            return yield* notImplemented("GET /energy/{energy_id}/history");
          }));
    }),
);
