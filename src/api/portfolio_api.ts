// The portfolio: every store's metric summary of a range, with roll-ups (beyond the contract).
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint";
import * as HttpApiGroup from "@effect/platform/HttpApiGroup";
import * as OpenApi from "@effect/platform/OpenApi";
import { Schema } from "effect";
import { AsOfFields } from "../domain/as_of.ts";
import { DateString, IdFromString, TextOfLength } from "../domain/common.ts";
import { PORTFOLIO_MAX_DAYS, PortfolioResponse } from "../domain/portfolio.ts";
import { fileOperation, XLSX_MEDIA } from "./export_api.ts";
import { AS_OF, AS_OF_NOTE, CALLER } from "./openapi.ts";
import { Admission, admits, Authentication } from "./security.ts";

export const PortfolioParams = Schema.Struct({
  start: DateString,
  end: DateString,
  // Described in the operation: an id parameter's schema is the plain integer id.
  brand_id: Schema.optional(IdFromString),
  city: Schema.optional(TextOfLength(1, 100)).annotations({
    description: "Only the stores of this city, spelled as the catalog spells it",
  }),
  format: Schema.optional(Schema.Literal("csv", "xlsx")).annotations({
    description: "csv or xlsx: the same rows as a file to download (absent: the JSON answer)",
  }),
  ...AsOfFields,
});

export class PortfolioApi extends HttpApiGroup.make("portfolio")
  .add(
    HttpApiEndpoint.get("portfolio", "/portfolio")
      .annotate(Admission, admits("read", true))
      .setUrlParams(PortfolioParams)
      .addSuccess(PortfolioResponse)
      .annotateContext(fileOperation(
        {
          summary: "Metric summaries of every store, with roll-ups",
          description: "One row per store (and metering scope) the key may see, optionally only " +
            "one brand's (`brand_id`, as the rows give it) or one city's, with the summary its metrics answer gives for `start` to " +
            `\`end\` (inclusive, at most ${PORTFOLIO_MAX_DAYS} days), its provisional days and ` +
            "its data-quality cross-check; then the same figures per brand, per city and for " +
            "all the stores listed, each the summary of all their store-days taken together " +
            "(exact sums rounded once; AER from the summed parts, never an average of rates). " +
            "A filter that matches no store gives no rows and an empty total. Needs the read " +
            "permission. With `format=csv` or `format=xlsx` the answer is a file " +
            "(Content-Disposition: attachment) with one row per store and then one per brand, " +
            "per city and for all (column `row`: store, brand, city, all), each with its " +
            "summary's fields (decimals as the exact strings of the JSON), `provisional_days` " +
            "and `data_quality_flagged_days`; column names are fixed whatever the language; text " +
            "that a spreadsheet would evaluate is written as text. A file is never conditional " +
            "and carries no ETag. " + AS_OF_NOTE,
          errors: [...CALLER, "INVALID_REQUEST", "INVALID_RANGE", "RANGE_TOO_LONG", ...AS_OF],
          conditional: true,
          asOf: true,
        },
        [`text/csv; charset=utf-8`, XLSX_MEDIA],
        true,
      )),
  )
  .middleware(Authentication)
  .prefix("/api/v1")
  .annotate(
    OpenApi.Description,
    "Every store's metric summary of a range, rolled up per brand, per city and in total",
  ) {}
