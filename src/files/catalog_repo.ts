// CatalogRepo: what a file is laid out over, read alike by the import template and the exports:
// the current stores with their brand (worksheet names are made over every brand) and the
// dataset's days (a file holds no other date, rules.md §8).
import * as SqlClient from "@effect/sql/SqlClient";
import { Effect } from "effect";
import { dbBoundary } from "../db/errors.ts";
import { badRequest, unavailable } from "../domain/errors.ts";
import { Messages } from "../domain/messages.ts";
import { checkRange, datesOf, ENERGY_MAX_DAYS } from "../domain/range.ts";
import { span } from "../ops/span.ts";

// A store as files name it and the resolver matches it: brand + store name (trimmed, exact).
export interface CatalogStore {
  readonly storeId: number;
  readonly scopeId: number;
  readonly brandName: string;
  readonly storeName: string;
}

export interface FileDataset {
  readonly start: string;
  readonly end: string;
  readonly today: string;
}

export class CatalogRepo extends Effect.Service<CatalogRepo>()("Files/CatalogRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient;

    // The dataset's dates and today's date in its time zone; NOT_READY before a snapshot is loaded.
    const dataset = Effect.flatMap(
      dbBoundary(sql<FileDataset>`
        SELECT start_date::text AS start, end_date::text AS end,
          (now() AT TIME ZONE timezone)::date::text AS today
        FROM dataset`),
      (rows) =>
        rows.length === 1
          ? Effect.succeed(rows[0])
          : Effect.fail(unavailable(Messages.noSnapshot())),
    ).pipe(span("CatalogRepo.dataset"));

    // Current stores with their brand and metering scope (null: every store).
    const catalog = (storeIds: ReadonlyArray<number> | null) =>
      sql<CatalogStore>`
        SELECT s.id AS "storeId", sc.id AS "scopeId", b.name AS "brandName", s.name AS "storeName"
        FROM stores s
        JOIN brands b ON b.id = s.brand_id
        JOIN scopes sc ON sc.store_id = s.id
        WHERE ${storeIds === null ? sql`true` : sql`s.id = ANY(${storeIds}::int[])`}
        ORDER BY b.name, s.name`.pipe(span("CatalogRepo.catalog"));

    // Every brand that has a store: worksheet names are made over all of them, whatever stores a
    // caller may see, so that a workbook's sheets read back the same for every caller.
    const namingBrands = Effect.map(
      dbBoundary(sql<{ name: string }>`
        SELECT DISTINCT b.name
        FROM stores s
        JOIN brands b ON b.id = s.brand_id
        JOIN scopes sc ON sc.store_id = s.id
        ORDER BY b.name`),
      (rows) => rows.map((r) => r.name),
    ).pipe(span("CatalogRepo.namingBrands"));

    // The days start..end when they are the dataset's: a preview refuses any other date (rules.md
    // §8), blank cells included, so neither an export nor a template lays one out.
    const datasetDays = (start: string, end: string) =>
      Effect.gen(function* () {
        yield* checkRange(start, end, ENERGY_MAX_DAYS);
        const found = yield* dataset;
        const last = found.end < found.today ? found.end : found.today;
        if (start < found.start || end > last) {
          return yield* badRequest(Messages.outsideDataset(start, end, found.start, last));
        }
        return datesOf(start, end);
      });

    return { dataset, catalog, namingBrands, datasetDays } as const;
  }),
}) {}
