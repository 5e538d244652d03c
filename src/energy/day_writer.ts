// The one writer of the daily energy fact (energy_days), its revisions (energy_revisions, each with
// the state its day had right after it), its month chunks (energy_months) and the commit order
// (commits): the import commit and the snapshot loader both apply revisions through
// applyRevisions, which stores each day's derived columns (day_sql.ts) in the same statements as
// its facts and rebuilds the chunks of the months it touched, then number their batches with
// recordCommits.
import * as SqlClient from "@effect/sql/SqlClient";
import { Effect } from "effect";
import type { Routine } from "../db/routines.ts";
import { CHANGING_ACTIONS } from "../domain/imports.ts";
import { derivedColumns, MONTH_CHUNK_COLUMNS, monthChunksSql } from "./day_sql.ts";
import { span } from "../ops/span.ts";

/**
 * The columns of the revisions to apply, one row per revision (a caller's relation must give all
 * of them, and give the same rows each time it is read within the transaction):
 *
 * - energy_id: the day's id; for a day that has no row yet, an id reserved from energy_days' own
 *   sequence. new_day: whether the day has no row yet (its first applied revision creates it).
 * - last: whether the day's state after this revision is its new current state (one per day).
 * - store_id, scope_id, business_date; revision_no (the day's next numbers, in order).
 * - The revision: operation, before_kwh, after_kwh, before_is_void, after_is_void, change_reason,
 *   import_row_id, source_kind, source_label, quality_status, quality_note, member_id.
 * - The day after it (kept with the revision, and the day's current state when `last`):
 *   legacy_kwh, cleaned_kwh, cleaned_source_kind, is_void (equal to after_is_void), provisional,
 *   provisional_at, source_reference (its import row's); its quality status and note are the
 *   revision's.
 */
export const REVISION_COLUMNS = [
  ["energy_id", "int"],
  ["new_day", "boolean"],
  ["last", "boolean"],
  ["store_id", "int"],
  ["scope_id", "int"],
  ["business_date", "date"],
  ["revision_no", "int"],
  ["operation", "text"],
  ["before_kwh", "numeric"],
  ["after_kwh", "numeric"],
  ["before_is_void", "boolean"],
  ["after_is_void", "boolean"],
  ["change_reason", "text"],
  ["import_row_id", "int"],
  ["source_kind", "text"],
  ["source_label", "text"],
  ["quality_status", "text"],
  ["quality_note", "text"],
  ["member_id", "int"],
  ["legacy_kwh", "numeric"],
  ["cleaned_kwh", "numeric"],
  ["cleaned_source_kind", "text"],
  ["is_void", "boolean"],
  ["provisional", "smallint"],
  ["provisional_at", "timestamptz"],
  ["source_reference", "jsonb"],
] as const;

// A temporary table of that shape, dropped at the end of the transaction.
export const createRevisionTable = (name: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql.unsafe(
      `CREATE TEMP TABLE ${name} (${
        REVISION_COLUMNS.map(([column, type]) => `${column} ${type}`).join(", ")
      }) ON COMMIT DROP`,
    ));

export interface Applied {
  // Days the revisions meant to create, and how many were created: fewer when some appeared
  // meanwhile (a concurrent commit). Then nothing else was written, and the caller rolls back.
  readonly plannedNewDays: number;
  readonly newDays: number;
  readonly changedDays: number;
  readonly revisions: number;
}

// Applies the revisions of `source` (a relation with REVISION_COLUMNS: a table name or a
// parenthesised query; `params` are its parameters): new days, the revisions with the states they
// lead to, changed days, then the chunks of the months they fall in. Runs inside the caller's
// transaction; the caller has locked the days it changes. `fresh`: the caller knows that none of
// its new days can exist (a snapshot loaded into empty tables), so they are not counted nor
// checked for conflicts.
export const applyRevisions = (
  source: string,
  params: ReadonlyArray<unknown> = [],
  options: { readonly fresh?: boolean } = {},
) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient;
    const derived = derivedColumns("p", "p.source_kind");
    const dayColumns = `store_id, scope_id, business_date, legacy_kwh, cleaned_kwh,
      cleaned_source_kind, is_void, provisional, provisional_at, quality_status, quality_note,
      revision_no, import_row_id, source_reference`;
    const insertDays = `
         INSERT INTO energy_days (id, ${dayColumns}, ${derived.names})
         OVERRIDING SYSTEM VALUE
         SELECT p.energy_id, ${dayColumns.replaceAll(/(\w+)/g, "p.$1")}, ${derived.values}
         FROM ${source} p
         WHERE p.new_day AND p.last
         ORDER BY p.scope_id, p.business_date`;
    const [created] = options.fresh
      ? yield* sql.unsafe<{ planned: number; created: number }>(
        `WITH created AS (${insertDays} RETURNING 1)
         SELECT count(*)::int AS planned, count(*)::int AS created FROM created`,
        params,
      )
      : yield* sql.unsafe<{ planned: number; created: number }>(
        `WITH created AS (
           ${insertDays}
           ON CONFLICT (scope_id, business_date) DO NOTHING
           RETURNING 1
         )
         SELECT (SELECT count(*) FROM ${source} p WHERE p.new_day AND p.last)::int AS planned,
           (SELECT count(*) FROM created)::int AS created`,
        params,
      );
    if (created.created !== created.planned) {
      return {
        plannedNewDays: created.planned,
        newDays: created.created,
        changedDays: 0,
        revisions: 0,
      } satisfies Applied;
    }
    // Each revision with the day's state right after it (a read as of its commit shows that).
    const [revisions] = yield* sql.unsafe<{ n: number }>(
      `WITH written AS (
         INSERT INTO energy_revisions
           (energy_id, revision_no, operation, before_kwh, after_kwh, before_is_void,
            after_is_void, change_reason, import_row_id, source_kind, source_label,
            quality_status, quality_note, member_id, legacy_kwh, cleaned_kwh, cleaned_source_kind,
            provisional, provisional_at, state_kept)
         SELECT p.energy_id, p.revision_no, p.operation, p.before_kwh, p.after_kwh,
           p.before_is_void, p.after_is_void, p.change_reason, p.import_row_id, p.source_kind,
           p.source_label, p.quality_status, p.quality_note, p.member_id, p.legacy_kwh,
           p.cleaned_kwh, p.cleaned_source_kind, p.provisional, p.provisional_at, true
         FROM ${source} p
         RETURNING 1
       )
       SELECT count(*)::int AS n FROM written`,
      params,
    );
    const [changed] = yield* sql.unsafe<{ n: number }>(
      `WITH changed AS (
         UPDATE energy_days e SET
           legacy_kwh = p.legacy_kwh, cleaned_kwh = p.cleaned_kwh,
           cleaned_source_kind = p.cleaned_source_kind, is_void = p.is_void,
           provisional = p.provisional, provisional_at = p.provisional_at,
           quality_status = p.quality_status, quality_note = p.quality_note,
           revision_no = p.revision_no, import_row_id = p.import_row_id,
           source_reference = p.source_reference, ${derived.set}
         FROM ${source} p
         WHERE NOT p.new_day AND p.last AND e.id = p.energy_id
         RETURNING 1
       )
       SELECT count(*)::int AS n FROM changed`,
      params,
    );
    const months = `SELECT DISTINCT p.scope_id, date_trunc('month', p.business_date)::date AS month
      FROM ${source} p`;
    if (!options.fresh) {
      // A month's chunk is rebuilt from its days as this statement sees them: two commits that
      // change different days of one month must rebuild it one after the other, the second from
      // a snapshot taken once the first has committed (else it would write back the first's days
      // as they were). Locks are taken in (scope, month) order, after every day lock.
      yield* sql.unsafe(
        `SELECT count(pg_advisory_xact_lock(m.scope_id,
           (extract(year FROM m.month) * 12 + extract(month FROM m.month))::int))
         FROM (${months} ORDER BY 1, 2) m`,
        params,
      );
    }
    yield* sql.unsafe(refreshMonthsSql(months), params);
    return {
      plannedNewDays: created.planned,
      newDays: created.created,
      changedDays: changed.n,
      revisions: revisions.n,
    } satisfies Applied;
  }).pipe(span("DayWriter.applyRevisions"));

// The actions that write a revision, as an SQL list.
export const CHANGING_ACTION_LIST = [...CHANGING_ACTIONS].map((a) => `'${a}'`).join(", ");

/**
 * Numbers the committed batches `batchIds` (in that order) with the next numbers of the commit
 * clock, and notes the stores each one changed (commit_stores: the stores of its rows that write a
 * revision; a row that changes nothing does not make a commit its store's). Called last in the transaction that
 * commits them: the clock's row stays locked until the transaction ends, so numbers follow the
 * order in which commits become visible, and a statement that reads the clock sees exactly the
 * commits numbered up to it.
 */
export const recordCommits = (batchIds: ReadonlyArray<number>) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql.unsafe(
      `WITH tick AS (
         UPDATE commit_clock SET seq = seq + $2::int,
           committed_at = greatest(clock_timestamp(), coalesce(committed_at, '-infinity'))
         RETURNING seq, committed_at
       ), numbered AS (
         INSERT INTO commits (seq, batch_id, committed_at)
         SELECT t.seq - $2::int + b.ord, b.id, t.committed_at
         FROM tick t, unnest($1::int[]) WITH ORDINALITY AS b(id, ord)
         RETURNING seq, batch_id
       )
       INSERT INTO commit_stores (store_id, seq)
       SELECT DISTINCT r.resolved_store_id, n.seq
       FROM numbered n JOIN import_rows r ON r.batch_id = n.batch_id
       WHERE r.action IN (${CHANGING_ACTION_LIST})`,
      [batchIds, batchIds.length],
    )).pipe(Effect.asVoid, span("DayWriter.recordCommits"));

// Writes the month chunks of the (scope_id, month) pairs `pairs` (a query) gives.
const refreshMonthsSql = (pairs: string) => `
INSERT INTO energy_months (scope_id, month, ${MONTH_CHUNK_COLUMNS.join(", ")})
${monthChunksSql(pairs)}
ON CONFLICT (scope_id, month) DO UPDATE SET
  ${MONTH_CHUNK_COLUMNS.map((c) => `${c} = excluded.${c}`).join(", ")}`;

// Everything derived recomputed from the facts: every day's derived columns, and the chunks of
// every month that holds a day, for rows written before they existed or after their rules changed
// (the routine of that name runs when its text changes).
export const recomputeDerivedSql = () => {
  const derived = derivedColumns("e", "v.source_kind");
  return `UPDATE energy_days e SET ${derived.set}
FROM energy_revisions v
WHERE v.energy_id = e.id AND v.revision_no = e.revision_no;
DELETE FROM energy_months;
${
    refreshMonthsSql(
      "SELECT DISTINCT scope_id, date_trunc('month', business_date)::date AS month FROM energy_days",
    )
  };`;
};

export const derivedRoutine: Routine = {
  name: "energy derived data",
  text: recomputeDerivedSql(),
};
