// Loads a validated snapshot in one transaction, set-based; energy enters through sealed platform batches.
import * as SqlClient from "@effect/sql/SqlClient";
import type * as SqlError from "@effect/sql/SqlError";
import { Data, Effect, Option } from "effect";
import {
  dayAfterColumns,
  dayAfterFacts,
  NO_DAY_SQL,
  reserveDayIds,
  type RevisionSql,
  sqlText,
} from "../energy/day_after.ts";
import { applyRevisions, recordCommits } from "../energy/day_writer.ts";
import { generateSnapshot } from "./generate.ts";
import { dateOfDay, dayIndex } from "../domain/range.ts";
import { type Snapshot, type SnapshotInvalid, validateSnapshot } from "./snapshot.ts";
import { span } from "../ops/span.ts";
import { sqlStateOf } from "../db/errors.ts";

export interface LoadOptions {
  readonly reset: boolean;
  // With reset: empty the tables even when they hold committed uploads (their corrections and
  // history go with them).
  readonly discardUploads?: boolean;
}

export type LoadSummary = Readonly<Record<(typeof COUNTED)[number], number>>;

export class SnapshotAlreadyLoaded extends Data.TaggedError("SnapshotAlreadyLoaded")<{
  readonly stores: number;
}> {
  override get message() {
    return "database already holds a snapshot; use --reset";
  }
}

// A reset would delete corrections that clerks committed, which no snapshot holds.
export class SnapshotHoldsUploads extends Data.TaggedError("SnapshotHoldsUploads")<{
  readonly batches: number;
}> {
  override get message() {
    return `database holds ${this.batches} committed upload${this.batches === 1 ? "" : "s"}, ` +
      "whose corrections and history a reset deletes; use --discard-uploads to reset anyway";
  }
}

export type LoadError =
  | SnapshotInvalid
  | SnapshotAlreadyLoaded
  | SnapshotHoldsUploads
  | SqlError.SqlError;

// Everything a snapshot owns; members, access keys, sessions, settings and migrations survive a reset.
const DATA_TABLES = [
  "dataset",
  "brands",
  "stores",
  "scopes",
  "source_files",
  "source_records",
  "import_batches",
  "import_rows",
  "import_row_sources",
  "energy_days",
  "energy_revisions",
  "energy_months",
  "commits",
  "commit_stores",
  "idempotency_records",
  "target_periods",
  "target_period_items",
  "tev_observations",
  "stage_history",
  "stage_snapshots",
  "devices",
  "device_events",
  "strategies",
  "strategy_items",
  "target_candidates",
  "audit_log",
] as const;

const COUNTED = [
  "brands",
  "stores",
  "scopes",
  "stage_history",
  "stage_snapshots",
  "devices",
  "device_events",
  "strategies",
  "strategy_items",
  "target_periods",
  "target_period_items",
  "tev_observations",
  "target_candidates",
  "import_batches",
  "source_files",
  "source_records",
  "import_rows",
  "import_row_sources",
  "energy_days",
  "energy_revisions",
] as const;

const CHUNK_DAYS = 20_000;

// The tables that receive a row per store-day (see loadEnergy).
const BULK_TABLES = [
  "source_records",
  "import_rows",
  "import_row_sources",
  "energy_days",
  "energy_revisions",
  "energy_months",
  "commits",
] as const;

const LEGACY_TABLE = "legacy_daily_energy";
const CLEANED_TABLE = "cleaned_daily_energy";
const VOID_NOTE = "Marked VOID in the cleaned snapshot";

type Column = readonly [name: string, type: string];

const sha256Hex = (text: string) =>
  Effect.promise(async () => {
    const bytes = new TextEncoder().encode(text);
    const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
    return {
      sha256: Array.from(digest, (b) => b.toString(16).padStart(2, "0")).join(""),
      byteSize: bytes.length,
    };
  });

// The sealed text of each energy part; its hash identifies the source file of that batch.
const legacyPartText = (s: Snapshot) =>
  JSON.stringify(s.energy.map((e) => ({
    store_id: e.store_id,
    scope_id: e.scope_id,
    start: e.start,
    legacy: e.legacy,
    provisional: e.provisional ?? null,
  })));

const cleanedPartText = (s: Snapshot) =>
  JSON.stringify(s.energy.map((e) => ({
    store_id: e.store_id,
    scope_id: e.scope_id,
    cleaned: e.cleaned.map((c) => ({
      date: c.date,
      kwh: c.kwh,
      quality_status: c.quality_status ?? null,
      quality_note: c.quality_note ?? null,
    })),
    void_days: e.void_days,
  })));

// One staged store-day: the legacy side (revision 1) and the cleaned/void side (the revision after it).
interface StagedDays {
  readonly scopeId: Array<number>;
  readonly date: Array<string>;
  readonly legacy: Array<string | null>;
  readonly legacyNo: Array<number | null>;
  readonly cleaned: Array<string | null>;
  readonly cleanedNo: Array<number | null>;
  readonly qualityStatus: Array<string | null>;
  readonly qualityNote: Array<string | null>;
  readonly provisionalAt: Array<string | null>;
  legacyCount: number;
  cleanedCount: number;
}

// Gap days (no legacy value, no cleaned value, not void) are left out: they have no row at all.
const stageDays = (s: Snapshot): StagedDays => {
  const out: StagedDays = {
    scopeId: [],
    date: [],
    legacy: [],
    legacyNo: [],
    cleaned: [],
    cleanedNo: [],
    qualityStatus: [],
    qualityNote: [],
    provisionalAt: [],
    legacyCount: 0,
    cleanedCount: 0,
  };
  const rangeStart = dayIndex(s.dataset.start);
  const dates = Array.from(
    { length: dayIndex(s.dataset.end) - rangeStart + 1 },
    (_, k) => dateOfDay(rangeStart + k),
  );
  for (const e of s.energy) {
    const first = dayIndex(e.start) - rangeStart;
    const cleaned = new Map(e.cleaned.map((c) => [dayIndex(c.date) - rangeStart, c]));
    const voids = new Set(e.void_days.map((v) => dayIndex(v) - rangeStart));
    const provisional = e.provisional ? dayIndex(e.provisional.date) - rangeStart : -1;
    const observedAt = e.provisional?.observed_at ?? null;
    for (let day = 0; day < dates.length; day++) {
      const legacy = e.legacy[day - first] ?? null;
      const c = cleaned.get(day);
      const isVoid = voids.has(day);
      if (legacy === null && c === undefined && !isVoid) continue;
      out.scopeId.push(e.scope_id);
      out.date.push(dates[day]);
      out.legacy.push(legacy);
      out.legacyNo.push(legacy === null ? null : ++out.legacyCount);
      out.cleaned.push(c?.kwh ?? null);
      out.cleanedNo.push(c || isVoid ? ++out.cleanedCount : null);
      out.qualityStatus.push(
        c ? c.quality_status ?? "REVIEWED" : isVoid ? "REVIEWED" : null,
      );
      out.qualityNote.push(c ? c.quality_note ?? null : isVoid ? VOID_NOTE : null);
      out.provisionalAt.push(day === provisional ? observedAt : null);
    }
  }
  return out;
};

const loadValid = (s: Snapshot, options: LoadOptions) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient;
    const run = <A extends object = Record<string, unknown>>(
      text: string,
      params: ReadonlyArray<unknown> = [],
    ) => sql.unsafe<A>(text, params);

    // JSON arrives as one text parameter, so both drivers pass it through without re-encoding.
    const insertJson = (
      table: string,
      columns: ReadonlyArray<Column>,
      rows: ReadonlyArray<object>,
    ) =>
      rows.length === 0 ? Effect.void : run(
        `INSERT INTO ${table} (${columns.map(([n]) => n).join(", ")})
         SELECT ${columns.map(([n]) => n).join(", ")}
         FROM jsonb_to_recordset($1::text::jsonb) AS r(${
          columns.map(([n, t]) => `${n} ${t}`).join(", ")
        })`,
        [JSON.stringify(rows)],
      );

    // Replacing foreign keys needs ownership of the tables.
    const [{ owner }] = yield* run<{ owner: boolean }>(
      `SELECT coalesce(bool_and(pg_has_role(relowner, 'USAGE')), false) AS owner FROM pg_class
       WHERE oid::regclass::text = ANY($1::text[]) AND relkind = 'r'`,
      [DATA_TABLES],
    );
    if (options.reset) {
      // Blocks commits until this load commits, so that none lands after the count.
      yield* run(`LOCK TABLE import_batches IN EXCLUSIVE MODE`);
      const [{ uploads }] = yield* run<{ uploads: number }>(
        `SELECT count(*)::int AS uploads FROM import_batches
         WHERE batch_kind = 'UPLOAD' AND status = 'COMMITTED'`,
      );
      if (uploads > 0 && options.discardUploads !== true) {
        return yield* new SnapshotHoldsUploads({ batches: uploads });
      }
      // Identities go on from where they were: an id or batch number handed out before the reload
      // (a preview's, a commit's) never names another batch after it.
      yield* run(`TRUNCATE ${DATA_TABLES.join(", ")} CASCADE`);
      // A new snapshot starts a new history (its generation tells old tokens apart).
      yield* run(`UPDATE commit_clock SET seq = 0, committed_at = NULL, history_from = 0`);
    } else {
      // Blocks concurrent writers (and a concurrent seed) until this load commits; readers go on.
      yield* run(`LOCK TABLE ${DATA_TABLES.join(", ")} IN EXCLUSIVE MODE`);
      const [held] = yield* run<{ stores: number; datasets: number }>(
        `SELECT (SELECT count(*) FROM stores)::int AS stores,
                (SELECT count(*) FROM dataset)::int AS datasets`,
      );
      if (held.stores > 0 || held.datasets > 0) {
        return yield* new SnapshotAlreadyLoaded({ stores: held.stores });
      }
    }

    const d = s.dataset;
    yield* run(
      `INSERT INTO dataset (id, label, start_date, end_date, source_policy, timezone, unit)
       VALUES (1, $1, $2::date, $3::date, $4, $5, $6)`,
      [d.label, d.start, d.end, d.source_policy, d.timezone, d.unit],
    );
    yield* insertJson("brands", [["id", "int"], ["name", "text"]], s.brands);
    yield* insertJson("stores", [
      ["id", "int"],
      ["brand_id", "int"],
      ["store_code", "text"],
      ["source_org_id", "int"],
      ["name", "text"],
      ["address", "text"],
      ["city", "text"],
      ["business_hours", "jsonb"],
      ["peak_hours", "jsonb"],
      ["business_mode", "text"],
      ["settlement_mode", "text"],
      ["is_key_store", "boolean"],
      ["tags", "jsonb"],
      ["equipment_profile", "jsonb"],
      ["profile_editable", "boolean"],
    ], s.stores);
    yield* insertJson(
      "scopes",
      [["id", "int"], ["store_id", "int"], ["kind", "text"], ["unit", "text"], [
        "timezone",
        "text",
      ]],
      s.stores.map((st) => ({ ...st.scope, store_id: st.id })),
    );
    yield* insertJson("stage_history", [
      ["store_id", "int"],
      ["stage", "text"],
      ["valid_from", "date"],
      ["valid_to", "date"],
      ["change_reason", "text"],
    ], s.stage_history);
    yield* insertJson("stage_snapshots", [
      ["store_id", "int"],
      ["stage", "text"],
      ["stage_basis", "text"],
      ["legacy_progress", "text"],
      ["captured_at", "timestamptz"],
      ["source_reference", "text"],
      ["basis", "text"],
    ], s.stage_snapshots);
    yield* insertJson("devices", [
      ["id", "int"],
      ["store_id", "int"],
      ["source_device_id", "text"],
      ["device_name", "text"],
      ["device_code", "text"],
      ["device_type", "text"],
      ["material_code", "text"],
      ["online_status", "text"],
      ["status_observed_at", "timestamptz"],
      ["synced_at", "timestamptz"],
      ["source_reference", "text"],
    ], s.devices);
    yield* insertJson("device_events", [
      ["id", "int"],
      ["store_id", "int"],
      ["device_id", "int"],
      ["event_type", "text"],
      ["occurred_at", "timestamptz"],
      ["note", "text"],
    ], s.device_events);
    yield* insertJson("strategies", [
      ["store_id", "int"],
      ["configured_count", "int"],
      ["dispatched_count", "int"],
      ["distinguish_calendar", "boolean"],
      ["execution_status", "text"],
      ["source_reference", "text"],
      ["observed_at", "timestamptz"],
      ["synced_at", "timestamptz"],
    ], s.strategies);
    yield* insertJson("strategy_items", [
      ["store_id", "int"],
      ["position", "int"],
      ["name", "text"],
      ["date_category", "text"],
      ["day_week", "text"],
      ["publish_status", "text"],
      ["issue_status", "int"],
      ["publish_time", "timestamptz"],
      ["issue_time", "timestamptz"],
    ], s.strategy_items);
    yield* insertJson("target_periods", [
      ["id", "int"],
      ["store_id", "int"],
      ["scope_id", "int"],
      ["valid_from", "date"],
      ["valid_to", "date"],
      ["tes_kwh", "numeric"],
      ["tev_warning_ratio", "numeric"],
      ["source_kind", "text"],
      ["source_reference", "text"],
    ], s.target_periods);
    yield* insertJson(
      "target_period_items",
      [
        ["period_id", "int"],
        ["item_name", "text"],
        ["unit_price", "numeric"],
        ["priced_quantity", "numeric"],
      ],
      s.target_periods.flatMap((t) => t.items.map((item) => ({ ...item, period_id: t.id }))),
    );
    yield* insertJson("tev_observations", [
      ["store_id", "int"],
      ["scope_id", "int"],
      ["observed_date", "date"],
      ["value_kwh", "numeric"],
      ["is_valid", "boolean"],
      ["source_reference", "text"],
    ], s.tev_observations);
    yield* insertJson("target_candidates", [
      ["store_id", "int"],
      ["tes_180_kwh", "numeric"],
      ["tes_210_kwh", "numeric"],
      ["known_payback_days", "int"],
      ["selected_candidate_kwh", "numeric"],
      ["source_revision", "int"],
      ["source_sheet_id", "text"],
      ["source_row", "int"],
      ["source_url", "text"],
      ["status", "text"],
      ["unit", "text"],
      ["basis", "text"],
      ["capture_id", "int"],
      ["source_record_id", "int"],
    ], s.target_candidates);

    // PostgreSQL checks a foreign key row by row (one lookup and row lock each, ~2/3 of the load time);
    // the bulk tables' keys are dropped and re-added from their own catalog definitions, which
    // validates them in one set-based pass. DDL is transactional: a failure restores them. A role
    // that does not own the tables keeps the row-by-row checks.
    const foreignKeys = owner
      ? yield* run<{ table_name: string; name: string; definition: string }>(
        `SELECT c.conrelid::regclass::text AS table_name, c.conname::text AS name,
                pg_get_constraintdef(c.oid) AS definition
         FROM pg_constraint c
         WHERE c.contype = 'f' AND c.conrelid::regclass::text = ANY($1::text[])
         ORDER BY c.conname`,
        [BULK_TABLES],
      )
      : [];
    // The references checked per statement (migration 0011: a trigger of check_references, whose
    // arguments are the reference's name, columns, referenced table and columns) are switched off
    // for the load and validated after it as a foreign key would be, in one pass: the key is
    // added, which checks every row, then dropped again.
    const references = owner
      ? yield* run<{ table_name: string; trigger: string; args: string }>(
        `SELECT t.tgrelid::regclass::text AS table_name, t.tgname::text AS trigger,
                encode(t.tgargs, 'escape') AS args
         FROM pg_trigger t JOIN pg_proc f ON f.oid = t.tgfoid
         WHERE f.proname = 'check_references' AND t.tgrelid::regclass::text = ANY($1::text[])
         ORDER BY t.tgname`,
        [BULK_TABLES],
      )
      : [];
    const quote = (name: string) => `"${name.replaceAll('"', '""')}"`;
    for (const fk of foreignKeys) {
      yield* run(`ALTER TABLE ${fk.table_name} DROP CONSTRAINT ${quote(fk.name)}`);
    }
    for (const ref of references) {
      yield* run(`ALTER TABLE ${ref.table_name} DISABLE TRIGGER ${quote(ref.trigger)}`);
    }
    yield* loadEnergy(s);
    for (const fk of foreignKeys) {
      yield* run(
        `ALTER TABLE ${fk.table_name} ADD CONSTRAINT ${quote(fk.name)} ${fk.definition}`,
      );
    }
    const validated = new Set<string>();
    for (const ref of references) {
      const [name, columns, table, referenced] = ref.args.split("\\000");
      if (!validated.has(name)) {
        validated.add(name);
        yield* run(
          `ALTER TABLE ${ref.table_name} ADD CONSTRAINT ${quote(name)}
             FOREIGN KEY (${columns}) REFERENCES ${table} (${referenced})`,
        );
        yield* run(`ALTER TABLE ${ref.table_name} DROP CONSTRAINT ${quote(name)}`);
      }
      yield* run(`ALTER TABLE ${ref.table_name} ENABLE TRIGGER ${quote(ref.trigger)}`);
    }

    const counts = yield* run<{ t: string; n: number }>(
      COUNTED.map((t) => `SELECT '${t}' AS t, count(*)::int AS n FROM ${t}`).join(
        " UNION ALL ",
      ),
    );
    const byTable = new Map(counts.map((c) => [c.t, c.n]));
    return Object.fromEntries(COUNTED.map((t) => [t, byTable.get(t) ?? 0])) as LoadSummary;
  });

// Energy per rules.md §8: staged once, then each table is derived by one INSERT ... SELECT.
const loadEnergy = (s: Snapshot) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient;
    const run = (text: string, params: ReadonlyArray<unknown> = []) =>
      sql.unsafe<Record<string, number>>(text, params);
    const days = stageDays(s);
    const total = days.date.length;
    const rows = days.legacyCount + days.cleanedCount;

    // Ids are reserved up front from each identity sequence (the days' as the energy module draws
    // them), so every link is known before inserting.
    const reserve = (table: string, n: number) =>
      n === 0 ? Effect.succeed(1) : run(
        `SELECT (setval(pg_get_serial_sequence('${table}', 'id')::regclass,
                        nextval(pg_get_serial_sequence('${table}', 'id')::regclass) + $1::int - 1)
                 - $1::int + 1)::int AS first`,
        [n],
      ).pipe(Effect.map((r) => r[0].first));
    const energyBase = yield* reserveDayIds(total);
    const rowBase = yield* reserve("import_rows", rows);
    const recordBase = yield* reserve("source_records", rows);

    const label = s.dataset.label;
    const range = `${s.dataset.start}..${s.dataset.end}`;
    const legacyFile = yield* sha256Hex(legacyPartText(s));
    const cleanedFile = yield* sha256Hex(cleanedPartText(s));
    const batch = (
      kind: "PLATFORM_LEGACY" | "PLATFORM_CLEANED",
      sourceKind: string,
      file: { sha256: string; byteSize: number },
      reason: string,
      note: string,
    ) =>
      Effect.gen(function* () {
        const [f] = yield* run(
          `INSERT INTO source_files (sha256, filename, source_kind, content, byte_size)
           VALUES ($1, NULL, $2, NULL, $3::int) RETURNING id::int AS id`,
          [file.sha256, sourceKind, file.byteSize],
        );
        const batchNo = `${kind.replace("PLATFORM_", "SNAPSHOT-")}-${file.sha256.slice(0, 12)}`;
        const [b] = yield* run(
          `INSERT INTO import_batches
             (batch_no, batch_kind, filename, status, source_file_id, change_reason, note,
              committed_at, action_counts)
           VALUES ($1, $2, NULL, 'COMMITTED', $3::int, $4, $5, now(), '{}'::jsonb)
           RETURNING id::int AS id`,
          [batchNo, kind, f.id, reason, note],
        );
        return { fileId: f.id, batchId: b.id, batchNo, sha256: file.sha256, reason };
      });
    const legacy = yield* batch(
      "PLATFORM_LEGACY",
      "LEGACY_SNAPSHOT",
      legacyFile,
      "Sealed legacy snapshot load",
      `Sealed legacy daily energy of "${label}" (${range}), loaded through the platform path: ` +
        `one import row per store-day with a legacy value, each linked to its sealed source record.`,
    );
    const cleaned = yield* batch(
      "PLATFORM_CLEANED",
      "CLEANED_SNAPSHOT",
      cleanedFile,
      "Sealed cleaned snapshot load",
      `Cleaned daily energy and VOID markers of "${label}" (${range}), loaded through the platform ` +
        `path after the legacy batch: one import row per cleaned or voided store-day.`,
    );

    yield* run(
      `CREATE TEMP TABLE seed_days (
         scope_id int NOT NULL,
         business_date date NOT NULL,
         energy_id int NOT NULL,
         legacy numeric,
         legacy_row_no int,
         legacy_row_id int,
         legacy_record_id int,
         cleaned numeric,
         is_void boolean NOT NULL,
         cleaned_row_no int,
         cleaned_row_id int,
         cleaned_record_id int,
         cleaned_action text,
         quality_status text,
         quality_note text,
         provisional_at timestamptz
       ) ON COMMIT DROP`,
    );
    // Legacy rows take the first `legacyCount` ids of import_rows and source_records, cleaned rows the rest.
    for (let at = 0; at < total; at += CHUNK_DAYS) {
      const to = Math.min(at + CHUNK_DAYS, total);
      yield* run(
        `INSERT INTO seed_days
         SELECT u.scope_id, u.business_date, $10::int + $13::int + u.ord::int - 1,
                u.legacy, u.legacy_no, $11::int + u.legacy_no - 1, $12::int + u.legacy_no - 1,
                u.cleaned, u.cleaned_no IS NOT NULL AND u.cleaned IS NULL,
                u.cleaned_no, $11::int + $14::int + u.cleaned_no - 1,
                $12::int + $14::int + u.cleaned_no - 1,
                CASE WHEN u.cleaned_no IS NULL THEN NULL
                     WHEN u.cleaned IS NULL THEN 'VOID'
                     WHEN u.legacy IS NULL THEN 'INSERT'
                     WHEN u.cleaned = u.legacy THEN 'RELINK'
                     ELSE 'UPDATE' END,
                u.quality_status, u.quality_note, u.provisional_at
         FROM unnest($1::int[], $2::date[], $3::numeric[], $4::int[], $5::numeric[], $6::int[],
                     $7::text[], $8::text[], $9::timestamptz[]) WITH ORDINALITY
           AS u(scope_id, business_date, legacy, legacy_no, cleaned, cleaned_no,
                quality_status, quality_note, provisional_at, ord)`,
        [
          days.scopeId.slice(at, to),
          days.date.slice(at, to),
          days.legacy.slice(at, to),
          days.legacyNo.slice(at, to),
          days.cleaned.slice(at, to),
          days.cleanedNo.slice(at, to),
          days.qualityStatus.slice(at, to),
          days.qualityNote.slice(at, to),
          days.provisionalAt.slice(at, to),
          energyBase,
          rowBase,
          recordBase,
          at,
          days.legacyCount,
        ],
      );
    }
    yield* run(`ANALYZE seed_days`);

    const storeJoin = `JOIN scopes sc ON sc.id = d.scope_id
      JOIN stores st ON st.id = sc.store_id
      JOIN brands b ON b.id = st.brand_id`;
    yield* run(
      `INSERT INTO source_records
         (id, source_file_id, source_kind, source_table, file_sha256, explanation, record)
       OVERRIDING SYSTEM VALUE
       SELECT d.legacy_record_id, $1::int, 'LEGACY_SNAPSHOT', $2, $3, 'Sealed legacy daily value',
              jsonb_build_object('brand', b.name, 'store_code', st.store_code,
                'store_name', st.name, 'scope_id', d.scope_id,
                'business_date', d.business_date::text, 'energy_kwh', d.legacy::text)
       FROM seed_days d ${storeJoin}
       WHERE d.legacy_row_no IS NOT NULL`,
      [legacy.fileId, LEGACY_TABLE, legacy.sha256],
    );
    yield* run(
      `INSERT INTO source_records
         (id, source_file_id, source_kind, source_table, file_sha256, explanation, record)
       OVERRIDING SYSTEM VALUE
       SELECT d.cleaned_record_id, $1::int, 'CLEANED_SNAPSHOT', $2, $3,
              CASE WHEN d.is_void THEN 'Cleaned VOID marker' ELSE 'Cleaned daily value' END,
              jsonb_build_object('brand', b.name, 'store_code', st.store_code,
                'store_name', st.name, 'scope_id', d.scope_id,
                'business_date', d.business_date::text, 'energy_kwh', d.cleaned::text,
                'void', d.is_void, 'quality_status', d.quality_status,
                'quality_note', d.quality_note)
       FROM seed_days d ${storeJoin}
       WHERE d.cleaned_row_no IS NOT NULL`,
      [cleaned.fileId, CLEANED_TABLE, cleaned.sha256],
    );

    // Built from parameter placeholders: (batch_no, source_table, record id expression).
    const reference = (batchNo: string, table: string, id: string) =>
      `jsonb_build_object('batch_no', ${batchNo}::text, 'source_table', ${table}::text,
                          'record_id', ${id})`;
    yield* run(
      `INSERT INTO import_rows
         (id, batch_id, row_number, resolved_store_id, scope_id, business_date, raw_brand,
          raw_store_name, raw_date, raw_energy, proposed_kwh, proposed_void, before_kwh,
          before_is_void, before_revision_no, action, source_kind, quality_status, quality_note,
          lineage_status, source_reference)
       OVERRIDING SYSTEM VALUE
       SELECT d.legacy_row_id, $1::int, d.legacy_row_no, sc.store_id, d.scope_id, d.business_date,
              b.name, st.name, d.business_date::text, d.legacy::text, d.legacy, false, NULL,
              NULL, NULL, 'INSERT', 'LEGACY_DIRECT', 'UNREVIEWED', NULL, 'SEALED_SOURCE',
              ${reference("$2", "$3", "d.legacy_record_id")}
       FROM seed_days d ${storeJoin}
       WHERE d.legacy_row_no IS NOT NULL`,
      [legacy.batchId, legacy.batchNo, LEGACY_TABLE],
    );
    yield* run(
      `INSERT INTO import_rows
         (id, batch_id, row_number, resolved_store_id, scope_id, business_date, raw_brand,
          raw_store_name, raw_date, raw_energy, proposed_kwh, proposed_void, before_kwh,
          before_is_void, before_revision_no, action, source_kind, quality_status, quality_note,
          lineage_status, source_reference)
       OVERRIDING SYSTEM VALUE
       SELECT d.cleaned_row_id, $1::int, d.cleaned_row_no, sc.store_id, d.scope_id,
              d.business_date, b.name, st.name, d.business_date::text,
              CASE WHEN d.is_void THEN 'VOID' ELSE d.cleaned::text END, d.cleaned, d.is_void,
              d.legacy, CASE WHEN d.legacy_row_no IS NOT NULL THEN false END,
              CASE WHEN d.legacy_row_no IS NOT NULL THEN 1 END, d.cleaned_action, 'CLEANED',
              d.quality_status, d.quality_note, 'SEALED_SOURCE',
              ${reference("$2", "$3", "d.cleaned_record_id")}
       FROM seed_days d ${storeJoin}
       WHERE d.cleaned_row_no IS NOT NULL`,
      [cleaned.batchId, cleaned.batchNo, CLEANED_TABLE],
    );
    yield* run(
      `INSERT INTO import_row_sources (import_row_id, source_record_id)
       SELECT legacy_row_id, legacy_record_id FROM seed_days WHERE legacy_row_no IS NOT NULL
       UNION ALL
       SELECT cleaned_row_id, cleaned_record_id FROM seed_days WHERE cleaned_row_no IS NOT NULL`,
    );
    yield* run(
      `UPDATE import_batches b SET action_counts = c.counts
       FROM (
         SELECT $1::int AS batch_id,
           jsonb_build_object('INSERT', count(*)::int) AS counts
         FROM seed_days WHERE legacy_row_no IS NOT NULL
         HAVING count(*) > 0
         UNION ALL
         SELECT $2::int, jsonb_object_agg(x.action, x.n)
         FROM (SELECT cleaned_action AS action, count(*)::int AS n FROM seed_days
               WHERE cleaned_row_no IS NOT NULL GROUP BY cleaned_action) x
         HAVING count(*) > 0
       ) c
       WHERE b.id = c.batch_id`,
      [legacy.batchId, cleaned.batchId],
    );

    // The days and their revisions: the legacy value as revision 1, the cleaned value or VOID
    // marker as the revision after it; each revision with the day's state right after it (after
    // the legacy revision, the legacy value alone), the day's current state that of its last.
    // Both states by the energy module's rule (energy/day_after.ts). The snapshot states each day's
    // provisional mark: both revisions carry it. The cleaned revision follows the legacy one (for a
    // day without a legacy value, that state is the day without a row but for the mark, which the
    // cleaned revision sets again).
    const legacyRevision: RevisionSql = {
      kind: "legacy",
      kwh: "d.legacy",
      provisionalAt: "d.provisional_at",
    };
    const legacyState = dayAfterColumns(NO_DAY_SQL, legacyRevision);
    const cleanedState = dayAfterColumns(dayAfterFacts(NO_DAY_SQL, legacyRevision), {
      kind: "cleaned",
      void: "d.is_void",
      kwh: "d.cleaned",
      sourceKind: sqlText("CLEANED"),
      provisionalAt: "d.provisional_at",
    });
    yield* applyRevisions(
      `(SELECT d.energy_id, true AS new_day, d.cleaned_row_no IS NULL AS last, sc.store_id,
          d.scope_id, d.business_date, 1 AS revision_no, 'INSERT' AS operation,
          NULL::numeric AS before_kwh, d.legacy AS after_kwh, NULL::boolean AS before_is_void,
          false AS after_is_void, $1::text AS change_reason, d.legacy_row_id AS import_row_id,
          'LEGACY_DIRECT' AS source_kind, 'Sealed legacy snapshot' AS source_label,
          'UNREVIEWED' AS quality_status, NULL::text AS quality_note, NULL::int AS member_id,
          ${legacyState}, ${reference("$3", "$4", "d.legacy_record_id")} AS source_reference
        FROM seed_days d JOIN scopes sc ON sc.id = d.scope_id
        WHERE d.legacy_row_no IS NOT NULL
        UNION ALL
        SELECT d.energy_id, true, true, sc.store_id, d.scope_id, d.business_date,
          CASE WHEN d.legacy_row_no IS NULL THEN 1 ELSE 2 END, d.cleaned_action, d.legacy,
          d.cleaned, CASE WHEN d.legacy_row_no IS NOT NULL THEN false END, d.is_void,
          $2::text, d.cleaned_row_id, 'CLEANED', 'Cleaned snapshot', d.quality_status,
          d.quality_note, NULL::int, ${cleanedState},
          ${reference("$5", "$6", "d.cleaned_record_id")}
        FROM seed_days d JOIN scopes sc ON sc.id = d.scope_id
        WHERE d.cleaned_row_no IS NOT NULL)`,
      [
        legacy.reason,
        cleaned.reason,
        legacy.batchNo,
        LEGACY_TABLE,
        cleaned.batchNo,
        CLEANED_TABLE,
      ],
      // The data tables were empty (or emptied) at the start of this transaction.
      { fresh: true },
    );
    yield* recordCommits([legacy.batchId, cleaned.batchId]);
  });

// After a load, once committed: the bulk tables' rows marked as visible to every transaction
// (VACUUM: the visibility map and each row's hint bits, one sequential pass, about 1 s for 2,000
// stores), which the first read of each page would otherwise write, page by page; then planner
// statistics for every table (without them the read queries scan whole tables).
export const settleLoadedTables = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient;
  yield* sql.unsafe(`VACUUM ${BULK_TABLES.join(", ")}`);
  yield* sql.unsafe("ANALYZE");
}).pipe(span("Seed.settleLoadedTables"));

const DEADLOCK = "40P01";
const DEADLOCK_RETRIES = 3;

// Validates, then loads everything in one transaction: on any error nothing is loaded.
export const loadSnapshot = (
  input: unknown,
  options: LoadOptions,
): Effect.Effect<LoadSummary, LoadError, SqlClient.SqlClient> =>
  Effect.gen(function* () {
    const snapshot = yield* validateSnapshot(input);
    const sql = yield* SqlClient.SqlClient;
    const inTransaction = Option.isSome(
      yield* Effect.serviceOption(SqlClient.TransactionConnection),
    );
    const load = sql.withTransaction(loadValid(snapshot, options));
    // A write already under way when a reload takes its locks (a preview between its file and its
    // batch) may meet them in the other order: PostgreSQL ends one of the two, and a load it ended
    // (nothing of it kept) is tried again. A caller's own transaction is the caller's to retry.
    const summary = yield* (inTransaction ? load : Effect.retry(load, {
      times: DEADLOCK_RETRIES,
      while: (error) => error._tag === "SqlError" && sqlStateOf(error) === DEADLOCK,
    }));
    // Inside a caller's transaction VACUUM cannot run: the caller settles after its commit.
    if (!inTransaction) yield* settleLoadedTables;
    return summary;
  }).pipe(span("Seed.loadSnapshot"));

export interface SeedOptions {
  readonly stores?: number;
  readonly reset?: boolean;
  readonly snapshot?: unknown;
}

// The given snapshot, or else the generated demo of `stores` stores (default 60).
export const seedDatabase = (
  options: SeedOptions = {},
): Effect.Effect<LoadSummary, LoadError, SqlClient.SqlClient> =>
  Effect.suspend(() =>
    loadSnapshot(
      options.snapshot ?? generateSnapshot({ stores: options.stores ?? 60 }),
      { reset: options.reset ?? false },
    )
  );
