// Permission and store-scope checks shared by every business endpoint (rules.md §9).
import { Effect } from "effect";
import { type CallerShape, canWrite, type Permission } from "../domain/auth.ts";
import { badRequest, forbidden, notFound } from "../domain/errors.ts";
import { checkRange, type RangeRequest } from "../domain/range.ts";
import { type ScopeFacts, StoreRepo } from "./store_repo.ts";

// write and raw build on read: their answers show store data (a template's store names, a
// preview's current values and notes, a profile, revisions and versions), which a key without read
// must not see. A key lacking read is refused with that name whatever else it holds.
export const requirePermission = (caller: CallerShape, permission: Permission) => {
  if (
    permission !== "read" && caller.permissions.has(permission) && !caller.permissions.has("read")
  ) {
    return Effect.fail(
      forbidden(
        `This key lacks the read permission, which ${permission} operations also need`,
        "PERMISSION_MISSING",
      ),
    );
  }
  if (!caller.permissions.has(permission)) {
    return Effect.fail(
      forbidden(`This key lacks the ${permission} permission`, "PERMISSION_MISSING"),
    );
  }
  if (permission === "write" && !canWrite(caller)) {
    return Effect.fail(forbidden("This member's role does not allow writes", "ROLE_READ_ONLY"));
  }
  return Effect.void;
};

export const inScope = (caller: CallerShape, storeId: number) =>
  caller.storeIds === null || caller.storeIds.includes(storeId);

export class StoreAccess extends Effect.Service<StoreAccess>()("Stores/StoreAccess", {
  effect: Effect.gen(function* () {
    const repo = yield* StoreRepo;

    // 403 without the permission, 404 for an unknown store, 403 outside the key's stores.
    const store = (caller: CallerShape, storeId: number, permission: Permission) =>
      Effect.gen(function* () {
        yield* requirePermission(caller, permission);
        const scopes = yield* repo.scopes(storeId);
        if (scopes.length === 0) return yield* notFound(`Store ${storeId} does not exist`);
        if (!inScope(caller, storeId)) {
          return yield* forbidden(
            `Store ${storeId} is outside this key's stores`,
            "STORE_FORBIDDEN",
          );
        }
        return scopes;
      });

    // As store(), plus: the scope must be this store's metering scope (400 otherwise).
    const scope = (caller: CallerShape, storeId: number, scopeId: number, permission: Permission) =>
      Effect.flatMap(store(caller, storeId, permission), (scopes) => {
        const found = scopes.find((s) => s.scope_id === scopeId);
        return found === undefined
          ? Effect.fail(
            badRequest(
              `scope_id ${scopeId} is not a metering scope of store ${storeId}`,
              "INVALID_SCOPE",
            ),
          )
          : Effect.succeed<ScopeFacts>(found);
      });

    // As scope(), for a read of a date range of at most maxDays days.
    const range = (caller: CallerShape, request: RangeRequest, maxDays: number) =>
      Effect.zipLeft(
        scope(caller, request.storeId, request.scopeId, "read"),
        checkRange(request.start, request.end, maxDays),
      );

    return { store, scope, range } as const;
  }),
  dependencies: [StoreRepo.Default],
}) {}
