// Benchmark baseline with the service's own SQL ("same SQL"): Deno.serve + pg Pool, no
// authentication and no framework, answering the three reads with the service's statements and
// computations and the same bodies:
//   GET /energy?scope_id=&start=&end=   the energy statement (energyDaysSql), its rows joined
//   GET /metrics?scope_id=&start=&end=  metric_inputs, the metrics engine and the data-quality check
//                                       (its device evidence read by the service's QualityRepo)
//   GET /periods?scope_id=&as_of=       metric_inputs over the overview's days, the engine's days
//                                       summarised per period
// Scope facts are read once, so that each request costs only its statements' round trips.
import * as PgClient from "@effect/sql-pg/PgClient";
import { Effect, Layer, ManagedRuntime } from "effect";
import { energyDaysSql } from "../../src/energy/day_sql.ts";
import { computeDays, computeMetrics, summarize } from "../../src/metrics/engine.ts";
import { resolveDays } from "../../src/metrics/metrics_repo.ts";
import { metricsAnswer, periodsRange } from "../../src/metrics/metrics_service.ts";
import { QualityRepo } from "../../src/quality/quality_repo.ts";
import { checkQuality } from "../../src/quality/quality_rules.ts";
import { addDays } from "../../src/domain/range.ts";
import { answer, DATE, makePool, problem, type Route, serveBaseline } from "./baseline_server.ts";

const ENERGY_SQL = energyDaysSql("$1::int", "$2::date", "$3::date");

// The service's metric inputs statement (src/metrics/metrics_repo.ts): one call of metric_inputs,
// the function the service installs at its start.
const INPUTS_SQL = `
SELECT out_days AS days, out_stages AS stages, out_periods AS periods, out_tev AS tev,
  out_baseline AS baseline, out_version AS version, out_token AS token
FROM metric_inputs($1::int, $2::int, $3::date, $4::date, $5::text)`;

type InputRows = Parameters<typeof resolveDays>[0];

const pool = makePool();
// The data-quality evidence statement is the service's own repository's, on the same pool.
const quality = ManagedRuntime.make(
  QualityRepo.Default.pipe(
    Layer.provide(PgClient.layerFromPool({ acquire: Effect.succeed(pool) })),
    Layer.orDie,
  ),
);

const scopes = new Map<number, { storeId: number; timezone: string; unit: string }>();
const { rows } = await pool.query<{ id: number; store_id: number; timezone: string; unit: string }>(
  "SELECT id, store_id, timezone, unit FROM scopes",
);
for (const row of rows) {
  scopes.set(row.id, { storeId: row.store_id, timezone: row.timezone, unit: row.unit });
}

// The scope and the dates a read names, or the answer that refuses it.
const readOf = (params: URLSearchParams, names: ReadonlyArray<string>) => {
  const scopeId = Number(params.get("scope_id"));
  const dates = names.map((name) => params.get(name) ?? "");
  if (!dates.every((d) => DATE.test(d))) {
    return problem(400, "INVALID_INPUT", `${names.join(" and ")}: YYYY-MM-DD`);
  }
  const scope = scopes.get(scopeId);
  if (scope === undefined) return problem(404, "NOT_FOUND", `no scope ${params.get("scope_id")}`);
  return { scopeId, scope, dates };
};

const inputsOf = async (
  storeId: number,
  scopeId: number,
  start: string,
  end: string,
  tz: string,
): Promise<InputRows> => (await pool.query(INPUTS_SQL, [storeId, scopeId, start, end, tz])).rows[0];

const energy: Route = async (params) => {
  const read = readOf(params, ["start", "end"]);
  if (read instanceof Response) return read;
  const { scopeId, scope, dates: [start, end] } = read;
  // One row per calendar month: the summary (on each), and that month's days as JSON text.
  const { rows }: { rows: Array<{ summary: string; part: string }> } = await pool.query(
    ENERGY_SQL,
    [scopeId, start, end],
  );
  return answer(
    200,
    `{"store_id":${scope.storeId},"scope_id":${scopeId},` +
      `"metric":"AIR_CONDITIONING_DAILY_ENERGY","unit":"kWh",` +
      `"timezone":${JSON.stringify(scope.timezone)},"start":"${start}","end":"${end}",` +
      `"summary":${rows[0].summary},"days":[${rows.map((r) => r.part).join(", ")}]}`,
  );
};

const metrics: Route = async (params) => {
  const read = readOf(params, ["start", "end"]);
  if (read instanceof Response) return read;
  const { scopeId, scope, dates: [start, end] } = read;
  const inputs = await inputsOf(scope.storeId, scopeId, start, end, scope.timezone);
  const result = computeMetrics(resolveDays(inputs), inputs.baseline);
  const days = inputs.days.map(([date, servedKwh, , , status]) => ({ date, status, servedKwh }));
  const evidence = await quality.runPromise(
    Effect.flatMap(QualityRepo, (repo) => repo.evidence(scopeId, days.map((d) => d.date))),
  );
  const head = { store_id: scope.storeId, scope_id: scopeId, timezone: scope.timezone, start, end };
  return answer(
    200,
    JSON.stringify(
      metricsAnswer(head, scope.unit, result, checkQuality(days, evidence), "en"),
    ),
  );
};

// The overview's periods, all ending at as_of (rules.md §7, as the service states them).
const periodStarts = (asOf: string) => [
  { key: "day", label: "Day", start: asOf },
  { key: "week", label: "Last 7 days", start: addDays(asOf, -6) },
  { key: "month", label: "Last 30 days", start: addDays(asOf, -29) },
  { key: "year", label: "Year to date", start: `${asOf.slice(0, 4)}-01-01` },
];

const periods: Route = async (params) => {
  const read = readOf(params, ["as_of"]);
  if (read instanceof Response) return read;
  const { scopeId, scope, dates: [asOf] } = read;
  const { start } = periodsRange(scope.storeId, scopeId, asOf);
  const inputs = await inputsOf(scope.storeId, scopeId, start, asOf, scope.timezone);
  const days = computeDays(resolveDays(inputs), inputs.baseline);
  return answer(
    200,
    JSON.stringify({
      store_id: scope.storeId,
      scope_id: scopeId,
      as_of: asOf,
      timezone: scope.timezone,
      periods: periodStarts(asOf).map((p) => ({
        ...p,
        end: asOf,
        summary: summarize(days.filter((d) => d.day.business_date >= p.start)),
      })),
    }),
  );
};

serveBaseline(`same-SQL server (${scopes.size} scopes)`, 18081, pool, {
  "/energy": energy,
  "/metrics": metrics,
  "/periods": periods,
});
