// Targets, energy-saving metrics and period overviews.
import { HttpApiEndpoint, HttpApiGroup } from "@effect/platform";
import { Schema } from "effect";
import { DateString, IdFromString } from "../domain/common.ts";
import { MetricsResponse, PeriodOverview, TargetsResponse } from "../domain/metrics.ts";
import { RangeParams, StorePath } from "./params.ts";
import { Authentication } from "./security.ts";

export class MetricsApi extends HttpApiGroup.make("metrics")
  .add(
    HttpApiEndpoint.get("targets", "/stores/:store_id/targets")
      .setPath(StorePath)
      .setUrlParams(RangeParams)
      .addSuccess(TargetsResponse),
  )
  .add(
    HttpApiEndpoint.get("metrics", "/stores/:store_id/metrics")
      .setPath(StorePath)
      .setUrlParams(RangeParams)
      .addSuccess(MetricsResponse),
  )
  .add(
    HttpApiEndpoint.get("periods", "/stores/:store_id/periods")
      .setPath(StorePath)
      .setUrlParams(Schema.Struct({ scope_id: IdFromString, as_of: DateString }))
      .addSuccess(PeriodOverview),
  )
  .middleware(Authentication)
  .prefix("/api/v1") {}
