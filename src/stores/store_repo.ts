// Store reference reads: dataset, store list, catalog, and the scope facts used by access checks.
import * as SqlClient from "@effect/sql/SqlClient";
import { Effect, Option, Stream } from "effect";
import { dbBoundary } from "../db/errors.ts";
import { JsonText } from "../domain/answers.ts";
import { type ServiceUnavailable, unavailable } from "../domain/errors.ts";
import { Messages } from "../domain/messages.ts";
import { span } from "../ops/span.ts";
import { makeConfirmedValues } from "../reads/confirmed_reads.ts";

export interface DatasetRow {
  readonly label: string;
  readonly start: string;
  readonly end: string;
  readonly source_policy: "CLEANED_SAMPLE" | "CLEANED_THEN_LEGACY_THEN_NULL";
  readonly timezone: string;
  readonly unit: string;
}

// Stores per page of the store list and the catalog (a catalog of 2,000 stores is 1.5 MB).
export const LIST_PAGE_STORES = 250;

// The version of the lists a key sees (the snapshot, and the profiles' versions: a profile edit
// changes a store's name), and how many stores they hold; `storeIds` is the key's stores (an int[]
// expression, null for every store).
export const listVersionSql = (storeIds: string) => `
  SELECT (SELECT generation FROM dataset) || '.' || count(*) || '.' ||
    coalesce(sum(s.version), 0) AS version, count(*)::int AS stores
  FROM stores s
  WHERE ${storeIds} IS NULL OR s.id = ANY(${storeIds})`;

export interface ListVersion {
  readonly version: string;
  readonly stores: number;
}

interface ListPage {
  readonly rows: string | null;
  readonly last: number | null;
  readonly stores: number;
}

export class StoreRepo extends Effect.Service<StoreRepo>()("Stores/StoreRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient;

    const dataset = dbBoundary(sql<DatasetRow & { generation: string }>`
      SELECT label, start_date::text AS start, end_date::text AS end, source_policy, timezone, unit,
        generation
      FROM dataset`).pipe(
      Effect.flatMap((rows) =>
        rows.length === 1
          ? Effect.succeed(rows[0])
          : Effect.fail(unavailable(Messages.noSnapshot()))
      ),
      span("StoreRepo.dataset"),
    );

    // The Store fields of the contract, shared by the store list and the catalog.
    const storeFields = `
      'id', s.id, 'name', s.name, 'store_code', s.store_code, 'source_org_id', s.source_org_id,
      'brand_name', b.name, 'scope_id', sc.id, 'scope_kind', sc.kind, 'unit', sc.unit,
      'timezone', sc.timezone`;
    const catalogFields = `${storeFields}, 'city', s.city, 'business_hours', s.business_hours,
      'peak_hours', s.peak_hours, 'business_mode', s.business_mode,
      'settlement_mode', s.settlement_mode, 'is_key_store', s.is_key_store,
      'key_store_status', s.key_store_status, 'tags', s.tags,
      'stage', ss.stage, 'stage_basis', ss.stage_basis,
      'device_count', coalesce(d.device_count, 0),
      'online_count', coalesce(d.online_count, 0),
      'offline_count', coalesce(d.offline_count, 0),
      'unknown_count', coalesce(d.unknown_count, 0)`;

    // One page of a list: the rows (JSON text, ", "-separated, in store then scope order) of the
    // next `limit` stores after store `after`, of those the key may see (null: every store).
    const page = (fields: string, joins: string) =>
    (
      storeIds: ReadonlyArray<number> | null,
      after: number,
      limit: number,
    ) =>
      dbBoundary(sql.unsafe<ListPage>(
        `WITH page AS (
           SELECT s.id FROM stores s
           WHERE s.id > $1::int AND ($2::int[] IS NULL OR s.id = ANY($2::int[]))
           ORDER BY s.id LIMIT $3::int
         )
         SELECT string_agg(json_build_object(${fields})::text, ', ' ORDER BY s.id, sc.id) AS rows,
           max(s.id)::int AS last, count(DISTINCT s.id)::int AS stores
         FROM page
         JOIN stores s ON s.id = page.id
         JOIN brands b ON b.id = s.brand_id
         JOIN scopes sc ON sc.store_id = s.id
         ${joins}`,
        [after, storeIds, limit],
      )).pipe(Effect.map((rows) => rows[0]));

    const storesPage = page(storeFields, "");
    const catalogPage = page(
      catalogFields,
      `LEFT JOIN stage_snapshots ss ON ss.store_id = s.id
       LEFT JOIN (
         SELECT dv.store_id,
           count(*) AS device_count,
           count(*) FILTER (WHERE dv.online_status = 'ONLINE') AS online_count,
           count(*) FILTER (WHERE dv.online_status = 'OFFLINE') AS offline_count,
           count(*) FILTER (WHERE dv.online_status = 'UNKNOWN') AS unknown_count
         FROM devices dv JOIN page ON page.id = dv.store_id
         GROUP BY dv.store_id
       ) d ON d.store_id = s.id`,
    );

    // The rows of a list page by page, each page JSON text. The first page is read now (a
    // failure is an error answer); the others as the answer is sent, so an answer of any size
    // holds one page in memory.
    const pages = (
      read: (
        storeIds: ReadonlyArray<number> | null,
        after: number,
        limit: number,
      ) => Effect.Effect<ListPage, ServiceUnavailable>,
      storeIds: ReadonlyArray<number> | null,
      size: number,
    ) => {
      const next = (p: ListPage) =>
        p.last === null || p.stores < size ? Option.none() : Option.some(p.last);
      const rowsOf = (p: ListPage) => p.rows === null ? [] : [JsonText(p.rows)];
      return Effect.map(
        read(storeIds, 0, LIST_PAGE_STORES),
        (first) =>
          Stream.fromIterable(rowsOf(first)).pipe(
            Stream.concat(Option.match(next(first), {
              onNone: () => Stream.empty,
              onSome: (after) =>
                Stream.paginateEffect(after, (from) =>
                  Effect.map(
                    read(storeIds, from, LIST_PAGE_STORES),
                    (p) => [rowsOf(p), next(p)] as const,
                  )).pipe(Stream.flattenIterables),
            })),
          ),
      );
    };

    // From what a statement read while nothing has changed since (reads/confirmed_reads.ts).
    const confirmed = yield* makeConfirmedValues<ListVersion>(() => true);
    const listVersion = (storeIds: ReadonlyArray<number> | null) =>
      confirmed(
        storeIds === null ? "all" : storeIds.join(","),
        dbBoundary(
          sql.unsafe<ListVersion>(listVersionSql("$1::int[]"), [storeIds as Array<number> | null]),
        ).pipe(Effect.map((rows) => rows[0])),
      ).pipe(span("StoreRepo.listVersion"));

    const stores = (storeIds: ReadonlyArray<number> | null, size = LIST_PAGE_STORES) =>
      pages(storesPage, storeIds, size);
    const catalog = (storeIds: ReadonlyArray<number> | null, size = LIST_PAGE_STORES) =>
      pages(catalogPage, storeIds, size);

    const generation = dbBoundary(sql<{ generation: string }>`
      SELECT generation FROM dataset`).pipe(Effect.map((rows) => rows[0]?.generation));

    return { dataset, generation, listVersion, stores, catalog } as const;
  }),
}) {}
