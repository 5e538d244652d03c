// Monthly totals schemas (beyond the contract): a store's metric summary per calendar month of a
// range, each beside the same days a year earlier.
import { Schema } from "effect";
import { DateString, Id, Nullable } from "./common.ts";
import { MetricSummary } from "./metrics.ts";

// The longest range of months asked for (the energy read's limit); with the year before it, one
// read covers at most two years, the metrics read's limit.
export const MONTHS_MAX_DAYS = 366;

export const MonthString = Schema.String.pipe(Schema.pattern(/^\d{4}-(0[1-9]|1[0-2])$/))
  .annotations({ identifier: "Month", description: "A calendar month YYYY-MM" });

// Days of a range summed as the metrics read sums them.
export const MonthSpan = Schema.Struct({
  month: Nullable(MonthString).annotations({
    description: "The calendar month of these days; null on the total, which may span several",
  }),
  start: DateString,
  end: DateString,
  summary: MetricSummary.annotations({
    description: "The summary GET /api/v1/stores/{store_id}/metrics gives for start to end",
  }),
}).annotations({ identifier: "MonthSpan" });

export const MonthRow = Schema.Struct({
  ...MonthSpan.fields,
  year_earlier: Nullable(MonthSpan).annotations({
    description: "The same days one year earlier (29 February becomes 28 February; a span " +
      "ending on a month's last day ends on that month's last day a year earlier); null for " +
      "the year 0001, which has no year before it",
  }),
}).annotations({ identifier: "MonthRow" });

export const MonthsResponse = Schema.Struct({
  store_id: Id,
  scope_id: Id,
  unit: Schema.String,
  timezone: Schema.String,
  start: DateString,
  end: DateString,
  rule_version: Schema.String,
  months: Schema.Array(MonthRow).annotations({
    description: "One row per calendar month the range touches, in order; a month the range " +
      "cuts covers its days within the range only",
  }),
  total: MonthRow.annotations({ description: "The whole range, and the year before it" }),
  notes: Schema.Array(Schema.String),
}).annotations({ identifier: "MonthsResponse" });

export type MonthSpan = typeof MonthSpan.Type;
export type MonthRow = typeof MonthRow.Type;
export type MonthsResponse = typeof MonthsResponse.Type;
