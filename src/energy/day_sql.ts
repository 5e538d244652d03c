// The daily energy fact's rules as SQL, stated once (rules.md §2, contract DailyRow): the value
// served, the status, the source and its label, and the day's DailyRow. The writer
// (day_writer.ts) stores what these give beside the facts, in the transaction that writes them:
// per day its served value, status and source (energy_days), and per scope and calendar month
// the month's DailyRows as one text (energy_months), so that a 366-day read is 13 rows and some
// slicing. Readers compose the stored columns; the check (day_check.ts) recomputes them.
import { credentialIntoSql, mayReadStoreSql } from "../auth/access.ts";
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

export interface RowParts {
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

// JSON values as text, for rowJsonOf: a number or jsonb (its own text), a text of a closed set
// (dates, decimals, statuses, source kinds and labels: nothing to escape), any other text (escaped
// by to_json, as json_build_object escapes it); each null as null.
const rawJson = (e: string) => `coalesce((${e})::text, 'null')`;
const plainString = (e: string) => `coalesce('"' || (${e}) || '"', 'null')`;
const escapedString = (e: string) => `coalesce(to_json((${e})::text)::text, 'null')`;

// One DailyRow as JSON text, in the contract's field order and in json_build_object's spacing
// (the reads concatenate these texts as they are, and the stored month chunks hold them). One
// format() call costs PostgreSQL less than json_build_object (the month chunks of a commit and of
// a seed are mostly this).
export const rowJsonOf = (p: RowParts) =>
  `format('{"business_date" : %s, "energy_id" : %s, "energy_kwh" : %s, "status" : %s, ` +
  `"source_kind" : %s, "source_label" : %s, "quality_status" : %s, "quality_note" : %s, ` +
  `"revision_no" : %s, "import_row_id" : %s, "source_reference" : %s}',
    ${plainString(`(${p.date})::text`)},
    ${rawJson(p.id)},
    ${plainString(fixed4(p.served))},
    ${plainString(p.status)},
    ${plainString(p.kind)},
    ${plainString(sourceLabelSql(p.status, p.kind))},
    ${escapedString(p.qualityStatus)},
    ${escapedString(p.qualityNote)},
    ${rawJson(p.revisionNo)},
    ${rawJson(p.importRowId)},
    ${rawJson(p.sourceReference)})`;

// The derived columns of energy_days for a day whose facts are in `d`, each as an expression
// (`voidKind`: the source kind of the revision the day is at).
export const derivedExpressions = (d: string, voidKind: string) => ({
  served_kwh: servedKwhSql(d),
  status: statusSql(d),
  source_kind: sourceKindSql(d, voidKind),
});

// The same as an assignment list for INSERT ... SELECT (`names`, `values`) or UPDATE ... SET.
export const derivedColumns = (d: string, voidKind: string) => {
  const columns = Object.entries(derivedExpressions(d, voidKind));
  return {
    names: columns.map(([name]) => name).join(", "),
    values: columns.map(([, value]) => value).join(", "),
    set: columns.map(([name, value]) => `${name} = ${value}`).join(", "),
  };
};

// The DailyRow of a stored day `e` (its derived columns written), or of day `day` without a fact.
const storedRowJson = (e: string, day: string) =>
  `CASE WHEN ${e}.id IS NULL THEN ${noDataRowSql(day)} ELSE ${
    rowJsonOf({
      date: `${e}.business_date`,
      id: `${e}.id`,
      served: `${e}.served_kwh`,
      status: `${e}.status`,
      kind: `${e}.source_kind`,
      qualityStatus: `${e}.quality_status`,
      qualityNote: `${e}.quality_note`,
      revisionNo: `${e}.revision_no`,
      importRowId: `${e}.import_row_id`,
      sourceReference: `${e}.source_reference`,
    })
  } END`;

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

// The columns of a month chunk (energy_months) after its key, in the order monthChunksSql gives
// them: what the day writer writes and the check compares.
export const MONTH_CHUNK_COLUMNS = [
  "days_json",
  "ends",
  "statuses",
  "served",
  "revisions",
  "served_upto",
  "facts_upto",
  "revisions_upto",
  "settled_days",
  "settled_kwh",
  "settled_revisions",
] as const;

/**
 * The month chunks (energy_months' columns) of the (scope_id, month) pairs that `pairs` (a query)
 * gives, from the stored days: every calendar day of the month in order, a stored day's DailyRow
 * or a NO_DATA row, joined by ", " (days_json); where each day's row ends, in bytes from the
 * text's start, counting the separator after it (ends: day i is the bytes from 1 + ends[i - 1]
 * for ends[i] - ends[i - 1] - 2); a letter per day, A(VAILABLE), V(OID) or N(O_DATA) (statuses);
 * the served kWh of each day (served); the revision number of each day's fact, 0 for none
 * (revisions); the running totals of the served kWh (null until the first available day), of the
 * days with a fact and of their revision numbers, up to and including each day (served_upto,
 * facts_upto, revisions_upto: a range's totals are two lookups); and the number and sum of its
 * settled available days (settled_days; settled_kwh, null without one) with the revisions they
 * were counted at (settled_revisions).
 */
export const monthChunksSql = (pairs: string) => `
SELECT p.scope_id, p.month, m.*
FROM (${pairs}) p
-- Month by month, each month's days by one index range scan (a lookup per day cost 12-25 % more
-- of the whole statement): a join of all the pairs' days at once is planned as a hash of the whole
-- table and a sort of every day's text on disk (a commit of 10,000 days spent 500 ms there,
-- against 60 ms).
CROSS JOIN LATERAL (
  SELECT
    -- In the order of d (sorted below): an ORDER BY in each aggregate would sort the month's days
    -- five more times.
    string_agg(d.t, ', ') AS days_json,
    array_agg(d.ends) AS ends,
    string_agg(d.s, '') AS statuses,
    array_agg(d.served_kwh) AS served,
    array_agg(d.rev) AS revisions,
    array_agg(d.served_upto) AS served_upto,
    array_agg(d.facts_upto) AS facts_upto,
    array_agg(d.revisions_upto) AS revisions_upto,
    count(*) FILTER (WHERE d.settled)::int AS settled_days,
    sum(d.served_kwh) FILTER (WHERE d.settled) AS settled_kwh,
    array_agg(d.rev) AS settled_revisions
  FROM (
    SELECT r.*, (sum(octet_length(r.t) + 2) OVER upto)::int AS ends,
      sum(r.served_kwh) OVER upto AS served_upto,
      (sum((r.rev > 0)::int) OVER upto)::int AS facts_upto,
      (sum(r.rev) OVER upto)::int AS revisions_upto
    FROM (
      SELECT c.day, ${storedRowJson("e", "c.day")} AS t,
        CASE e.status WHEN 'AVAILABLE' THEN 'A' WHEN 'VOID' THEN 'V' ELSE 'N' END AS s,
        e.served_kwh, coalesce(e.revision_no, 0) AS rev,
        coalesce(e.status = 'AVAILABLE' AND e.provisional = 0, false) AS settled
      FROM (
        SELECT (p.month + i)::date AS day FROM generate_series(0, 30) AS i
        WHERE p.month + i < (p.month + interval '1 month')::date
      ) c
      LEFT JOIN (
        SELECT * FROM energy_days x
        WHERE x.scope_id = p.scope_id
          AND x.business_date BETWEEN p.month
            AND (p.month + interval '1 month' - interval '1 day')::date
      ) e ON e.business_date = c.day
      ORDER BY c.day
    ) r
    WINDOW upto AS (ORDER BY r.day ROWS UNBOUNDED PRECEDING)
  ) d
) m`;

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

// The last day of the month that starts on `month` (a date expression).
const monthLastDay = (month: string) => `(${month} + interval '1 month' - interval '1 day')::date`;

// A range's part of the month that starts on `month`: its first and last day, and their positions
// in the month (from 1).
const partFirst = (start: string, month: string) => `greatest(${start}, ${month})`;
const partLast = (end: string, month: string) => `least(${end}, ${monthLastDay(month)})`;
const partLo = (start: string, month: string) => `${partFirst(start, month)} - ${month} + 1`;
const partHi = (end: string, month: string) => `${partLast(end, month)} - ${month} + 1`;

// A running total of a month chunk (ends, served_upto, ...) up to the day before a range's part of
// the month, whose first position is `lo`: 0 for a part that starts on the month's first day.
const before = (upto: string, lo = "s.lo") => `coalesce(${upto}[${lo} - 1], 0)`;

const lettersIn = (text: string, letter: string) =>
  `(length(${text}) - length(replace(${text}, '${letter}', '')))`;

// The version of a range's answer: the data generation, the number of facts and the sum of their
// revision numbers (revision numbers only grow, so any change to the range changes it).
const versionSql = (facts: string, revisions: string) =>
  `(SELECT generation FROM dataset) || '.' || ${facts} || '.' || ${revisions}`;

// The commit the data a statement reads has reached, as a token a client can send back to read
// the same data later: the clock's number and the loaded snapshot's generation (a reload starts
// the numbers again). Null before any snapshot is loaded.
export const dataTokenSql =
  `(SELECT k.seq || '.' || left(d.generation, 16) FROM commit_clock k CROSS JOIN dataset d)`;

// The commit whose data a key limited to the stores `storeIds` (an int[] expression; null: every
// store) is shown for commit `seq` (`k`: the commit clock's row): the latest commit up to `seq` that
// changed one of its stores (commit_stores), not before the history kept (the first commit kept
// when none did). Read as of it, those stores' data is what it is at `seq`; and it changes only
// when their data does, so that the key can neither count nor date other stores' commits.
export const scopedSeqSql = (storeIds: string, seq: string) => `
  CASE WHEN ${storeIds} IS NULL OR ${seq} < k.history_from THEN ${seq}
    ELSE greatest(k.history_from, coalesce(
      (SELECT max(cs.seq) FROM commit_stores cs
       WHERE cs.store_id = ANY (${storeIds}) AND cs.seq <= ${seq}),
      (SELECT min(x.seq) FROM commits x WHERE x.seq >= k.history_from AND x.seq <= ${seq}),
      ${seq})) END`;

// dataTokenSql for such a key.
export const scopedDataTokenSql = (storeIds: string) =>
  `(SELECT ${scopedSeqSql(storeIds, "k.seq")} || '.' || left(d.generation, 16)
    FROM commit_clock k CROSS JOIN dataset d)`;

/**
 * The energy days of a scope and range (inclusive), from the stored months: one row per calendar
 * month of the range, in order, each with the month's part of the days (DailyRows as JSON text,
 * joined by ", "; a month without any fact is made of NO_DATA rows), and on every row the
 * range's summary (EnergySummary JSON) and version.
 */
export const energyDaysSql = (scope: string, start: string, end: string) => `
WITH cal AS (
  SELECT m::date AS month FROM generate_series(date_trunc('month', ${start}::timestamp),
                                                ${end}::timestamp, interval '1 month') AS m
), sliced AS (
  SELECT c.month, m.days_json, m.ends,
    ${partLo(start, "c.month")} AS lo, ${partHi(end, "c.month")} AS hi,
    ${partFirst(start, "c.month")} AS lo_day, ${partLast(end, "c.month")} AS hi_day,
    m.statuses, m.served_upto, m.facts_upto, m.revisions_upto
  FROM cal c
  LEFT JOIN energy_months m ON m.scope_id = ${scope} AND m.month = c.month
), parts AS (
  SELECT s.month,
    CASE WHEN s.days_json IS NULL THEN ${gapRowsSql("s.lo_day", "s.hi_day")}
         WHEN s.lo = 1 AND s.hi = array_length(s.ends, 1) THEN s.days_json
         -- Cut by bytes: substr counts characters, walking the text from its start.
         ELSE convert_from(substring(convert_to(s.days_json, getdatabaseencoding())
           FROM 1 + ${before("s.ends")} FOR s.ends[s.hi] - ${before("s.ends")} - 2),
           getdatabaseencoding())
    END AS part,
    coalesce(${lettersIn("substr(s.statuses, s.lo, s.hi - s.lo + 1)", "A")}, 0) AS available,
    coalesce(${lettersIn("substr(s.statuses, s.lo, s.hi - s.lo + 1)", "V")}, 0) AS voids,
    -- Not a sum where the part has no available day (the totals leave it out).
    s.served_upto[s.hi] - ${before("s.served_upto")} AS kwh,
    coalesce(s.facts_upto[s.hi] - ${before("s.facts_upto")}, 0) AS facts,
    coalesce(s.revisions_upto[s.hi] - ${before("s.revisions_upto")}, 0) AS revisions
  FROM sliced s
), totals AS (
  SELECT sum(available) AS available, sum(voids) AS voids,
    sum(kwh) FILTER (WHERE available > 0) AS kwh, sum(facts) AS facts, sum(revisions) AS revisions
  FROM parts
)
SELECT ${summarySql(`(${end} - ${start} + 1)`, "t.available", "t.voids", "t.kwh")} AS summary,
  ${versionSql("t.facts", "t.revisions")} AS version,
  p.part,
  ${dataTokenSql} AS token
FROM parts p CROSS JOIN totals t
ORDER BY p.month`;

// The number of a scope's stored days in a range and the sum of their revision numbers (facts,
// revisions), from the month chunks' running totals, two entries of each month: what count(*) and
// sum(revision_no) over the range's rows of energy_days give (chunks are written with their days).
export const rangeFactsSql = (scope: string, start: string, end: string) => `
SELECT coalesce(sum(m.facts_upto[b.hi] - ${before("m.facts_upto", "b.lo")}), 0) AS facts,
  coalesce(sum(m.revisions_upto[b.hi] - ${before("m.revisions_upto", "b.lo")}), 0) AS revisions
FROM energy_months m
CROSS JOIN LATERAL (SELECT ${partLo(start, "m.month")} AS lo, ${partHi(end, "m.month")} AS hi) b
WHERE m.scope_id = ${scope}
  AND m.month BETWEEN date_trunc('month', ${start}::timestamp)::date AND ${end}`;

// Only the version of energyDaysSql's answer (the same text), for a conditional read.
export const energyVersionSql = (scope: string, start: string, end: string) => `
SELECT ${versionSql("t.facts", "t.revisions")} AS version
FROM (${rangeFactsSql(scope, start, end)}) t`;

// The facts of the stored days of a scope and range as they are now, in the columns of
// daysAtSql (void_kind: the source kind of a void day's current revision).
const currentFactsSql = (scope: string, start: string, end: string) => `
SELECT e.id, e.business_date, e.legacy_kwh, e.cleaned_kwh, e.cleaned_source_kind, e.is_void,
  e.provisional, e.provisional_at, e.quality_status, e.quality_note, e.revision_no,
  e.import_row_id, e.source_reference,
  CASE WHEN e.is_void THEN ${currentRevisionKindSql("e")} END AS void_kind, true AS kept
FROM energy_days e
WHERE e.scope_id = ${scope} AND e.business_date BETWEEN ${start} AND ${end}`;

/**
 * The facts of the stored days of a scope and range as they were once commit `seq` (commits.seq)
 * was made: each day at its last revision committed then (a day whose first revision came later
 * is absent), in the state that revision left it (kept with the revision, its source reference
 * that of the revision's import row; the day's row for its current revision). `kept` is false for a revision whose state was not kept (replaced before
 * history was kept: see commit_clock.history_from).
 */
export const daysAtSql = (scope: string, start: string, end: string, seq: string) => {
  const pick = (column: string, revisionColumn = column) =>
    `CASE WHEN a.revision_no = e.revision_no THEN e.${column}
          WHEN a.state_kept THEN a.${revisionColumn} END AS ${column}`;
  return `
SELECT e.id, e.business_date, ${pick("legacy_kwh")}, ${pick("cleaned_kwh")},
  ${pick("cleaned_source_kind")}, ${pick("is_void", "after_is_void")}, ${pick("provisional")},
  ${pick("provisional_at")}, ${pick("quality_status")}, ${pick("quality_note")},
  a.revision_no,
  CASE WHEN a.revision_no = e.revision_no OR a.state_kept THEN a.import_row_id END
    AS import_row_id,
  ${pick("source_reference")},
  a.source_kind AS void_kind,
  a.revision_no = e.revision_no OR a.state_kept AS kept
FROM energy_days e
CROSS JOIN LATERAL (
  SELECT r.revision_no, r.source_kind, r.import_row_id, r.legacy_kwh, r.cleaned_kwh,
    r.cleaned_source_kind, r.after_is_void, r.provisional, r.provisional_at, r.quality_status,
    r.quality_note, ir.source_reference, r.state_kept
  FROM energy_revisions r
  JOIN import_rows ir ON ir.id = r.import_row_id
  JOIN commits c ON c.batch_id = ir.batch_id
  WHERE r.energy_id = e.id AND c.seq <= ${seq}
  ORDER BY r.revision_no DESC
  LIMIT 1
) a
WHERE e.scope_id = ${scope} AND e.business_date BETWEEN ${start} AND ${end}`;
};

// The answer of a range computed from facts in daysAtSql's columns (`facts`, a query), as the
// contract defines it: the summary, the days (the DailyRow array as JSON text), the version, and
// whether every fact's state was kept.
const computedDaysSql = (facts: string, start: string, end: string) => {
  const f = "f";
  const served = servedKwhSql(f);
  const status = statusSql(f);
  const kind = `CASE WHEN ${f}.id IS NULL THEN NULL ELSE ${sourceKindSql(f, `${f}.void_kind`)} END`;
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
      id: `${f}.id`,
      served,
      status,
      kind,
      qualityStatus: `${f}.quality_status`,
      qualityNote: `${f}.quality_note`,
      revisionNo: `${f}.revision_no`,
      importRowId: `${f}.import_row_id`,
      sourceReference: `${f}.source_reference`,
    })
  }::json ORDER BY c.day)::text AS days,
  ${versionSql(`count(${f}.id)`, `coalesce(sum(${f}.revision_no), 0)`)} AS version,
  coalesce(bool_and(${f}.kept), true) AS kept
FROM generate_series(${start}, ${end}, interval '1 day') AS c(day)
LEFT JOIN (${facts}) ${f} ON ${f}.business_date = c.day::date`;
};

// The same answer computed from the facts alone (no stored column), as the contract defines it:
// the check of day_check.ts compares the stored answer with this one.
export const computedEnergyDaysSql = (scope: string, start: string, end: string) =>
  computedDaysSql(currentFactsSql(scope, start, end), start, end);

// The answer as it was once commit `seq` was made (a read as of an earlier instant).
export const energyDaysAtSql = (scope: string, start: string, end: string, seq: string) =>
  computedDaysSql(daysAtSql(scope, start, end, seq), start, end);

// The read functions: PL/pgSQL so that each statement's plan is prepared once per connection.
export const energyRoutines: ReadonlyArray<Routine> = [
  // The stored days of a range as they were once commit p_seq was made, with what the metrics
  // read of a day (metrics_sql.ts reads energy_days' columns of the same names now).
  functionRoutine(
    "energy_days_at",
    `CREATE FUNCTION energy_days_at(p_scope int, p_start date, p_end date, p_seq bigint)
RETURNS TABLE (business_date date, served_kwh numeric, status text, provisional smallint,
               provisional_at timestamptz, revision_no int, kept boolean)
LANGUAGE sql STABLE AS $fn$
SELECT f.business_date, ${servedKwhSql("f")}, ${statusSql("f")}, f.provisional,
  f.provisional_at, f.revision_no, f.kept
FROM (${daysAtSql("p_scope", "p_start", "p_end", "p_seq")}) f
$fn$;`,
  ),
  functionRoutine(
    "energy_days_json",
    `CREATE FUNCTION energy_days_json(p_scope int, p_start date, p_end date)
RETURNS TABLE (summary text, version text, part text, token text)
LANGUAGE plpgsql STABLE AS $fn$
BEGIN
  RETURN QUERY ${energyDaysSql("p_scope", "p_start", "p_end")};
END;
$fn$;`,
  ),
  // The credential check and the days in one round trip: the credential's row (none when no key or
  // session matches), and the days (with the scope's time zone and unit) only when that credential
  // may read the store and the scope is the store's. The service still decides every refusal from
  // the row, in the contract's order. With p_if_version, the version the client holds: when it is
  // current, only the version returns.
  functionRoutine(
    "energy_read",
    `CREATE FUNCTION energy_read(p_key_hash text, p_session_hash text, p_store int, p_scope int,
                            p_start date, p_end date, p_if_version text)
RETURNS TABLE (credential json, summary text, version text, part text, token text, timezone text,
               unit text)
LANGUAGE plpgsql STABLE AS $fn$
DECLARE
  c record;
  scoped_token text;
BEGIN
${credentialIntoSql("c", "p_key_hash", "p_session_hash")}
  IF NOT FOUND THEN
    RETURN;
  END IF;
  credential := row_to_json(c);
  SELECT sc.timezone, sc.unit INTO timezone, unit
    FROM scopes sc WHERE sc.id = p_scope AND sc.store_id = p_store;
  IF NOT (${mayReadStoreSql("c", "p_store")} AND FOUND) THEN
    timezone := NULL;
    unit := NULL;
    RETURN NEXT;
    RETURN;
  END IF;
  scoped_token := ${scopedDataTokenSql("c.store_ids")};
  token := scoped_token;
  IF p_if_version IS NOT NULL THEN
    SELECT v.version INTO version FROM (${energyVersionSql("p_scope", "p_start", "p_end")}) v;
    IF version = p_if_version THEN
      RETURN NEXT;
      RETURN;
    END IF;
  END IF;
  -- What is the same for every part comes with the first one only.
  RETURN QUERY SELECT
      CASE WHEN j.n = 1 THEN credential END, CASE WHEN j.n = 1 THEN j.summary END,
      CASE WHEN j.n = 1 THEN j.version END, j.part, CASE WHEN j.n = 1 THEN scoped_token END,
      CASE WHEN j.n = 1 THEN timezone END, CASE WHEN j.n = 1 THEN unit END
    FROM energy_days_json(p_scope, p_start, p_end)
      WITH ORDINALITY AS j(summary, version, part, token, n)
    ORDER BY j.n;
END;
$fn$;`,
  ),
];
