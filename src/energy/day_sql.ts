// The daily energy fact's rules as SQL, stated once (rules.md §2, contract DailyRow): the value
// served, the status, the source and its label, and the day's DailyRow. The writer
// (day_writer.ts) stores what these give beside the facts, in the transaction that writes them;
// readers compose the stored columns; the check (day_check.ts) recomputes them from the facts.
import { credentialByKeySql, credentialBySessionSql, mayReadStoreSql } from "../auth/access.ts";
import { fixed4 } from "../db/sql_text.ts";
import { functionRoutine, type Routine } from "../db/routines.ts";

// The facts of a day as a relation holds them: `d` is an alias with legacy_kwh, cleaned_kwh,
// cleaned_source_kind and is_void.
export const servedKwhSql = (d: string) =>
  `(CASE WHEN ${d}.is_void THEN NULL ELSE coalesce(${d}.cleaned_kwh, ${d}.legacy_kwh) END)`;

export const statusSql = (d: string) =>
  `(CASE WHEN ${d}.is_void THEN 'VOID'
         WHEN coalesce(${d}.cleaned_kwh, ${d}.legacy_kwh) IS NULL THEN 'NO_DATA'
         ELSE 'AVAILABLE' END)`;

// The source served: the cleaned value's source, else the sealed legacy value's. A void day
// keeps the source of the revision that voided it (`voidKind`), so that it reads the same in
// the energy days and in the day's versions.
export const sourceKindSql = (d: string, voidKind: string) =>
  `(CASE WHEN ${d}.is_void
           THEN CASE WHEN ${voidKind} IN ('CLEANED', 'LEGACY_DIRECT', 'MANUAL_UPLOAD')
                     THEN ${voidKind} END
         WHEN ${d}.cleaned_source_kind IS NOT NULL THEN ${d}.cleaned_source_kind
         WHEN ${d}.legacy_kwh IS NOT NULL THEN 'LEGACY_DIRECT' END)`;

export const sourceLabelSql = (status: string, kind: string) =>
  `(CASE WHEN ${status} = 'VOID' THEN 'Voided day'
         WHEN ${status} = 'NO_DATA' THEN 'No data'
         WHEN ${kind} = 'CLEANED' THEN 'Cleaned value'
         WHEN ${kind} = 'MANUAL_UPLOAD' THEN 'Cleaned value (manual upload)'
         ELSE 'Sealed legacy value' END)`;

interface RowParts {
  readonly date: string;
  readonly id: string;
  readonly served: string;
  readonly status: string;
  readonly kind: string;
  readonly qualityStatus: string;
  readonly qualityNote: string;
  readonly revisionNo: string;
  readonly importRowId: string;
  readonly sourceReference: string;
}

// One DailyRow as JSON text, in the contract's field order (json_build_object's spacing is part of
// the answer's bytes: the reads concatenate these texts as they are).
const rowJsonOf = (p: RowParts) =>
  `json_build_object(
    'business_date', (${p.date})::text,
    'energy_id', ${p.id},
    'energy_kwh', ${fixed4(p.served)},
    'status', ${p.status},
    'source_kind', ${p.kind},
    'source_label', ${sourceLabelSql(p.status, p.kind)},
    'quality_status', ${p.qualityStatus},
    'quality_note', ${p.qualityNote},
    'revision_no', ${p.revisionNo},
    'import_row_id', ${p.importRowId},
    'source_reference', ${p.sourceReference})::text`;

// The derived columns of energy_days for a day whose facts are in `d` (with business_date,
// quality_status, quality_note, revision_no, import_row_id and source_reference) and whose row id
// is `id`, each as an expression.
export const derivedExpressions = (d: string, id: string, voidKind: string) => {
  const served = servedKwhSql(d);
  const status = statusSql(d);
  const kind = sourceKindSql(d, voidKind);
  const row = rowJsonOf({
    date: `${d}.business_date`,
    id,
    served,
    status,
    kind,
    qualityStatus: `${d}.quality_status`,
    qualityNote: `${d}.quality_note`,
    revisionNo: `${d}.revision_no`,
    importRowId: `${d}.import_row_id`,
    sourceReference: `${d}.source_reference`,
  });
  return { served_kwh: served, status, source_kind: kind, row_json: row };
};

// The same as an assignment list for INSERT ... SELECT (`names`, `values`) or UPDATE ... SET.
export const derivedColumns = (d: string, id: string, voidKind: string) => {
  const columns = Object.entries(derivedExpressions(d, id, voidKind));
  return {
    names: columns.map(([name]) => name).join(", "),
    values: columns.map(([, value]) => value).join(", "),
    set: columns.map(([name, value]) => `${name} = ${value}`).join(", "),
  };
};

// A day of the range without a fact: NO_DATA, every value null.
export const noDataRowSql = (day: string) =>
  rowJsonOf({
    date: day,
    id: "NULL::int",
    served: "NULL::numeric",
    status: "'NO_DATA'",
    kind: "NULL::text",
    qualityStatus: "NULL::text",
    qualityNote: "NULL::text",
    revisionNo: "NULL::int",
    importRowId: "NULL::int",
    sourceReference: "NULL::jsonb",
  });

// The source kind of the revision a stored day is at: the input of sourceKindSql for a void day.
export const currentRevisionKindSql = (e: string) =>
  `(SELECT v.source_kind FROM energy_revisions v
    WHERE v.energy_id = ${e}.id AND v.revision_no = ${e}.revision_no)`;

// The summary of the contract (EnergySummary) from the counts of a range.
const summarySql = (requested: string, available: string, voids: string, kwh: string) =>
  `json_build_object(
    'requested_days', ${requested},
    'available_days', ${available},
    'missing_days', ${requested} - ${available} - ${voids},
    'void_days', ${voids},
    'available_energy_kwh', ${fixed4(kwh)},
    'complete', ${available} = ${requested},
    'saving_metrics_status', 'SEE_METRICS_ENDPOINT')::text`;

const gapRowsSql = (from: string, to: string) =>
  `(SELECT string_agg(${noDataRowSql("g.day::date")}, ', ' ORDER BY g.day)
    FROM generate_series(${from}, ${to}, interval '1 day') AS g(day))`;

// The energy days of a scope and range (inclusive) from the stored rows: one index range scan; a
// day without a fact is filled in where it falls. Returns summary (EnergySummary) and days
// (DailyRow[]) as JSON text, and version: the data generation with the count and the sum of the
// revision numbers of the range's facts (revision numbers only grow, so any change to the range
// changes it). $1 scope, $2 start, $3 end.
export const energyDaysSql = (scope: string, start: string, end: string) => `
WITH f AS (
  SELECT e.business_date AS day, e.row_json, e.status, e.served_kwh, e.revision_no,
    lag(e.business_date) OVER (ORDER BY e.business_date) AS prev
  FROM energy_days e
  WHERE e.scope_id = ${scope} AND e.business_date BETWEEN ${start} AND ${end}
), t AS (
  SELECT count(*) FILTER (WHERE f.status = 'AVAILABLE') AS available,
    count(*) FILTER (WHERE f.status = 'VOID') AS voids,
    sum(f.served_kwh) AS kwh,
    max(f.day) AS last,
    count(*) AS facts,
    coalesce(sum(f.revision_no), 0) AS revisions,
    string_agg(
      CASE WHEN f.day > coalesce(f.prev + 1, ${start})
           THEN ${gapRowsSql(`coalesce(f.prev + 1, ${start})`, "f.day - 1")} || ', ' || f.row_json
           ELSE f.row_json END,
      ', ' ORDER BY f.day) AS rows
  FROM f
)
SELECT ${summarySql(`(${end} - ${start} + 1)`, "t.available", "t.voids", "t.kwh")} AS summary,
  '[' || concat_ws(', ', t.rows,
    CASE WHEN t.last IS NULL THEN ${gapRowsSql(start, end)}
         WHEN t.last < ${end} THEN ${gapRowsSql("t.last + 1", end)} END) || ']' AS days,
  (SELECT generation FROM dataset) || '.' || t.facts || '.' || t.revisions AS version
FROM t`;

// Only the version of energyDaysSql's answer (the same text), for a conditional read.
export const energyVersionSql = (scope: string, start: string, end: string) => `
SELECT (SELECT generation FROM dataset) || '.' || count(*) || '.' ||
  coalesce(sum(e.revision_no), 0) AS version
FROM energy_days e
WHERE e.scope_id = ${scope} AND e.business_date BETWEEN ${start} AND ${end}`;

// The same answer computed from the facts alone (no stored column), as the contract defines it:
// the check of day_check.ts compares the stored answer with this one.
export const computedEnergyDaysSql = (scope: string, start: string, end: string) => {
  const e = "e";
  const served = servedKwhSql(e);
  const status = `CASE WHEN ${e}.id IS NULL THEN 'NO_DATA' ELSE ${statusSql(e)} END`;
  const kind = `CASE WHEN ${e}.id IS NULL THEN NULL ELSE ${
    sourceKindSql(e, currentRevisionKindSql(e))
  } END`;
  return `
SELECT
  ${
    summarySql(
      "count(*)",
      `count(*) FILTER (WHERE ${status} = 'AVAILABLE')`,
      `count(*) FILTER (WHERE ${status} = 'VOID')`,
      `sum(${served})`,
    )
  } AS summary,
  json_agg(${
    rowJsonOf({
      date: "c.day::date",
      id: `${e}.id`,
      served,
      status,
      kind,
      qualityStatus: `${e}.quality_status`,
      qualityNote: `${e}.quality_note`,
      revisionNo: `${e}.revision_no`,
      importRowId: `${e}.import_row_id`,
      sourceReference: `${e}.source_reference`,
    })
  }::json ORDER BY c.day)::text AS days
FROM generate_series(${start}, ${end}, interval '1 day') AS c(day)
LEFT JOIN energy_days ${e} ON ${e}.scope_id = ${scope} AND ${e}.business_date = c.day::date`;
};

// The read functions: PL/pgSQL so that each statement's plan is prepared once per connection.
export const energyRoutines: ReadonlyArray<Routine> = [
  functionRoutine(
    "energy_days_json",
    `CREATE FUNCTION energy_days_json(p_scope int, p_start date, p_end date)
RETURNS TABLE (summary text, days text, version text)
LANGUAGE plpgsql STABLE AS $fn$
BEGIN
  RETURN QUERY ${energyDaysSql("p_scope", "p_start", "p_end")};
END;
$fn$;`,
  ),
  // The credential check and the days in one round trip: the credential's row (none when no key
  // or session matches), and the days only when that credential may read the store and the scope
  // is the store's. The service still decides every refusal from the row, in the contract's order.
  // With p_if_version, the version the client holds: when it is current, only the version returns.
  functionRoutine(
    "energy_read",
    `CREATE FUNCTION energy_read(p_key_hash text, p_session_hash text, p_store int, p_scope int,
                            p_start date, p_end date, p_if_version text)
RETURNS TABLE (credential json, summary text, days text, version text)
LANGUAGE plpgsql STABLE AS $fn$
DECLARE
  c record;
BEGIN
  IF p_key_hash IS NOT NULL THEN
    SELECT x.* INTO c FROM (${credentialByKeySql("p_key_hash")}) x;
  ELSE
    SELECT x.* INTO c FROM (${credentialBySessionSql("p_session_hash")}) x;
  END IF;
  IF NOT FOUND THEN
    RETURN;
  END IF;
  credential := row_to_json(c);
  IF ${mayReadStoreSql("c", "p_store")}
     AND EXISTS (SELECT 1 FROM scopes sc WHERE sc.id = p_scope AND sc.store_id = p_store) THEN
    IF p_if_version IS NOT NULL THEN
      SELECT v.version INTO version FROM (${energyVersionSql("p_scope", "p_start", "p_end")}) v;
      IF version = p_if_version THEN
        RETURN NEXT;
        RETURN;
      END IF;
    END IF;
    SELECT j.summary, j.days, j.version INTO summary, days, version
    FROM energy_days_json(p_scope, p_start, p_end) j;
  END IF;
  RETURN NEXT;
END;
$fn$;`,
  ),
];
