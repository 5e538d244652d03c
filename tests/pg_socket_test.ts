// The pool's own sockets (src/db/pg_socket.ts): whole rows whatever their size, one answer per
// statement under concurrency, node's error codes for a lost database, Unix sockets, and node's
// socket where TLS is asked for. Against PostgreSQL (TEST_DATABASE_URL) only.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import net from "node:net";
import pg from "pg";
import { SqlError } from "@effect/sql/SqlError";
import { PgSocket, pgStream } from "../src/db/pg_socket.ts";
import { isConnectionError } from "../src/db/errors.ts";
import { testDatabaseUrl } from "./db.ts";

const ignore = !testDatabaseUrl;

const poolOf = (url: string, max = 4) =>
  new pg.Pool({ connectionString: url, max, stream: pgStream }).on("error", () => {});

const md5 = (text: string) => createHash("md5").update(text).digest("hex");

// Mixed-up bytes put the driver out of step with the server, and its statements then never end:
// such a test fails after `ms` instead of waiting for ever.
const within = <A>(promise: Promise<A>, ms = 20_000): Promise<A> => {
  let timer: ReturnType<typeof setTimeout> | undefined;
  return Promise.race([
    promise,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
};

// Ends a pool, or gives up on it after a while (a pool out of step may never end).
const endPool = (pool: pg.Pool) => within(pool.end(), 5_000).catch(() => {});

Deno.test({
  name: "rows many reads long come back whole, each statement with its own answer",
  ignore,
  fn: async () => {
    const pool = poolOf(testDatabaseUrl!);
    try {
      // 40 statements at once on 4 connections, rows from 32 bytes to 1 MB: most span many reads,
      // and each connection's buffer is filled again while the driver holds the bytes before.
      const sizes = Array.from({ length: 40 }, (_, i) => 1 + ((i * 7919) % 32_768));
      const answers: Array<{ rows: Array<{ n: number; big: string }> }> = await within(
        Promise.all(
          sizes.map((repeat, i) =>
            pool.query("SELECT $1::int AS n, repeat(md5($1::text), $2::int) AS big", [i, repeat])
          ),
        ),
      );
      answers.forEach((answer, i) => {
        assert.equal(answer.rows.length, 1);
        assert.equal(answer.rows[0].n, i);
        assert.equal(answer.rows[0].big.length, 32 * sizes[i]);
        assert.equal(answer.rows[0].big, md5(String(i)).repeat(sizes[i]));
      });
      // Many small rows in one answer, and text beyond ASCII split across reads.
      const many: { rows: Array<{ n: number; t: string }> } = await within(pool.query(
        "SELECT n, repeat('電力 kWh ', n % 50) AS t FROM generate_series(1, 20000) AS n",
      ));
      assert.equal(many.rows.length, 20_000);
      many.rows.forEach((row, i) => {
        assert.equal(row.n, i + 1);
        assert.equal(row.t, "電力 kWh ".repeat((i + 1) % 50));
      });
    } finally {
      await endPool(pool);
    }
  },
});

Deno.test({
  name: "a connection cut by the server fails its statement, and the pool goes on with a new one",
  ignore,
  fn: async () => {
    const pool = poolOf(testDatabaseUrl!, 2);
    const admin = new pg.Client({ connectionString: testDatabaseUrl });
    await admin.connect();
    try {
      const client = await pool.connect();
      // The driver also reports the cut as an "error" event on the client, once the socket
      // closes; a checked-out client without a listener would throw it out of the event loop.
      // Whether the close comes before or after the release below depends on which connection
      // PostgreSQL answers first.
      const events: Error[] = [];
      client.on("error", (error: Error) => events.push(error));
      const { rows }: { rows: Array<{ pid: number }> } = await client.query(
        "SELECT pg_backend_pid() AS pid",
      );
      // Its failure is awaited from the start: it comes while the terminating statement runs.
      const cut = assert.rejects(client.query("SELECT pg_sleep(5)"));
      await new Promise((resolve) => setTimeout(resolve, 200));
      await admin.query("SELECT pg_terminate_backend($1)", [rows[0].pid]);
      await cut;
      client.release(true);
      const after: { rows: Array<{ one: number }> } = await pool.query("SELECT 1 AS one");
      assert.equal(after.rows[0].one, 1);
      for (const error of events) assert.match(error.message, /terminat/);
    } finally {
      await admin.end();
      await pool.end();
    }
  },
});

Deno.test({
  name: "a refused connection fails with ECONNREFUSED, which the service takes for a lost database",
  ignore,
  fn: async () => {
    // A port nothing listens on: taken, then given back.
    const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    const port = listener.addr.port;
    listener.close();
    const pool = poolOf(`postgres://postgres@127.0.0.1:${port}/none`, 1);
    try {
      const error = await pool.query("SELECT 1").then(() => undefined, (e: unknown) => e);
      assert.ok(error instanceof Error);
      assert.equal((error as { code?: string }).code, "ECONNREFUSED");
      assert.ok(isConnectionError(new SqlError({ cause: error, message: "query failed" })));
    } finally {
      await pool.end();
    }
  },
});

const SOCKET_DIR = "/var/run/postgresql";
const unixSocket = (() => {
  if (!testDatabaseUrl) return undefined;
  const port = new URL(testDatabaseUrl).port || "5432";
  try {
    Deno.statSync(`${SOCKET_DIR}/.s.PGSQL.${port}`);
    return port;
  } catch {
    return undefined;
  }
})();

Deno.test({
  name: "a Unix socket is reached through its directory, as with node's socket",
  ignore: unixSocket === undefined,
  fn: async () => {
    const url = new URL(testDatabaseUrl!);
    const pool = new pg.Pool({
      host: SOCKET_DIR,
      port: Number(unixSocket),
      user: decodeURIComponent(url.username) || "postgres",
      database: url.pathname.slice(1) || "postgres",
      max: 1,
      stream: pgStream,
    }).on("error", () => {});
    try {
      const { rows }: { rows: Array<{ local: boolean }> } = await pool.query(
        "SELECT inet_client_addr() IS NULL AS local",
      );
      assert.equal(rows[0].local, true);
    } finally {
      await pool.end();
    }
  },
});

Deno.test("a connection that asks for TLS keeps node's socket, which node:tls upgrades", () => {
  assert.ok(pgStream({ ssl: { rejectUnauthorized: false } }) instanceof net.Socket);
  assert.ok(pgStream({ ssl: true }) instanceof net.Socket);
  assert.ok(pgStream({ ssl: false }) instanceof PgSocket);
  assert.ok(pgStream({}) instanceof PgSocket);
});
