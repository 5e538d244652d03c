// Monthly totals of a store's metrics, each beside the same month a year earlier (beyond the
// contract).
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint";
import * as HttpApiGroup from "@effect/platform/HttpApiGroup";
import * as OpenApi from "@effect/platform/OpenApi";
import { MONTHS_MAX_DAYS, MonthsResponse } from "../domain/months.ts";
import { RangeAsOfParams } from "./as_of_params.ts";
import { AS_OF, AS_OF_NOTE, CALLER, operation, SCOPE_RANGE, STORE_OBJECT } from "./openapi.ts";
import { StorePath } from "./params.ts";
import { Authentication } from "./security.ts";

export class MonthsApi extends HttpApiGroup.make("months")
  .add(
    HttpApiEndpoint.get("months", "/stores/:store_id/months")
      .setPath(StorePath)
      .setUrlParams(RangeAsOfParams)
      .addSuccess(MonthsResponse)
      .annotateContext(operation({
        summary: "Monthly totals, with the same month a year earlier",
        description: "For each calendar month that `start` to `end` (inclusive, at most " +
          `${MONTHS_MAX_DAYS} days) touches, cut to the range: the metrics summary of its days ` +
          "(actual kWh, matched EBA, savings AES and AER, TES sums and pass flags, day counts), " +
          "exactly what the metrics read gives for those days; beside it the same days one year " +
          "earlier; and the same for the whole range. Sums are exact and rounded once. Needs " +
          "the read permission. " + AS_OF_NOTE,
        errors: [...CALLER, ...STORE_OBJECT, ...SCOPE_RANGE, ...AS_OF],
        conditional: true,
        asOf: true,
      })),
  )
  .middleware(Authentication)
  .prefix("/api/v1")
  .annotate(OpenApi.Description, "A store's metrics summed per calendar month") {}
