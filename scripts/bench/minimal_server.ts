// Benchmark floor of the energy read: a bare Deno.serve + pg Pool over a plain one-row-per-day
// table (bench_plain_days: scope, date, kWh, filled by the benchmark from the served values) that
// answers GET /energy?scope_id=..&start=..&end=.. with only the date and kWh of each day that has a
// value. No authentication, no scope check, no gaps, no other field: what the simplest reader
// would do.
import { answer, DATE, makePool, problem, serveBaseline } from "./baseline_server.ts";

const SQL = `
SELECT coalesce(json_agg(json_build_object('date', business_date::text, 'kwh', kwh::text)
                         ORDER BY business_date), '[]')::text AS days
FROM bench_plain_days
WHERE scope_id = $1 AND business_date BETWEEN $2 AND $3`;

const pool = makePool();

serveBaseline("minimal server", 18082, pool, {
  "/energy": async (params) => {
    const scope = Number(params.get("scope_id"));
    const start = params.get("start") ?? "";
    const end = params.get("end") ?? "";
    if (!DATE.test(start) || !DATE.test(end)) {
      return problem(400, "INVALID_INPUT", "start and end must be YYYY-MM-DD");
    }
    const { rows } = await pool.query<{ days: string }>(SQL, [scope, start, end]);
    return answer(200, `{"days":${rows[0].days}}`);
  },
});
