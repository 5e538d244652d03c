// Targets, metrics and period overview schemas (contract part 2).
import { Schema } from "effect";
import { Count, DateString, DecimalString, Id, Nullable } from "./common.ts";

const Dec = Nullable(DecimalString);
const Flag = Nullable(Schema.Boolean);

export const TargetDay = Schema.Struct({
  business_date: DateString,
  status: Schema.Literal("AVAILABLE", "NO_EFFECTIVE_TARGET"),
  target_period_id: Nullable(Id),
  tes_kwh: Dec,
  tes_180_kwh: Dec,
  tes_210_kwh: Dec,
  tev_kwh: Dec,
  effective_tev_warning_ratio: Dec,
  tev_latest_observed_date: Nullable(DateString),
  source_kind: Nullable(Schema.String),
  source_reference: Nullable(Schema.String),
  evaluation_status: Schema.Literal("NOT_EVALUATED"),
}).annotations({ identifier: "TargetDay" });

export const TargetsResponse = Schema.Struct({
  store_id: Id,
  scope_id: Id,
  unit: Schema.Literal("kWh/日"),
  timezone: Schema.String,
  start: DateString,
  end: DateString,
  summary: Schema.Struct({ requested_days: Count, available_days: Count, missing_days: Count }),
  days: Schema.Array(TargetDay),
  note: Schema.String,
}).annotations({ identifier: "TargetsResponse" });

export const MetricDay = Schema.Struct({
  business_date: DateString,
  actual_kwh: Dec,
  eba_kwh: Dec,
  aes_kwh: Dec,
  aer_percent: Dec,
  tes_kwh: Dec,
  tes_180_kwh: Dec,
  tes_210_kwh: Dec,
  tev_kwh: Dec,
  tes_threshold_kwh: Dec,
  tes_180_threshold_kwh: Dec,
  tes_210_threshold_kwh: Dec,
  tev_threshold_kwh: Dec,
  effective_tev_warning_ratio: Dec,
  eba_pass: Flag,
  tes_pass: Flag,
  tes_180_pass: Flag,
  tes_210_pass: Flag,
  tev_pass: Flag,
  provisional: Schema.Literal(0, 1),
  provisional_at: Nullable(Schema.String),
  tev_latest_observed_date: Nullable(DateString),
  baseline_status: Schema.String,
  baseline_reference: Nullable(Schema.String),
  stage: Nullable(Schema.String),
  evaluation_status: Schema.String,
}).annotations({ identifier: "MetricDay" });

export const MetricSummary = Schema.Struct({
  requested_days: Count,
  actual_days: Count,
  eba_days: Count,
  matched_days: Count,
  savings_days: Count,
  actual_kwh: Dec,
  matched_eba_kwh: Dec,
  aes_kwh: Dec,
  aer_percent: Dec,
  tes_kwh: Dec,
  tes_180_kwh: Dec,
  tes_210_kwh: Dec,
  tes_threshold_kwh: Dec,
  tes_180_threshold_kwh: Dec,
  tes_210_threshold_kwh: Dec,
  eba_pass: Flag,
  tes_pass: Flag,
  tes_180_pass: Flag,
  tes_210_pass: Flag,
  tev_pass: Flag,
  complete_for_savings: Schema.Boolean,
}).annotations({ identifier: "MetricSummary" });

export const Availability = Schema.Struct({
  metric: Schema.String,
  label: Schema.String,
  available_days: Count,
  requested_days: Count,
  status: Schema.Literal("AVAILABLE", "PARTIAL", "UNAVAILABLE"),
  reasons: Schema.Array(Schema.String),
});

export const MetricsResponse = Schema.Struct({
  store_id: Id,
  scope_id: Id,
  unit: Schema.String,
  timezone: Schema.String,
  start: DateString,
  end: DateString,
  baseline_policy: Schema.Literal("SUMMER_ONLY"),
  baseline_usage: Schema.Literal("LOCAL_TRIAL"),
  rule_version: Schema.String,
  tev_warning_ratio: Schema.Literal("1.2"),
  summary: MetricSummary,
  availability: Schema.Array(Availability),
  days: Schema.Array(MetricDay),
  notes: Schema.Array(Schema.String),
}).annotations({ identifier: "MetricsResponse" });

export const PeriodOverview = Schema.Struct({
  store_id: Id,
  scope_id: Id,
  as_of: DateString,
  timezone: Schema.String,
  periods: Schema.Array(Schema.Struct({
    key: Schema.Literal("day", "week", "month", "year"),
    label: Schema.String,
    start: DateString,
    end: DateString,
    summary: MetricSummary,
  })),
}).annotations({ identifier: "PeriodOverview" });

export type TargetsResponse = typeof TargetsResponse.Type;
export type MetricsResponse = typeof MetricsResponse.Type;
export type PeriodOverview = typeof PeriodOverview.Type;
