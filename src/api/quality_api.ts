// Beyond the contract: days whose energy disagrees with what the store's devices reported.
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint";
import * as HttpApiGroup from "@effect/platform/HttpApiGroup";
import * as OpenApi from "@effect/platform/OpenApi";
import { Schema } from "effect";
import { QualityResponse } from "../domain/quality.ts";
import { CALLER, operation, SCOPE_RANGE, STORE_OBJECT } from "./openapi.ts";
import { RangeParams, StorePath } from "./params.ts";
import { Authentication } from "./security.ts";

// The check reads the current data only: a read as of an earlier instant is refused (400, after
// the credential and store checks, in the energy read's order), not answered with today's data as
// if it were that instant's.
const CurrentOnly = Schema.optional(
  Schema.String.annotations({
    description: "Not taken: the quality check reads the current data only (400 when given).",
  }),
);

const QualityParams = Schema.Struct({
  ...RangeParams.fields,
  known_at: CurrentOnly,
  data_token: CurrentOnly,
});

export class QualityApi extends HttpApiGroup.make("quality")
  .add(
    HttpApiEndpoint.get("check", "/stores/:store_id/quality")
      .setPath(StorePath)
      .setUrlParams(QualityParams)
      .addSuccess(QualityResponse)
      .annotateContext(operation({
        summary: "Days whose energy disagrees with the device reports",
        description: "Checks each Beijing calendar day from `start` to `end` (inclusive, at " +
          "most 366 days) against the store's device events and device snapshot, and lists " +
          "the days that disagree, with the devices, event times and kinds behind each: no " +
          "energy value or 0 kWh while a device reported online (`NO_DATA_WHILE_ONLINE`, " +
          "`ZERO_WHILE_ONLINE`), or energy above 0 while every device was offline the whole day " +
          "(`POSITIVE_WHILE_ALL_OFFLINE`). A device's last report carries its state into later " +
          "days, never past the dataset's last day (`rule` states it in full). Void days and " +
          "days without conclusive device evidence are counted, never flagged. Nothing is " +
          "changed. Needs the read permission.",
        errors: [...CALLER, ...STORE_OBJECT, ...SCOPE_RANGE],
      })),
  )
  .middleware(Authentication)
  .prefix("/api/v1")
  .annotate(OpenApi.Description, "Days whose energy disagrees with what the devices reported") {}
