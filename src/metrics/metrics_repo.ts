// MetricsRepo: the per-day inputs of the metrics engine for a range, in one round trip.
import { SqlClient } from "@effect/sql";
import { Effect } from "effect";
import { dbBoundary } from "../db/errors.ts";
import type { BaselineMonth, DayInput } from "./engine.ts";

// $1 store, $2 scope, $3 start, $4 end, $5 store time zone. Rows come out in DayInput's shape.
const inputsSql = `
WITH cal AS (
  SELECT d::date AS day FROM generate_series($3::date, $4::date, interval '1 day') AS d
), days AS (
  SELECT c.day,
    json_build_object(
      'date', c.day::text,
      'actual', CASE WHEN e.is_void THEN NULL
                     ELSE coalesce(e.cleaned_kwh, e.legacy_kwh)::text END,
      'provisional', coalesce(e.provisional, 0),
      'provisionalAt', CASE WHEN e.provisional = 1
                            THEN to_char(e.provisional_at AT TIME ZONE $5, 'YYYY-MM-DD HH24:MI') END,
      'stage', st.stage,
      'target', CASE WHEN p.id IS NULL THEN NULL ELSE json_build_object(
        'periodId', p.id, 'tesKwh', p.tes_kwh::text, 'deviceCost', p.device_cost::text,
        'ratio', p.tev_warning_ratio::text, 'sourceKind', p.source_kind,
        'sourceReference', p.source_reference) END,
      'tev', CASE WHEN t.observed_date IS NULL THEN NULL ELSE json_build_object(
        'value', t.value_kwh::text, 'observedDate', t.observed_date::text) END
    ) AS input
  FROM cal c
  LEFT JOIN energy_days e ON e.scope_id = $2::int AND e.business_date = c.day
  LEFT JOIN LATERAL (
    SELECT h.stage FROM stage_history h
    WHERE h.store_id = $1::int AND h.valid_from <= c.day AND (h.valid_to IS NULL OR c.day < h.valid_to)
    ORDER BY h.valid_from DESC LIMIT 1
  ) st ON true
  LEFT JOIN LATERAL (
    SELECT tp.id, tp.tes_kwh, tp.tev_warning_ratio, tp.source_kind, tp.source_reference,
      (SELECT sum(i.unit_price * i.priced_quantity) FROM target_period_items i
       WHERE i.period_id = tp.id) AS device_cost
    FROM target_periods tp
    WHERE tp.scope_id = $2::int AND tp.valid_from <= c.day
      AND (tp.valid_to IS NULL OR c.day <= tp.valid_to)
    ORDER BY tp.valid_from DESC LIMIT 1
  ) p ON true
  LEFT JOIN LATERAL (
    SELECT o.value_kwh, o.observed_date FROM tev_observations o
    WHERE o.scope_id = $2::int AND o.observed_date <= c.day AND o.is_valid AND o.value_kwh > 0
    ORDER BY o.observed_date DESC, o.id DESC LIMIT 1
  ) t ON true
), baseline AS (
  -- rules.md §4: settled, available, non-void BASELINE days of summer months before the range's last year
  SELECT extract(year FROM e.business_date)::int AS year,
    extract(month FROM e.business_date)::int AS month,
    count(*)::int AS days, sum(coalesce(e.cleaned_kwh, e.legacy_kwh))::text AS sum
  FROM energy_days e
  JOIN stage_history h ON h.store_id = $1::int AND h.stage = 'BASELINE'
    AND h.valid_from <= e.business_date AND (h.valid_to IS NULL OR e.business_date < h.valid_to)
  WHERE e.scope_id = $2::int AND NOT e.is_void AND e.provisional = 0
    AND coalesce(e.cleaned_kwh, e.legacy_kwh) IS NOT NULL
    AND e.business_date < make_date(extract(year FROM $4::date)::int, 1, 1)
    AND extract(month FROM e.business_date) BETWEEN 6 AND 9
  GROUP BY 1, 2
)
SELECT
  (SELECT json_agg(input ORDER BY day) FROM days) AS days,
  coalesce((SELECT json_agg(json_build_object('year', year, 'month', month, 'days', days, 'sum', sum))
            FROM baseline), '[]'::json) AS baseline`;

export interface MetricInputs {
  readonly days: ReadonlyArray<DayInput>;
  readonly baseline: ReadonlyArray<BaselineMonth>;
}

export class MetricsRepo extends Effect.Service<MetricsRepo>()("Metrics/MetricsRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient;

    const inputs = (storeId: number, scopeId: number, start: string, end: string, tz: string) =>
      dbBoundary(sql.unsafe<MetricInputs>(inputsSql, [storeId, scopeId, start, end, tz])).pipe(
        Effect.map((rows) => rows[0]),
        Effect.withSpan("MetricsRepo.inputs"),
      );

    return { inputs } as const;
  }),
}) {}
