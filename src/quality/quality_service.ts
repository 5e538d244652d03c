// The data-quality check for a caller: the energy endpoint's access and range checks, then the
// range's days and their device evidence (two set-based reads), judged by the pure rules.
import { Effect } from "effect";
import { StoreAccess } from "../auth/access.ts";
import { badRequest } from "../domain/errors.ts";
import { Messages } from "../domain/messages.ts";
import type { CallerShape } from "../domain/auth.ts";
import type { QualityResponse } from "../domain/quality.ts";
import { ENERGY_MAX_DAYS, type RangeRequest } from "../domain/range.ts";
import { QualityRepo } from "./quality_repo.ts";
import { currentLanguage, pick } from "../domain/language.ts";
import { checkQuality, describeQuality, flagMessage, QUALITY_RULE } from "./quality_rules.ts";
import { span } from "../ops/span.ts";

// The same limit as the energy read whose days it checks.
export const QUALITY_MAX_DAYS = ENERGY_MAX_DAYS;

export class QualityService extends Effect.Service<QualityService>()("Quality/QualityService", {
  effect: Effect.gen(function* () {
    const repo = yield* QualityRepo;
    const access = yield* StoreAccess;

    // Refusals in the energy read's order: 403 permission, 404 store, 403 outside the key's
    // stores, 400 scope, 400 range; then 400 for a read asked as of an earlier instant.
    const check = (caller: CallerShape, request: RangeRequest, asOfAsked = false) =>
      Effect.gen(function* () {
        const scope = yield* access.range(caller, request, QUALITY_MAX_DAYS);
        if (asOfAsked) return yield* badRequest(Messages.qualityCurrentOnly());
        const days = yield* repo.days(request.scopeId, request.start, request.end);
        const evidence = yield* repo.evidence(request.scopeId, days.map((d) => d.date));
        const result = checkQuality(days, evidence);
        const language = yield* currentLanguage;
        return {
          store_id: request.storeId,
          scope_id: request.scopeId,
          timezone: scope.timezone,
          start: request.start,
          end: request.end,
          coverage: "UNVERIFIED",
          rule: pick(QUALITY_RULE, language),
          summary: result.summary,
          flags: language === "en" ? result.flags : result.flags.map((f) => ({
            ...f,
            message: pick(
              flagMessage(f.kind, f.energy_kwh, f.device_count, result.summary.device_count),
              language,
            ),
          })),
          notes: describeQuality(result, language),
        } satisfies QualityResponse;
      }).pipe(span("QualityService.check"));

    return { check } as const;
  }),
  dependencies: [QualityRepo.Default, StoreAccess.Default],
}) {}
