// The proof that what is stored equals what is computed: each stored day's derived columns
// against the rules of day_sql.ts applied to its facts, and the stored energy read against the
// same answer computed from the facts alone and as of the last commit from the revisions and the
// kept states. Used by the tests and by `deno task verify`.
import * as SqlClient from "@effect/sql/SqlClient";
import { Effect } from "effect";
import {
  computedEnergyDaysSql,
  currentRevisionKindSql,
  derivedExpressions,
  energyDaysAtSql,
  energyDaysSql,
  MONTH_CHUNK_COLUMNS,
  monthChunksSql,
} from "./day_sql.ts";
import { span } from "../ops/span.ts";

export interface DayMismatch {
  readonly id: number;
  readonly scope_id: number;
  readonly business_date: string;
  readonly columns: ReadonlyArray<string>;
}

const derivedDiffers = () =>
  Object.entries(derivedExpressions("e", currentRevisionKindSql("e"))).map((
    [name, expression],
  ) => [name, `e.${name} IS DISTINCT FROM ${expression}`] as const);

// Every stored day whose derived columns differ from its facts, and every month whose chunk
// differs from its days (at most `limit` of each), and how many days were checked.
export const checkStoredDays = (limit = 20) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient;
    const checks = derivedDiffers();
    const [{ days }] = yield* sql<{ days: number }>`SELECT count(*)::int AS days FROM energy_days`;
    const mismatches = yield* sql.unsafe<DayMismatch>(
      `SELECT id, scope_id, business_date::text AS business_date,
         array_remove(ARRAY[${
        checks.map(([name, differs]) => `CASE WHEN ${differs} THEN '${name}' END`).join(", ")
      }], NULL) AS columns
       FROM energy_days e
       WHERE ${checks.map(([, differs]) => `(${differs})`).join(" OR ")}
       ORDER BY id
       LIMIT ${Math.max(1, Math.floor(limit))}`,
    );
    // The month chunks: each stored one as recomputed from the stored days, and no month that
    // holds a day without one.
    const months = yield* sql.unsafe<{ scope_id: number; month: string }>(
      `WITH expected AS (${
        monthChunksSql(
          "SELECT DISTINCT scope_id, date_trunc('month', business_date)::date AS month " +
            "FROM energy_days",
        )
      })
       SELECT coalesce(x.scope_id, m.scope_id) AS scope_id,
         coalesce(x.month, m.month)::text AS month
       FROM expected x FULL JOIN energy_months m ON m.scope_id = x.scope_id AND m.month = x.month
       WHERE m.scope_id IS NULL OR x.scope_id IS NULL
         OR (${MONTH_CHUNK_COLUMNS.map((c) => `m.${c}`).join(", ")}) IS DISTINCT FROM
            (${MONTH_CHUNK_COLUMNS.map((c) => `x.${c}`).join(", ")})
       ORDER BY 1, 2
       LIMIT ${Math.max(1, Math.floor(limit))}`,
    );
    return { days, mismatches, months };
  }).pipe(span("DayCheck.checkStoredDays"));

export interface ReadMismatch {
  readonly scopeId: number;
  readonly start: string;
  readonly end: string;
  readonly part: "summary" | "days" | "version" | "as_of";
}

// The stored energy read against the computed one, for each scope and range.
export const checkReads = (
  ranges: ReadonlyArray<{ scopeId: number; start: string; end: string }>,
) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient;
    const stored = energyDaysSql("$1::int", "$2::date", "$3::date");
    const computed = computedEnergyDaysSql("$1::int", "$2::date", "$3::date");
    // The same range read as of the last commit, from the revisions and the kept states.
    const asOf = energyDaysAtSql(
      "$1::int",
      "$2::date",
      "$3::date",
      "(SELECT seq FROM commit_clock)",
    );
    const mismatches: Array<ReadMismatch> = [];
    for (const r of ranges) {
      const params = [r.scopeId, r.start, r.end];
      const fast = yield* sql.unsafe<{ summary: string; version: string; part: string }>(
        stored,
        params,
      );
      const [slow] = yield* sql.unsafe<{ summary: string; days: string; version: string }>(
        computed,
        params,
      );
      if (fast[0]?.summary !== slow.summary) mismatches.push({ ...r, part: "summary" });
      if (`[${fast.map((p) => p.part).join(", ")}]` !== slow.days) {
        mismatches.push({ ...r, part: "days" });
      }
      if (fast[0]?.version !== slow.version) mismatches.push({ ...r, part: "version" });
      const [past] = yield* sql.unsafe<{ summary: string; days: string; kept: boolean }>(
        asOf,
        params,
      );
      if (!past.kept || past.summary !== slow.summary || past.days !== slow.days) {
        mismatches.push({ ...r, part: "as_of" });
      }
    }
    return mismatches;
  }).pipe(span("DayCheck.checkReads"));
