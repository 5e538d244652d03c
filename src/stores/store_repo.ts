// Store reference reads: dataset, store list, catalog, and the scope facts used by access checks.
import { SqlClient } from "@effect/sql";
import { Effect } from "effect";
import { dbBoundary } from "../db/errors.ts";
import { notReady } from "../domain/errors.ts";
import type { CatalogStore, Store } from "../domain/stores.ts";

export interface DatasetRow {
  readonly label: string;
  readonly start: string;
  readonly end: string;
  readonly source_policy: "CLEANED_SAMPLE" | "CLEANED_THEN_LEGACY_THEN_NULL";
  readonly timezone: string;
  readonly unit: string;
}

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

    // storeIds null: every store.
    const stores = (storeIds: ReadonlyArray<number> | null) =>
      dbBoundary(sql<Store>`
        SELECT s.id, s.name, s.store_code, s.source_org_id, b.name AS brand_name,
          sc.id AS scope_id, sc.kind AS scope_kind, sc.unit, sc.timezone
        FROM stores s
        JOIN brands b ON b.id = s.brand_id
        JOIN scopes sc ON sc.store_id = s.id
        WHERE ${storeIds}::int[] IS NULL OR s.id = ANY(${storeIds}::int[])
        ORDER BY s.id, sc.id`).pipe(Effect.withSpan("StoreRepo.stores"));

    const catalog = (storeIds: ReadonlyArray<number> | null) =>
      dbBoundary(sql<CatalogStore>`
        SELECT s.id, s.name, s.store_code, s.source_org_id, b.name AS brand_name,
          sc.id AS scope_id, sc.kind AS scope_kind, sc.unit, sc.timezone,
          s.city, s.business_hours, s.peak_hours, s.business_mode, s.settlement_mode,
          s.is_key_store, s.key_store_status, s.tags,
          ss.stage, ss.stage_basis,
          COALESCE(d.device_count, 0)::int AS device_count,
          COALESCE(d.online_count, 0)::int AS online_count,
          COALESCE(d.offline_count, 0)::int AS offline_count,
          COALESCE(d.unknown_count, 0)::int AS unknown_count
        FROM stores s
        JOIN brands b ON b.id = s.brand_id
        JOIN scopes sc ON sc.store_id = s.id
        LEFT JOIN stage_snapshots ss ON ss.store_id = s.id
        LEFT JOIN (
          SELECT store_id,
            count(*) AS device_count,
            count(*) FILTER (WHERE online_status = 'ONLINE') AS online_count,
            count(*) FILTER (WHERE online_status = 'OFFLINE') AS offline_count,
            count(*) FILTER (WHERE online_status = 'UNKNOWN') AS unknown_count
          FROM devices GROUP BY store_id
        ) d ON d.store_id = s.id
        WHERE ${storeIds}::int[] IS NULL OR s.id = ANY(${storeIds}::int[])
        ORDER BY s.id, sc.id`).pipe(Effect.withSpan("StoreRepo.catalog"));

    // The scopes of one store; empty when the store does not exist.
    const scopes = (storeId: number) =>
      dbBoundary(sql<ScopeFacts>`
        SELECT s.id AS store_id, sc.id AS scope_id, sc.timezone, sc.unit
        FROM stores s JOIN scopes sc ON sc.store_id = s.id
        WHERE s.id = ${storeId}
        ORDER BY sc.id`).pipe(Effect.withSpan("StoreRepo.scopes"));

    return { dataset, stores, catalog, scopes } as const;
  }),
}) {}
