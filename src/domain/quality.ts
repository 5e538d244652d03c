// Data-quality cross-check schemas: days whose energy disagrees with what the devices reported.
import { Schema } from "effect";
import { Count, DateString, DecimalString, Id, Nullable } from "./common.ts";

export const FLAG_KINDS = [
  "NO_DATA_WHILE_ONLINE",
  "POSITIVE_WHILE_ALL_OFFLINE",
  "ZERO_WHILE_ONLINE",
] as const;

export const FlagKind = Schema.Literal(...FLAG_KINDS).annotations({
  identifier: "QualityFlagKind",
  description: "NO_DATA_WHILE_ONLINE: no energy value while a device reported online; " +
    "ZERO_WHILE_ONLINE: 0 kWh while a device reported online; POSITIVE_WHILE_ALL_OFFLINE: " +
    "energy above 0 while every device of the store was offline the whole day",
});

export const DeviceState = Schema.Literal("ONLINE", "OFFLINE");

export const DeviceReport = Schema.Struct({
  source: Schema.Literal("DEVICE_EVENT", "DEVICE_SNAPSHOT").annotations({
    description: "DEVICE_EVENT: a device event (event_id); DEVICE_SNAPSHOT: the device's " +
      "sealed online_status at status_observed_at",
  }),
  event_id: Nullable(Id),
  state: DeviceState,
  occurred_at: Schema.String.annotations({ description: "ISO 8601, UTC" }),
  carried: Schema.Boolean.annotations({
    description: "true: reported on an earlier day, its state carried into this day",
  }),
}).annotations({ identifier: "QualityDeviceReport" });

export const DeviceCase = Schema.Struct({
  device_id: Id,
  device_name: Nullable(Schema.String),
  device_code: Schema.String,
  state: DeviceState.annotations({
    description: "ONLINE: reported online during the day; OFFLINE: offline the whole day",
  }),
  report_count: Count.annotations({ description: "reports behind this state, all listed or not" }),
  reports: Schema.Array(DeviceReport),
}).annotations({ identifier: "QualityDeviceCase" });

export const QualityFlag = Schema.Struct({
  business_date: DateString,
  kind: FlagKind,
  energy_status: Schema.Literal("AVAILABLE", "NO_DATA"),
  energy_kwh: Nullable(DecimalString),
  message: Schema.String,
  device_count: Count.annotations({ description: "devices that make the case, all listed or not" }),
  devices: Schema.Array(DeviceCase),
}).annotations({ identifier: "QualityFlag" });

export const QualitySummary = Schema.Struct({
  requested_days: Count,
  device_count: Count,
  checked_days: Count.annotations({
    description: "days whose energy was compared with conclusive device evidence",
  }),
  agreeing_days: Count,
  flagged_days: Count,
  flagged_by_kind: Schema.Struct({
    NO_DATA_WHILE_ONLINE: Count,
    POSITIVE_WHILE_ALL_OFFLINE: Count,
    ZERO_WHILE_ONLINE: Count,
  }),
  no_evidence_days: Count.annotations({
    description: "days without any known device state: not checked, not flagged",
  }),
  partial_evidence_days: Count.annotations({
    description: "days where some devices were known offline and the others unknown: not " +
      "checked, not flagged",
  }),
  void_days: Count.annotations({ description: "void days: never checked" }),
}).annotations({ identifier: "QualitySummary" });

export const QualityResponse = Schema.Struct({
  store_id: Id,
  scope_id: Id,
  timezone: Schema.String,
  start: DateString,
  end: DateString,
  coverage: Schema.Literal("UNVERIFIED"),
  rule: Schema.String,
  summary: QualitySummary,
  flags: Schema.Array(QualityFlag),
  notes: Schema.Array(Schema.String),
}).annotations({ identifier: "QualityResponse" });

export type FlagKind = typeof FlagKind.Type;
export type DeviceState = typeof DeviceState.Type;
export type DeviceReport = typeof DeviceReport.Type;
export type DeviceCase = typeof DeviceCase.Type;
export type QualityFlag = typeof QualityFlag.Type;
export type QualitySummary = typeof QualitySummary.Type;
export type QualityResponse = typeof QualityResponse.Type;
