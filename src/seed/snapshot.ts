// The sealed data snapshot file: its Schema, exported types and the validation with cross-checks.
import { Data, Either, ParseResult, Schema } from "effect";
import { isInstant } from "../domain/as_of.ts";
import {
  CONTROL,
  Count,
  DateString,
  DecimalString,
  Id,
  MAX_ID,
  TextOfLength,
} from "../domain/common.ts";
import { dayIndex } from "../domain/range.ts";
import { wallAt } from "../domain/wall_clock.ts";

export const STAGE_CODES = [
  "BASELINE",
  "INSTALLING",
  "TRIAL",
  "OPERATING",
  "SUSPENDED",
  "EXITED",
] as const;

export const SNAPSHOT_FORMAT = "energy-snapshot/1";

// An instant with its offset, read exactly as PostgreSQL will read it (isInstant: a real day of
// years 0001-9999, offsets within ±14:00); seconds may be left out.
const Timestamp = Schema.String.pipe(
  Schema.filter(
    (s) =>
      /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?(Z|[+-]\d{2}:\d{2})$/.test(s) &&
      isInstant(
        s[16] === ":" ? s : `${s.slice(0, 16)}:00${s.slice(16)}`,
      ),
    { message: () => "expected an ISO 8601 timestamp with offset" },
  ),
).annotations({ identifier: "Timestamp" });

const says = (expected: string) => ({
  message: (issue: { readonly actual: unknown }) => ({
    message: `expected ${expected}, got ${JSON.stringify(issue.actual)}`,
    override: true,
  }),
});

const DECIMAL = "a decimal string (digits, at most 4 decimals)";
const Decimal4 = DecimalString.annotations(says(DECIMAL));
const NullableDecimal = Schema.NullOr(DecimalString).annotations(says(`null or ${DECIMAL}`));

// TEV observations are raw legacy values: zero and negative ones exist and are kept as invalid.
const SignedDecimal = Schema.NullOr(
  Schema.String.pipe(Schema.pattern(/^-?\d+(\.\d{1,4})?$/)),
).annotations(says("null or a signed decimal string (at most 4 decimals)"));

const Text = (max: number) => TextOfLength(1, max);

// A name the import matches files against (stores, brands): one line, and no whitespace at either
// end, which the import's reading of a name drops.
const NameText = (max: number) =>
  Text(max).pipe(
    Schema.filter((s) => s === s.trim() && !CONTROL.test(s), {
      message: () => "expected one line without whitespace at either end",
    }),
  );

// An IANA time zone name (or UTC) that Intl knows; PostgreSQL reads such names alike, where a
// POSIX-style text ("+08:00") would be read with the opposite sign.
const TimeZone = Schema.String.pipe(
  Schema.filter((s) => {
    if (!/^(UTC|[A-Za-z]+(\/[A-Za-z0-9_+-]+)+)$/.test(s)) return false;
    try {
      new Intl.DateTimeFormat("en", { timeZone: s });
      return true;
    } catch {
      return false;
    }
  }, { message: () => "expected an IANA time zone name, such as Asia/Shanghai" }),
);

// A PostgreSQL integer.
const Int32 = Schema.Int.pipe(Schema.between(-MAX_ID - 1, MAX_ID));

const Hours = Schema.Array(
  Schema.Struct({
    start: Schema.String.pipe(Schema.pattern(/^([01]\d|2[0-3]):[0-5]\d$/)),
    end: Schema.String.pipe(Schema.pattern(/^([01]\d|2[0-4]):[0-5]\d$/)),
    next_day: Schema.Boolean,
  }),
);

// One message per field instead of one per union member.
const oneOf = <const L extends ReadonlyArray<string | number>>(...values: L) =>
  Schema.Literal(...values).annotations(says(`one of ${values.join(", ")}`));

const StageCode = oneOf(...STAGE_CODES);

export const SnapshotDataset = Schema.Struct({
  label: Text(200),
  start: DateString,
  end: DateString,
  source_policy: oneOf("CLEANED_SAMPLE", "CLEANED_THEN_LEGACY_THEN_NULL"),
  timezone: TimeZone,
  unit: Text(16),
});

export const SnapshotBrand = Schema.Struct({ id: Id, name: NameText(80) });

export const SnapshotScope = Schema.Struct({
  id: Id,
  kind: Text(64),
  unit: Text(16),
  timezone: TimeZone,
});

export const SnapshotStore = Schema.Struct({
  id: Id,
  brand_id: Id,
  store_code: Text(64),
  source_org_id: Schema.NullOr(Id),
  name: NameText(80),
  address: Schema.NullOr(
    Text(200).pipe(
      Schema.filter((s) => !CONTROL.test(s), { message: () => "expected one line of text" }),
    ),
  ),
  city: Schema.NullOr(Schema.String),
  business_hours: Schema.NullOr(Hours),
  peak_hours: Schema.NullOr(Hours),
  business_mode: Schema.NullOr(Schema.String),
  settlement_mode: Schema.NullOr(Schema.String),
  is_key_store: Schema.Boolean,
  key_store_status: oneOf("MARKED", "UNCONFIRMED"),
  tags: Schema.NullOr(Schema.Array(Schema.String)),
  equipment_profile: Schema.NullOr(
    Schema.Record({ key: Schema.String, value: Schema.Unknown }),
  ),
  profile_editable: Schema.Boolean,
  scope: SnapshotScope,
});

export const SnapshotStageEntry = Schema.Struct({
  store_id: Id,
  stage: StageCode,
  valid_from: DateString,
  valid_to: Schema.NullOr(DateString),
  change_reason: Text(500),
});

export const SnapshotStageSnapshot = Schema.Struct({
  store_id: Id,
  stage: Schema.NullOr(StageCode),
  stage_basis: Schema.NullOr(Schema.String),
  legacy_progress: Schema.NullOr(Schema.String),
  captured_at: Timestamp,
  source_reference: Text(500),
  basis: Text(500),
});

export const SnapshotDevice = Schema.Struct({
  id: Id,
  store_id: Id,
  source_device_id: Text(100),
  device_name: Schema.NullOr(Schema.String.pipe(Schema.maxLength(50))),
  device_code: Text(100),
  device_type: Text(100),
  material_code: Schema.NullOr(Schema.String.pipe(Schema.maxLength(16))),
  online_status: oneOf("ONLINE", "OFFLINE", "UNKNOWN"),
  status_observed_at: Schema.NullOr(Timestamp),
  synced_at: Schema.NullOr(Timestamp),
  source_reference: Schema.NullOr(Schema.String),
});

export const SnapshotDeviceEvent = Schema.Struct({
  id: Id,
  store_id: Id,
  device_id: Id,
  event_type: Text(64),
  occurred_at: Timestamp,
  note: Schema.NullOr(Schema.String),
});

export const SnapshotStrategy = Schema.Struct({
  store_id: Id,
  configured_count: Schema.NullOr(Count.pipe(Schema.lessThanOrEqualTo(MAX_ID))),
  dispatched_count: Schema.NullOr(Count.pipe(Schema.lessThanOrEqualTo(MAX_ID))),
  distinguish_calendar: Schema.NullOr(Schema.Boolean),
  execution_status: Text(64),
  source_reference: Schema.NullOr(Schema.String),
  observed_at: Schema.NullOr(Timestamp),
  synced_at: Timestamp,
});

export const SnapshotStrategyItem = Schema.Struct({
  store_id: Id,
  position: Int32.pipe(Schema.greaterThanOrEqualTo(1)),
  name: Text(200),
  date_category: Schema.NullOr(Schema.String),
  day_week: Schema.NullOr(Schema.String),
  publish_status: Schema.NullOr(Schema.String),
  issue_status: Schema.NullOr(Int32),
  publish_time: Schema.NullOr(Timestamp),
  issue_time: Schema.NullOr(Timestamp),
});

export const SnapshotPricedItem = Schema.Struct({
  item_name: Text(200),
  unit_price: Decimal4,
  priced_quantity: Decimal4,
});

export const SnapshotTargetPeriod = Schema.Struct({
  id: Id,
  store_id: Id,
  scope_id: Id,
  valid_from: DateString,
  valid_to: Schema.NullOr(DateString),
  tes_kwh: NullableDecimal,
  tev_warning_ratio: Decimal4,
  source_kind: Text(64),
  source_reference: Schema.NullOr(Schema.String),
  items: Schema.Array(SnapshotPricedItem),
});

export const SnapshotTevObservation = Schema.Struct({
  store_id: Id,
  scope_id: Id,
  observed_date: DateString,
  value_kwh: SignedDecimal,
  is_valid: Schema.Boolean,
  source_reference: Schema.NullOr(Schema.String),
});

export const SnapshotTargetCandidate = Schema.Struct({
  store_id: Id,
  tes_180_kwh: Decimal4,
  tes_210_kwh: Decimal4,
  known_payback_days: Schema.NullOr(oneOf(180, 210)),
  selected_candidate_kwh: NullableDecimal,
  source_revision: Id,
  source_sheet_id: Text(200),
  source_row: Id,
  source_url: Text(1000),
  status: oneOf("AWAITING_EFFECTIVE_DATE", "AWAITING_SETTLEMENT_AND_DATE"),
  unit: Text(16),
  basis: Text(500),
  capture_id: Id,
  source_record_id: Id,
});

export const SnapshotCleanedValue = Schema.Struct({
  date: DateString,
  kwh: Decimal4,
  quality_status: Schema.optional(Text(64)),
  quality_note: Schema.optional(Schema.NullOr(Schema.String)),
});

export const SnapshotProvisional = Schema.Struct({
  date: DateString,
  observed_at: Timestamp,
});

export const SnapshotEnergy = Schema.Struct({
  store_id: Id,
  scope_id: Id,
  start: DateString,
  legacy: Schema.Array(NullableDecimal),
  cleaned: Schema.Array(SnapshotCleanedValue),
  void_days: Schema.Array(DateString),
  provisional: Schema.optional(Schema.NullOr(SnapshotProvisional)),
});

export const Snapshot = Schema.Struct({
  format: Schema.Literal(SNAPSHOT_FORMAT),
  dataset: SnapshotDataset,
  brands: Schema.Array(SnapshotBrand),
  stores: Schema.Array(SnapshotStore),
  stage_history: Schema.Array(SnapshotStageEntry),
  stage_snapshots: Schema.Array(SnapshotStageSnapshot),
  devices: Schema.Array(SnapshotDevice),
  device_events: Schema.Array(SnapshotDeviceEvent),
  strategies: Schema.Array(SnapshotStrategy),
  strategy_items: Schema.Array(SnapshotStrategyItem),
  target_periods: Schema.Array(SnapshotTargetPeriod),
  tev_observations: Schema.Array(SnapshotTevObservation),
  target_candidates: Schema.Array(SnapshotTargetCandidate),
  energy: Schema.Array(SnapshotEnergy),
}).annotations({ identifier: "Snapshot" });

export type Snapshot = typeof Snapshot.Type;
export type SnapshotStore = typeof SnapshotStore.Type;
export type SnapshotStageEntry = typeof SnapshotStageEntry.Type;
export type SnapshotStageSnapshot = typeof SnapshotStageSnapshot.Type;
export type SnapshotDevice = typeof SnapshotDevice.Type;
export type SnapshotDeviceEvent = typeof SnapshotDeviceEvent.Type;
export type SnapshotStrategy = typeof SnapshotStrategy.Type;
export type SnapshotStrategyItem = typeof SnapshotStrategyItem.Type;
export type SnapshotPricedItem = typeof SnapshotPricedItem.Type;
export type SnapshotTargetPeriod = typeof SnapshotTargetPeriod.Type;
export type SnapshotTevObservation = typeof SnapshotTevObservation.Type;
export type SnapshotTargetCandidate = typeof SnapshotTargetCandidate.Type;
export type SnapshotCleanedValue = typeof SnapshotCleanedValue.Type;
export type SnapshotEnergy = typeof SnapshotEnergy.Type;

export class SnapshotInvalid extends Data.TaggedError("SnapshotInvalid")<{
  readonly problems: ReadonlyArray<string>;
}> {
  override get message() {
    const shown = this.problems.slice(0, MAX_SHOWN);
    const more = this.problems.length - shown.length;
    return `invalid snapshot (${this.problems.length} problem${
      this.problems.length === 1 ? "" : "s"
    }): ${shown.join("; ")}${more > 0 ? `; and ${more} more` : ""}`;
  }
}

const MAX_SHOWN = 20;
const MAX_PROBLEMS = 200;

const formatPath = (path: ReadonlyArray<PropertyKey>): string =>
  path.reduce<string>(
    (acc, key) =>
      typeof key === "number"
        ? `${acc}[${key}]`
        : acc === ""
        ? String(key)
        : `${acc}.${String(key)}`,
    "",
  );

// Checks the Schema cannot express: identity, references, date ranges and orderings.
const crossCheck = (s: Snapshot): Array<string> => {
  const problems: Array<string> = [];
  const add = (path: string, message: string) => {
    if (problems.length < MAX_PROBLEMS) problems.push(`${path}: ${message}`);
  };
  // PostgreSQL's text and jsonb hold no NUL character: one anywhere is refused here, with its
  // path, instead of failing the load.
  const noNul = (value: unknown, path: string): void => {
    if (typeof value === "string") {
      if (value.includes("\u0000")) add(path, "text holds a NUL character");
    } else if (Array.isArray(value)) value.forEach((v, i) => noNul(v, `${path}[${i}]`));
    else if (value !== null && typeof value === "object") {
      for (const [k, v] of Object.entries(value)) {
        const at = path === "" ? k : `${path}.${k}`;
        if (k.includes("\u0000")) add(at, "a key holds a NUL character");
        noNul(v, at);
      }
    }
  };
  noNul(s, "");
  const start = dayIndex(s.dataset.start);
  const end = dayIndex(s.dataset.end);
  if (start > end) add("dataset.end", "end is before start");
  const inRange = (path: string, date: string) => {
    const d = dayIndex(date);
    if (d < start || d > end) {
      add(
        path,
        `date ${date} outside the dataset ${s.dataset.start}..${s.dataset.end}`,
      );
    }
  };
  const uniqueIds = <A>(
    section: string,
    items: ReadonlyArray<A>,
    key: (a: A) => string | number,
    what: string,
  ) => {
    const seen = new Map<string | number, number>();
    items.forEach((item, i) => {
      const k = key(item);
      const first = seen.get(k);
      if (first !== undefined) {
        add(
          `${section}[${i}]`,
          `duplicate ${what} ${k} (first at ${section}[${first}])`,
        );
      } else seen.set(k, i);
    });
    return seen;
  };

  const brands = uniqueIds("brands", s.brands, (b) => b.id, "brand id");
  uniqueIds("brands", s.brands, (b) => b.name, "brand name");

  const stores = new Map<number, Snapshot["stores"][number]>();
  const scopeOwner = new Map<number, number>();
  uniqueIds("stores", s.stores, (st) => st.store_code, "store_code");
  uniqueIds(
    "stores",
    s.stores,
    (st) => `${st.brand_id}/${st.name}`,
    "brand/name",
  );
  s.stores.forEach((st, i) => {
    if (stores.has(st.id)) {
      add(`stores[${i}].id`, `duplicate store id ${st.id}`);
    } else stores.set(st.id, st);
    if (!brands.has(st.brand_id)) {
      add(`stores[${i}].brand_id`, `unknown brand ${st.brand_id}`);
    }
    if (scopeOwner.has(st.scope.id)) {
      add(`stores[${i}].scope.id`, `duplicate scope id ${st.scope.id}`);
    } else scopeOwner.set(st.scope.id, st.id);
    // rules.md §8: the status is derived from the legacy flag, never stated on its own.
    if (st.key_store_status !== (st.is_key_store ? "MARKED" : "UNCONFIRMED")) {
      add(
        `stores[${i}].key_store_status`,
        `must be ${
          st.is_key_store ? "MARKED" : "UNCONFIRMED"
        }, as is_key_store is ${st.is_key_store}`,
      );
    }
  });

  const knownStore = (path: string, id: number) => {
    const ok = stores.has(id);
    if (!ok) add(path, `unknown store ${id}`);
    return ok;
  };
  const scopeOfStore = (path: string, storeId: number, scopeId: number) => {
    const owner = scopeOwner.get(scopeId);
    if (owner === undefined) add(path, `unknown scope ${scopeId}`);
    else if (owner !== storeId) {
      add(path, `scope ${scopeId} belongs to store ${owner}, not ${storeId}`);
    }
  };

  const stagesByStore = new Map<number, Array<[number, number, number]>>();
  s.stage_history.forEach((e, i) => {
    const p = `stage_history[${i}]`;
    knownStore(`${p}.store_id`, e.store_id);
    const from = dayIndex(e.valid_from);
    const to = e.valid_to === null ? Infinity : dayIndex(e.valid_to);
    if (to <= from) add(`${p}.valid_to`, "valid_to must be after valid_from");
    const list = stagesByStore.get(e.store_id) ?? [];
    list.push([from, to, i]);
    stagesByStore.set(e.store_id, list);
  });
  for (const list of stagesByStore.values()) {
    list.sort((a, b) => a[0] - b[0]);
    for (let k = 1; k < list.length; k++) {
      if (list[k][0] < list[k - 1][1]) {
        add(
          `stage_history[${list[k][2]}]`,
          `overlaps stage_history[${list[k - 1][2]}]`,
        );
      }
    }
  }

  uniqueIds(
    "stage_snapshots",
    s.stage_snapshots,
    (x) => x.store_id,
    "stage snapshot of store",
  );
  s.stage_snapshots.forEach((x, i) => knownStore(`stage_snapshots[${i}].store_id`, x.store_id));

  const devices = new Map<number, number>();
  s.devices.forEach((d, i) => {
    if (devices.has(d.id)) {
      add(`devices[${i}].id`, `duplicate device id ${d.id}`);
    } else devices.set(d.id, d.store_id);
    knownStore(`devices[${i}].store_id`, d.store_id);
  });
  uniqueIds("device_events", s.device_events, (e) => e.id, "device event id");
  s.device_events.forEach((e, i) => {
    const p = `device_events[${i}]`;
    knownStore(`${p}.store_id`, e.store_id);
    const owner = devices.get(e.device_id);
    if (owner === undefined) {
      add(`${p}.device_id`, `unknown device ${e.device_id}`);
    } else if (owner !== e.store_id) {
      add(`${p}.device_id`, `device ${e.device_id} belongs to store ${owner}`);
    }
  });

  uniqueIds(
    "strategies",
    s.strategies,
    (x) => x.store_id,
    "strategy of store",
  );
  s.strategies.forEach((x, i) => {
    knownStore(`strategies[${i}].store_id`, x.store_id);
    if (
      x.configured_count !== null && x.dispatched_count !== null &&
      x.dispatched_count > x.configured_count
    ) {
      add(
        `strategies[${i}].dispatched_count`,
        "exceeds configured_count",
      );
    }
  });
  uniqueIds(
    "strategy_items",
    s.strategy_items,
    (x) => `${x.store_id}/${x.position}`,
    "store/position",
  );
  s.strategy_items.forEach((x, i) => knownStore(`strategy_items[${i}].store_id`, x.store_id));

  uniqueIds("target_periods", s.target_periods, (t) => t.id, "period id");
  const periodsByScope = new Map<number, Array<[number, number, number]>>();
  s.target_periods.forEach((t, i) => {
    const p = `target_periods[${i}]`;
    if (knownStore(`${p}.store_id`, t.store_id)) {
      scopeOfStore(`${p}.scope_id`, t.store_id, t.scope_id);
    }
    const from = dayIndex(t.valid_from);
    const to = t.valid_to === null ? Infinity : dayIndex(t.valid_to);
    if (to < from) add(`${p}.valid_to`, "valid_to is before valid_from");
    if (t.items.length === 0) {
      add(`${p}.items`, "needs at least one priced item");
    }
    if (/^0+(\.0+)?$/.test(t.tev_warning_ratio)) {
      add(`${p}.tev_warning_ratio`, "must be greater than 0");
    }
    const list = periodsByScope.get(t.scope_id) ?? [];
    list.push([from, to, i]);
    periodsByScope.set(t.scope_id, list);
  });
  for (const list of periodsByScope.values()) {
    list.sort((a, b) => a[0] - b[0]);
    for (let k = 1; k < list.length; k++) {
      if (list[k][0] <= list[k - 1][1]) {
        add(
          `target_periods[${list[k][2]}]`,
          `overlaps target_periods[${list[k - 1][2]}]`,
        );
      }
    }
  }

  // The latest valid positive observation is the TEV (rules.md): two on one day would leave it
  // to chance.
  const validTev = new Map<string, number>();
  s.tev_observations.forEach((o, i) => {
    if (
      !o.is_valid || o.value_kwh === null || !/[1-9]/.test(o.value_kwh) ||
      o.value_kwh.startsWith("-")
    ) return;
    const key = `${o.store_id}/${o.observed_date}`;
    const first = validTev.get(key);
    if (first === undefined) validTev.set(key, i);
    else {
      add(
        `tev_observations[${i}]`,
        `a second valid observation of store ${o.store_id} on ${o.observed_date} ` +
          `(first at tev_observations[${first}])`,
      );
    }
  });
  s.tev_observations.forEach((o, i) => {
    const p = `tev_observations[${i}]`;
    if (knownStore(`${p}.store_id`, o.store_id)) {
      scopeOfStore(`${p}.scope_id`, o.store_id, o.scope_id);
    }
    inRange(`${p}.observed_date`, o.observed_date);
  });

  uniqueIds(
    "target_candidates",
    s.target_candidates,
    (c) => c.store_id,
    "candidate of store",
  );
  s.target_candidates.forEach((c, i) => knownStore(`target_candidates[${i}].store_id`, c.store_id));

  uniqueIds("energy", s.energy, (e) => e.scope_id, "energy of scope");
  s.energy.forEach((e, i) => {
    const p = `energy[${i}]`;
    if (knownStore(`${p}.store_id`, e.store_id)) {
      scopeOfStore(`${p}.scope_id`, e.store_id, e.scope_id);
    }
    const first = dayIndex(e.start);
    inRange(`${p}.start`, e.start);
    if (e.legacy.length > 0 && first + e.legacy.length - 1 > end) {
      add(
        `${p}.legacy`,
        `${e.legacy.length} days from ${e.start} run past the dataset end ${s.dataset.end}`,
      );
    }
    // The service serves a day's cleaned value, else its sealed legacy value (the contract's
    // CLEANED_THEN_LEGACY_THEN_NULL). A dataset that says it serves its cleaned sample alone
    // reads the same only while it holds no legacy value.
    if (s.dataset.source_policy === "CLEANED_SAMPLE") {
      const k = e.legacy.findIndex((v) => v !== null);
      if (k >= 0) {
        add(
          `${p}.legacy[${k}]`,
          "a legacy value in a CLEANED_SAMPLE dataset (served cleaned values only; the service " +
            "would serve it where a day has no cleaned value)",
        );
      }
    }
    const cleaned = new Set<number>();
    e.cleaned.forEach((c, k) => {
      const d = dayIndex(c.date);
      inRange(`${p}.cleaned[${k}].date`, c.date);
      if (cleaned.has(d)) add(`${p}.cleaned[${k}].date`, `duplicate ${c.date}`);
      cleaned.add(d);
    });
    const voids = new Set<number>();
    e.void_days.forEach((v, k) => {
      const d = dayIndex(v);
      inRange(`${p}.void_days[${k}]`, v);
      if (voids.has(d)) add(`${p}.void_days[${k}]`, `duplicate ${v}`);
      if (cleaned.has(d)) {
        add(`${p}.void_days[${k}]`, `${v} also has a cleaned value`);
      }
      voids.add(d);
    });
    if (e.provisional) {
      const pd = e.provisional.date;
      const d = dayIndex(pd);
      inRange(`${p}.provisional.date`, pd);
      const legacy = e.legacy[d - first];
      if (voids.has(d)) add(`${p}.provisional.date`, `${pd} is void`);
      else if (!cleaned.has(d) && (legacy === undefined || legacy === null)) {
        add(`${p}.provisional.date`, `${pd} has no energy value`);
      }
      // An intraday value is read on its own day, in the store's zone (a producer that took the
      // date of the instant in UTC would put a reading of the next day on this one).
      const zone = stores.get(e.store_id)?.scope.timezone;
      const read = localDate(e.provisional.observed_at, zone);
      if (read !== undefined && read !== pd) {
        add(
          `${p}.provisional.observed_at`,
          `read on ${read} in ${zone}, not on the provisional day ${pd}`,
        );
      }
    }
  });
  return problems;
};

// The calendar day of an instant in a zone; undefined when either cannot be read (each is refused
// by its own check).
const localDate = (instant: string, zone: string | undefined) => {
  const ms = Date.parse(instant);
  if (zone === undefined || Number.isNaN(ms)) return undefined;
  try {
    const wall = wallAt(ms, zone);
    const pad = (n: number, w = 2) => String(n).padStart(w, "0");
    return `${pad(wall.year, 4)}-${pad(wall.month)}-${pad(wall.day)}`;
  } catch {
    return undefined;
  }
};

const decode = Schema.decodeUnknownEither(Snapshot, {
  errors: "all",
  onExcessProperty: "error",
});

// Decodes and cross-checks; every problem names its path, e.g. `stores[3].brand_id: unknown brand 9`.
export const validateSnapshot = (
  input: unknown,
): Either.Either<Snapshot, SnapshotInvalid> => {
  const decoded = decode(input);
  if (Either.isLeft(decoded)) {
    const issues = ParseResult.ArrayFormatter.formatErrorSync(decoded.left);
    return Either.left(
      new SnapshotInvalid({
        problems: issues.slice(0, MAX_PROBLEMS).map((issue) =>
          `${formatPath(issue.path) || "(root)"}: ${issue.message}`
        ),
      }),
    );
  }
  const problems = crossCheck(decoded.right);
  return problems.length > 0
    ? Either.left(new SnapshotInvalid({ problems }))
    : Either.right(decoded.right);
};
