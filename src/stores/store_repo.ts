// Store reference reads: dataset, store list, catalog, and the scope facts used by access checks.
import { SqlClient } from "@effect/sql";
import { Cache, Duration, Effect, Exit } from "effect";
import { dbBoundary } from "../db/errors.ts";
import { notReady } from "../domain/errors.ts";

export interface DatasetRow {
  readonly label: string;
  readonly start: string;
  readonly end: string;
  readonly source_policy: "CLEANED_SAMPLE" | "CLEANED_THEN_LEGACY_THEN_NULL";
  readonly timezone: string;
  readonly unit: string;
}

export const SCOPE_CACHE_TTL = Duration.seconds(30);

export interface ScopeFacts {
  readonly store_id: number;
  readonly scope_id: number;
  readonly timezone: string;
  readonly unit: string;
}

export class StoreRepo extends Effect.Service<StoreRepo>()("Stores/StoreRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient;

    const dataset = dbBoundary(sql<DatasetRow>`
      SELECT label, start_date::text AS start, end_date::text AS end, source_policy, timezone, unit
      FROM dataset`).pipe(
      Effect.flatMap((rows) =>
        rows.length === 1 ? Effect.succeed(rows[0]) : Effect.fail(notReady("No snapshot is loaded"))
      ),
      Effect.withSpan("StoreRepo.dataset"),
    );

    // The Store fields of the contract, shared by the store list and the catalog.
    const storeFields = sql.literal(`
      'id', s.id, 'name', s.name, 'store_code', s.store_code, 'source_org_id', s.source_org_id,
      'brand_name', b.name, 'scope_id', sc.id, 'scope_kind', sc.kind, 'unit', sc.unit,
      'timezone', sc.timezone`);
    const storeJoins = sql.literal(`
      FROM stores s
      JOIN brands b ON b.id = s.brand_id
      JOIN scopes sc ON sc.store_id = s.id`);

    // The {stores: [...]} body as JSON text; storeIds null: every store.
    const stores = (storeIds: ReadonlyArray<number> | null) =>
      dbBoundary(sql<{ body: string }>`
        SELECT json_build_object('stores', coalesce(json_agg(json_build_object(
          ${storeFields}) ORDER BY s.id, sc.id), '[]'::json))::text AS body
        ${storeJoins}
        WHERE ${storeIds}::int[] IS NULL OR s.id = ANY(${storeIds}::int[])`).pipe(
        Effect.map((rows) => rows[0].body),
        Effect.withSpan("StoreRepo.stores"),
      );

    const catalog = (storeIds: ReadonlyArray<number> | null) =>
      dbBoundary(sql<{ body: string }>`
        SELECT json_build_object('stores', coalesce(json_agg(json_build_object(
          ${storeFields}, 'city', s.city, 'business_hours', s.business_hours,
          'peak_hours', s.peak_hours, 'business_mode', s.business_mode,
          'settlement_mode', s.settlement_mode, 'is_key_store', s.is_key_store,
          'key_store_status', s.key_store_status, 'tags', s.tags,
          'stage', ss.stage, 'stage_basis', ss.stage_basis,
          'device_count', coalesce(d.device_count, 0),
          'online_count', coalesce(d.online_count, 0),
          'offline_count', coalesce(d.offline_count, 0),
          'unknown_count', coalesce(d.unknown_count, 0)) ORDER BY s.id, sc.id), '[]'::json))::text
          AS body
        ${storeJoins}
        LEFT JOIN stage_snapshots ss ON ss.store_id = s.id
        LEFT JOIN (
          SELECT store_id,
            count(*) AS device_count,
            count(*) FILTER (WHERE online_status = 'ONLINE') AS online_count,
            count(*) FILTER (WHERE online_status = 'OFFLINE') AS offline_count,
            count(*) FILTER (WHERE online_status = 'UNKNOWN') AS unknown_count
          FROM devices
          WHERE ${storeIds}::int[] IS NULL OR store_id = ANY(${storeIds}::int[])
          GROUP BY store_id
        ) d ON d.store_id = s.id
        WHERE ${storeIds}::int[] IS NULL OR s.id = ANY(${storeIds}::int[])`).pipe(
        Effect.map((rows) => rows[0].body),
        Effect.withSpan("StoreRepo.catalog"),
      );

    const loadScopes = (storeId: number) =>
      dbBoundary(sql<ScopeFacts>`
        SELECT s.id AS store_id, sc.id AS scope_id, sc.timezone, sc.unit
        FROM stores s JOIN scopes sc ON sc.store_id = s.id
        WHERE s.id = ${storeId}
        ORDER BY sc.id`);

    // Store-to-scope facts are snapshot reference data (they change only when a snapshot is
    // reloaded), so every read request need not pay a round trip for them. Who may see a store
    // is not cached: that comes from the caller's key, read on every request.
    const scopeCache = yield* Cache.makeWith({
      capacity: 20_000,
      lookup: loadScopes,
      // A failed lookup (database unreachable) is not kept.
      timeToLive: (exit) => Exit.isSuccess(exit) ? SCOPE_CACHE_TTL : Duration.zero,
    });

    // The scopes of one store; empty when the store does not exist.
    const scopes = (storeId: number) =>
      scopeCache.get(storeId).pipe(Effect.withSpan("StoreRepo.scopes"));

    return { dataset, stores, catalog, scopes } as const;
  }),
}) {}
