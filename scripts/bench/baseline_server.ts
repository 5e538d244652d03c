// What the benchmark's hand-written baselines share: a bare Deno.serve on HOST:PORT with an npm:pg
// Pool of DB_POOL_MAX connections, GET routes by exact path, GET /health for readiness, JSON
// answers, and a clean stop on SIGINT or SIGTERM. No authentication and no framework.
// Their connections take the service's planner settings (jit off, random_page_cost), so that a
// statement they share with the service is planned the same way.
import pg from "pg";
import { connectionOf } from "../../src/db/database.ts";
import { env, stopOnSignal } from "./server_process.ts";

export const DATE = /^\d{4}-\d{2}-\d{2}$/;

export const answer = (status: number, body: string) =>
  new Response(body, { status, headers: { "content-type": "application/json" } });

export const problem = (status: number, code: string, message: string) =>
  answer(status, JSON.stringify({ error: { code, message } }));

// A route's answer; it may throw (a failed query), which becomes 400 or 500 below.
export type Route = (params: URLSearchParams) => Promise<Response>;

export const makePool = () =>
  new pg.Pool({
    ...connectionOf(Deno.env.get("DATABASE_URL") ?? ""),
    max: Number(env("DB_POOL_MAX", "10")),
  });

export const serveBaseline = (
  name: string,
  defaultPort: number,
  pool: pg.Pool,
  routes: Readonly<Record<string, Route>>,
) => {
  const server = Deno.serve({
    port: Number(env("PORT", String(defaultPort))),
    hostname: env("HOST", "127.0.0.1"),
    onListen: ({ hostname, port }) => console.log(`${name} ready on http://${hostname}:${port}`),
  }, async (request) => {
    const url = new URL(request.url);
    if (url.pathname === "/health") return answer(200, `{"status":"ok"}`);
    const route = request.method === "GET" ? routes[url.pathname] : undefined;
    if (route === undefined) {
      return problem(404, "NOT_FOUND", `only GET ${Object.keys(routes).join(", ")}`);
    }
    try {
      return await route(url.searchParams);
    } catch (error) {
      console.error(`${url.pathname} failed:`, error);
      // SQLSTATE class 22 (data exception): an impossible date such as 2026-02-30.
      const code = (error as { code?: string }).code ?? "";
      return code.startsWith("22")
        ? problem(400, "INVALID_INPUT", (error as Error).message)
        : problem(500, "INTERNAL", "query failed");
    }
  });
  stopOnSignal(async () => {
    await server.shutdown();
    await pool.end();
  });
};
