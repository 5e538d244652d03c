// MetricsRepo: the per-day inputs of the metrics engine for a range, in one round trip.
import { SqlClient } from "@effect/sql";
import { Effect } from "effect";
import { dbBoundary } from "../db/errors.ts";
import type { BaselineMonth, DayInput, Stage, TargetInput, TevInput } from "./engine.ts";

// $1 store, $2 scope, $3 start, $4 end, $5 store time zone. The day facts come as compact arrays;
// stages, target periods and TEV observations as the short lists that overlap the range, resolved
// per day in resolveDays (a linear merge is cheaper than a lateral lookup per day).
const inputsSql = `
WITH cal AS (
  SELECT d::date AS day FROM generate_series($3::date, $4::date, interval '1 day') AS d
), periods AS (
  SELECT tp.*, (SELECT sum(i.unit_price * i.priced_quantity) FROM target_period_items i
                WHERE i.period_id = tp.id) AS device_cost
  FROM target_periods tp
  WHERE tp.scope_id = $2::int AND tp.valid_from <= $4::date
    AND (tp.valid_to IS NULL OR tp.valid_to >= $3::date)
), tev AS (
  SELECT o.id, o.value_kwh, o.observed_date FROM tev_observations o
  WHERE o.scope_id = $2::int AND o.is_valid AND o.value_kwh > 0 AND o.observed_date <= $4::date
    AND o.observed_date >= coalesce((
      SELECT max(p.observed_date) FROM tev_observations p
      WHERE p.scope_id = $2::int AND p.is_valid AND p.value_kwh > 0 AND p.observed_date <= $3::date
    ), $3::date)
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
  (SELECT json_agg(json_build_array(
      c.day::text,
      CASE WHEN e.is_void THEN NULL ELSE coalesce(e.cleaned_kwh, e.legacy_kwh)::text END,
      coalesce(e.provisional, 0),
      CASE WHEN e.provisional = 1
           THEN to_char(e.provisional_at AT TIME ZONE $5, 'YYYY-MM-DD HH24:MI') END
    ) ORDER BY c.day)
   FROM cal c
   LEFT JOIN energy_days e ON e.scope_id = $2::int AND e.business_date = c.day
     AND e.business_date BETWEEN $3::date AND $4::date) AS days,
  coalesce((SELECT json_agg(json_build_array(h.stage, h.valid_from::text, h.valid_to::text)
                            ORDER BY h.valid_from)
            FROM stage_history h
            WHERE h.store_id = $1::int AND h.valid_from <= $4::date
              AND (h.valid_to IS NULL OR h.valid_to > $3::date)), '[]'::json) AS stages,
  coalesce((SELECT json_agg(json_build_object(
              'from', p.valid_from::text, 'to', p.valid_to::text, 'periodId', p.id,
              'tesKwh', p.tes_kwh::text, 'deviceCost', p.device_cost::text,
              'ratio', p.tev_warning_ratio::text, 'sourceKind', p.source_kind,
              'sourceReference', p.source_reference) ORDER BY p.valid_from)
            FROM periods p), '[]'::json) AS periods,
  coalesce((SELECT json_agg(json_build_array(t.value_kwh::text, t.observed_date::text)
                            ORDER BY t.observed_date, t.id)
            FROM tev t), '[]'::json) AS tev,
  coalesce((SELECT json_agg(json_build_object('year', year, 'month', month, 'days', days, 'sum', sum))
            FROM baseline), '[]'::json) AS baseline`;

type DayRow = readonly [string, string | null, 0 | 1, string | null];
type StageRow = readonly [Stage, string, string | null];
type PeriodRow = TargetInput & { readonly from: string; readonly to: string | null };
type TevRow = readonly [string, string];

interface InputRows {
  readonly days: ReadonlyArray<DayRow>;
  readonly stages: ReadonlyArray<StageRow>;
  readonly periods: ReadonlyArray<PeriodRow>;
  readonly tev: ReadonlyArray<TevRow>;
  readonly baseline: ReadonlyArray<BaselineMonth>;
}

export interface MetricInputs {
  readonly days: ReadonlyArray<DayInput>;
  readonly baseline: ReadonlyArray<BaselineMonth>;
}

// One pass over ascending days with a cursor per list. Stage valid_to is exclusive (rules.md §3),
// a target period's valid_to inclusive (rules.md §5); TEV is the latest observation on or before.
export const resolveDays = (rows: InputRows): Array<DayInput> => {
  let s = 0, p = 0, t = -1;
  return rows.days.map(([date, actual, provisional, provisionalAt]) => {
    while (s < rows.stages.length && rows.stages[s][2] !== null && rows.stages[s][2]! <= date) s++;
    const stageRow = rows.stages[s];
    const stage = stageRow !== undefined && stageRow[1] <= date ? stageRow[0] : null;
    while (p < rows.periods.length && rows.periods[p].to !== null && rows.periods[p].to! < date) {
      p++;
    }
    const period = rows.periods[p];
    let target: TargetInput | null = null;
    if (period !== undefined && period.from <= date) {
      const { from: _from, to: _to, ...input } = period;
      target = input;
    }
    while (t + 1 < rows.tev.length && rows.tev[t + 1][1] <= date) t++;
    const tev: TevInput | null = t >= 0
      ? { value: rows.tev[t][0], observedDate: rows.tev[t][1] }
      : null;
    return { date, actual, provisional, provisionalAt, stage, target, tev };
  });
};

export class MetricsRepo extends Effect.Service<MetricsRepo>()("Metrics/MetricsRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient;

    const inputs = (storeId: number, scopeId: number, start: string, end: string, tz: string) =>
      dbBoundary(sql.unsafe<InputRows>(inputsSql, [storeId, scopeId, start, end, tz])).pipe(
        Effect.map(([rows]): MetricInputs => ({
          days: resolveDays(rows),
          baseline: rows.baseline,
        })),
        Effect.withSpan("MetricsRepo.inputs"),
      );

    return { inputs } as const;
  }),
}) {}
