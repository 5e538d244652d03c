// Daily energy, per-day versions and revision history.
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint";
import * as HttpApiGroup from "@effect/platform/HttpApiGroup";
import * as OpenApi from "@effect/platform/OpenApi";
import { Schema } from "effect";
import { DateString, PathId } from "../domain/common.ts";
import { EnergyResponse, EnergyVersions, HistoryResponse } from "../domain/energy.ts";
import { AS_OF, AS_OF_NOTE, CALLER, operation, SCOPE_RANGE, STORE_OBJECT } from "./openapi.ts";
import { RangeAsOfParams } from "./as_of_params.ts";
import { StorePath } from "./params.ts";
import { Admission, admits, Authentication, PendingAuthentication } from "./security.ts";

// Daily energy verifies its caller in the same statement as its data (PendingAuthentication);
// the other two endpoints verify first (Authentication).
export class EnergyApi extends HttpApiGroup.make("energy")
  .add(
    HttpApiEndpoint.get("versions", "/stores/:store_id/energy/:business_date/versions")
      .setPath(Schema.Struct({ store_id: PathId, business_date: DateString }))
      .addSuccess(EnergyVersions)
      .annotate(Admission, admits("raw", false))
      .annotateContext(operation({
        summary: "One day's current value and all its versions",
        description: "The current fact of one store and Beijing calendar day, and every " +
          "revision of it in ascending `revision_no`, with the actor and the import batch " +
          "behind each. Needs the raw and read permissions.",
        errors: [...CALLER, ...STORE_OBJECT],
      })),
  )
  .add(
    HttpApiEndpoint.get("history", "/energy/:energy_id/history")
      .setPath(Schema.Struct({ energy_id: PathId }))
      .addSuccess(HistoryResponse)
      .annotate(Admission, admits("raw", false))
      .annotateContext(operation({
        summary: "Revision history of an energy fact",
        description: "The immutable revisions of one daily energy fact (`energy_id` from the " +
          "energy days), oldest first. Needs the raw and read permissions.",
        errors: [...CALLER, ...STORE_OBJECT],
      })),
  )
  .middlewareEndpoints(Authentication)
  .add(
    HttpApiEndpoint.get("days", "/stores/:store_id/energy")
      .setPath(StorePath)
      .setUrlParams(RangeAsOfParams)
      .addSuccess(EnergyResponse)
      .middleware(PendingAuthentication)
      .annotateContext(operation({
        summary: "Daily energy of a store",
        description: "One row per Beijing calendar day from `start` to `end` (inclusive, at " +
          "most 366 days) in kWh as exact decimal strings: a cleaned value, else the sealed " +
          "legacy value, else null (`NO_DATA`); never zero-filled. The summary counts " +
          "available, missing and void days. Needs the read permission. " + AS_OF_NOTE,
        errors: [...CALLER, ...STORE_OBJECT, ...SCOPE_RANGE, ...AS_OF],
        conditional: true,
        asOf: true,
      })),
  )
  .prefix("/api/v1")
  .annotate(OpenApi.Description, "Daily energy, its versions and revision history") {}
