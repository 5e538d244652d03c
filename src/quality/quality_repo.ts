// The data-quality check's reads: a range's energy days as the energy read serves them, and the
// device reports behind any list of days, each in one set-based statement.
import * as SqlClient from "@effect/sql/SqlClient";
import { Effect, Schema } from "effect";
import { dbBoundary } from "../db/errors.ts";
import { utc } from "../db/sql_text.ts";
import { dayIndex, METRICS_MAX_DAYS } from "../domain/range.ts";
import type { DeviceEvidence, EnergyStatus, QualityDayInput } from "./quality_rules.ts";
import { span } from "../ops/span.ts";

// The longest span of days one evidence read covers: the longest range a read endpoint takes.
export const EVIDENCE_MAX_SPAN_DAYS = METRICS_MAX_DAYS;

// $1 scope id, $2 start, $3 end: every calendar day of the range, with the stored served value
// and status of its fact (a day without a fact is NO_DATA).
const daysSql = `
SELECT c.day::date::text AS date, coalesce(e.status, 'NO_DATA') AS status,
  round(e.served_kwh, 4)::text AS served_kwh
FROM generate_series($2::date::timestamp, $3::date::timestamp, interval '1 day') AS c(day)
LEFT JOIN energy_days e ON e.scope_id = $1::int AND e.business_date = c.day::date
ORDER BY c.day`;

// Reports at one instant are ordered as the rules order them: to the second (the precision they
// are shown with), events by id, the snapshot last.
const REPORT_ORDER = "date_trunc('second', r.at), r.rank, r.event_id";
const LATEST_FIRST = "date_trunc('second', r.at) DESC, r.rank DESC, r.event_id DESC";

/**
 * $1 scope id, $2 and $3 the first and the last of the days (both null for no day). The store's
 * devices and, within the span from the first to the last day (calendar days of the scope's time
 * zone), every ONLINE or OFFLINE report:
 * device events and each device's snapshot status at status_observed_at; plus each device's last
 * report before the span, which the rules carry into the first days. Days between listed days
 * are in the span, so the last report before any listed day is there too. No row for an unknown
 * scope.
 */
const evidenceSql = `
WITH sc AS (
  SELECT s.store_id, s.timezone FROM scopes s WHERE s.id = $1::int
), span AS (
  SELECT $2::date AS first_day, $3::date AS last_day
), b AS (
  SELECT sc.store_id, sc.timezone,
    (span.first_day::timestamp AT TIME ZONE sc.timezone) AS from_at,
    ((span.last_day + 1)::timestamp AT TIME ZONE sc.timezone) AS to_at
  FROM sc CROSS JOIN span
), dev AS (
  SELECT d.id, d.online_status, d.status_observed_at, b.store_id, b.from_at, b.to_at
  FROM b JOIN devices d ON d.store_id = b.store_id
), last_before AS (
  -- Each device's last event before the span (an index scan back from the span's start).
  SELECT dev.id AS device_id, x.at
  FROM dev CROSS JOIN LATERAL (
    SELECT e.occurred_at AS at FROM device_events e
    WHERE e.store_id = dev.store_id AND e.device_id = dev.id
      AND e.event_type IN ('ONLINE', 'OFFLINE') AND e.occurred_at < dev.from_at
    ORDER BY e.occurred_at DESC LIMIT 1) x
), r AS (
  SELECT e.device_id, 'DEVICE_EVENT' AS source, e.id AS event_id, e.event_type AS state,
    e.occurred_at AS at, 0 AS rank
  FROM dev
  JOIN device_events e ON e.store_id = dev.store_id AND e.device_id = dev.id
    AND e.occurred_at >= dev.from_at AND e.occurred_at < dev.to_at
  WHERE e.event_type IN ('ONLINE', 'OFFLINE')
  UNION ALL
  -- The events of that last second before the span, which the rules order among themselves.
  SELECT e.device_id, 'DEVICE_EVENT', e.id, e.event_type, e.occurred_at, 0
  FROM dev
  JOIN last_before l ON l.device_id = dev.id
  JOIN device_events e ON e.store_id = dev.store_id AND e.device_id = dev.id
    AND e.occurred_at >= date_trunc('second', l.at) AND e.occurred_at < dev.from_at
  WHERE e.event_type IN ('ONLINE', 'OFFLINE')
  UNION ALL
  SELECT dev.id, 'DEVICE_SNAPSHOT', NULL, dev.online_status, dev.status_observed_at, 1
  FROM dev
  WHERE dev.online_status IN ('ONLINE', 'OFFLINE') AND dev.status_observed_at < dev.to_at
), placed AS (
  SELECT r.*, r.at >= b.from_at AS in_span,
    row_number() OVER (PARTITION BY r.device_id, r.at >= b.from_at
                       ORDER BY ${LATEST_FIRST}) AS back
  FROM r CROSS JOIN b
)
SELECT json_build_object(
  'timezone', b.timezone,
  'carry_until', (SELECT end_date::text FROM dataset),
  'devices', coalesce((
    SELECT json_agg(json_build_object('id', d.id, 'name', d.device_name, 'code', d.device_code)
                    ORDER BY d.id)
    FROM devices d WHERE d.store_id = b.store_id), '[]'::json),
  'reports', coalesce((
    SELECT json_agg(json_build_object('device_id', r.device_id, 'source', r.source,
                      'event_id', r.event_id, 'state', r.state, 'at', ${utc("r.at")})
                    ORDER BY r.device_id, ${REPORT_ORDER})
    FROM placed r WHERE r.in_span OR r.back = 1), '[]'::json)
)::text AS body
FROM b`;

const EvidenceRow = Schema.parseJson(Schema.Struct({
  timezone: Schema.String,
  carry_until: Schema.NullOr(Schema.String),
  devices: Schema.Array(Schema.Struct({
    id: Schema.Number,
    name: Schema.NullOr(Schema.String),
    code: Schema.String,
  })),
  reports: Schema.Array(Schema.Struct({
    device_id: Schema.Number,
    source: Schema.Literal("DEVICE_EVENT", "DEVICE_SNAPSHOT"),
    event_id: Schema.NullOr(Schema.Number),
    state: Schema.Literal("ONLINE", "OFFLINE"),
    at: Schema.String,
  })),
}));

const decodeEvidence = Schema.decodeUnknownSync(EvidenceRow);

export class QualityRepo extends Effect.Service<QualityRepo>()("Quality/QualityRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient;

    // The energy days of a scope and range (inclusive), one per calendar day, in order.
    const days = (scopeId: number, start: string, end: string) =>
      dbBoundary(sql.unsafe<{ date: string; status: EnergyStatus; served_kwh: string | null }>(
        daysSql,
        [scopeId, start, end],
      )).pipe(
        Effect.map((rows) =>
          rows.map((r): QualityDayInput => ({
            date: r.date,
            status: r.status,
            servedKwh: r.served_kwh,
          }))
        ),
        span("QualityRepo.days"),
      );

    /**
     * The device evidence of a scope's store for any list of days (dates YYYY-MM-DD, in any order,
     * for instance the days a caller computed as they were at an earlier instant): what
     * checkQuality needs to judge each of them. The span from the first to the last day is at most
     * EVIDENCE_MAX_SPAN_DAYS days (a caller's range is checked before; a longer span is a defect).
     */
    const evidence = (scopeId: number, dates: ReadonlyArray<string>) =>
      Effect.gen(function* () {
        // Only the span matters: the first and the last day (dates YYYY-MM-DD compare as text).
        let first: string | null = null;
        let last: string | null = null;
        for (const date of dates) {
          if (first === null || date < first) first = date;
          if (last === null || date > last) last = date;
        }
        if (
          first !== null && last !== null &&
          dayIndex(last) - dayIndex(first) + 1 > EVIDENCE_MAX_SPAN_DAYS
        ) {
          return yield* Effect.dieMessage(
            `device evidence spans at most ${EVIDENCE_MAX_SPAN_DAYS} days`,
          );
        }
        const rows = yield* dbBoundary(sql.unsafe<{ body: string }>(evidenceSql, [
          scopeId,
          first,
          last,
        ]));
        if (rows[0] === undefined) return yield* Effect.dieMessage(`unknown scope ${scopeId}`);
        const found = decodeEvidence(rows[0].body);
        return {
          timezone: found.timezone,
          carryUntil: found.carry_until,
          devices: found.devices,
          reports: found.reports.map((r) => ({
            deviceId: r.device_id,
            source: r.source,
            eventId: r.event_id,
            state: r.state,
            at: r.at,
          })),
        } satisfies DeviceEvidence;
      }).pipe(span("QualityRepo.evidence"));

    return { days, evidence } as const;
  }),
}) {}
