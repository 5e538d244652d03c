// The energy-days query: one round trip for any range; PostgreSQL shapes the rows as JSON.
// Parameters: $1 scope_id, $2 start date, $3 end date (inclusive). Returns one row {summary, days},
// both JSON text in the contract's final shape (EnergySummary, DailyRow[]).
export const energyDaysSql = `
WITH cal AS (
  SELECT d::date AS day FROM generate_series($2::date, $3::date, interval '1 day') AS d
), facts AS (
  SELECT c.day, e.id, e.is_void, e.cleaned_source_kind, e.legacy_kwh, e.quality_status,
    e.quality_note, e.revision_no, e.import_row_id, e.source_reference,
    CASE WHEN e.is_void THEN (
      SELECT v.source_kind FROM energy_revisions v
      WHERE v.energy_id = e.id AND v.revision_no = e.revision_no
    ) END AS void_kind,
    CASE WHEN e.is_void THEN NULL ELSE coalesce(e.cleaned_kwh, e.legacy_kwh) END AS kwh
  FROM cal c
  LEFT JOIN energy_days e ON e.scope_id = $1::int AND e.business_date = c.day
    AND e.business_date BETWEEN $2::date AND $3::date
), shaped AS (
  SELECT f.*,
    CASE WHEN f.is_void THEN 'VOID' WHEN f.kwh IS NULL THEN 'NO_DATA' ELSE 'AVAILABLE' END AS status,
    CASE
      WHEN f.id IS NULL THEN NULL
      WHEN f.is_void THEN CASE WHEN f.void_kind IN ('CLEANED', 'LEGACY_DIRECT', 'MANUAL_UPLOAD')
                               THEN f.void_kind END
      WHEN f.cleaned_source_kind IS NOT NULL THEN f.cleaned_source_kind
      WHEN f.legacy_kwh IS NOT NULL THEN 'LEGACY_DIRECT'
    END AS source_kind
  FROM facts f
)
SELECT
  json_build_object(
    'requested_days', count(*),
    'available_days', count(*) FILTER (WHERE status = 'AVAILABLE'),
    'missing_days', count(*) FILTER (WHERE status = 'NO_DATA'),
    'void_days', count(*) FILTER (WHERE status = 'VOID'),
    'available_energy_kwh', round(sum(kwh), 4)::text,
    'complete', count(*) FILTER (WHERE status = 'AVAILABLE') = count(*),
    'saving_metrics_status', 'SEE_METRICS_ENDPOINT'
  )::text AS summary,
  json_agg(json_build_object(
    'business_date', day::text,
    'energy_id', id,
    'energy_kwh', round(kwh, 4)::text,
    'status', status,
    'source_kind', source_kind,
    'source_label', CASE
      WHEN status = 'VOID' THEN 'Voided day'
      WHEN status = 'NO_DATA' THEN 'No data'
      WHEN source_kind = 'CLEANED' THEN 'Cleaned value'
      WHEN source_kind = 'MANUAL_UPLOAD' THEN 'Cleaned value (manual upload)'
      ELSE 'Sealed legacy value'
    END,
    'quality_status', quality_status,
    'quality_note', quality_note,
    'revision_no', revision_no,
    'import_row_id', import_row_id,
    'source_reference', source_reference
  ) ORDER BY day)::text AS days
FROM shaped`;
