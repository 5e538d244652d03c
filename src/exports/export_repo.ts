// ExportRepo: the stored days an export writes, as the energy read serves them (energy_days' served
// value, status and source, which day_writer.ts keeps with the facts: day_sql.ts states the rules).
import * as SqlClient from "@effect/sql/SqlClient";
import { Effect } from "effect";
import { dbBoundary } from "../db/errors.ts";
import { fixed4 } from "../db/sql_text.ts";
import type { ExportDay } from "./layout.ts";
import { span } from "../ops/span.ts";

export interface StoredDay extends ExportDay {
  readonly scopeId: number;
  // Days after the range's start (0 = start).
  readonly offset: number;
}

export interface DataPosition {
  readonly seq: string;
  readonly generation: string | null;
}

export class ExportRepo extends Effect.Service<ExportRepo>()("Exports/ExportRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient;

    // The stored days of some scopes in a range (inclusive), in one index range scan per scope;
    // a day without a row is not returned (no data).
    const days = (scopeIds: ReadonlyArray<number>, start: string, end: string) =>
      dbBoundary(sql.unsafe<StoredDay>(
        `SELECT e.scope_id::int AS "scopeId", (e.business_date - $2::date)::int AS "offset",
           ${fixed4("e.served_kwh")} AS served, e.status, e.source_kind AS "sourceKind",
           e.provisional = 1 AS provisional, e.quality_note AS note
         FROM energy_days e
         WHERE e.scope_id = ANY($1::int[]) AND e.business_date BETWEEN $2::date AND $3::date`,
        [scopeIds, start, end],
      )).pipe(span("ExportRepo.days"));

    // Where the data stands: the commit clock and the loaded snapshot's generation.
    const position = Effect.map(
      dbBoundary(sql.unsafe<DataPosition>(
        `SELECT coalesce((SELECT k.seq FROM commit_clock k), 0)::text AS seq,
           (SELECT d.generation FROM dataset d LIMIT 1) AS generation`,
      )),
      (rows): DataPosition => rows[0],
    );

    // Whether the data of some stores changed after a position: a commit changed one of them
    // (commit_stores), or another snapshot was loaded.
    const changedSince = (storeIds: ReadonlyArray<number>, at: DataPosition) =>
      Effect.map(
        dbBoundary(sql.unsafe<{ changed: boolean }>(
          `SELECT (SELECT d.generation FROM dataset d LIMIT 1) IS DISTINCT FROM $3::text
             OR EXISTS (SELECT 1 FROM commit_stores cs
                        WHERE cs.store_id = ANY ($1::int[]) AND cs.seq > $2::bigint) AS changed`,
          [storeIds, at.seq, at.generation],
        )),
        (rows) => rows[0]?.changed === true,
      );

    return { days, position, changedSince } as const;
  }),
}) {}
