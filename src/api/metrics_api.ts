// Targets, energy-saving metrics and period overviews.
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint";
import * as HttpApiGroup from "@effect/platform/HttpApiGroup";
import * as OpenApi from "@effect/platform/OpenApi";
import { MetricsResponse, PeriodOverview, TargetsResponse } from "../domain/metrics.ts";
import { AS_OF, AS_OF_NOTE, CALLER, operation, SCOPE_RANGE, STORE_OBJECT } from "./openapi.ts";
import { PeriodAsOfParams, RangeAsOfParams } from "./as_of_params.ts";
import { StorePath } from "./params.ts";
import { PendingAuthentication } from "./security.ts";

// Each read verifies its caller in the same statement as its data (PendingAuthentication).
export class MetricsApi extends HttpApiGroup.make("metrics")
  .add(
    HttpApiEndpoint.get("targets", "/stores/:store_id/targets")
      .setPath(StorePath)
      .setUrlParams(RangeAsOfParams)
      .addSuccess(TargetsResponse)
      .annotateContext(operation({
        summary: "Daily energy-saving targets",
        description: "TES-180, TES-210 and TEV per day from `start` to `end` (inclusive, at " +
          "most 731 days) in kWh/日; a day without an officially effective target is " +
          "`NO_EFFECTIVE_TARGET` with nulls. No pass computation. Needs the read permission. " +
          AS_OF_NOTE,
        errors: [...CALLER, ...STORE_OBJECT, ...SCOPE_RANGE, ...AS_OF],
        conditional: true,
        asOf: true,
      })),
  )
  .add(
    HttpApiEndpoint.get("metrics", "/stores/:store_id/metrics")
      .setPath(StorePath)
      .setUrlParams(RangeAsOfParams)
      .addSuccess(MetricsResponse)
      .annotateContext(operation({
        summary: "Energy-saving metrics",
        description: "EBA, AES, AER and the TES-180, TES-210 and TEV pass flags per day from " +
          "`start` to `end` (inclusive, at most 731 days), a summary and per-metric " +
          "availability with reasons; values stay null when an input is missing, stale or " +
          "provisional. Needs the read permission. " + AS_OF_NOTE,
        errors: [...CALLER, ...STORE_OBJECT, ...SCOPE_RANGE, ...AS_OF],
        conditional: true,
        asOf: true,
      })),
  )
  .add(
    HttpApiEndpoint.get("periods", "/stores/:store_id/periods")
      .setPath(StorePath)
      .setUrlParams(PeriodAsOfParams)
      .addSuccess(PeriodOverview)
      .annotateContext(operation({
        summary: "Metric summaries by period",
        description: "Metric summaries of the day, the last 7 days, the last 30 days and the " +
          "year to date, all ending at `as_of`, with their coverage counts. Needs the read " +
          "permission. `as_of` is a business date; to read the data as known at an earlier " +
          "instant, use `known_at` or `data_token`. " + AS_OF_NOTE,
        errors: [...CALLER, ...STORE_OBJECT, "INVALID_SCOPE", ...AS_OF],
        conditional: true,
        asOf: true,
      })),
  )
  .middleware(PendingAuthentication)
  .prefix("/api/v1")
  .annotate(OpenApi.Description, "Targets, energy-saving metrics and period overviews") {}
