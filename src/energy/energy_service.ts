// Energy reads for a caller: access and range checks, then the set-based repository queries.
import { Effect } from "effect";
import { inScope, requirePermission, StoreAccess } from "../auth/access.ts";
import { Auth } from "../auth/auth_service.ts";
import { type AsOfAnswer, type JsonPart, JsonText, type Versioned } from "../domain/answers.ts";
import type { AsOf } from "../domain/as_of.ts";
import type { CallerShape, PendingCallerShape } from "../domain/auth.ts";
import { conflict, forbidden, notFound } from "../domain/errors.ts";
import { Messages } from "../domain/messages.ts";
import { ENERGY_MAX_DAYS, isValidRange, type RangeRequest } from "../domain/range.ts";
import type { ScopeFacts } from "../domain/stores.ts";
import { AsOfRepo } from "./as_of_repo.ts";
import { EnergyRepo } from "./energy_repo.ts";
import { span } from "../ops/span.ts";

export const ENERGY_METRIC = "AIR_CONDITIONING_DAILY_ENERGY";

// An EnergyResponse: its head as values, its summary and its days as stored JSON (the days in
// parts, one per calendar month, that join with ", " into the DailyRow array's items; as bytes
// when read by energy_read).
export interface EnergyDays {
  readonly head: {
    readonly store_id: number;
    readonly scope_id: number;
    readonly metric: string;
    readonly unit: string;
    readonly timezone: string;
    readonly start: string;
    readonly end: string;
  };
  readonly summary: JsonText;
  readonly days: ReadonlyArray<JsonPart>;
}

export const headOf = (request: RangeRequest, scope: ScopeFacts): EnergyDays["head"] => ({
  store_id: request.storeId,
  scope_id: request.scopeId,
  metric: ENERGY_METRIC,
  unit: scope.unit,
  timezone: scope.timezone,
  start: request.start,
  end: request.end,
});

export class EnergyService extends Effect.Service<EnergyService>()("Energy/EnergyService", {
  effect: Effect.gen(function* () {
    const repo = yield* EnergyRepo;
    const access = yield* StoreAccess;
    const auth = yield* Auth;
    const asOfRepo = yield* AsOfRepo;

    // Verify first, then read: for a caller that is already verified, and for a bad range (the
    // refusals keep their order: 401, 403, 404, 403, 400 scope, 400 range).
    const days = (caller: CallerShape, request: RangeRequest, held?: string) =>
      Effect.gen(function* () {
        const scope = yield* access.range(caller, request, ENERGY_MAX_DAYS);
        const rows = yield* repo.days(request.scopeId, request.start, request.end);
        return {
          version: rows.version,
          token: rows.token,
          value: rows.version === held ? undefined : {
            head: headOf(request, scope),
            summary: JsonText(rows.summary),
            days: rows.parts.map(JsonText),
          },
        } satisfies Versioned<EnergyDays>;
      }).pipe(span("EnergyService.days"));

    // The days as they were at an earlier instant (or commit): checks first, in the same order.
    const daysAsOf = (
      caller: CallerShape,
      request: RangeRequest,
      asOf: Exclude<AsOf, { kind: "current" }>,
    ) =>
      Effect.gen(function* () {
        const scope = yield* access.range(caller, request, ENERGY_MAX_DAYS);
        const at = yield* asOfRepo.resolve(asOf, caller.storeIds);
        const rows = yield* repo.daysAt(request.scopeId, request.start, request.end, at.seq);
        if (!rows.kept) {
          return yield* conflict(Messages.dayStateNotKept());
        }
        return {
          asOf: at,
          value: {
            head: headOf(request, scope),
            summary: JsonText(rows.summary),
            days: rows.parts.map(JsonText),
          },
        } satisfies AsOfAnswer<EnergyDays>;
      }).pipe(span("EnergyService.daysAsOf"));

    // One round trip: energy_read returns the credential's row and, only when that credential may
    // read this store's scope, the days (or only their version, when the caller holds it). The
    // caller is then decided from the row exactly as a verified caller would be, so every refusal
    // is the one of days().
    const daysFor = (pending: PendingCallerShape, request: RangeRequest, held?: string) =>
      Effect.gen(function* () {
        if (!isValidRange(request.start, request.end, ENERGY_MAX_DAYS)) {
          return yield* days(yield* auth.verify(pending), request, held);
        }
        const read = yield* repo.read({
          credential: pending.credential,
          storeId: request.storeId,
          scopeId: request.scopeId,
          start: request.start,
          end: request.end,
          ifVersion: held,
        });
        const caller = yield* auth.accept(pending, read.credential);
        const scope = yield* access.foundScope(
          caller,
          request.storeId,
          request.scopeId,
          read.scope,
        );
        // No version with every check passed: the store's scopes changed under the cached facts.
        if (read.version === undefined) return yield* days(caller, request, held);
        return {
          version: read.version,
          token: read.token,
          value: read.data === undefined ? undefined : {
            head: headOf(request, scope),
            summary: JsonText(read.data.summary),
            days: read.data.parts,
          },
        } satisfies Versioned<EnergyDays>;
      }).pipe(span("EnergyService.daysFor"));

    const daysAsOfFor = (
      pending: PendingCallerShape,
      request: RangeRequest,
      asOf: Exclude<AsOf, { kind: "current" }>,
    ) => Effect.flatMap(auth.verify(pending), (caller) => daysAsOf(caller, request, asOf));

    const versions = (caller: CallerShape, storeId: number, date: string) =>
      Effect.gen(function* () {
        const scopes = yield* access.store(caller, storeId, "raw");
        const scopeId = scopes[0].scope_id;
        const found = yield* repo.versions(scopeId, date, caller.storeIds);
        return {
          store_id: storeId,
          business_date: date,
          scope_id: scopeId,
          current: found.current,
          versions: found.versions,
        };
      }).pipe(span("EnergyService.versions"));

    const history = (caller: CallerShape, energyId: number) =>
      Effect.gen(function* () {
        yield* requirePermission(caller, "raw");
        const owner = yield* repo.factOwner(energyId);
        if (owner.length === 0) return yield* notFound(Messages.factMissing(energyId));
        // The message names no store: the caller named a fact, not the store it belongs to.
        if (!inScope(caller, owner[0].store_id)) {
          return yield* forbidden(Messages.factOutside());
        }
        return { revisions: yield* repo.history(energyId, caller.storeIds) };
      }).pipe(span("EnergyService.history"));

    return { days, daysFor, daysAsOf, daysAsOfFor, versions, history } as const;
  }),
  dependencies: [EnergyRepo.Default, AsOfRepo.Default, StoreAccess.Default, Auth.Default],
}) {}
