// Energy reads for a caller: access and range checks, then the set-based repository queries.
import { Effect } from "effect";
import { jsonResponse } from "../api/json_response.ts";
import type { CallerShape } from "../domain/auth.ts";
import { notFound } from "../domain/errors.ts";
import { ENERGY_MAX_DAYS, type RangeRequest } from "../domain/range.ts";
import { StoreAccess } from "../stores/access.ts";
import { EnergyRepo } from "./energy_repo.ts";

export const ENERGY_METRIC = "AIR_CONDITIONING_DAILY_ENERGY";

export class EnergyService extends Effect.Service<EnergyService>()("Energy/EnergyService", {
  effect: Effect.gen(function* () {
    const repo = yield* EnergyRepo;
    const access = yield* StoreAccess;

    const days = (caller: CallerShape, request: RangeRequest) =>
      Effect.gen(function* () {
        const scope = yield* access.range(caller, request, ENERGY_MAX_DAYS);
        const rows = yield* repo.days(request.scopeId, request.start, request.end);
        const head = JSON.stringify({
          store_id: request.storeId,
          scope_id: request.scopeId,
          metric: ENERGY_METRIC,
          unit: scope.unit,
          timezone: scope.timezone,
          start: request.start,
          end: request.end,
        });
        return jsonResponse(
          `${head.slice(0, -1)},"summary":${rows.summary},"days":${rows.days}}`,
        );
      }).pipe(Effect.withSpan("EnergyService.days"));

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
        const owner = yield* repo.factOwner(energyId);
        if (owner.length === 0) return yield* notFound(`Energy fact ${energyId} does not exist`);
        yield* access.store(caller, owner[0].store_id, "raw");
        return { revisions: yield* repo.history(energyId) };
      }).pipe(Effect.withSpan("EnergyService.history"));

    return { days, versions, history } as const;
  }),
  dependencies: [EnergyRepo.Default, StoreAccess.Default],
}) {}
