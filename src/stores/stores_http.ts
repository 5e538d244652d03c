// Handlers of the stores group: dataset, stores, catalog; reference and profile edits.
import { HttpApiBuilder } from "@effect/platform";
import { Effect } from "effect";
import { Api } from "../api/api.ts";
import { Caller, canWrite } from "../domain/auth.ts";
import { notFound } from "../domain/errors.ts";
import { jsonResponse } from "../api/json_response.ts";
import { requirePermission, StoreAccess } from "../auth/access.ts";
import { ProfileService } from "./profile_service.ts";
import { ReferenceRepo } from "./reference_repo.ts";
import { StoreRepo } from "./store_repo.ts";

export const StoresHttpLive = HttpApiBuilder.group(
  Api,
  "stores",
  (handlers) =>
    Effect.gen(function* () {
      const repo = yield* StoreRepo;
      const access = yield* StoreAccess;
      const references = yield* ReferenceRepo;
      const profiles = yield* ProfileService;
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
            return jsonResponse(yield* repo.stores(caller.storeIds));
          }))
        .handle("catalog", () =>
          Effect.gen(function* () {
            const caller = yield* Caller;
            yield* requirePermission(caller, "read");
            return jsonResponse(yield* repo.catalog(caller.storeIds));
          }))
        .handle("reference", ({ path }) =>
          Effect.gen(function* () {
            const caller = yield* Caller;
            yield* access.store(caller, path.store_id, "read");
            const body = yield* references.reference(path.store_id, canWrite(caller));
            if (body === undefined) return yield* notFound(`Store ${path.store_id} does not exist`);
            return jsonResponse(body);
          }))
        .handle("profile", ({ path, payload }) =>
          Effect.flatMap(Caller, (caller) =>
            profiles.update(caller, path.store_id, {
              name: payload.name,
              address: payload.address,
              expectedVersion: payload.expected_version,
            })));
    }),
);
