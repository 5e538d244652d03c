// Dataset, store, catalog and store-reference schemas (contract part 2).
import { Schema } from "effect";
import {
  Count,
  DateString,
  DecimalString,
  FreeObject,
  Hours,
  Id,
  KeyStoreStatus,
  Nullable,
  OneLineText,
} from "./common.ts";

export const Dataset = Schema.Struct({
  label: Schema.String,
  start: DateString,
  end: DateString,
  source_policy: Schema.Literal("CLEANED_SAMPLE", "CLEANED_THEN_LEGACY_THEN_NULL"),
  timezone: Schema.String,
  unit: Schema.String,
}).annotations({ identifier: "Dataset" });

const storeFields = {
  id: Id,
  name: Schema.String,
  store_code: Schema.String,
  source_org_id: Nullable(Id),
  brand_name: Schema.String,
  scope_id: Id,
  scope_kind: Schema.String,
  unit: Schema.String,
  timezone: Schema.String,
};

export const Store = Schema.Struct(storeFields).annotations({ identifier: "Store" });

export const StoresResponse = Schema.Struct({ stores: Schema.Array(Store) }).annotations({
  identifier: "StoresResponse",
});

export const CatalogStore = Schema.Struct({
  ...storeFields,
  city: Nullable(Schema.String),
  business_hours: Nullable(Hours),
  peak_hours: Nullable(Hours),
  business_mode: Nullable(Schema.String),
  settlement_mode: Nullable(Schema.String),
  is_key_store: Schema.Boolean,
  key_store_status: KeyStoreStatus,
  tags: Nullable(Schema.Array(Schema.String)),
  stage: Nullable(Schema.String),
  stage_basis: Nullable(Schema.String),
  device_count: Count,
  online_count: Count,
  offline_count: Count,
  unknown_count: Count,
}).annotations({ identifier: "CatalogStore" });

export const CatalogResponse = Schema.Struct({ stores: Schema.Array(CatalogStore) }).annotations({
  identifier: "CatalogResponse",
});

export const TargetCandidate = Schema.Struct({
  tes_180_kwh: DecimalString,
  tes_210_kwh: DecimalString,
  known_payback_days: Nullable(Schema.Literal(180, 210)),
  selected_candidate_kwh: Nullable(DecimalString),
  source_revision: Id,
  source_sheet_id: Schema.String,
  source_row: Id,
  source_url: Schema.String,
  status: Schema.Literal("AWAITING_EFFECTIVE_DATE", "AWAITING_SETTLEMENT_AND_DATE"),
  unit: Schema.String,
  basis: Schema.String,
  capture_id: Id,
  source_record_id: Id,
});

export const Profile = Schema.Struct({
  id: Id,
  name: Schema.String,
  brand_name: Schema.String,
  city: Nullable(Schema.String),
  address: Nullable(Schema.String),
  business_hours: Nullable(Hours),
  peak_hours: Nullable(Hours),
  business_mode: Nullable(Schema.String),
  settlement_mode: Nullable(Schema.String),
  version: Id,
  tags: Nullable(Schema.Array(Schema.String)),
  is_key_store: Schema.Boolean,
  key_store_status: KeyStoreStatus,
  equipment_profile: Nullable(FreeObject),
});

export const Device = Schema.Struct({
  id: Id,
  source_device_id: Schema.String,
  device_name: Nullable(Schema.String.pipe(Schema.maxLength(50))),
  device_code: Schema.String,
  device_type: Schema.String,
  material_code: Nullable(Schema.String.pipe(Schema.maxLength(16))),
  online_status: Schema.Literal("ONLINE", "OFFLINE", "UNKNOWN"),
  status_observed_at: Nullable(Schema.String),
  synced_at: Nullable(Schema.String),
  source_reference: Nullable(Schema.String),
});

export const Strategy = Schema.Struct({
  configured_count: Nullable(Count),
  dispatched_count: Nullable(Count),
  distinguish_calendar: Nullable(Schema.Boolean),
  execution_status: Schema.String,
  source_reference: Nullable(Schema.String),
  observed_at: Nullable(Schema.String),
  synced_at: Schema.String,
});

export const StrategyItem = Schema.Struct({
  name: Schema.String,
  date_category: Nullable(Schema.String),
  day_week: Nullable(Schema.String),
  publish_status: Nullable(Schema.String),
  issue_status: Nullable(Schema.Int),
  publish_time: Nullable(Schema.String),
  issue_time: Nullable(Schema.String),
});

export const StageSnapshot = Schema.Struct({
  stage: Nullable(Schema.String),
  legacy_progress: Nullable(Schema.String),
  captured_at: Schema.String,
  source_reference: Schema.String,
  basis: Schema.String,
});

export const StageHistoryEntry = Schema.Struct({
  stage: Schema.String,
  valid_from: Schema.String,
  valid_to: Nullable(Schema.String),
  change_reason: Schema.String,
});

export const DeviceEvents = Schema.Struct({
  start: Schema.String,
  end: Schema.String,
  coverage: Schema.Literal("UNVERIFIED"),
  offline_count: Nullable(Count),
  events: Schema.Array(Schema.Struct({
    id: Id,
    device_id: Id,
    event_type: Schema.String,
    occurred_at: Schema.String,
    note: Nullable(Schema.String),
  })),
});

export const StoreReference = Schema.Struct({
  target_candidate: Nullable(TargetCandidate),
  profile: Profile,
  devices: Schema.Array(Device),
  strategy: Nullable(Strategy),
  strategy_items: Schema.Array(StrategyItem),
  mode: Schema.Literal("FROZEN_LEGACY_REFERENCE"),
  timestamp_timezone: Schema.Literal("UTC"),
  strategy_count_basis: Schema.String,
  availability_basis: Schema.String,
  unavailable: Schema.Array(Schema.String),
  editable_fields: Schema.Array(Schema.Literal("name", "address")),
  can_edit_profile: Schema.Boolean,
  stage_snapshot: Nullable(StageSnapshot),
  stage_history: Schema.Array(StageHistoryEntry),
  device_events: DeviceEvents,
}).annotations({ identifier: "StoreReference" });

export const ProfileUpdate = Schema.Struct({
  name: OneLineText(80),
  address: OneLineText(200),
  expected_version: Id,
}).annotations({ identifier: "ProfileUpdate", parseOptions: { onExcessProperty: "error" } });

export const ProfileResult = Schema.Struct({
  status: Schema.Literal("UPDATED", "UNCHANGED"),
  profile: Schema.Struct({
    id: Id,
    name: Schema.String,
    address: Nullable(Schema.String),
    version: Id,
  }),
}).annotations({ identifier: "ProfileResult" });

// A store's metering scope as access decisions and range reads see it.
export interface ScopeFacts {
  readonly store_id: number;
  readonly scope_id: number;
  readonly timezone: string;
  readonly unit: string;
}
