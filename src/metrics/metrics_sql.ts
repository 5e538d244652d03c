// The metrics engine's inputs in one round trip: metric_inputs, a PL/pgSQL function (its plan is
// prepared once per connection; planning cost more than executing), installed from here at start;
// metric_read checks the credential in the same statement.
// The day facts come from the stored day (day_sql.ts): the value served and its status.
import { credentialIntoSql, mayReadStoreSql } from "../auth/access.ts";
import { functionRoutine, type Routine } from "../db/routines.ts";
import { dataTokenSql, rangeFactsSql, scopedDataTokenSql } from "../energy/day_sql.ts";
import { SUMMER } from "./engine.ts";

// The stored days of the scope from `from` to `to` (SQL expressions), as a relation with
// business_date, served_kwh, status, provisional, provisional_at and revision_no.
type DaysOf = (from: string, to: string) => string;

// The relations the inputs' version is made of, shared by metric_inputs and metric_version: the
// range's facts, and the days of the BASELINE stages' summers before the range's last year, of
// which the baseline keeps the settled, available, non-void ones (rules.md §4).
const factsSql = (days: DaysOf) => `
  SELECT e.business_date, e.served_kwh, e.provisional, e.provisional_at, e.revision_no, e.status
  FROM ${days("p_start", "p_end")} e
`;

// The summers of the BASELINE stages (stage_history h, valid_to exclusive; rules.md §4): each stage
// is read one summer at a time, June 1 (SUMMER_FIRST) to September 30 (SUMMER_LAST) of each of its
// years (y.year) before the range's last year (`end`'s), within the stage's own dates. Only the
// days it keeps are read, not every day before the range's year (a year-to-date read of periods
// read about 365 earlier days to keep at most 122), so the cost does not grow with the store count
// once the days no longer fit in PostgreSQL's buffers. The portfolio reads the same summers.
export const summersSql = (end: string) => `
  FROM stage_history h
  CROSS JOIN LATERAL generate_series(
    extract(year FROM h.valid_from)::int,
    least(extract(year FROM coalesce(h.valid_to - 1, ${end}))::int,
          extract(year FROM ${end})::int - 1)
  ) AS y(year)`;
const summerDay = ([month, day]: readonly [number, number]) =>
  `make_date(y.year, ${month}, ${day})`;
export const SUMMER_FIRST = `greatest(h.valid_from, ${summerDay(SUMMER.first)})`;
export const SUMMER_LAST = `least(coalesce(h.valid_to - 1, 'infinity'::date), ${
  summerDay(SUMMER.last)
})`;
// Every stored day of those summers, whatever its status: what the version counts. Each summer's
// days are a subquery of their own (OFFSET 0), read by one index range scan: flattened into the
// join, they were planned as every day of the scope, read once and filtered by each summer's dates
// (the planner counts a thousand years in the series).
const summerDaysSql = (days: DaysOf) => `
  SELECT e.business_date, e.served_kwh, e.revision_no, e.status, e.provisional
  ${summersSql("p_end")}
  CROSS JOIN LATERAL (SELECT * FROM ${days(SUMMER_FIRST, SUMMER_LAST)} s OFFSET 0) e
  WHERE h.store_id = p_store AND h.stage = 'BASELINE'
`;
// The days the baseline keeps.
const BASELINE_DAYS_SQL =
  `SELECT * FROM summer_days WHERE status = 'AVAILABLE' AND provisional = 0`;

// What an answer of the inputs depends on that can change: the data generation, the range's facts
// and the summers' days (their number and the sum of their revision numbers, which only grow, so
// that any commit that changes one of those days changes it). Counted over the days the baseline
// keeps only, a day that leaves it and one that enters it could cancel out. `factsTotals` gives the
// facts' part.
const versionOf = (factsTotals: string) =>
  `(SELECT generation FROM dataset) || '.' ||
    ${factsTotals} || '.' ||
    (SELECT count(*) || '.' || coalesce(sum(revision_no), 0) FROM summer_days)`;
// The facts' part from the relation facts (metric_inputs)...
const VERSION_SQL = versionOf(
  `(SELECT count(*) || '.' || coalesce(sum(revision_no), 0) FROM facts)`,
);
// ...and the same numbers from the month chunks' running totals (metric_version, current data).
const CHUNK_FACTS_TOTALS = `(SELECT t.facts || '.' || t.revisions
    FROM (${rangeFactsSql("p_scope", "p_start", "p_end")}) t)`;

// The version (and data token) metric_inputs would give for the same arguments, without the
// inputs: a kept answer is compared with it (src/reads/read_cache.ts). The range's facts are
// counted from the month chunks' running totals, not read day by day.
const metricVersionFunction = (days: DaysOf) =>
  functionRoutine(
    "metric_version",
    `CREATE FUNCTION metric_version(p_store int, p_scope int, p_start date, p_end date)
RETURNS TABLE (out_version text, out_token text)
LANGUAGE plpgsql STABLE AS $fn$
#variable_conflict use_column
BEGIN
  RETURN QUERY
WITH summer_days AS (${summerDaysSql(days)})
SELECT ${versionOf(CHUNK_FACTS_TOTALS)} AS version, ${dataTokenSql} AS token;
END;
$fn$;`,
  );

const metricInputsFunction = (
  name: string,
  extraParams: string,
  days: DaysOf,
) =>
  functionRoutine(
    name,
    `CREATE FUNCTION ${name}(p_store int, p_scope int, p_start date, p_end date, p_tz text${extraParams})
RETURNS TABLE (out_days json, out_stages json, out_periods json, out_tev json, out_baseline json,
               out_version text, out_token text)
LANGUAGE plpgsql STABLE AS $fn$
#variable_conflict use_column
BEGIN
  RETURN QUERY
WITH cal AS (
  SELECT d::date AS day FROM generate_series(p_start, p_end, interval '1 day') AS d
), facts AS (${factsSql(days)}), periods AS (
  SELECT tp.*, (SELECT sum(i.unit_price * i.priced_quantity) FROM target_period_items i
                WHERE i.period_id = tp.id) AS device_cost
  FROM target_periods tp
  WHERE tp.scope_id = p_scope AND tp.valid_from <= p_end
    AND (tp.valid_to IS NULL OR tp.valid_to >= p_start)
), tev AS (
  SELECT o.id, o.value_kwh, o.observed_date FROM tev_observations o
  WHERE o.scope_id = p_scope AND o.is_valid AND o.value_kwh > 0 AND o.observed_date <= p_end
    AND o.observed_date >= coalesce((
      SELECT max(p.observed_date) FROM tev_observations p
      WHERE p.scope_id = p_scope AND p.is_valid AND p.value_kwh > 0 AND p.observed_date <= p_start
    ), p_start)
), summer_days AS (${summerDaysSql(days)}), baseline_days AS (${BASELINE_DAYS_SQL}), baseline AS (
  SELECT extract(year FROM b.business_date)::int AS year,
    extract(month FROM b.business_date)::int AS month,
    count(*)::int AS days, sum(b.served_kwh)::text AS sum
  FROM baseline_days b
  GROUP BY 1, 2
)
SELECT
  -- A void day has no value to be provisional (its stored fact keeps the mark it had).
  (SELECT json_agg(json_build_array(
      c.day::text,
      f.served_kwh::text,
      CASE WHEN f.provisional = 1 AND f.status <> 'VOID' THEN 1 ELSE 0 END,
      CASE WHEN f.provisional = 1 AND f.status <> 'VOID'
           THEN to_char(f.provisional_at AT TIME ZONE p_tz, 'YYYY-MM-DD HH24:MI') END,
      coalesce(f.status, 'NO_DATA')
    ) ORDER BY c.day)
   FROM cal c LEFT JOIN facts f ON f.business_date = c.day) AS days,
  coalesce((SELECT json_agg(json_build_array(h.stage, h.valid_from::text, h.valid_to::text)
                            ORDER BY h.valid_from)
            FROM stage_history h
            WHERE h.store_id = p_store AND h.valid_from <= p_end
              AND (h.valid_to IS NULL OR h.valid_to > p_start)), '[]'::json) AS stages,
  coalesce((SELECT json_agg(json_build_object(
              'from', p.valid_from::text, 'to', p.valid_to::text, 'periodId', p.id,
              'tesKwh', p.tes_kwh::text, 'deviceCost', p.device_cost::text,
              'ratio', p.tev_warning_ratio::text, 'sourceKind', p.source_kind,
              'sourceReference', p.source_reference) ORDER BY p.valid_from)
            FROM periods p), '[]'::json) AS periods,
  coalesce((SELECT json_agg(json_build_array(t.value_kwh::text, t.observed_date::text)
                            ORDER BY t.observed_date, t.id)
            FROM tev t), '[]'::json) AS tev,
  coalesce((SELECT json_agg(json_build_object('year', year, 'month', month, 'days', days,
                                              'sum', sum))
            FROM baseline), '[]'::json) AS baseline,
  ${VERSION_SQL} AS version,
  ${dataTokenSql} AS token;
END;
$fn$;`,
  );

// The credential check and the current inputs in one round trip: the credential's row (no row when
// no key or session matches), then, only when that credential may read the store and the scope is
// the store's, the version and data token of the range's inputs and, unless only the version is
// asked for (p_version_only) or the client holds it (p_if_version), the inputs in metric_inputs'
// columns (read in the scope's time zone), with the scope's time zone and unit. The service decides
// every refusal from the row, in the contract's order.
const metricReadFunction = functionRoutine(
  "metric_read",
  `CREATE FUNCTION metric_read(p_key_hash text, p_session_hash text, p_store int, p_scope int,
                            p_start date, p_end date, p_if_version text, p_version_only boolean)
RETURNS TABLE (credential json, out_days json, out_stages json, out_periods json, out_tev json,
               out_baseline json, out_version text, out_token text, out_timezone text,
               out_unit text)
LANGUAGE plpgsql STABLE AS $fn$
DECLARE
  c record;
  tz text;
  scope_unit text;
  scoped_token text;
BEGIN
${credentialIntoSql("c", "p_key_hash", "p_session_hash")}
  IF NOT FOUND THEN
    RETURN;
  END IF;
  credential := row_to_json(c);
  SELECT sc.timezone, sc.unit INTO tz, scope_unit
    FROM scopes sc WHERE sc.id = p_scope AND sc.store_id = p_store;
  IF NOT (${mayReadStoreSql("c", "p_store")} AND FOUND) THEN
    RETURN NEXT;
    RETURN;
  END IF;
  out_timezone := tz;
  out_unit := scope_unit;
  scoped_token := ${scopedDataTokenSql("c.store_ids")};
  out_token := scoped_token;
  IF p_version_only OR p_if_version IS NOT NULL THEN
    SELECT v.out_version INTO out_version FROM metric_version(p_store, p_scope, p_start, p_end) v;
    IF p_version_only OR out_version = p_if_version THEN
      RETURN NEXT;
      RETURN;
    END IF;
  END IF;
  RETURN QUERY SELECT credential, i.out_days, i.out_stages, i.out_periods, i.out_tev,
      i.out_baseline, i.out_version, scoped_token, tz, scope_unit
    FROM metric_inputs(p_store, p_scope, p_start, p_end, tz) i;
END;
$fn$;`,
);

const currentDays: DaysOf = (from, to) =>
  `(SELECT * FROM energy_days x WHERE x.scope_id = p_scope AND x.business_date BETWEEN ${from} AND ${to})`;

export const metricsRoutines: ReadonlyArray<Routine> = [
  metricInputsFunction("metric_inputs", "", currentDays),
  metricVersionFunction(currentDays),
  // After the two it calls.
  metricReadFunction,
  // The same inputs as they were once commit p_seq was made (energy_days_at, day_sql.ts).
  metricInputsFunction(
    "metric_inputs_at",
    ", p_seq bigint",
    (from, to) => `energy_days_at(p_scope, ${from}, ${to}, p_seq)`,
  ),
];
