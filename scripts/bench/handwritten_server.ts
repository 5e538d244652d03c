// Benchmark baseline: Deno.serve + pg Pool answering GET /energy with the service SQL, no auth.
import pg from "pg";
import { energyDaysSql } from "../../src/energy/day_sql.ts";

const ENERGY_SQL = energyDaysSql("$1::int", "$2::date", "$3::date");

const env = (name: string, fallback: string) => Deno.env.get(name) ?? fallback;

const pool = new pg.Pool({
  connectionString: Deno.env.get("DATABASE_URL"),
  max: Number(env("DB_POOL_MAX", "10")),
});

// Scope facts are read once so that each request costs exactly one round trip: the energy query.
const scopes = new Map<number, { storeId: number; timezone: string }>();
const { rows } = await pool.query<{ id: number; store_id: number; timezone: string }>(
  "SELECT id, store_id, timezone FROM scopes",
);
for (const row of rows) scopes.set(row.id, { storeId: row.store_id, timezone: row.timezone });

const DATE = /^\d{4}-\d{2}-\d{2}$/;
const answer = (status: number, body: string) =>
  new Response(body, { status, headers: { "content-type": "application/json" } });
const problem = (status: number, code: string, message: string) =>
  answer(status, JSON.stringify({ error: { code, message } }));

const energy = async (params: URLSearchParams) => {
  const scopeId = Number(params.get("scope_id"));
  const start = params.get("start") ?? "";
  const end = params.get("end") ?? "";
  if (!DATE.test(start) || !DATE.test(end)) {
    return problem(400, "INVALID_INPUT", "start and end must be YYYY-MM-DD");
  }
  const scope = scopes.get(scopeId);
  if (scope === undefined) return problem(404, "NOT_FOUND", `no scope ${params.get("scope_id")}`);
  // One row per calendar month: the summary (on each), and that month's days as JSON text.
  const result = await pool.query<{ summary: string; part: string }>(ENERGY_SQL, [
    scopeId,
    start,
    end,
  ]);
  const rows = result.rows;
  return answer(
    200,
    `{"store_id":${scope.storeId},"scope_id":${scopeId},` +
      `"metric":"AIR_CONDITIONING_DAILY_ENERGY","unit":"kWh",` +
      `"timezone":${JSON.stringify(scope.timezone)},"start":"${start}","end":"${end}",` +
      `"summary":${rows[0].summary},"days":[${
        rows.map((r: { part: string }) => r.part).join(", ")
      }]}`,
  );
};

const server = Deno.serve({
  port: Number(env("PORT", "18081")),
  hostname: env("HOST", "127.0.0.1"),
  onListen: ({ hostname, port }) =>
    console.log(`hand-written server ready on http://${hostname}:${port} (${scopes.size} scopes)`),
}, async (request) => {
  const url = new URL(request.url);
  if (url.pathname === "/health") return answer(200, `{"status":"ok"}`);
  if (request.method !== "GET" || url.pathname !== "/energy") {
    return problem(404, "NOT_FOUND", "only GET /energy");
  }
  try {
    return await energy(url.searchParams);
  } catch (error) {
    console.error("energy query failed:", error);
    // SQLSTATE class 22 (data exception): an impossible date such as 2026-02-30.
    const code = (error as { code?: string }).code ?? "";
    return code.startsWith("22")
      ? problem(400, "INVALID_INPUT", (error as Error).message)
      : problem(500, "INTERNAL", "query failed");
  }
});

const stop = async () => {
  await server.shutdown();
  await pool.end();
  Deno.exit(0);
};
Deno.addSignalListener("SIGINT", stop);
Deno.addSignalListener("SIGTERM", stop);
