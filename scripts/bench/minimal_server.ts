// Benchmark floor: a bare Deno.serve + pg Pool over a plain one-row-per-day table
// (bench_plain_days: scope, date, kWh, filled by the benchmark from the served values) that answers
// GET /energy?scope_id=..&start=..&end=.. with only the date and kWh of each day that has a value.
// No authentication, no scope check, no gaps, no other field: what the simplest reader would do.
import pg from "pg";

const env = (name: string, fallback: string) => Deno.env.get(name) ?? fallback;

const pool = new pg.Pool({
  connectionString: Deno.env.get("DATABASE_URL"),
  max: Number(env("DB_POOL_MAX", "10")),
});

const SQL = `
SELECT coalesce(json_agg(json_build_object('date', business_date::text, 'kwh', kwh::text)
                         ORDER BY business_date), '[]')::text AS days
FROM bench_plain_days
WHERE scope_id = $1 AND business_date BETWEEN $2 AND $3`;

const DATE = /^\d{4}-\d{2}-\d{2}$/;
const answer = (status: number, body: string) =>
  new Response(body, { status, headers: { "content-type": "application/json" } });

const server = Deno.serve({
  port: Number(env("PORT", "18082")),
  hostname: env("HOST", "127.0.0.1"),
  onListen: ({ hostname, port }) =>
    console.log(`minimal server ready on http://${hostname}:${port}`),
}, async (request) => {
  const url = new URL(request.url);
  if (url.pathname === "/health") return answer(200, `{"status":"ok"}`);
  if (request.method !== "GET" || url.pathname !== "/energy") return answer(404, "{}");
  const scope = Number(url.searchParams.get("scope_id"));
  const start = url.searchParams.get("start") ?? "";
  const end = url.searchParams.get("end") ?? "";
  if (!DATE.test(start) || !DATE.test(end)) return answer(400, "{}");
  try {
    const { rows } = await pool.query<{ days: string }>(SQL, [scope, start, end]);
    return answer(200, `{"days":${rows[0].days}}`);
  } catch (error) {
    console.error("query failed:", error);
    return answer(500, "{}");
  }
});

const stop = async () => {
  await server.shutdown();
  await pool.end();
  Deno.exit(0);
};
Deno.addSignalListener("SIGINT", stop);
Deno.addSignalListener("SIGTERM", stop);
