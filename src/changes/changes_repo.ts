// The change feed's reads: energy revisions in commit order (commits.seq, then the import row's
// number within its batch), import batches by id, a store's profile audit log. Each read is an
// index range scan of bounded length, whatever the caller asks.
import * as SqlClient from "@effect/sql/SqlClient";
import { Effect } from "effect";
import { dbBoundary } from "../db/errors.ts";
import { fixed4, utc, utcMicros } from "../db/sql_text.ts";
import { JsonText } from "../domain/answers.ts";
import type { AuditEntry, BatchItem } from "../domain/changes.ts";
import { scopedSeqSql, servedKwhSql, sourceKindSql, statusSql } from "../energy/day_sql.ts";
import { span } from "../ops/span.ts";
import { mayReadBatchSql } from "../auth/access.ts";

// The day's state at revision `rev` of fact `e` (energy_days): the fact itself while the revision
// is current, else the state kept with that revision (energy_revisions; a revision's void flag is
// its after_is_void). Null columns and `kept` false where it was not kept.
const STATE_COLUMNS: ReadonlyArray<readonly [column: string, ofRevision: string]> = [
  ["legacy_kwh", "legacy_kwh"],
  ["cleaned_kwh", "cleaned_kwh"],
  ["cleaned_source_kind", "cleaned_source_kind"],
  ["is_void", "after_is_void"],
  ["quality_status", "quality_status"],
  ["quality_note", "quality_note"],
];

const stateAt = (alias: string, rev: string) =>
  `LATERAL (
  SELECT ${
    STATE_COLUMNS.map(([c, r]) =>
      `CASE WHEN ${rev} = e.revision_no THEN e.${c} WHEN s.state_kept THEN s.${r} END AS ${c}`
    ).join(", ")
  },
    ${rev} = e.revision_no OR coalesce(s.state_kept, false) AS kept
  FROM (SELECT 1) one
  LEFT JOIN energy_revisions s ON s.energy_id = e.id AND s.revision_no = ${rev}
) ${alias}`;

const actorJson = (m: string) =>
  `CASE WHEN ${m}.id IS NULL THEN NULL ELSE json_build_object('member_id', ${m}.id,
     'login_name', ${m}.login_name, 'display_name', ${m}.display_name) END`;

// $1 commit number and $2 row number of the position, $3 the rows to scan at most, $4 the
// changes to send at most, $5 the key's stores (null: every store). A batch's reason and actor go
// only to a key that may read the whole batch (access.ts).
const changesSql = `
WITH scanned AS (
  SELECT c.seq, c.committed_at, c.batch_id, ir.id AS row_id, ir.row_number, ir.resolved_store_id
  -- For a key limited to some stores, only the commits that changed one of them: its cursors
  -- move only with its own stores' changes.
  FROM (SELECT x.seq, x.batch_id, x.committed_at FROM commits x
        WHERE x.seq >= $1::bigint
          AND ($5::int[] IS NULL OR EXISTS (
            SELECT 1 FROM commit_stores cs WHERE cs.seq = x.seq AND cs.store_id = ANY ($5::int[])))
        ORDER BY x.seq LIMIT $3) c
  CROSS JOIN LATERAL (
    SELECT r.id, r.row_number, r.resolved_store_id FROM import_rows r
    WHERE r.batch_id = c.batch_id
      AND r.row_number > CASE WHEN c.seq = $1::bigint THEN $2::int ELSE 0 END
    ORDER BY r.row_number LIMIT $3
  ) ir
  ORDER BY c.seq, ir.row_number
  LIMIT $3
), picked AS (
  SELECT s.seq, s.committed_at, s.batch_id, s.row_id, s.row_number, v.id AS revision_id
  FROM scanned s
  -- One index probe per row (a join could hash every revision of the database).
  CROSS JOIN LATERAL (
    SELECT v.id FROM energy_revisions v WHERE v.import_row_id = s.row_id LIMIT 1
  ) v
  WHERE $5::int[] IS NULL OR s.resolved_store_id = ANY ($5::int[])
  ORDER BY s.seq, s.row_number
  LIMIT $4
), whole AS MATERIALIZED (
  -- Once per batch of the page: whether the key may read all of it (its reason and actor).
  SELECT b.batch_id, ${mayReadBatchSql("b.batch_id", "$5::int[]")} AS whole
  FROM (SELECT DISTINCT batch_id FROM picked) b
), meta AS (
  SELECT count(*)::int AS scanned,
    (count(*) FILTER (WHERE $5::int[] IS NULL OR s.resolved_store_id = ANY ($5::int[])))::int
      AS scanned_mine,
    (array_agg(s.seq ORDER BY s.seq DESC, s.row_number DESC))[1]::text AS last_seq,
    (array_agg(s.row_number ORDER BY s.seq DESC, s.row_number DESC))[1] AS last_row,
    (SELECT left(generation, 16) FROM dataset) AS generation,
    (SELECT (${scopedSeqSql("$5::int[]", "k.seq")})::text FROM commit_clock k) AS head_seq
  FROM scanned s
)
SELECT m.scanned, m.scanned_mine, m.last_seq, m.last_row, m.generation, m.head_seq, x.seq::text AS change_seq,
  x.row_number AS change_row, x.change::text AS change
FROM meta m
LEFT JOIN (
  SELECT p.seq, p.row_number, json_build_object(
    'commit_seq', p.seq,
    'committed_at', ${utcMicros("p.committed_at")},
    'batch_id', b.id, 'batch_no', b.batch_no, 'batch_kind', b.batch_kind,
    'row_number', p.row_number, 'import_row_id', p.row_id,
    'store_id', e.store_id, 'scope_id', e.scope_id, 'business_date', e.business_date::text,
    'energy_id', e.id, 'revision_no', v.revision_no, 'operation', v.operation,
    'change_reason', CASE WHEN w.whole THEN v.change_reason END,
    'actor', CASE WHEN w.whole THEN ${actorJson("mb")} END,
    'state_kept', a.kept,
    'energy_kwh', CASE WHEN a.kept THEN ${fixed4(servedKwhSql("a"))} END,
    'status', CASE WHEN a.kept THEN ${statusSql("a")} END,
    'source_kind', CASE WHEN a.kept THEN ${sourceKindSql("a", "v.source_kind")} END,
    'quality_status', a.quality_status, 'quality_note', a.quality_note,
    'before_energy_kwh', CASE WHEN v.revision_no > 1 AND p0.kept
      THEN ${fixed4(servedKwhSql("p0"))} END,
    'before_status', CASE WHEN v.revision_no = 1 THEN 'NO_DATA'
      WHEN p0.kept THEN ${statusSql("p0")} END
  ) AS change
  FROM picked p
  JOIN energy_revisions v ON v.id = p.revision_id
  JOIN energy_days e ON e.id = v.energy_id
  JOIN import_batches b ON b.id = p.batch_id
  JOIN whole w ON w.batch_id = p.batch_id
  LEFT JOIN members mb ON mb.id = v.member_id
  CROSS JOIN ${stateAt("a", "v.revision_no")}
  CROSS JOIN ${stateAt("p0", "v.revision_no - 1")}
) x ON true
ORDER BY x.seq, x.row_number`;

export interface ChangesScan {
  readonly scanned: number;
  // Of those, the rows of the key's stores.
  readonly scannedMine: number;
  readonly last: { readonly seq: string; readonly row: number } | undefined;
  readonly generation: string | undefined;
  readonly headSeq: number;
  // Each change as the JSON text of a Change (in the schema's field order), and its position.
  readonly changes: ReadonlyArray<
    { readonly json: JsonText; readonly seq: string; readonly row: number }
  >;
}

// An import batch's status as answers give it (a preview past its expiry is EXPIRED).
const batchStatusSql = (b: string) =>
  `CASE WHEN ${b}.status = 'PREVIEWED' AND ${b}.expires_at < now() THEN 'EXPIRED'
        ELSE ${b}.status END`;

// $1 after id, $2 limit, $3 status or null, $4 the key's stores (null: every store). A scoped key
// sees the batches all of whose rows are of its stores (as GET /imports/{batch_id} decides).
const batchesSql = `
SELECT json_build_object(
  'id', b.id, 'batch_no', b.batch_no, 'batch_kind', b.batch_kind,
  'status', ${batchStatusSql("b")}, 'filename', b.filename, 'change_reason', b.change_reason,
  'uploaded_at', ${utc("b.uploaded_at")}, 'committed_at', ${utc("b.committed_at")},
  'commit_seq', c.seq, 'uploaded_by', ${actorJson("m")}, 'action_counts', b.action_counts
)::text AS batch
FROM import_batches b
LEFT JOIN commits c ON c.batch_id = b.id
LEFT JOIN members m ON m.id = b.member_id
WHERE b.id > $1
  AND ($3::text IS NULL OR ${batchStatusSql("b")} = $3::text)
  AND ${mayReadBatchSql("b.id", "$4::int[]")}
ORDER BY b.id
LIMIT $2`;

// $1 store, $2 after id, $3 limit.
const auditSql = `
SELECT json_build_object(
  'id', a.id, 'action', a.action, 'actor', ${actorJson("m")},
  'before', a.before, 'after', a.after, 'created_at', ${utcMicros("a.created_at")}
)::text AS entry
FROM audit_log a
LEFT JOIN members m ON m.id = a.member_id
WHERE a.entity_type = 'store' AND a.entity_id = $1 AND a.id > $2
ORDER BY a.id
LIMIT $3`;

export class ChangesRepo extends Effect.Service<ChangesRepo>()("Changes/ChangesRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient;

    const changes = (
      after: { readonly seq: string; readonly row: number },
      scan: number,
      limit: number,
      storeIds: ReadonlyArray<number> | null,
    ) =>
      dbBoundary(sql.unsafe<{
        scanned: number;
        scanned_mine: number;
        last_seq: string | null;
        last_row: number | null;
        generation: string | null;
        head_seq: string | null;
        change_seq: string | null;
        change_row: number | null;
        change: string | null;
      }>(changesSql, [after.seq, after.row, scan, limit, storeIds === null ? null : [...storeIds]]))
        .pipe(
          Effect.map((rows): ChangesScan => {
            const head = rows[0];
            return {
              scanned: head?.scanned ?? 0,
              scannedMine: head?.scanned_mine ?? 0,
              last: head?.last_seq == null || head.last_row == null
                ? undefined
                : { seq: head.last_seq, row: head.last_row },
              generation: head?.generation ?? undefined,
              headSeq: Number(head?.head_seq ?? 0),
              changes: rows.flatMap((r) =>
                r.change === null
                  ? []
                  : [{ json: JsonText(r.change), seq: r.change_seq!, row: r.change_row! }]
              ),
            };
          }),
          span("ChangesRepo.changes"),
        );

    const generation = dbBoundary(
      sql.unsafe<{ generation: string }>("SELECT left(generation, 16) AS generation FROM dataset"),
    ).pipe(Effect.map((rows) => rows[0]?.generation));

    const batches = (
      after: number,
      limit: number,
      status: string | null,
      storeIds: ReadonlyArray<number> | null,
    ) =>
      dbBoundary(sql.unsafe<{ batch: string }>(batchesSql, [
        after,
        limit,
        status,
        storeIds === null ? null : [...storeIds],
      ])).pipe(
        Effect.map((rows) => rows.map((r) => JSON.parse(r.batch) as BatchItem)),
        span("ChangesRepo.batches"),
      );

    const audit = (storeId: number, after: number, limit: number) =>
      dbBoundary(sql.unsafe<{ entry: string }>(auditSql, [storeId, after, limit])).pipe(
        Effect.map((rows) => rows.map((r) => JSON.parse(r.entry) as AuditEntry)),
        span("ChangesRepo.audit"),
      );

    return { changes, generation, batches, audit } as const;
  }),
}) {}
