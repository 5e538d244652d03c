// Energy days, summaries, versions and revision history (contract part 2).
import { Schema } from "effect";
import { Count, DateString, DecimalString, FreeObject, Id, Nullable } from "./common.ts";

export const DayStatus = Schema.Literal("AVAILABLE", "NO_DATA", "VOID");
export const SourceKind = Schema.Literal("CLEANED", "LEGACY_DIRECT", "MANUAL_UPLOAD");

export const DailyRow = Schema.Struct({
  business_date: DateString,
  energy_id: Nullable(Id),
  energy_kwh: Nullable(DecimalString),
  status: DayStatus,
  source_kind: Nullable(SourceKind),
  source_label: Schema.String,
  quality_status: Nullable(Schema.String),
  quality_note: Nullable(Schema.String),
  revision_no: Nullable(Id),
  import_row_id: Nullable(Id),
  source_reference: Nullable(FreeObject),
}).annotations({ identifier: "DailyRow" });

export const EnergySummary = Schema.Struct({
  requested_days: Id,
  available_days: Count,
  missing_days: Count,
  void_days: Count,
  available_energy_kwh: Nullable(DecimalString),
  complete: Schema.Boolean,
  saving_metrics_status: Schema.Literal("SEE_METRICS_ENDPOINT"),
}).annotations({ identifier: "EnergySummary" });

export const EnergyResponse = Schema.Struct({
  store_id: Id,
  scope_id: Id,
  metric: Schema.String,
  unit: Schema.String,
  timezone: Schema.String,
  start: DateString,
  end: DateString,
  summary: EnergySummary,
  days: Schema.Array(DailyRow),
}).annotations({ identifier: "EnergyResponse" });
export type EnergyResponse = typeof EnergyResponse.Type;

export const Revision = Schema.Struct({
  revision_no: Id,
  operation: Schema.String,
  before_kwh: Nullable(DecimalString),
  after_kwh: Nullable(DecimalString),
  before_is_void: Nullable(Schema.Literal(0, 1)),
  after_is_void: Schema.Literal(0, 1),
  committed_at: Schema.String,
  change_reason: Schema.String,
  import_row_id: Id,
  source_kind: Schema.String,
  quality_status: Schema.String,
  quality_note: Nullable(Schema.String),
}).annotations({ identifier: "Revision" });

export const HistoryResponse = Schema.Struct({ revisions: Schema.Array(Revision) }).annotations({
  identifier: "HistoryResponse",
});

export const EnergyVersionCurrent = Schema.Struct({
  energy_id: Id,
  scope_id: Id,
  energy_kwh: Nullable(DecimalString),
  source_kind: Nullable(Schema.String),
  source_label: Nullable(Schema.String),
  quality_status: Nullable(Schema.String),
  quality_note: Nullable(Schema.String),
  provisional: Schema.Literal(0, 1),
  is_void: Schema.Literal(0, 1),
  revision_no: Id,
  revision_count: Count,
  cleaned_revision_count: Count,
  cleaned_ever: Schema.Boolean,
});

export const EnergyVersionBatch = Schema.Struct({
  id: Id,
  batch_no: Schema.String,
  batch_kind: Schema.String,
  status: Schema.String,
  committed_at: Nullable(Schema.String),
  kept_cleaned_rows: Count,
  change_reason: Nullable(Schema.String),
  filename: Nullable(Schema.String),
  note: Schema.String,
});

export const EnergyVersion = Schema.Struct({
  revision_no: Id,
  operation: Schema.String,
  before_kwh: Nullable(DecimalString),
  after_kwh: Nullable(DecimalString),
  before_is_void: Nullable(Schema.Literal(0, 1)),
  after_is_void: Nullable(Schema.Literal(0, 1)),
  change_reason: Nullable(Schema.String),
  committed_at: Schema.String,
  import_row_id: Id,
  source_kind: Schema.String,
  source_label: Schema.String,
  quality_status: Nullable(Schema.String),
  quality_note: Nullable(Schema.String),
  actor: Schema.Struct({
    member_id: Nullable(Id),
    name: Nullable(Schema.String),
    label: Nullable(Schema.String),
  }),
  batch: Nullable(EnergyVersionBatch),
});

export const EnergyVersions = Schema.Struct({
  store_id: Id,
  business_date: DateString,
  scope_id: Nullable(Id),
  current: Nullable(EnergyVersionCurrent),
  versions: Schema.Array(EnergyVersion),
}).annotations({ identifier: "EnergyVersions" });

export type Revision = typeof Revision.Type;
export type EnergyVersionCurrent = typeof EnergyVersionCurrent.Type;
export type EnergyVersion = typeof EnergyVersion.Type;
