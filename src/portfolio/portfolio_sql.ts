// The portfolio read's statement: for a page of the stores a key sees (and the filters pick), what
// the metrics engine reads of a range (metrics_sql.ts reads the same for one store) and the device
// evidence of the data-quality check (quality_repo.ts reads the same for one scope), set-based. The
// facts of the stored days come through `DaysOf`, so a read as of an earlier commit is the same
// statement over energy_days_at.
import { utc } from "../db/sql_text.ts";
import { scopedDataTokenSql } from "../energy/day_sql.ts";
import { listVersionSql } from "../stores/store_repo.ts";
import { SUMMER } from "../metrics/engine.ts";
import { SUMMER_FIRST, SUMMER_LAST, summersSql } from "../metrics/metrics_sql.ts";

// The stored days of scope `scope` from `from` to `to` (SQL expressions), as a relation with
// business_date, served_kwh, status, provisional and provisional_at.
export type DaysOf = (scope: string, from: string, to: string) => string;

const currentDays: DaysOf = (scope, from, to) =>
  `(SELECT x.business_date, x.served_kwh, x.status, x.provisional, x.provisional_at
    FROM energy_days x WHERE x.scope_id = ${scope} AND x.business_date BETWEEN ${from} AND ${to})`;

// The same days as they were once commit `seq` (an SQL expression) was made.
const daysAtCommit = (seq: string): DaysOf => (scope, from, to) =>
  `energy_days_at(${scope}, ${from}, ${to}, ${seq})`;

// The parameters of the statement: $1 start, $2 end (dates), $3 the key's stores (int[], null for
// every store), $4 brand id, $5 city (each null for no filter), then the page: the stores after
// store $6 and scope $7, at most $8 of them; as of an earlier commit, $9 the commit.

// The stores the key sees (`storeIds`, an int[] expression, null for every store) that the filters
// pick (`brandId`, `city`: null for no filter), as a condition on stores s.
const storeFilterSql = (storeIds: string, brandId: string, city: string) =>
  `(${storeIds} IS NULL OR s.id = ANY (${storeIds}))
    AND (${brandId} IS NULL OR s.brand_id = ${brandId})
    AND (${city} IS NULL OR s.city = ${city})`;

// The stores and their metering scopes (one row per pair, as the store list has them), a page.
const storesSql = `
  SELECT s.id AS store_id, sc.id AS scope_id, s.name, s.store_code, s.brand_id,
    b.name AS brand_name, s.city, sc.timezone
  FROM stores s
  JOIN brands b ON b.id = s.brand_id
  JOIN scopes sc ON sc.store_id = s.id
  WHERE ${storeFilterSql("$3::int[]", "$4::int", "$5::text")}
    AND (s.id, sc.id) > ($6::int, $7::int)
  ORDER BY s.id, sc.id
  LIMIT $8::int`;

// The version of a portfolio answer: the store list's version for the key's stores (the snapshot
// and the profiles), and the data token of the key's stores (every change to the days of a store is
// a commit; for a key limited to some stores, the latest commit of its own). Coarser than a store's
// metrics version, and enough: a portfolio covers most stores. `storeIds`: an int[] expression,
// null for every store.
export const versionSql = (storeIds: string) => `
SELECT v.version || '.' || t.token AS version, t.token
FROM (${listVersionSql(storeIds)}) v
CROSS JOIN (SELECT ${scopedDataTokenSql(storeIds)} AS token) t`;

// Where the pages of a portfolio start: the key of every $4-th store and scope in page order (the
// last of each full page, after which the next page starts), as JSON, and the version of the store
// list (the start of every page's version), to check the pages against. $1 the key's stores, $2
// brand id, $3 city, as in storesSql.
export const pageStartsSql = `
SELECT (
  SELECT coalesce(json_agg(json_build_array(k.store_id, k.scope_id) ORDER BY k.n), '[]'::json)
  FROM (
    SELECT s.id AS store_id, sc.id AS scope_id, row_number() OVER (ORDER BY s.id, sc.id) AS n
    FROM stores s
    JOIN scopes sc ON sc.store_id = s.id
    WHERE ${storeFilterSql("$1::int[]", "$2::int", "$3::text")}
  ) k
  WHERE k.n % $4::int = 0)::text AS starts, v.version
FROM (${listVersionSql("$1::int[]")}) v`;

// The summer baseline months of a store: the summers metrics_sql.ts reads for one store (r.first to
// r.last), settled, available days only, counted and summed per month.
const SUMMERS = `${summersSql("$2::date")}
  CROSS JOIN LATERAL (SELECT ${SUMMER_FIRST} AS first, ${SUMMER_LAST} AS last) r`;

// As of an earlier commit: the days the stage keeps of each summer.
const baselineDaysSql = (days: DaysOf) => `
  SELECT extract(year FROM e.business_date)::int AS year,
    extract(month FROM e.business_date)::int AS month,
    count(*)::int AS days, sum(e.served_kwh)::text AS sum
  ${SUMMERS}
  -- OFFSET 0 keeps each summer's days one index range scan (pulled up into the join, they were
  -- read whole and filtered).
  CROSS JOIN LATERAL (SELECT * FROM ${days("st.scope_id", "r.first", "r.last")} z OFFSET 0) e
  WHERE h.store_id = st.store_id AND h.stage = 'BASELINE'
    AND e.status = 'AVAILABLE' AND e.provisional = 0
  GROUP BY 1, 2`;

// A current read: month by month of each summer, a month the stage keeps whole from its chunk's
// counts (energy_months.settled_days and settled_kwh: the same days, counted while the chunk was at
// the revisions it is still at), any other month from its days.
const baselineMonthsSql = `
  SELECT y.year, extract(month FROM mo.month)::int AS month,
    sum(x.days)::int AS days, sum(x.kwh)::text AS sum
  ${SUMMERS}
  -- The summer's months, from a series of constants, which the planner counts as the 4 rows it
  -- gives. It counts a series of dates as 1,000, and the grouping below then sized its hash table
  -- for thousands of groups for each store, where there are at most 4.
  CROSS JOIN LATERAL (
    SELECT d.m AS month, (d.m + interval '1 month')::date - 1 AS month_end,
      r.first <= d.m AND (d.m + interval '1 month')::date - 1 <= r.last AS whole
    FROM generate_series(${SUMMER.first[0]}, ${SUMMER.last[0]}) AS g(i)
    CROSS JOIN LATERAL (SELECT make_date(y.year, g.i, 1) AS m) d
    WHERE d.m BETWEEN date_trunc('month', r.first)::date AND r.last
  ) mo
  LEFT JOIN energy_months c ON mo.whole AND c.scope_id = st.scope_id AND c.month = mo.month
    AND c.settled_revisions = c.revisions
  CROSS JOIN LATERAL (
    SELECT c.settled_days AS days, c.settled_kwh AS kwh
    WHERE c.scope_id IS NOT NULL
    UNION ALL
    SELECT count(*)::int, sum(e.served_kwh)
    FROM energy_days e
    WHERE c.scope_id IS NULL AND e.scope_id = st.scope_id
      AND e.business_date BETWEEN greatest(r.first, mo.month) AND least(r.last, mo.month_end)
      AND e.status = 'AVAILABLE' AND e.provisional = 0
  ) x
  WHERE h.store_id = st.store_id AND h.stage = 'BASELINE' AND r.first <= r.last
  GROUP BY 1, 2
  HAVING sum(x.days) > 0`;

// Reports at one instant in the order the quality rules take them (quality_repo.ts).
const LATEST_FIRST = "date_trunc('second', r.at) DESC, r.rank DESC, r.event_id DESC";
const REPORT_ORDER = "date_trunc('second', r.at), r.rank, r.event_id";

/**
 * CTEs over the page `st`, ending in `evidence`: per scope whose store has devices, the devices
 * and, within the range's calendar days in the scope's time zone, every ONLINE or OFFLINE report
 * (device events and the snapshot status), plus each device's last report before the range: what
 * QualityRepo.evidence reads for one scope, as JSON of the same shape.
 */
const evidenceCtes = `
b AS (
  SELECT st.scope_id, st.store_id,
    ($1::date::timestamp AT TIME ZONE st.timezone) AS from_at,
    (($2::date + 1)::timestamp AT TIME ZONE st.timezone) AS to_at
  FROM st
), dev AS (
  SELECT d.id, d.device_name, d.device_code, d.online_status, d.status_observed_at, b.scope_id,
    b.store_id, b.from_at, b.to_at
  FROM b JOIN devices d ON d.store_id = b.store_id
), last_before AS (
  SELECT dev.scope_id, dev.id AS device_id, x.at
  FROM dev CROSS JOIN LATERAL (
    SELECT e.occurred_at AS at FROM device_events e
    WHERE e.store_id = dev.store_id AND e.device_id = dev.id
      AND e.event_type IN ('ONLINE', 'OFFLINE') AND e.occurred_at < dev.from_at
    ORDER BY e.occurred_at DESC LIMIT 1) x
), r AS (
  SELECT dev.scope_id, e.device_id, 'DEVICE_EVENT' AS source, e.id AS event_id,
    e.event_type AS state, e.occurred_at AS at, 0 AS rank, dev.from_at
  FROM dev
  JOIN device_events e ON e.store_id = dev.store_id AND e.device_id = dev.id
    AND e.occurred_at >= dev.from_at AND e.occurred_at < dev.to_at
  WHERE e.event_type IN ('ONLINE', 'OFFLINE')
  UNION ALL
  SELECT dev.scope_id, e.device_id, 'DEVICE_EVENT', e.id, e.event_type, e.occurred_at, 0,
    dev.from_at
  FROM dev
  JOIN last_before l ON l.scope_id = dev.scope_id AND l.device_id = dev.id
  JOIN device_events e ON e.store_id = dev.store_id AND e.device_id = dev.id
    AND e.occurred_at >= date_trunc('second', l.at) AND e.occurred_at < dev.from_at
  WHERE e.event_type IN ('ONLINE', 'OFFLINE')
  UNION ALL
  SELECT dev.scope_id, dev.id, 'DEVICE_SNAPSHOT', NULL, dev.online_status,
    dev.status_observed_at, 1, dev.from_at
  FROM dev
  WHERE dev.online_status IN ('ONLINE', 'OFFLINE') AND dev.status_observed_at < dev.to_at
), placed AS (
  SELECT r.*, r.at >= r.from_at AS in_span,
    row_number() OVER (PARTITION BY r.scope_id, r.device_id, r.at >= r.from_at
                       ORDER BY ${LATEST_FIRST}) AS back
  FROM r
), evidence AS (
SELECT d.scope_id, json_build_object(
  'devices', d.devices, 'reports', coalesce(p.reports, '[]'::json)
)::text AS evidence
FROM (
  SELECT dev.scope_id, json_agg(json_build_array(dev.id, dev.device_name, dev.device_code)
                                ORDER BY dev.id) AS devices
  FROM dev GROUP BY dev.scope_id
) d
LEFT JOIN (
  SELECT r.scope_id,
    json_agg(json_build_array(r.device_id, r.source, r.event_id, r.state, ${utc("r.at")})
             ORDER BY r.device_id, ${REPORT_ORDER}) AS reports
  FROM placed r WHERE r.in_span OR r.back = 1
  GROUP BY r.scope_id
) p ON p.scope_id = d.scope_id
)`;

/**
 * Per store and scope of the page, in store then scope order: the store's facts; its days as
 * `months` and `days`, applied in that order; `facts`, JSON of the stages, target periods, TEV
 * observations and baseline months the engine resolves each day with (the shapes of
 * metric_inputs); `evidence`, JSON of its device evidence (null when the store has no device); and
 * on every row the answer's version, data token and the last day a device state may be carried
 * into (the dataset's end).
 *
 * `months` (current reads; null as of an earlier commit): the stored month chunks of the range
 * (energy_months), items joined by ";", each "<days from start to the month's first day>|<a
 * status letter per day of the month, A, V or N>|<the served kWh of each day, joined by ",", empty
 * where none>". `days`: stored days as items joined by ";" in no set order, each "<days after
 * start>|<served kWh, V (void) or N (no data)>|<provisional_at in the scope's time zone, empty when
 * settled or void>" (a day without a stored fact has no item): every stored day of the range as of
 * an earlier commit, only the provisional ones for a current read (the month chunks hold the rest).
 */
const daysColumnsSql = (days: DaysOf, current: boolean) => `
  ${
  current
    ? `(SELECT string_agg((m.month - $1::date) || '|' || m.statuses || '|' ||
                          array_to_string(m.served, ',', ''), ';')
      FROM energy_months m
      WHERE m.scope_id = st.scope_id
        AND m.month BETWEEN date_trunc('month', $1::date)::date AND $2::date)`
    : "NULL::text"
} AS months,
  (SELECT string_agg(
      (e.business_date - $1::date) || '|' ||
      CASE e.status WHEN 'AVAILABLE' THEN e.served_kwh::text WHEN 'VOID' THEN 'V' ELSE 'N' END ||
      '|' || CASE WHEN e.provisional = 1 AND e.status <> 'VOID'
        THEN to_char(e.provisional_at AT TIME ZONE st.timezone, 'YYYY-MM-DD HH24:MI')
        ELSE '' END,
      ';')
   FROM ${days("st.scope_id", "$1::date", "$2::date")} e
   ${current ? "WHERE e.provisional = 1" : ""}) AS days`;

const inputsSql = (days: DaysOf, current: boolean) => `
WITH st AS (${storesSql}), ${evidenceCtes}
SELECT st.store_id, st.scope_id, st.name, st.store_code, st.brand_id, st.brand_name, st.city,
  st.timezone, ${daysColumnsSql(days, current)},
  json_build_object(
    'stages', coalesce((
      SELECT json_agg(json_build_array(h.stage, h.valid_from::text, h.valid_to::text)
                      ORDER BY h.valid_from)
      FROM stage_history h
      WHERE h.store_id = st.store_id AND h.valid_from <= $2::date
        AND (h.valid_to IS NULL OR h.valid_to > $1::date)), '[]'::json),
    'periods', coalesce((
      SELECT json_agg(json_build_object(
          'from', p.valid_from::text, 'to', p.valid_to::text, 'periodId', p.id,
          'tesKwh', p.tes_kwh::text,
          'deviceCost', (SELECT sum(i.unit_price * i.priced_quantity)
                         FROM target_period_items i WHERE i.period_id = p.id)::text,
          'ratio', p.tev_warning_ratio::text, 'sourceKind', p.source_kind,
          'sourceReference', p.source_reference) ORDER BY p.valid_from)
      FROM target_periods p
      WHERE p.scope_id = st.scope_id AND p.valid_from <= $2::date
        AND (p.valid_to IS NULL OR p.valid_to >= $1::date)), '[]'::json),
    'tev', coalesce((
      SELECT json_agg(json_build_array(o.value_kwh::text, o.observed_date::text)
                      ORDER BY o.observed_date, o.id)
      FROM tev_observations o
      WHERE o.scope_id = st.scope_id AND o.is_valid AND o.value_kwh > 0
        AND o.observed_date <= $2::date
        AND o.observed_date >= coalesce((
          SELECT max(q.observed_date) FROM tev_observations q
          WHERE q.scope_id = st.scope_id AND q.is_valid AND q.value_kwh > 0
            AND q.observed_date <= $1::date), $1::date)), '[]'::json),
    'baseline', coalesce((
      SELECT json_agg(json_build_object('year', b.year, 'month', b.month, 'days', b.days,
                                        'sum', b.sum))
      FROM (${current ? baselineMonthsSql : baselineDaysSql(days)}) b), '[]'::json)
  )::text AS facts,
  ev.evidence, v.version, v.token, (SELECT d.end_date::text FROM dataset d) AS carry_until
FROM st
CROSS JOIN (${versionSql("$3::int[]")}) v
LEFT JOIN evidence ev ON ev.scope_id = st.scope_id
ORDER BY st.store_id, st.scope_id`;

// The statement of a current read (the days from the month chunks), and of a read as of commit
// `seq` (an SQL expression): the only two pairings of the days and their columns.
export const currentInputsSql = inputsSql(currentDays, true);
export const inputsAtCommitSql = (seq: string) => inputsSql(daysAtCommit(seq), false);
