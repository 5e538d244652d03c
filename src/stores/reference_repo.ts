// The store reference: profile, sealed candidate, devices, strategy, stages and device events, in one query.
import * as SqlClient from "@effect/sql/SqlClient";
import { Effect } from "effect";
import { dbBoundary } from "../db/errors.ts";
import { utc } from "../db/sql_text.ts";
import { JsonText } from "../domain/answers.ts";
import { span } from "../ops/span.ts";

export const DEVICE_EVENT_WINDOW_DAYS = 30;

// $1 store id, $2 whether this caller may edit the profile, $3 event window in days.
const referenceSql = `
WITH s AS (
  SELECT st.*, b.name AS brand_name FROM stores st JOIN brands b ON b.id = st.brand_id
  WHERE st.id = $1::int
), win AS (
  SELECT (d.end_date - ($3::int - 1))::date AS start_day, d.end_date AS end_day FROM dataset d
), parts AS (
  SELECT
    (SELECT json_build_object(
       'tes_180_kwh', round(c.tes_180_kwh, 4)::text, 'tes_210_kwh', round(c.tes_210_kwh, 4)::text,
       'known_payback_days', c.known_payback_days,
       'selected_candidate_kwh', round(c.selected_candidate_kwh, 4)::text,
       'source_revision', c.source_revision, 'source_sheet_id', c.source_sheet_id,
       'source_row', c.source_row, 'source_url', c.source_url, 'status', c.status, 'unit', c.unit,
       'basis', c.basis, 'capture_id', c.capture_id, 'source_record_id', c.source_record_id)
     FROM target_candidates c WHERE c.store_id = $1::int) AS target_candidate,
    coalesce((SELECT json_agg(json_build_object(
       'id', d.id, 'source_device_id', d.source_device_id, 'device_name', d.device_name,
       'device_code', d.device_code, 'device_type', d.device_type, 'material_code', d.material_code,
       'online_status', d.online_status,
       'status_observed_at', ${utc("d.status_observed_at")}, 'synced_at', ${utc("d.synced_at")},
       'source_reference', d.source_reference) ORDER BY d.id)
     FROM devices d WHERE d.store_id = $1::int), '[]'::json) AS devices,
    (SELECT json_build_object(
       'configured_count', g.configured_count, 'dispatched_count', g.dispatched_count,
       'distinguish_calendar', g.distinguish_calendar, 'execution_status', g.execution_status,
       'source_reference', g.source_reference, 'observed_at', ${utc("g.observed_at")},
       'synced_at', ${utc("g.synced_at")})
     FROM strategies g WHERE g.store_id = $1::int) AS strategy,
    coalesce((SELECT json_agg(json_build_object(
       'name', i.name, 'date_category', i.date_category, 'day_week', i.day_week,
       'publish_status', i.publish_status, 'issue_status', i.issue_status,
       'publish_time', ${utc("i.publish_time")}, 'issue_time', ${utc("i.issue_time")})
       ORDER BY i.position, i.id)
     FROM strategy_items i WHERE i.store_id = $1::int), '[]'::json) AS strategy_items,
    (SELECT json_build_object(
       'stage', x.stage, 'legacy_progress', x.legacy_progress,
       'captured_at', ${utc("x.captured_at")}, 'source_reference', x.source_reference,
       'basis', x.basis)
     FROM stage_snapshots x WHERE x.store_id = $1::int) AS stage_snapshot,
    coalesce((SELECT json_agg(json_build_object(
       'stage', h.stage, 'valid_from', h.valid_from::text, 'valid_to', h.valid_to::text,
       'change_reason', h.change_reason) ORDER BY h.valid_from)
     FROM stage_history h WHERE h.store_id = $1::int), '[]'::json) AS stage_history,
    (SELECT json_build_object(
       'start', w.start_day::text, 'end', w.end_day::text, 'coverage', 'UNVERIFIED',
       'offline_count', count(e.id) FILTER (WHERE e.event_type = 'OFFLINE'),
       'events', coalesce(json_agg(json_build_object(
         'id', e.id, 'device_id', e.device_id, 'event_type', e.event_type,
         'occurred_at', ${utc("e.occurred_at")}, 'note', e.note) ORDER BY e.occurred_at, e.id)
         FILTER (WHERE e.id IS NOT NULL), '[]'::json))
     FROM win w
     LEFT JOIN device_events e ON e.store_id = $1::int
       AND e.occurred_at >= (w.start_day::timestamp AT TIME ZONE 'Asia/Shanghai')
       AND e.occurred_at < ((w.end_day + 1)::timestamp AT TIME ZONE 'Asia/Shanghai')
     GROUP BY w.start_day, w.end_day) AS device_events
)
SELECT json_build_object(
  'target_candidate', p.target_candidate,
  'profile', json_build_object(
    'id', s.id, 'name', s.name, 'brand_name', s.brand_name, 'city', s.city, 'address', s.address,
    'business_hours', s.business_hours, 'peak_hours', s.peak_hours,
    'business_mode', s.business_mode, 'settlement_mode', s.settlement_mode, 'version', s.version,
    'tags', s.tags, 'is_key_store', s.is_key_store, 'key_store_status', s.key_store_status,
    'equipment_profile', s.equipment_profile),
  'devices', p.devices,
  'strategy', p.strategy,
  'strategy_items', p.strategy_items,
  'mode', 'FROZEN_LEGACY_REFERENCE',
  'timestamp_timezone', 'UTC',
  'strategy_count_basis',
    'Counts as captured in the sealed legacy strategy snapshot; dispatched means issue_status 1.',
  'availability_basis',
    'Device online status as last observed in the sealed snapshot (status_observed_at); not live monitoring.',
  'unavailable', (
    SELECT coalesce(json_agg(name ORDER BY name), '[]'::json) FROM (
      SELECT 'live_device_status' AS name
      UNION ALL SELECT 'live_control'
      UNION ALL SELECT 'target_candidate' WHERE p.target_candidate IS NULL
      UNION ALL SELECT 'strategy' WHERE p.strategy IS NULL
      UNION ALL SELECT 'stage_snapshot' WHERE p.stage_snapshot IS NULL
    ) missing),
  'editable_fields', CASE WHEN s.profile_editable THEN '["name", "address"]'::json
                          ELSE '[]'::json END,
  'can_edit_profile', s.profile_editable AND $2::boolean,
  'stage_snapshot', p.stage_snapshot,
  'stage_history', p.stage_history,
  'device_events', coalesce(p.device_events, json_build_object(
    'start', '', 'end', '', 'coverage', 'UNVERIFIED', 'offline_count', NULL, 'events', '[]'::json))
)::text AS body,
  (SELECT generation FROM dataset) || '.' || s.version AS version
FROM s CROSS JOIN parts p`;

export class ReferenceRepo extends Effect.Service<ReferenceRepo>()("Stores/ReferenceRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient;

    // The reference as JSON text in the contract's shape, with the version of the data it shows
    // (the snapshot and the profile's version); undefined for an unknown store.
    const reference = (storeId: number, canEdit: boolean) =>
      dbBoundary(sql.unsafe<{ body: string; version: string }>(referenceSql, [
        storeId,
        canEdit,
        DEVICE_EVENT_WINDOW_DAYS,
      ])).pipe(
        Effect.map((rows) =>
          rows[0] === undefined
            ? undefined
            : { body: JsonText(rows[0].body), version: rows[0].version }
        ),
        span("ReferenceRepo.reference"),
      );

    // Only that version, for a conditional read.
    const version = (storeId: number) =>
      dbBoundary(sql<{ version: string }>`
        SELECT (SELECT generation FROM dataset) || '.' || s.version AS version
        FROM stores s WHERE s.id = ${storeId}`).pipe(
        Effect.map((rows) => rows[0]?.version),
        span("ReferenceRepo.version"),
      );

    return { reference, version } as const;
  }),
}) {}
