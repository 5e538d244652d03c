// Daily energy, per-day versions and revision history.
import { HttpApiEndpoint, HttpApiGroup } from "@effect/platform";
import { Schema } from "effect";
import { DateString, IdFromString } from "../domain/common.ts";
import { EnergyResponse, EnergyVersions, HistoryResponse } from "../domain/energy.ts";
import { RangeParams, StorePath } from "./params.ts";
import { Authentication, PendingAuthentication } from "./security.ts";

// Daily energy verifies its caller in the same statement as its data (PendingAuthentication);
// the other two endpoints verify first (Authentication).
export class EnergyApi extends HttpApiGroup.make("energy")
  .add(
    HttpApiEndpoint.get("versions", "/stores/:store_id/energy/:business_date/versions")
      .setPath(Schema.Struct({ store_id: IdFromString, business_date: DateString }))
      .addSuccess(EnergyVersions),
  )
  .add(
    HttpApiEndpoint.get("history", "/energy/:energy_id/history")
      .setPath(Schema.Struct({ energy_id: IdFromString }))
      .addSuccess(HistoryResponse),
  )
  .middleware(Authentication)
  .add(
    HttpApiEndpoint.get("days", "/stores/:store_id/energy")
      .setPath(StorePath)
      .setUrlParams(RangeParams)
      .addSuccess(EnergyResponse)
      .middleware(PendingAuthentication),
  )
  .prefix("/api/v1") {}
