// Monthly totals for a caller: the range checked as the metrics read checks it, the inputs of the
// range and the year before it in one read of MetricsRepo, the days computed by the engine, then
// summed per month (months.ts). Each answer carries the version of its inputs.
import { Effect } from "effect";
import { StoreAccess } from "../auth/access.ts";
import type { Versioned } from "../domain/answers.ts";
import type { AsOf } from "../domain/as_of.ts";
import type { CallerShape } from "../domain/auth.ts";
import { MONTHS_MAX_DAYS, type MonthsResponse } from "../domain/months.ts";
import type { RangeRequest } from "../domain/range.ts";
import { AsOfRepo } from "../energy/as_of_repo.ts";
import { span } from "../ops/span.ts";
import { computeDays, RULE_VERSION } from "./engine.ts";
import { MetricsRepo } from "./metrics_repo.ts";
import { monthPlan, monthRows } from "./months.ts";

const NOTES: ReadonlyArray<string> = [
  "Each month's summary is the summary the metrics read gives for that month's days within the " +
  "range: exact sums rounded once; savings (aes_kwh) count only matched days (actual and EBA " +
  "present, stage TRIAL or OPERATING) and are null when negative; pass flags are decided on the " +
  "settled days alone.",
  "year_earlier holds the same days one year earlier (29 February becomes 28 February; a span " +
  "ending on a month's last day ends on that month's last day, so February meets all of " +
  "February), summed by the same rules, with the stages, targets and baseline of that time.",
];

export class MonthsService extends Effect.Service<MonthsService>()("Metrics/MonthsService", {
  effect: Effect.gen(function* () {
    const repo = yield* MetricsRepo;
    const access = yield* StoreAccess;
    const asOfRepo = yield* AsOfRepo;

    // The monthly totals of a range, now or as of an earlier instant (then `held` is ignored and
    // the answer says which commit it shows); nothing is built when the caller holds the version.
    const months = (caller: CallerShape, request: RangeRequest, asOf: AsOf, held?: string) =>
      Effect.gen(function* () {
        const scope = yield* access.range(caller, request, MONTHS_MAX_DAYS);
        const at = asOf.kind === "current"
          ? undefined
          : yield* asOfRepo.resolve(asOf, caller.storeIds);
        const { storeId, scopeId, start, end } = request;
        const plan = monthPlan(start, end);
        const inputs = yield* repo.inputs(
          storeId,
          scopeId,
          plan.readStart,
          end,
          scope.timezone,
          caller.storeIds,
          at?.seq,
        );
        const head = { version: inputs.version, token: at?.token ?? inputs.token, asOf: at };
        if (at === undefined && inputs.version === held) {
          return { ...head, value: undefined } satisfies Versioned<MonthsResponse>;
        }
        const rows = monthRows(plan, computeDays(inputs.days, inputs.baseline));
        return {
          ...head,
          value: {
            store_id: storeId,
            scope_id: scopeId,
            unit: scope.unit,
            timezone: scope.timezone,
            start,
            end,
            rule_version: RULE_VERSION,
            months: rows.months,
            total: rows.total,
            notes: [...NOTES],
          },
        } satisfies Versioned<MonthsResponse>;
      }).pipe(span("MonthsService.months"));

    // The version (and data token) the inputs of a range's answer are at now.
    const currentVersion = (caller: CallerShape, request: RangeRequest) =>
      Effect.gen(function* () {
        yield* access.range(caller, request, MONTHS_MAX_DAYS);
        const { storeId, scopeId, start, end } = request;
        return yield* repo.version(
          storeId,
          scopeId,
          monthPlan(start, end).readStart,
          end,
          caller.storeIds,
        );
      }).pipe(span("MonthsService.currentVersion"));

    return { months, currentVersion } as const;
  }),
  dependencies: [MetricsRepo.Default, AsOfRepo.Default, StoreAccess.Default],
}) {}
