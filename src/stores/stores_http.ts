// Handlers of the stores group: dataset, stores, catalog; reference and profile edits.
import { HttpApiBuilder } from "@effect/platform";
import { Effect } from "effect";
import { Api } from "../api/api.ts";
import { Caller } from "../domain/auth.ts";
import { notImplemented } from "../domain/errors.ts";
import { requirePermission, StoreAccess } from "./access.ts";
import { StoreRepo } from "./store_repo.ts";

export const StoresHttpLive = HttpApiBuilder.group(
  Api,
  "stores",
  (handlers) =>
    Effect.gen(function* () {
      const repo = yield* StoreRepo;
      const access = yield* StoreAccess;
      return handlers
        .handle("dataset", () =>
          Effect.gen(function* () {
            yield* requirePermission(yield* Caller, "read");
            return yield* repo.dataset;
          }))
        .handle("stores", () =>
          Effect.gen(function* () {
            const caller = yield* Caller;
            yield* requirePermission(caller, "read");
            return { stores: yield* repo.stores(caller.storeIds) };
          }))
        .handle("catalog", () =>
          Effect.gen(function* () {
            const caller = yield* Caller;
            yield* requirePermission(caller, "read");
            return { stores: yield* repo.catalog(caller.storeIds) };
          }))
        .handle("reference", ({ path }) =>
          Effect.gen(function* () {
            yield* access.store(yield* Caller, path.store_id, "read");
            return yield* notImplemented("GET /stores/{store_id}/reference");
          }))
        .handle("profile", ({ path }) =>
          Effect.gen(function* () {
            yield* access.store(yield* Caller, path.store_id, "write");
            return yield* notImplemented("PATCH /stores/{store_id}/profile");
          }));
    }),
);
