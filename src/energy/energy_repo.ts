// EnergyRepo: energy days for a range, the versions of one day, the revision history of a fact.
import * as SqlClient from "@effect/sql/SqlClient";
import { Effect } from "effect";
import { makeBatched, READS_AT_ONCE } from "../db/batched.ts";
import { makeConfirmedReads } from "../reads/confirmed_reads.ts";
import { dbBoundary } from "../db/errors.ts";
import type { EnergyVersion, EnergyVersionCurrent, Revision } from "../domain/energy.ts";
import { credentialParams, type CredentialRow, mayReadBatchSql } from "../auth/access.ts";
import { utc } from "../db/sql_text.ts";
import type { Credential } from "../domain/auth.ts";
import { energyDaysAtSql, sourceLabelSql } from "./day_sql.ts";
import { span } from "../ops/span.ts";

// A revision's columns, with `reason` as its change reason.
const revisionColumns = (reason: string) => `
  r.revision_no, r.operation,
  round(r.before_kwh, 4)::text AS before_kwh, round(r.after_kwh, 4)::text AS after_kwh,
  CASE WHEN r.before_is_void IS NULL THEN NULL WHEN r.before_is_void THEN 1 ELSE 0 END AS before_is_void,
  CASE WHEN r.after_is_void THEN 1 ELSE 0 END AS after_is_void,
  ${utc("r.committed_at")} AS committed_at, ${reason} AS change_reason, r.import_row_id,
  r.source_kind, coalesce(r.quality_status, 'UNREVIEWED') AS quality_status, r.quality_note`;

// A key limited to some stores reads an upload's reason, actor, file name and note only when it may
// read every row of the batch, as GET /imports/{id} and the change feed decide (mayReadBatchSql):
// the reason may name other stores. A snapshot's batches say only what the platform wrote. The
// history's reason is a required text.
const WITHHELD_REASON = "Withheld: the batch also holds rows of stores outside this key's scope";
const wholeSql = (batch: string, storeIds: string) =>
  `(${batch}.batch_kind IS DISTINCT FROM 'UPLOAD' OR ${mayReadBatchSql(`${batch}.id`, storeIds)})`;

// The energy days of a range as energy_days_json returns them (day_sql.ts): the summary, the
// version, and the days as JSON text in parts (one per calendar month, to be joined by ", ").
export interface EnergyDaysJson {
  readonly summary: string;
  readonly version: string;
  readonly parts: ReadonlyArray<string>;
  // The data token of the commit the read saw (day_sql.ts dataTokenSql).
  readonly token: string | undefined;
}

// The days of a range as they were once a commit was made (energyDaysAtSql): the summary, the
// days as one part, and whether every day's state at that commit was kept.
export interface EnergyDaysAt {
  readonly summary: string;
  readonly parts: ReadonlyArray<string>;
  readonly kept: boolean;
}

// energy_read's answer: the credential's row, and when that credential may read them, the version
// of the days, the scope's time zone and unit, and (unless the caller holds that version) the days.
export interface EnergyRead {
  readonly credential: CredentialRow | undefined;
  readonly version: string | undefined;
  readonly token: string | undefined;
  readonly scope?: { readonly timezone: string; readonly unit: string };
  readonly data: {
    readonly summary: string;
    // The month parts as the database stores them, in bytes.
    readonly parts: ReadonlyArray<Uint8Array>;
  } | undefined;
}

// energy_read's statement for many reads at once (one call a read, in their order; each call's
// rows in its own order), its parameters (one array an argument) and its answer.
const ENERGY_READS_SQL = `
  SELECT a.i::int AS i, r.credential, r.summary, r.version, r.part AS part_utf8, r.token,
    r.timezone, r.unit
  FROM unnest($1::text[], $2::text[], $3::int[], $4::int[], $5::date[], $6::date[], $7::text[])
    WITH ORDINALITY AS a(key_hash, session_hash, store_id, scope_id, start_date, end_date,
                         if_version, i)
  CROSS JOIN LATERAL energy_read(a.key_hash, a.session_hash, a.store_id, a.scope_id,
                                 a.start_date, a.end_date, a.if_version)
    WITH ORDINALITY AS r(credential, summary, version, part, token, timezone, unit, n)
  ORDER BY a.i, r.n`;

export interface EnergyReadRequest {
  readonly credential: Credential;
  readonly storeId: number;
  readonly scopeId: number;
  readonly start: string;
  readonly end: string;
  readonly ifVersion: string | undefined;
}

const energyReadsParams = (reads: ReadonlyArray<EnergyReadRequest>) => {
  const credentials = reads.map((r) => credentialParams(r.credential));
  return [
    credentials.map(([key]) => key),
    credentials.map(([, session]) => session),
    reads.map((r) => r.storeId),
    reads.map((r) => r.scopeId),
    reads.map((r) => r.start),
    reads.map((r) => r.end),
    reads.map((r) => r.ifVersion ?? null),
  ];
};

interface EnergyReadRow {
  readonly credential: CredentialRow;
  readonly summary: string | null;
  readonly version: string | null;
  readonly part_utf8: Uint8Array | null;
  readonly token: string | null;
  readonly timezone: string | null;
  readonly unit: string | null;
}

const EMPTY = new Uint8Array(0);

const energyReadOf = (rows: ReadonlyArray<EnergyReadRow>): EnergyRead => {
  const first = rows[0];
  if (first === undefined) {
    return { credential: undefined, version: undefined, token: undefined, data: undefined };
  }
  return {
    credential: first.credential,
    version: first.version ?? undefined,
    token: first.token ?? undefined,
    scope: first.timezone === null || first.unit === null
      ? undefined
      : { timezone: first.timezone, unit: first.unit },
    data: first.summary === null ? undefined : {
      summary: first.summary,
      parts: rows.map((row) => row.part_utf8 ?? EMPTY),
    },
  };
};

export class EnergyRepo extends Effect.Service<EnergyRepo>()("Energy/EnergyRepo", {
  scoped: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient;

    // The stored days through energy_days_json (day_sql.ts): one round trip, planned once per
    // connection.
    const days = (scopeId: number, start: string, end: string) =>
      dbBoundary(sql<{ summary: string; version: string; part: string; token: string | null }>`
        SELECT summary, version, part, token
        FROM energy_days_json(${scopeId}, ${start}::date, ${end}::date)`)
        .pipe(
          Effect.map((rows): EnergyDaysJson => ({
            summary: rows[0].summary,
            version: rows[0].version,
            parts: rows.map((row) => row.part),
            token: rows[0].token ?? undefined,
          })),
          span("EnergyRepo.days"),
        );

    // The days as they were once commit `seq` was made (a rare read: planned each time).
    const daysAt = (scopeId: number, start: string, end: string, seq: string) =>
      dbBoundary(sql.unsafe<{ summary: string; days: string; kept: boolean }>(
        energyDaysAtSql("$1::int", "$2::date", "$3::date", "$4::bigint"),
        [scopeId, start, end, seq],
      )).pipe(
        Effect.map(([row]): EnergyDaysAt => ({
          summary: row.summary,
          // The DailyRow array without its brackets: the one part of the days.
          parts: [row.days.slice(1, -1)],
          kept: row.kept,
        })),
        span("EnergyRepo.daysAt"),
      );

    // The credential check and the days in one round trip (energy_read, day_sql.ts), shared by
    // the reads asked for at once.
    const readMany = yield* makeBatched(
      (reads: ReadonlyArray<EnergyReadRequest>) =>
        dbBoundary(sql.unsafe<EnergyReadRow & { readonly i: number }>(
          ENERGY_READS_SQL,
          energyReadsParams(reads),
        )).pipe(Effect.map((rows) => {
          const each = reads.map((): Array<EnergyReadRow> => []);
          for (const row of rows) each[row.i - 1].push(row);
          return each.map(energyReadOf);
        })),
      READS_AT_ONCE,
    );

    // A read whose caller holds the current version is confirmed from what an earlier statement
    // found, while nothing has changed since (reads/confirmed_reads.ts).
    const confirmed = yield* makeConfirmedReads;
    const read = (request: EnergyReadRequest) =>
      confirmed(
        request.ifVersion === undefined ? undefined : {
          credential: request.credential,
          range: `${request.storeId}|${request.scopeId}|${request.start}|${request.end}`,
          held: request.ifVersion,
        },
        readMany(request),
      ).pipe(
        Effect.map((answer): EnergyRead =>
          "data" in answer ? answer : { ...answer, data: undefined }
        ),
        span("EnergyRepo.read"),
      );

    // The store and scope a fact belongs to; empty when there is no such fact.
    const factOwner = (energyId: number) =>
      dbBoundary(sql<{ store_id: number; scope_id: number }>`
        SELECT store_id, scope_id FROM energy_days WHERE id = ${energyId}`).pipe(
        span("EnergyRepo.factOwner"),
      );

    // `storeIds`: the caller's stores (null: every store).
    const history = (energyId: number, storeIds: ReadonlyArray<number> | null) =>
      dbBoundary(sql.unsafe<Revision>(
        `SELECT ${
          revisionColumns(
            `CASE WHEN ${wholeSql("b", "$2::int[]")} THEN r.change_reason ELSE $3::text END`,
          )
        }
         FROM energy_revisions r
         LEFT JOIN import_rows ir ON ir.id = r.import_row_id
         LEFT JOIN import_batches b ON b.id = ir.batch_id
         WHERE r.energy_id = $1 ORDER BY r.revision_no`,
        [energyId, storeIds, WITHHELD_REASON],
      )).pipe(span("EnergyRepo.history"));

    const versions = (scopeId: number, date: string, storeIds: ReadonlyArray<number> | null) =>
      dbBoundary(sql.unsafe<{
        current: EnergyVersionCurrent | null;
        versions: ReadonlyArray<EnergyVersion>;
      }>(
        `WITH fact AS (
           SELECT e.* FROM energy_days e WHERE e.scope_id = $1 AND e.business_date = $2::date
         ), revs AS (
           SELECT ${revisionColumns("r.change_reason")}, r.source_label, r.member_id,
             m.display_name, m.login_name, ${wholeSql("b", "$3::int[]")} AS whole,
             b.id AS batch_id, b.batch_no, b.batch_kind, b.status AS batch_status,
             ${utc("b.committed_at")} AS batch_committed_at, b.change_reason AS batch_reason,
             b.filename, b.note,
             -- Kept with the batch (its rows never change): counting them here read every row of
             -- a snapshot batch for each version, 0.3-1 s a call.
             coalesce((b.action_counts ->> 'KEEP_CLEANED')::int, 0) AS kept_cleaned_rows
           FROM fact f
           JOIN energy_revisions r ON r.energy_id = f.id
           LEFT JOIN members m ON m.id = r.member_id
           LEFT JOIN import_rows ir ON ir.id = r.import_row_id
           LEFT JOIN import_batches b ON b.id = ir.batch_id
         )
         SELECT
           (SELECT json_build_object(
              'energy_id', f.id, 'scope_id', f.scope_id,
              'energy_kwh', round(f.served_kwh, 4)::text,
              'source_kind', f.source_kind,
              'source_label', ${sourceLabelSql("f.status", "f.source_kind")},
              'quality_status', f.quality_status, 'quality_note', f.quality_note,
              'provisional', f.provisional, 'is_void', CASE WHEN f.is_void THEN 1 ELSE 0 END,
              'revision_no', f.revision_no,
              'revision_count', (SELECT count(*) FROM revs),
              'cleaned_revision_count',
                (SELECT count(*) FROM revs WHERE source_kind IN ('CLEANED', 'MANUAL_UPLOAD')),
              'cleaned_ever',
                EXISTS (SELECT 1 FROM revs WHERE source_kind IN ('CLEANED', 'MANUAL_UPLOAD'))
            ) FROM fact f
           ) AS current,
           coalesce((SELECT json_agg(json_build_object(
              'revision_no', revision_no, 'operation', operation,
              'before_kwh', before_kwh, 'after_kwh', after_kwh,
              'before_is_void', before_is_void, 'after_is_void', after_is_void,
              'change_reason', CASE WHEN whole THEN change_reason END,
              'committed_at', committed_at,
              'import_row_id', import_row_id, 'source_kind', source_kind,
              'source_label', source_label, 'quality_status', quality_status,
              'quality_note', quality_note,
              'actor', CASE WHEN whole THEN json_build_object(
                'member_id', member_id,
                'name', coalesce(display_name, login_name),
                'label', CASE
                  WHEN member_id IS NULL THEN 'Platform snapshot load'
                  ELSE coalesce(display_name, login_name, 'member ' || member_id) END)
                ELSE json_build_object('member_id', NULL, 'name', NULL, 'label', NULL) END,
              'batch', CASE WHEN batch_id IS NULL THEN NULL ELSE json_build_object(
                'id', batch_id, 'batch_no', batch_no, 'batch_kind', batch_kind,
                'status', batch_status, 'committed_at', batch_committed_at,
                -- Of the key's stores only, for a batch it may not read whole.
                'kept_cleaned_rows', CASE WHEN whole OR kept_cleaned_rows = 0
                  THEN kept_cleaned_rows
                  ELSE (SELECT count(*) FROM import_rows x
                        WHERE x.batch_id = revs.batch_id AND x.action = 'KEEP_CLEANED'
                          AND x.resolved_store_id = ANY ($3::int[])) END,
                'change_reason', CASE WHEN whole THEN batch_reason END,
                'filename', CASE WHEN whole THEN filename END,
                'note', CASE WHEN whole THEN note ELSE '' END) END
            ) ORDER BY revision_no) FROM revs), '[]'::json) AS versions`,
        [scopeId, date, storeIds],
      )).pipe(Effect.map((rows) => rows[0]), span("EnergyRepo.versions"));

    return { days, daysAt, read, factOwner, history, versions } as const;
  }),
}) {}
