// Portfolio schemas (beyond the contract): every store's metric summary of a range, with roll-ups
// per brand, per city and for all the stores listed.
import { Schema } from "effect";
import { Count, DateString, Id, Nullable } from "./common.ts";
import { MetricSummary } from "./metrics.ts";
import { QualitySummary } from "./quality.ts";

// The longest range a portfolio covers (the energy read's limit).
export const PORTFOLIO_MAX_DAYS = 366;

// What a store row and a roll-up have besides their names.
const figures = {
  summary: MetricSummary,
  provisional_days: Count.annotations({
    description: "days (store-days in a roll-up) whose value is provisional: counted in the " +
      "numeric totals, never in a pass or a fail",
  }),
  data_quality: QualitySummary.annotations({
    description: "the data-quality cross-check of the days against the device reports " +
      "(GET /api/v1/stores/{store_id}/quality); counts are summed in a roll-up",
  }),
};

export const PortfolioStore = Schema.Struct({
  store_id: Id,
  scope_id: Id,
  name: Schema.String,
  store_code: Schema.String,
  brand_id: Id,
  brand_name: Schema.String,
  city: Nullable(Schema.String),
  ...figures,
}).annotations({
  identifier: "PortfolioStore",
  description: "One store and metering scope: `summary` is the summary of its metrics answer " +
    "for the same range",
});

const rollupFields = {
  store_count: Count,
  ...figures,
};

export const PortfolioBrand = Schema.Struct({
  brand_id: Id,
  brand_name: Schema.String,
  ...rollupFields,
}).annotations({ identifier: "PortfolioBrand" });

export const PortfolioCity = Schema.Struct({
  city: Nullable(Schema.String),
  ...rollupFields,
}).annotations({ identifier: "PortfolioCity" });

export const PortfolioTotal = Schema.Struct(rollupFields).annotations({
  identifier: "PortfolioTotal",
});

export const PortfolioResponse = Schema.Struct({
  start: DateString,
  end: DateString,
  brand_id: Nullable(Id).annotations({ description: "the brand filter, null for none" }),
  city: Nullable(Schema.String).annotations({ description: "the city filter, null for none" }),
  rule_version: Schema.String,
  stores: Schema.Array(PortfolioStore),
  brands: Schema.Array(PortfolioBrand),
  cities: Schema.Array(PortfolioCity),
  total: PortfolioTotal,
  notes: Schema.Array(Schema.String),
}).annotations({ identifier: "PortfolioResponse" });

export type PortfolioStore = typeof PortfolioStore.Type;
export type PortfolioBrand = typeof PortfolioBrand.Type;
export type PortfolioCity = typeof PortfolioCity.Type;
export type PortfolioTotal = typeof PortfolioTotal.Type;
export type PortfolioResponse = typeof PortfolioResponse.Type;
