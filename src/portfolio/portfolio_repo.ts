// PortfolioRepo: the metrics inputs and the device evidence of the stores a portfolio lists, a page
// of stores per statement, as compact text (portfolio_compute.ts decodes a store's when its turn
// comes).
import * as SqlClient from "@effect/sql/SqlClient";
import { Effect } from "effect";
import { dbBoundary } from "../db/errors.ts";
import { span } from "../ops/span.ts";
import type { StoreRow } from "./portfolio_compute.ts";
import { currentInputsSql, inputsAtCommitSql, pageStartsSql, versionSql } from "./portfolio_sql.ts";

// What a portfolio asks for: the range, the key's stores (null: every store) and the filters.
export interface PortfolioQuery {
  readonly start: string;
  readonly end: string;
  readonly storeIds: ReadonlyArray<number> | null;
  readonly brandId: number | null;
  readonly city: string | null;
}

// The page after store `store` and scope `scope` (0 and 0 for the first).
export interface PageStart {
  readonly store: number;
  readonly scope: number;
}

const AT_COMMIT_SQL = inputsAtCommitSql("$9::bigint");
const VERSION_SQL = versionSql("$1::int[]");

export class PortfolioRepo extends Effect.Service<PortfolioRepo>()("Portfolio/PortfolioRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient;

    // The version and data token of a portfolio's current data, without the data.
    const version = (q: PortfolioQuery) =>
      dbBoundary(
        sql.unsafe<{ version: string; token: string | null }>(VERSION_SQL, [q.storeIds]),
      ).pipe(
        Effect.map(([row]) => ({ version: row.version, token: row.token ?? undefined })),
        span("PortfolioRepo.version"),
      );

    // At most `limit` stores after `after`, in store then scope order. `seq`: the commit to read
    // the days at (a read as of an earlier instant); else now. The device evidence is the sealed
    // reports of the snapshot, the same at any of its commits.
    const page = (q: PortfolioQuery, after: PageStart, limit: number, seq?: string) => {
      const params = [
        q.start,
        q.end,
        q.storeIds,
        q.brandId,
        q.city,
        after.store,
        after.scope,
        limit,
      ];
      return dbBoundary(
        seq === undefined
          ? sql.unsafe<StoreRow>(currentInputsSql, params)
          : sql.unsafe<StoreRow>(AT_COMMIT_SQL, [...params, seq]),
      ).pipe(span("PortfolioRepo.page", { limit }));
    };

    // Where the pages of `limit` stores start (the first page after 0 and 0), and the version of
    // the store list they were made from.
    const pageStarts = (q: PortfolioQuery, limit: number) =>
      dbBoundary(
        sql.unsafe<{ starts: string; version: string }>(pageStartsSql, [
          q.storeIds,
          q.brandId,
          q.city,
          limit,
        ]),
      ).pipe(
        Effect.map(([row]) => ({
          starts: [
            { store: 0, scope: 0 },
            ...(JSON.parse(row.starts) as Array<[number, number]>).map(([store, scope]) => ({
              store,
              scope,
            })),
          ],
          version: row.version,
        })),
        span("PortfolioRepo.pageStarts"),
      );

    return { page, pageStarts, version } as const;
  }),
}) {}
