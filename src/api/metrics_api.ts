// Targets, energy-saving metrics and period overviews.
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint";
import * as HttpApiGroup from "@effect/platform/HttpApiGroup";
import * as OpenApi from "@effect/platform/OpenApi";
import { Schema } from "effect";
import { DateString, IdFromString } from "../domain/common.ts";
import { MetricsResponse, PeriodOverview, TargetsResponse } from "../domain/metrics.ts";
import { CALLER, operation, SCOPE_RANGE, STORE_OBJECT } from "./openapi.ts";
import { RangeParams, StorePath } from "./params.ts";
import { Authentication } from "./security.ts";

export class MetricsApi extends HttpApiGroup.make("metrics")
  .add(
    HttpApiEndpoint.get("targets", "/stores/:store_id/targets")
      .setPath(StorePath)
      .setUrlParams(RangeParams)
      .addSuccess(TargetsResponse)
      .annotateContext(operation({
        summary: "Daily energy-saving targets",
        description: "TES-180, TES-210 and TEV per day from `start` to `end` (inclusive, at " +
          "most 731 days) in kWh/日; a day without an officially effective target is " +
          "`NO_EFFECTIVE_TARGET` with nulls. No pass computation. Needs the read permission.",
        errors: [...CALLER, ...STORE_OBJECT, ...SCOPE_RANGE],
        conditional: true,
      })),
  )
  .add(
    HttpApiEndpoint.get("metrics", "/stores/:store_id/metrics")
      .setPath(StorePath)
      .setUrlParams(RangeParams)
      .addSuccess(MetricsResponse)
      .annotateContext(operation({
        summary: "Energy-saving metrics",
        description: "EBA, AES, AER and the TES-180, TES-210 and TEV pass flags per day from " +
          "`start` to `end` (inclusive, at most 731 days), a summary and per-metric " +
          "availability with reasons; values stay null when an input is missing, stale or " +
          "provisional. Needs the read permission.",
        errors: [...CALLER, ...STORE_OBJECT, ...SCOPE_RANGE],
        conditional: true,
      })),
  )
  .add(
    HttpApiEndpoint.get("periods", "/stores/:store_id/periods")
      .setPath(StorePath)
      .setUrlParams(Schema.Struct({ scope_id: IdFromString, as_of: DateString }))
      .addSuccess(PeriodOverview)
      .annotateContext(operation({
        summary: "Metric summaries by period",
        description: "Metric summaries of the day, the last 7 days, the last 30 days and the " +
          "year to date, all ending at `as_of`, with their coverage counts. Needs the read " +
          "permission.",
        errors: [...CALLER, ...STORE_OBJECT, "INVALID_SCOPE"],
        conditional: true,
      })),
  )
  .middleware(Authentication)
  .prefix("/api/v1")
  .annotate(OpenApi.Description, "Targets, energy-saving metrics and period overviews") {}
