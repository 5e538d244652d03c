// ImportRepo: the import path's SQL. Every write is set-based (one statement per table, whatever
// the number of rows); the Import and Lineage bodies are shaped as JSON by PostgreSQL.
import * as SqlClient from "@effect/sql/SqlClient";
import { Buffer } from "node:buffer";
import { Effect } from "effect";
import { mayReadBatchSql } from "../auth/access.ts";
import { handOver } from "../db/pglite_worker.ts";
import { utc } from "../db/sql_text.ts";
import { addDays, dayIndex } from "../domain/range.ts";
import { dayAfterColumns, dayIdSql, factsOf, sqlText } from "../energy/day_after.ts";
import { scopedDataTokenSql } from "../energy/day_sql.ts";
import { applyRevisions, createRevisionTable, recordCommits } from "../energy/day_writer.ts";
import { countActions, SOURCE_KIND_UPLOAD } from "./planner.ts";
import type { ImportAction } from "../domain/imports.ts";
import type { CurrentDay, PlannedRow } from "./model.ts";
import { type PlausibilityFacts, RECENT_DAYS, type RecentLevel } from "./plausibility.ts";
import { span } from "../ops/span.ts";

// How long a previewed batch can be committed, and how long an Idempotency-Key is remembered.
export const PREVIEW_HOURS = 24;
export const IDEMPOTENCY_HOURS = 48;
// Every import row points at sealed source records (lineage_status of the Import rows).
export const LINEAGE_SEALED = "SEALED_SOURCE";
// Import rows stored per statement by a preview. What a statement holds while it runs (its page's
// JSON, and on the embedded database the worker's copy of it and PostgreSQL's buffers, which WASM
// memory never gives back) is a page's: 500 rows is about half a megabyte.
export const SAVE_PAGE_ROWS = 500;

const utf8 = new TextEncoder();

// The JSON text of an array of rows as UTF-8 bytes, written row by row into one buffer of the exact
// size: no text of the whole page is made (one of a few MB, in two bytes a character as soon as a
// name is Chinese, which the runtime keeps among its large objects).
export const jsonArrayBytes = (rows: ReadonlyArray<object>): Uint8Array<ArrayBuffer> => {
  const texts = rows.map((row) => JSON.stringify(row));
  let size = 2 + Math.max(0, texts.length - 1);
  for (const text of texts) size += Buffer.byteLength(text, "utf8");
  const bytes = new Uint8Array(size);
  let at = 0;
  bytes[at++] = 0x5b; // [
  texts.forEach((text, i) => {
    if (i > 0) bytes[at++] = 0x2c; // ,
    at += utf8.encodeInto(text, bytes.subarray(at)).written;
  });
  bytes[at] = 0x5d; // ]
  return bytes;
};

// The actions a commit writes (rules.md §8); the others have no effect.
const CHANGING = "'INSERT', 'UPDATE', 'RELINK', 'RESTORE', 'VOID'";

// The day after an upload's row, from the day as locked (NULLs for a day without a row): the row's
// value as the day's cleaned value, or its VOID marker (rules.md §8, energy/day_after.ts).
const UPLOADED_DAY = dayAfterColumns(factsOf("r"), {
  kind: "cleaned",
  void: "r.proposed_void",
  kwh: "r.proposed_kwh",
  sourceKind: sqlText(SOURCE_KIND_UPLOAD),
});

export interface BatchHead {
  readonly id: number;
  readonly batch_no: string;
  readonly batch_kind: string;
  readonly status: "PREVIEWED" | "COMMITTED";
  readonly expired: boolean;
  // Discarded by a clerk (it expired then).
  readonly discarded: boolean;
  readonly change_reason: string | null;
}

export interface IdempotencyRecord {
  readonly request_hash: string;
  readonly batch_id: number | null;
}

export interface SavedPreview {
  readonly batchId: number;
  readonly batchNo: string;
  readonly uploadedAt: string;
  // Import row ids in row_number order.
  readonly rowIds: ReadonlyArray<number>;
}

// The fields of the Import body (contract part 2) other than rows and counters.
export interface ImportHead {
  readonly id: number;
  readonly batch_no: string;
  readonly filename: string | null;
  readonly status: string;
  readonly uploaded_at: string;
  readonly committed_at: string | null;
  readonly change_reason: string | null;
}

// One ImportRow of the contract, in its final shape (kWh printed with 4 decimals).
export interface ImportRowOut {
  readonly id: number;
  readonly row_number: number;
  readonly resolved_store_id: number;
  readonly business_date: string;
  readonly raw_energy: string | null;
  readonly proposed_energy_kwh: string | null;
  readonly before_energy_kwh: string | null;
  readonly action: ImportAction;
  readonly source_kind: string;
  readonly quality_status: string;
  readonly quality_note: string | null;
  readonly lineage_status: string;
  readonly note_field: string | null;
}

// A ReviewRow as read: its warnings as their JSON text (null: none).
export interface ReviewRowOut {
  readonly id: number;
  readonly row_number: number;
  readonly sheet: string | null;
  readonly file_row: number;
  readonly column: string;
  readonly brand: string | null;
  readonly store_name: string | null;
  readonly resolved_store_id: number;
  readonly business_date: string;
  readonly raw_date: string | null;
  readonly raw_energy: string | null;
  readonly before_energy_kwh: string | null;
  readonly proposed_energy_kwh: string | null;
  readonly action: ImportAction;
  readonly quality_note: string | null;
  readonly note_field: string | null;
  readonly warnings: string | null;
}

// The ranges of days that cover `keys`: per store, its first to its last day when they are at most
// twice as many days as it has keys (a file of stores x consecutive days: one index range scan
// each, where a lookup per key costs four times as much), else each of its days alone. So the days
// read are never more than twice the keys, whatever the dates a file names.
export const dayRanges = (keys: ReadonlyArray<{ scopeId: number; date: string }>) => {
  const byScope = new Map<number, Array<string>>();
  for (const k of keys) {
    const dates = byScope.get(k.scopeId);
    if (dates === undefined) byScope.set(k.scopeId, [k.date]);
    else dates.push(k.date);
  }
  const scopeIds: Array<number> = [];
  const firsts: Array<string> = [];
  const lasts: Array<string> = [];
  for (const [scopeId, dates] of byScope) {
    let first = dates[0], last = dates[0];
    for (const d of dates) {
      if (d < first) first = d;
      if (d > last) last = d;
    }
    if (dayIndex(last) - dayIndex(first) + 1 <= 2 * dates.length) {
      scopeIds.push(scopeId);
      firsts.push(first);
      lasts.push(last);
    } else {
      for (const d of dates) {
        scopeIds.push(scopeId);
        firsts.push(d);
        lasts.push(d);
      }
    }
  }
  return { scopeIds, firsts, lasts };
};

// The windows of RECENT_DAYS days before each key's day, and the day itself, merged per store into
// intervals (overlapping or adjacent windows are one interval), in pages of whole intervals of at
// most RECENT_PAGE_DAYS days (an interval longer than that is a page of its own). Each key names
// its interval by its 1-based place in the page.
export const RECENT_PAGE_DAYS = 4_000;
export const recentIntervals = (keys: ReadonlyArray<{ scopeId: number; date: string }>) => {
  const byScope = new Map<number, Set<string>>();
  for (const k of keys) {
    const dates = byScope.get(k.scopeId);
    if (dates === undefined) byScope.set(k.scopeId, new Set([k.date]));
    else dates.add(k.date);
  }
  const newPage = () => ({
    scopeIds: [] as Array<number>,
    firsts: [] as Array<string>,
    lasts: [] as Array<string>,
    keyIntervals: [] as Array<number>,
    keyScopes: [] as Array<number>,
    keyDates: [] as Array<string>,
  });
  const pages: Array<ReturnType<typeof newPage>> = [];
  let page = newPage();
  let days = 0;
  const close = (scopeId: number, dates: ReadonlyArray<string>) => {
    const first = addDays(dates[0], -RECENT_DAYS);
    const last = dates[dates.length - 1];
    const length = dayIndex(last) - dayIndex(first) + 1;
    if (days > 0 && days + length > RECENT_PAGE_DAYS) {
      pages.push(page);
      page = newPage();
      days = 0;
    }
    page.scopeIds.push(scopeId);
    page.firsts.push(first);
    page.lasts.push(last);
    for (const date of dates) {
      page.keyIntervals.push(page.scopeIds.length);
      page.keyScopes.push(scopeId);
      page.keyDates.push(date);
    }
    days += length;
  };
  for (const [scopeId, set] of byScope) {
    const sorted = [...set].sort();
    let run: Array<string> = [];
    for (const date of sorted) {
      // The next window starts RECENT_DAYS before its day: it joins the run when that is at most
      // the day after the run's last day.
      if (run.length > 0 && dayIndex(date) - RECENT_DAYS > dayIndex(run[run.length - 1]) + 1) {
        close(scopeId, run);
        run = [];
      }
      run.push(date);
    }
    if (run.length > 0) close(scopeId, run);
  }
  if (page.scopeIds.length > 0) pages.push(page);
  return pages;
};

// Days of current facts read per statement by a preview: each statement's answer (and what the
// embedded database's worker builds of it) is at most a page's, whatever the file's size.
export const CURRENT_PAGE_DAYS = 1_000;

// The ranges cut into pages of at most `pageDays` days each (a longer range is cut into pieces).
export const rangePages = (
  ranges: ReturnType<typeof dayRanges>,
  pageDays: number = CURRENT_PAGE_DAYS,
) => {
  const pages: Array<ReturnType<typeof dayRanges>> = [];
  let page: ReturnType<typeof dayRanges> = { scopeIds: [], firsts: [], lasts: [] };
  let days = 0;
  ranges.scopeIds.forEach((scopeId, i) => {
    const length = dayIndex(ranges.lasts[i]) - dayIndex(ranges.firsts[i]) + 1;
    for (let at = 0; at < length;) {
      if (days === pageDays) {
        pages.push(page);
        page = { scopeIds: [], firsts: [], lasts: [] };
        days = 0;
      }
      const take = Math.min(length - at, pageDays - days);
      page.scopeIds.push(scopeId);
      page.firsts.push(addDays(ranges.firsts[i], at));
      page.lasts.push(addDays(ranges.firsts[i], at + take - 1));
      days += take;
      at += take;
    }
  });
  if (page.scopeIds.length > 0) pages.push(page);
  return pages;
};

// A condition on import_rows r: its batch is an upload batch still previewed. A commit reads such
// a batch's rows on a connection of its own while its transaction runs (the rows of a batch never
// change after its preview), and reads nothing for a batch of another kind or state.
const PREVIEWED_UPLOAD = `AND EXISTS (SELECT 1 FROM import_batches b
  WHERE b.id = r.batch_id AND b.batch_kind = 'UPLOAD' AND b.status = 'PREVIEWED')`;

// The columns of an ImportRowOut, from import_rows r.
const ROW_OUT_COLUMNS = `r.id, r.row_number, r.resolved_store_id,
  r.business_date::text AS business_date, r.raw_energy,
  round(r.proposed_kwh, 4)::text AS proposed_energy_kwh,
  round(r.before_kwh, 4)::text AS before_energy_kwh, r.action, r.source_kind, r.quality_status,
  r.quality_note, r.lineage_status, r.note_field`;

const lineageJson = `
  SELECT json_build_object(
    'id', r.id, 'resolved_store_id', r.resolved_store_id, 'batch_id', r.batch_id,
    'raw_brand', r.raw_brand, 'raw_store_name', r.raw_store_name, 'raw_date', r.raw_date,
    'raw_energy', r.raw_energy, 'action', r.action, 'source_kind', r.source_kind,
    'quality_status', r.quality_status, 'quality_note', r.quality_note,
    'source_reference', r.source_reference,
    'sources', coalesce((
      SELECT json_agg(json_build_object(
        'id', s.id, 'source_kind', s.source_kind, 'source_table', s.source_table,
        'file_sha256', s.file_sha256,
        -- An upload's record names its file and counts its rows: only for a key that may read the
        -- whole batch (mayReadBatchSql), as the batch itself.
        'explanation', CASE WHEN s.source_kind <> 'MANUAL_UPLOAD' OR w.whole THEN s.explanation END,
        'record', CASE WHEN s.source_kind <> 'MANUAL_UPLOAD' OR w.whole THEN s.record
                       ELSE '{"withheld": true}'::jsonb END)
        ORDER BY s.id)
      FROM (
        -- The snapshot's rows link their records; an upload's row names its record.
        SELECT l.source_record_id AS id FROM import_row_sources l WHERE l.import_row_id = r.id
        UNION
        SELECT (r.source_reference->>'source_record_id')::int
      ) ids
      JOIN source_records s ON s.id = ids.id), '[]'::json)
  )::text AS body, r.resolved_store_id AS store_id
  FROM import_rows r
  CROSS JOIN LATERAL (SELECT ${mayReadBatchSql("r.batch_id", "$2::int[]")} AS whole) w
  WHERE r.id = $1`;

export class ImportRepo extends Effect.Service<ImportRepo>()("Imports/ImportRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient;

    // The current facts of the given store-days, one statement per page of CURRENT_PAGE_DAYS days
    // (possibly with days of the same stores between them: a caller looks up the days it asked
    // for).
    const currentDays = (keys: ReadonlyArray<{ scopeId: number; date: string }>) =>
      Effect.map(
        Effect.forEach(rangePages(dayRanges(keys)), currentPage),
        (pages) => pages.flat(),
      ).pipe(span("ImportRepo.currentDays"));

    const currentPage = (ranges: ReturnType<typeof dayRanges>) =>
      sql<CurrentDay & { scopeId: number; date: string }>`
        SELECT e.scope_id AS "scopeId", e.business_date::text AS date, e.id AS "energyId",
          e.legacy_kwh::text AS "legacyKwh", e.cleaned_kwh::text AS "cleanedKwh",
          e.served_kwh::text AS "servedKwh", e.is_void AS "isVoid", e.revision_no AS "revisionNo",
          e.quality_status AS "qualityStatus", e.quality_note AS "qualityNote"
        FROM unnest(${ranges.scopeIds}::int[], ${ranges.firsts}::date[], ${ranges.lasts}::date[])
          AS k(scope_id, first, last)
        -- One index range scan per range (a plain join is planned as a hash of the whole table).
        CROSS JOIN LATERAL (
          SELECT * FROM energy_days d
          WHERE d.scope_id = k.scope_id AND d.business_date BETWEEN k.first AND k.last
        ) e`;

    // --- Idempotency: one record per (member, key), claimed inside the transaction of the work.

    const idempotencyRecord = (memberId: number, key: string) =>
      sql<IdempotencyRecord>`
        SELECT request_hash, (response->>'batch_id')::int AS batch_id
        FROM idempotency_records
        WHERE member_id = ${memberId} AND idem_key = ${key} AND expires_at > now()`.pipe(
        Effect.map((rows) => rows[0] as IdempotencyRecord | undefined),
      );

    // Claims the key for this request. Returns the earlier record when the key is taken (a
    // concurrent claim waits here until the first transaction ends).
    const claim = (memberId: number, key: string, operation: string, requestHash: string) =>
      Effect.gen(function* () {
        // Expired keys of this member are forgotten here (the key's primary-key prefix makes it an
        // index range), so the table holds at most 48 hours of each member's requests.
        yield* sql`
          DELETE FROM idempotency_records
          WHERE member_id = ${memberId} AND expires_at <= now()`;
        const inserted = yield* sql`
          INSERT INTO idempotency_records
            (member_id, idem_key, operation, request_hash, expires_at)
          VALUES (${memberId}, ${key}, ${operation}, ${requestHash},
            now() + make_interval(hours => ${IDEMPOTENCY_HOURS}))
          ON CONFLICT (member_id, idem_key) DO NOTHING
          RETURNING 1`;
        if (inserted.length === 1) return undefined;
        return yield* idempotencyRecord(memberId, key);
      });

    const completeClaim = (memberId: number, key: string, batchId: number) =>
      sql`
        UPDATE idempotency_records
        SET status_code = 200, response = jsonb_build_object('batch_id', ${batchId}::int)
        WHERE member_id = ${memberId} AND idem_key = ${key}`;

    // --- Preview: the sealed source, the batch and its rows.

    const savePreview = (input: {
      readonly memberId: number;
      readonly filename: string;
      readonly reason: string;
      // The file, handed over to the database: the caller does not use it afterwards.
      readonly bytes: Uint8Array;
      readonly sha256: string;
      readonly format: "XLSX" | "CSV";
      readonly rows: ReadonlyArray<PlannedRow>;
      // Each row's plausibility warnings, by index of `rows` (absent or empty: none).
      readonly warnings?: ReadonlyArray<ReadonlyArray<PlausibilityFacts>>;
    }) =>
      Effect.gen(function* () {
        const size = input.bytes.byteLength;
        const [file] = yield* sql<{ id: number }>`
          INSERT INTO source_files (sha256, filename, source_kind, content, byte_size)
          VALUES (${input.sha256}, ${input.filename}, 'MANUAL_UPLOAD', ${handOver(input.bytes)},
            ${size})
          RETURNING id`;
        const [batch] = yield* sql<{ id: number; batch_no: string; uploaded_at: string }>`
          WITH next AS (SELECT nextval(pg_get_serial_sequence('import_batches', 'id'))::int AS id)
          INSERT INTO import_batches
            (id, batch_no, batch_kind, filename, status, source_file_id, member_id,
             change_reason, expires_at, action_counts)
          OVERRIDING SYSTEM VALUE
          SELECT next.id,
            'UP-' || to_char(now() AT TIME ZONE 'UTC', 'YYYYMMDD') || '-' || lpad(next.id::text, greatest(6, length(next.id::text)), '0'),
            'UPLOAD', ${input.filename}, 'PREVIEWED', ${file.id}, ${input.memberId},
            ${input.reason}, now() + make_interval(hours => ${PREVIEW_HOURS}),
            ${JSON.stringify(countActions(input.rows))}::jsonb
          FROM next
          RETURNING id, batch_no, ${sql.literal(utc("uploaded_at"))} AS uploaded_at`;
        const table = input.format === "XLSX" ? "xlsx_wide_table" : "csv_long_table";
        // One sealed source record per worksheet (XLSX) or for the file (CSV), then the import rows
        // page by page; each row's source_reference names its record and its cell (sheet, row,
        // column), and the raw texts are on the row itself. (A record and a link per value would
        // cost four more foreign-key checks per row: 10,000 of each on a full file.)
        const sheets = new Map<string | null, { n: number; first_row: number; last_row: number }>();
        for (const p of input.rows) {
          const { sheet, row } = p.row.location;
          const seen = sheets.get(sheet);
          if (seen === undefined) sheets.set(sheet, { n: 1, first_row: row, last_row: row });
          else {
            seen.n += 1;
            seen.first_row = Math.min(seen.first_row, row);
            seen.last_row = Math.max(seen.last_row, row);
          }
        }
        const records = yield* sql<{ id: number; sheet: string | null }>`
          INSERT INTO source_records
            (source_file_id, source_kind, source_table, file_sha256, explanation, record)
          SELECT ${file.id}, 'MANUAL_UPLOAD', ${table}, ${input.sha256},
            CASE WHEN s.sheet IS NULL THEN 'CSV file ' || ${input.filename}::text
                 ELSE 'Worksheet ' || s.sheet || ' of ' || ${input.filename}::text END,
            jsonb_strip_nulls(jsonb_build_object(
              'filename', ${input.filename}::text, 'format', ${input.format}::text,
              'sheet', s.sheet, 'values', s.n, 'first_row', s.first_row,
              'last_row', s.last_row))
          FROM json_to_recordset(${
          JSON.stringify([...sheets].map(([sheet, counts]) => ({ sheet, ...counts })))
        }::json) AS s(sheet text, n int, first_row int, last_row int)
          RETURNING id, record->>'sheet' AS sheet`;
        const recordIds = JSON.stringify(records);
        // Pages of rows, each one statement: what is sent for a page (and the buffers the driver
        // builds of it) is a page's, not the whole file's. A page goes as its JSON's UTF-8 bytes,
        // handed over: they move to the embedded database's worker without a copy.
        const stored: Array<{ id: number; n: number }> = [];
        for (let at = 0; at < input.rows.length; at += SAVE_PAGE_ROWS) {
          const page = input.rows.slice(at, at + SAVE_PAGE_ROWS).map((p, i) => ({
            n: p.row.rowNumber,
            store: p.row.storeId,
            scope: p.row.scopeId,
            date: p.row.date,
            brand: p.row.brand,
            name: p.row.storeName,
            raw_date: p.row.rawDate,
            raw: p.row.rawEnergy,
            kwh: p.proposedKwh,
            void: p.proposedVoid,
            before: p.beforeKwh,
            before_void: p.beforeIsVoid,
            before_rev: p.beforeRevisionNo,
            action: p.action,
            qs: p.qualityStatus,
            qn: p.qualityNote,
            nf: p.noteField,
            sheet: p.row.location.sheet,
            row: p.row.location.row,
            col: p.row.location.column,
            note: p.row.note ?? null,
            w: (input.warnings?.[at + i]?.length ?? 0) > 0 ? input.warnings![at + i] : null,
          }));
          const inserted = yield* sql<{ id: number; n: number }>`
            INSERT INTO import_rows
              (batch_id, row_number, resolved_store_id, scope_id, business_date, raw_brand,
               raw_store_name, raw_date, raw_energy, proposed_kwh, proposed_void, before_kwh,
               before_is_void, before_revision_no, action, source_kind, quality_status,
               quality_note, note_field, lineage_status, source_reference, warnings)
            SELECT ${batch.id}, i.n, i.store, i.scope, i.date, i.brand, i.name, i.raw_date,
              i.raw, i.kwh, i.void, i.before, i.before_void, i.before_rev, i.action,
              'MANUAL_UPLOAD', i.qs, i.qn, i.nf, ${LINEAGE_SEALED},
              jsonb_strip_nulls(jsonb_build_object(
                'batch_no', ${batch.batch_no}::text, 'source_table', ${table}::text,
                'row_number', i.n, 'source_record_id', r.id, 'sheet', i.sheet, 'row', i."row",
                'column', i.col, 'note', i.note)), i.w
            FROM json_to_recordset(${handOver(jsonArrayBytes(page))}::json) AS i(
                n int, store int, scope int, date date, brand text, name text, raw_date text,
                raw text, kwh numeric, void boolean, before numeric, before_void boolean,
                before_rev int, action text, qs text, qn text, nf text, sheet text, "row" int,
                col text, note text, w jsonb)
              JOIN json_to_recordset(${recordIds}::json) AS r(id int, sheet text)
                ON r.sheet IS NOT DISTINCT FROM i.sheet
            RETURNING id, row_number AS n`;
          stored.push(...inserted);
        }
        const rowIds = stored.sort((a, b) => a.n - b.n).map((r) => r.id);
        return {
          batchId: batch.id,
          batchNo: batch.batch_no,
          uploadedAt: batch.uploaded_at,
          rowIds,
        } satisfies SavedPreview;
      }).pipe(span("ImportRepo.savePreview"));

    // --- Commit.

    // The data token of the commits made so far (in a commit's transaction, after its clock tick:
    // its own), for a caller of the stores `storeIds` (null: every store; scopedDataTokenSql).
    const dataToken = (storeIds: ReadonlyArray<number> | null) =>
      sql.unsafe<{ token: string | null }>(
        `SELECT ${scopedDataTokenSql("$1::int[]")} AS token`,
        [storeIds],
      ).pipe(Effect.map((rows) => rows[0]?.token ?? undefined));

    const lockBatch = (batchId: number) =>
      sql<BatchHead>`
        SELECT b.id, b.batch_no, b.batch_kind, b.status, b.expires_at < now() AS expired,
          b.discarded_at IS NOT NULL AS discarded, b.change_reason
        FROM import_batches b WHERE b.id = ${batchId}
        FOR UPDATE OF b`.pipe(Effect.map((rows) => rows[0] as BatchHead | undefined));

    // Locks the days the batch planned against (in id order, so that concurrent commits never
    // deadlock) and counts the rows whose day is no longer the one of the preview: a plan of
    // UNCHANGED or KEEP_CLEANED made against another state would be wrong too. Only blank cells
    // (SKIP_MISSING) are not checked: they never act, whatever the day. In the same statement, the
    // batch's changing rows are staged as the revisions to apply (commit_revisions, in the day
    // writer's shape; a new day's id is reserved), from the days as locked: one pass over the
    // batch's rows and days. With stale rows the caller rolls back, and nothing staged is applied.
    const lockAndStage = (batchId: number, memberId: number, reason: string) =>
      Effect.gen(function* () {
        yield* createRevisionTable("commit_revisions");
        const [found] = yield* sql<{ stale: number; first: string | null }>`
          WITH locked AS MATERIALIZED (
            SELECT r.*, e.id AS energy_id, e.revision_no, e.legacy_kwh, e.cleaned_kwh,
              e.cleaned_source_kind, e.provisional, e.provisional_at
            FROM import_rows r
            JOIN energy_days e ON e.scope_id = r.scope_id AND e.business_date = r.business_date
            WHERE r.batch_id = ${batchId} AND r.action <> 'SKIP_MISSING'
            ORDER BY e.id
            FOR UPDATE OF e
          ), staged AS (
            INSERT INTO commit_revisions
            SELECT
              ${sql.literal(dayIdSql("r.energy_id"))},
              r.before_revision_no IS NULL, true, r.resolved_store_id, r.scope_id,
              r.business_date, coalesce(r.before_revision_no, 0) + 1, r.action, r.before_kwh,
              CASE WHEN r.proposed_void THEN NULL ELSE r.proposed_kwh END, r.before_is_void,
              r.proposed_void, ${reason}::text, r.id, ${SOURCE_KIND_UPLOAD}::text,
              'Manual upload', r.quality_status, r.quality_note, ${memberId}::int,
              ${sql.literal(UPLOADED_DAY)},
              r.source_reference
            FROM (
              -- Rows planned against an existing day, with that day as locked above...
              SELECT * FROM locked l
              WHERE l.before_revision_no IS NOT NULL AND l.action IN (${sql.literal(CHANGING)})
              UNION ALL
              -- ...and rows planned as a new day.
              SELECT n.*, NULL::int, NULL::int, NULL::numeric, NULL::numeric, NULL::text,
                NULL::smallint, NULL::timestamptz
              FROM import_rows n
              WHERE n.batch_id = ${batchId} AND n.before_revision_no IS NULL
                AND n.action IN (${sql.literal(CHANGING)})
            ) r
            ORDER BY r.scope_id, r.business_date
          )
          -- A day planned as new that exists now is stale too (before_revision_no is null).
          SELECT count(*)::int AS stale,
            min(business_date::text || ' of store ' || resolved_store_id) AS first
          FROM locked
          WHERE revision_no IS DISTINCT FROM before_revision_no`;
        return found;
      }).pipe(span("ImportRepo.lockAndStage"));

    // Applies the revisions lockAndStage staged through the day writer: each becomes the next
    // revision of its day (a new day for a row planned against no day). Returns how many planned
    // new days could not be created because the day appeared since the preview (the caller then
    // rolls back; nothing else was written).
    const applyRows = (batchId: number, memberId: number) =>
      Effect.gen(function* () {
        // No ANALYZE of the temporary table: its size is known to the planner from its pages, and
        // with the connections' random_page_cost (database.ts) the day writer's statements look up
        // the days and months they touch by index either way, and ANALYZE would only add its own
        // time.
        const applied = yield* applyRevisions("commit_revisions");
        if (applied.newDays !== applied.plannedNewDays) {
          return applied.plannedNewDays - applied.newDays;
        }
        yield* sql`
          UPDATE import_batches SET status = 'COMMITTED', committed_at = now(),
            committed_by = ${memberId}
          WHERE id = ${batchId}`;
        yield* recordCommits([batchId]);
        return 0;
      }).pipe(span("ImportRepo.applyRows"));

    // --- Reads.

    // The batch's head, its kind and its counts per action (kept with the batch: its rows never
    // change).
    const importHead = (batchId: number) =>
      sql<
        ImportHead & {
          batch_kind: string;
          action_counts: Partial<Record<ImportAction, number>>;
        }
      >`
        SELECT b.id, b.batch_no, b.batch_kind, b.filename,
          CASE WHEN b.status = 'PREVIEWED' AND b.expires_at < now() THEN 'EXPIRED'
               ELSE b.status END AS status,
          ${sql.literal(utc("b.uploaded_at"))} AS uploaded_at,
          ${sql.literal(utc("b.committed_at"))} AS committed_at, b.change_reason, b.action_counts
        FROM import_batches b WHERE b.id = ${batchId}`.pipe(
        Effect.map((rows) => rows[0]),
        span("ImportRepo.importHead"),
      );

    // A page of the batch's rows in file order after row_number `after`, in their final shape:
    // fetched as plain columns and encoded by the HTTP layer (cheaper than building 10,000 JSON
    // objects in PostgreSQL and decoding the text). One index range scan per page.
    const importRows = (
      batchId: number,
      after: number,
      limit: number,
      previewedUpload = false,
    ) =>
      sql<ImportRowOut>`
        SELECT ${sql.literal(ROW_OUT_COLUMNS)}
        FROM import_rows r
        WHERE r.batch_id = ${batchId} AND r.row_number > ${after}
          ${sql.literal(previewedUpload ? PREVIEWED_UPLOAD : "")}
        ORDER BY r.row_number
        LIMIT ${limit}`.pipe(span("ImportRepo.importRows"));

    // Whether the batch exists, whether a row of it lies outside these stores (null: every
    // store; stops at the first such row), and the member who previewed it (none for a snapshot's).
    const batchScope = (batchId: number, storeIds: ReadonlyArray<number> | null) =>
      sql.unsafe<{ outside: boolean; member_id: number | null }>(
        `SELECT NOT ${mayReadBatchSql("b.id", "$2::int[]")} AS outside, b.member_id
         FROM import_batches b WHERE b.id = $1`,
        [batchId, storeIds],
      ).pipe(
        Effect.map((rows) =>
          rows[0] === undefined
            ? undefined
            : { outside: rows[0].outside, previewedBy: rows[0].member_id }
        ),
        span("ImportRepo.batchScope"),
      );

    // --- The review of a preview.

    // The recent days of each key's day (plausibility.ts): how many of the RECENT_DAYS days before
    // it have a served value, and their exact sum. The keys' windows are merged into intervals per
    // store (recentIntervals), each read by one index range scan; the sums are moving window
    // aggregates over the served days and the keys' own days (which add nothing: count and sum
    // skip their NULL). A statement per page of intervals.
    const recentLevels = (keys: ReadonlyArray<{ scopeId: number; date: string }>) =>
      Effect.map(
        Effect.forEach(recentIntervals(keys), (page) =>
          sql<RecentLevel & { scopeId: number; date: string }>`
            SELECT x.scope_id AS "scopeId", x.day::text AS date, x.days, x.total::text AS total
            FROM (
              SELECT v.scope_id, v.day, v.key,
                (count(v.kwh) OVER w)::int AS days, sum(v.kwh) OVER w AS total
              FROM (
                SELECT i.n, i.scope_id, e.business_date AS day, e.served_kwh AS kwh, false AS key
                FROM unnest(${page.scopeIds}::int[], ${page.firsts}::date[],
                  ${page.lasts}::date[]) WITH ORDINALITY AS i(scope_id, first, last, n)
                CROSS JOIN LATERAL (
                  SELECT d.business_date, d.served_kwh FROM energy_days d
                  WHERE d.scope_id = i.scope_id AND d.business_date BETWEEN i.first AND i.last
                    AND d.served_kwh IS NOT NULL
                ) e
                UNION ALL
                SELECT k.n, k.scope_id, k.day, NULL::numeric, true
                FROM unnest(${page.keyIntervals}::int[], ${page.keyScopes}::int[],
                  ${page.keyDates}::date[]) AS k(n, scope_id, day)
              ) v
              WINDOW w AS (PARTITION BY v.n ORDER BY v.day
                RANGE BETWEEN ${sql.literal(`'${RECENT_DAYS} days'`)}::interval PRECEDING
                  AND '1 day'::interval PRECEDING)
            ) x
            WHERE x.key`),
        (pages) =>
          pages.flat(),
      ).pipe(span("ImportRepo.recentLevels"));

    // Counts of a batch's warnings, and of its rows that match a filter (actions: null, any).
    const reviewCounts = (
      batchId: number,
      actions: ReadonlyArray<ImportAction> | null,
      warnedOnly: boolean,
    ) =>
      sql<{ warned: number; matched: number; codes: string }>`
        SELECT count(*) FILTER (WHERE r.warnings IS NOT NULL)::int AS warned,
          count(*) FILTER (WHERE (${actions}::text[] IS NULL OR r.action = ANY(${actions}::text[]))
            AND (NOT ${warnedOnly}::boolean OR r.warnings IS NOT NULL))::int AS matched,
          coalesce((
            SELECT json_object_agg(c.code, c.n)::text FROM (
              SELECT w->>'code' AS code, count(*)::int AS n
              FROM import_rows x, jsonb_array_elements(x.warnings) w
              WHERE x.batch_id = ${batchId} AND x.warnings IS NOT NULL
              GROUP BY 1
            ) c), '{}') AS codes
        FROM import_rows r WHERE r.batch_id = ${batchId}`.pipe(
        Effect.map((rows) => rows[0]),
        span("ImportRepo.reviewCounts"),
      );

    // The rows of a batch that match a filter, in file order, `limit` of them after `offset`.
    const reviewRows = (
      batchId: number,
      actions: ReadonlyArray<ImportAction> | null,
      warnedOnly: boolean,
      offset: number,
      limit: number,
    ) =>
      sql<ReviewRowOut>`
        SELECT r.id, r.row_number, r.source_reference->>'sheet' AS sheet,
          (r.source_reference->>'row')::int AS file_row, r.source_reference->>'column' AS "column",
          r.raw_brand AS brand, r.raw_store_name AS store_name, r.resolved_store_id,
          r.business_date::text AS business_date, r.raw_date, r.raw_energy,
          round(r.before_kwh, 4)::text AS before_energy_kwh,
          round(r.proposed_kwh, 4)::text AS proposed_energy_kwh, r.action, r.quality_note,
          r.note_field, r.warnings::text AS warnings
        FROM import_rows r
        WHERE r.batch_id = ${batchId}
          AND (${actions}::text[] IS NULL OR r.action = ANY(${actions}::text[]))
          AND (NOT ${warnedOnly}::boolean OR r.warnings IS NOT NULL)
        ORDER BY r.row_number
        OFFSET ${offset} LIMIT ${limit}`.pipe(span("ImportRepo.reviewRows"));

    // Discards a previewed upload batch (locked by the caller): it expires now and says who
    // discarded it. A batch discarded before keeps its first instant.
    const discard = (batchId: number, memberId: number) =>
      sql<{ discarded_at: string }>`
        UPDATE import_batches
        SET discarded_at = coalesce(discarded_at, now()),
          discarded_by = coalesce(discarded_by, ${memberId}),
          expires_at = least(expires_at, now())
        WHERE id = ${batchId}
        RETURNING ${sql.literal(utc("discarded_at"))} AS discarded_at`.pipe(
        Effect.map((rows) => rows[0].discarded_at),
        span("ImportRepo.discard"),
      );

    // `storeIds`: the caller's stores (null: every store).
    const lineageBody = (importRowId: number, storeIds: ReadonlyArray<number> | null) =>
      sql.unsafe<{ body: string; store_id: number }>(lineageJson, [importRowId, storeIds]).pipe(
        Effect.map((rows) => rows[0]),
        span("ImportRepo.lineage"),
      );

    return {
      sql,
      currentDays,
      idempotencyRecord,
      claim,
      completeClaim,
      savePreview,
      lockBatch,
      lockAndStage,
      applyRows,
      dataToken,
      importHead,
      importRows,
      batchScope,
      lineageBody,
      recentLevels,
      reviewCounts,
      reviewRows,
      discard,
    } as const;
  }),
}) {}
