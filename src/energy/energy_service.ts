// Energy reads for a caller: access and range checks, then the set-based repository queries.
import { Effect } from "effect";
import { jsonResponse } from "../api/json_response.ts";
import { Auth } from "../auth/auth_service.ts";
import type { CallerShape, PendingCallerShape } from "../domain/auth.ts";
import { notFound } from "../domain/errors.ts";
import { ENERGY_MAX_DAYS, isValidRange, type RangeRequest } from "../domain/range.ts";
import { inScope, outsideStores, requirePermission, StoreAccess } from "../auth/access.ts";
import type { ScopeFacts } from "../stores/store_repo.ts";
import { type EnergyDaysJson, EnergyRepo } from "./energy_repo.ts";

export const ENERGY_METRIC = "AIR_CONDITIONING_DAILY_ENERGY";

export class EnergyService extends Effect.Service<EnergyService>()("Energy/EnergyService", {
  effect: Effect.gen(function* () {
    const repo = yield* EnergyRepo;
    const access = yield* StoreAccess;
    const auth = yield* Auth;

    const respond = (request: RangeRequest, scope: ScopeFacts, rows: EnergyDaysJson) => {
      const head = JSON.stringify({
        store_id: request.storeId,
        scope_id: request.scopeId,
        metric: ENERGY_METRIC,
        unit: scope.unit,
        timezone: scope.timezone,
        start: request.start,
        end: request.end,
      });
      return jsonResponse(`${head.slice(0, -1)},"summary":${rows.summary},"days":${rows.days}}`);
    };

    // Verify first, then read: for a caller that is already verified, and for a bad range (the
    // refusals keep their order: 401, 403, 404, 403, 400 scope, 400 range).
    const days = (caller: CallerShape, request: RangeRequest) =>
      Effect.gen(function* () {
        const scope = yield* access.range(caller, request, ENERGY_MAX_DAYS);
        return respond(
          request,
          scope,
          yield* repo.days(request.scopeId, request.start, request.end),
        );
      }).pipe(Effect.withSpan("EnergyService.days"));

    // One round trip: energy_read returns the credential's row and, only when that credential may
    // read this store's scope, the days. The caller is then decided from the row exactly as a
    // verified caller would be, so every refusal is the one of days().
    const daysFor = (pending: PendingCallerShape, request: RangeRequest) =>
      Effect.gen(function* () {
        if (!isValidRange(request.start, request.end, ENERGY_MAX_DAYS)) {
          return yield* days(yield* auth.verify(pending), request);
        }
        const read = yield* repo.read(
          pending.credential,
          request.storeId,
          request.scopeId,
          request.start,
          request.end,
        );
        const caller = yield* auth.accept(pending, read.credential);
        const scope = yield* access.scope(caller, request.storeId, request.scopeId, "read");
        // No data with every check passed: the store's scopes changed under the cached facts.
        const rows = read.data ?? (yield* repo.days(request.scopeId, request.start, request.end));
        return respond(request, scope, rows);
      }).pipe(Effect.withSpan("EnergyService.daysFor"));

    const versions = (caller: CallerShape, storeId: number, date: string) =>
      Effect.gen(function* () {
        const scopes = yield* access.store(caller, storeId, "raw");
        const scopeId = scopes[0].scope_id;
        const found = yield* repo.versions(scopeId, date);
        return {
          store_id: storeId,
          business_date: date,
          scope_id: scopeId,
          current: found.current,
          versions: found.versions,
        };
      }).pipe(Effect.withSpan("EnergyService.versions"));

    const history = (caller: CallerShape, energyId: number) =>
      Effect.gen(function* () {
        yield* requirePermission(caller, "raw");
        const owner = yield* repo.factOwner(energyId);
        if (owner.length === 0) return yield* notFound(`Energy fact ${energyId} does not exist`);
        // The message names no store: the caller named a fact, not the store it belongs to.
        if (!inScope(caller, owner[0].store_id)) {
          return yield* outsideStores("This energy fact belongs to a store");
        }
        return { revisions: yield* repo.history(energyId) };
      }).pipe(Effect.withSpan("EnergyService.history"));

    return { days, daysFor, versions, history } as const;
  }),
  dependencies: [EnergyRepo.Default, StoreAccess.Default, Auth.Default],
}) {}
