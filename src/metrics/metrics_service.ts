// Targets, metrics and period overviews for a caller: the credential's check and the inputs in one
// query, the access checks, then the pure engine. Each answer carries the version of its inputs; a
// caller that holds it gets no body built.
import { Effect } from "effect";
import { StoreAccess } from "../auth/access.ts";
import type { Versioned } from "../domain/answers.ts";
import { Auth } from "../auth/auth_service.ts";
import type { CallerShape, PendingCallerShape } from "../domain/auth.ts";
import { FIRST_DATE } from "../domain/common.ts";
import type { MetricsResponse, PeriodOverview, TargetsResponse } from "../domain/metrics.ts";
import { addDays, isValidRange, METRICS_MAX_DAYS, type RangeRequest } from "../domain/range.ts";
import { computeDays, computeMetrics, computeTargets, RULE_VERSION, summarize } from "./engine.ts";
import { type MetricInputs, MetricsRepo } from "./metrics_repo.ts";
import { DEFAULT_TEV_WARNING_RATIO } from "./targets.ts";
import { AsOfRepo } from "../energy/as_of_repo.ts";
import { QualityRepo } from "../quality/quality_repo.ts";
import { checkQuality, describeQuality } from "../quality/quality_rules.ts";
import { currentLanguage, type Language } from "../domain/language.ts";
import type { AsOf, ResolvedAsOf } from "../domain/as_of.ts";
import { span } from "../ops/span.ts";

const TARGETS_NOTE =
  "One row per day. NO_EFFECTIVE_TARGET days carry null values and are never zero-filled. " +
  "TES-180 and TES-210 are device cost / 180 (or 210) / electricity price 1, each on its own; " +
  "tes_kwh is the legacy compatibility value. TEV is the latest valid positive legacy value with " +
  "the date it was observed. Sealed candidates in the store reference are not effective targets. " +
  "No pass or fail is computed here: see the metrics endpoint.";

// rules.md §7: the periods of an overview, all ending at as_of, and the range of days they read.
// A period that would start before the first date a request may name starts on it (its summary
// counts the days it has): there is no year 0000 to read.
const daysBack = (asOf: string, days: number) => {
  const start = addDays(asOf, -days);
  return start < FIRST_DATE ? FIRST_DATE : start;
};

const periodRanges = (asOf: string) => [
  { key: "day" as const, label: "Day", start: asOf },
  { key: "week" as const, label: "Last 7 days", start: daysBack(asOf, 6) },
  { key: "month" as const, label: "Last 30 days", start: daysBack(asOf, 29) },
  { key: "year" as const, label: "Year to date", start: `${asOf.slice(0, 4)}-01-01` },
];

export const periodsRange = (storeId: number, scopeId: number, asOf: string): RangeRequest => ({
  storeId,
  scopeId,
  start: periodRanges(asOf).reduce((min, r) => (r.start < min ? r.start : min), asOf),
  end: asOf,
});

// The metrics answer from its computed parts: the days' metrics and their quality check, whose
// flagged days are named in the notes (the contract's fields only: the check's details are the
// quality endpoint's).
export const metricsAnswer = (
  head: {
    readonly store_id: number;
    readonly scope_id: number;
    readonly timezone: string;
    readonly start: string;
    readonly end: string;
  },
  unit: string,
  result: ReturnType<typeof computeMetrics>,
  checked: ReturnType<typeof checkQuality>,
  language: Language,
) => {
  const flagged = checked.summary.flagged_days > 0 ? describeQuality(checked, language) : [];
  return {
    ...head,
    unit,
    baseline_policy: "SUMMER_ONLY",
    baseline_usage: "LOCAL_TRIAL",
    rule_version: RULE_VERSION,
    tev_warning_ratio: DEFAULT_TEV_WARNING_RATIO,
    summary: result.summary,
    availability: result.availability,
    days: result.days,
    notes: flagged.length === 0 ? result.notes : [...result.notes, ...flagged],
  } as const;
};

// What a read of inputs gives: the inputs (none when the caller holds their version), their version
// and data token, and the commit of a read as of an earlier instant.
interface Loaded {
  readonly inputs: MetricInputs | undefined;
  readonly version: string;
  readonly token: string | undefined;
  readonly at: ResolvedAsOf | undefined;
}

export class MetricsService extends Effect.Service<MetricsService>()("Metrics/MetricsService", {
  effect: Effect.gen(function* () {
    const repo = yield* MetricsRepo;
    const access = yield* StoreAccess;
    const asOfRepo = yield* AsOfRepo;
    const quality = yield* QualityRepo;
    const auth = yield* Auth;

    // The inputs of a range for a verified caller, now or as of an earlier instant (then no
    // conditional read: `held` is ignored and the answer says which commit it shows).
    const loadVerified = (caller: CallerShape, request: RangeRequest, asOf: AsOf) =>
      Effect.gen(function* () {
        const scope = yield* access.range(caller, request, METRICS_MAX_DAYS);
        const at = asOf.kind === "current"
          ? undefined
          : yield* asOfRepo.resolve(asOf, caller.storeIds);
        const { storeId, scopeId, start, end } = request;
        const inputs = yield* repo.inputs(
          storeId,
          scopeId,
          start,
          end,
          scope.timezone,
          caller.storeIds,
          at?.seq,
        );
        return { scope, inputs, version: inputs.version, token: inputs.token, at };
      });

    // One round trip (metric_read): the credential's row and, only when that credential may read
    // the range's store and scope, the current inputs' version and (unless `versionOnly`, or the
    // caller holds that version) the inputs. The caller is then decided from the row as a
    // verified one would be, so every refusal is the one of range(), in its order.
    const readFor = (
      pending: PendingCallerShape,
      request: RangeRequest,
      held: string | undefined,
      versionOnly: boolean,
    ) =>
      Effect.gen(function* () {
        const read = yield* repo.read(pending.credential, request, held, versionOnly);
        const caller = yield* auth.accept(pending, read.credential);
        // The range is valid here (load and currentVersion check it first).
        const scope = yield* access.foundScope(
          caller,
          request.storeId,
          request.scopeId,
          read.scope,
        );
        return { caller, scope, read };
      });

    // The inputs for a pending caller: a current read checks the credential in its statement; a
    // bad range (refused once the credential and the store pass) and a read as of an earlier
    // instant verify it first. `inputs` is undefined when the caller holds their version.
    const load = (pending: PendingCallerShape, request: RangeRequest, asOf: AsOf, held?: string) =>
      Effect.gen(function* () {
        if (
          asOf.kind !== "current" || !isValidRange(request.start, request.end, METRICS_MAX_DAYS)
        ) {
          return yield* loadVerified(yield* auth.verify(pending), request, asOf);
        }
        const { caller, scope, read } = yield* readFor(pending, request, held, false);
        // No version with every check passed: the store's scopes changed under the kept facts.
        if (read.version === undefined) return yield* loadVerified(caller, request, asOf);
        return {
          scope,
          inputs: read.inputs,
          version: read.version,
          token: read.token,
          at: undefined,
        };
      });

    // The version (and data token) of the current inputs of a range, for a caller that may read
    // it: what a kept answer is compared with (src/reads/conditional_read.ts). One statement with
    // the credential's check.
    const currentVersion = (pending: PendingCallerShape, request: RangeRequest) =>
      Effect.gen(function* () {
        const { storeId, scopeId, start, end } = request;
        if (!isValidRange(start, end, METRICS_MAX_DAYS)) {
          const caller = yield* auth.verify(pending);
          yield* access.range(caller, request, METRICS_MAX_DAYS);
          return yield* repo.version(storeId, scopeId, start, end, caller.storeIds);
        }
        const { caller, read } = yield* readFor(pending, request, undefined, true);
        if (read.version === undefined) {
          return yield* repo.version(storeId, scopeId, start, end, caller.storeIds);
        }
        return { version: read.version, token: read.token };
      });

    // The inputs to compute from, or none when the caller holds the current version.
    const toCompute = (loaded: Loaded, held?: string) =>
      loaded.at === undefined && loaded.version === held ? undefined : loaded.inputs;

    const versioned = <A>(loaded: Loaded, value?: A) => ({
      version: loaded.version,
      token: loaded.at?.token ?? loaded.token,
      asOf: loaded.at,
      value,
    });

    // The fields every range answer starts with.
    const head = (request: RangeRequest, timezone: string) => ({
      store_id: request.storeId,
      scope_id: request.scopeId,
      timezone,
      start: request.start,
      end: request.end,
    });

    const targets = (
      pending: PendingCallerShape,
      request: RangeRequest,
      asOf: AsOf,
      held?: string,
    ) =>
      Effect.map(
        load(pending, request, asOf, held),
        (loaded): Versioned<TargetsResponse> => {
          const inputs = toCompute(loaded, held);
          if (inputs === undefined) return versioned(loaded);
          const result = computeTargets(inputs.days);
          return versioned(loaded, {
            ...head(request, loaded.scope.timezone),
            unit: "kWh/日",
            summary: result.summary,
            days: result.days,
            note: TARGETS_NOTE,
          });
        },
      ).pipe(span("MetricsService.targets"));

    // Days whose energy disagrees with the device reports are named in the notes (src/quality/);
    // an answer without such days is unchanged.
    const metrics = (
      pending: PendingCallerShape,
      request: RangeRequest,
      asOf: AsOf,
      held?: string,
    ) =>
      Effect.gen(function* () {
        const loaded = yield* load(pending, request, asOf, held);
        const inputs = toCompute(loaded, held);
        if (inputs === undefined) return versioned(loaded);
        const result = computeMetrics(inputs.days, inputs.baseline);
        const evidence = yield* quality.evidence(
          request.scopeId,
          inputs.energy.map((d) => d.date),
        );
        return versioned(
          loaded,
          metricsAnswer(
            head(request, loaded.scope.timezone),
            loaded.scope.unit,
            result,
            checkQuality(inputs.energy, evidence),
            yield* currentLanguage,
          ),
        ) satisfies Versioned<MetricsResponse>;
      }).pipe(span("MetricsService.metrics"));

    // rules.md §7: day, last 7, last 30 days and year to date, all ending at as_of; one query.
    const periods = (
      pending: PendingCallerShape,
      storeId: number,
      scopeId: number,
      asOf: string,
      known: AsOf,
      held?: string,
    ) =>
      Effect.gen(function* () {
        const ranges = periodRanges(asOf);
        const loaded = yield* load(pending, periodsRange(storeId, scopeId, asOf), known, held);
        const inputs = toCompute(loaded, held);
        if (inputs === undefined) return versioned(loaded) satisfies Versioned<PeriodOverview>;
        const days = computeDays(inputs.days, inputs.baseline);
        return versioned(loaded, {
          store_id: storeId,
          scope_id: scopeId,
          as_of: asOf,
          timezone: loaded.scope.timezone,
          periods: ranges.map((r) => ({
            key: r.key,
            label: r.label,
            start: r.start,
            end: asOf,
            summary: summarize(days.filter((d) => d.date >= r.start)),
          })),
        }) satisfies Versioned<PeriodOverview>;
      }).pipe(span("MetricsService.periods"));

    const periodsVersion = (
      pending: PendingCallerShape,
      storeId: number,
      scopeId: number,
      asOf: string,
    ) => currentVersion(pending, periodsRange(storeId, scopeId, asOf));

    return { targets, metrics, periods, currentVersion, periodsVersion } as const;
  }),
  dependencies: [
    MetricsRepo.Default,
    AsOfRepo.Default,
    QualityRepo.Default,
    StoreAccess.Default,
    Auth.Default,
  ],
}) {}
