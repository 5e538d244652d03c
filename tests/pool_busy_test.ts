// A pool whose connections are all in use while PostgreSQL answers them is a busy service (503 BUSY
// with Retry-After, readiness kept), not a database away (503 NOT_READY, readiness failing); so is
// a request that waited in line for a shared statement (src/db/batched.ts).
import assert from "node:assert/strict";
import { SqlClient, SqlError } from "@effect/sql";
import {
  Deferred,
  Effect,
  Exit,
  Fiber,
  Layer,
  ManagedRuntime,
  Redacted,
  TestClock,
  TestContext,
} from "effect";
import pg from "pg";
import { makeHandler } from "../src/app.ts";
import { issueKey } from "../src/auth/keys.ts";
import { AppConfig, DEFAULT_LIMITS } from "../src/config.ts";
import { pgLayer } from "../src/db/database.ts";
import { dbBoundary } from "../src/db/errors.ts";
import { onTarget } from "../src/db/read_replica.ts";
import { POOL_WAIT_MS, poolBusy, unwatchPool, watchPool } from "../src/ops/pg_pools.ts";
import { makeBatched } from "../src/db/batched.ts";
import { assertErrorBody, quietLog } from "./helpers.ts";
import { makeTestDatabase, testDatabaseUrl } from "./db.ts";

// What dbBoundary makes of a pool's failure to give a connection, for statements sent to the
// primary (or the replica, `replica`).
const codeOf = async (cause: unknown, replica = false) => {
  const failed = dbBoundary(Effect.fail(
    new SqlError.SqlError({ message: "Failed to acquire connection", cause }),
  ));
  const exit = await Effect.runPromiseExit(replica ? onTarget("replica")(failed) : failed);
  assert.ok(Exit.isFailure(exit) && exit.cause._tag === "Fail", String(exit));
  return (exit.cause.error as { code: string }).code;
};

// A server that takes connections and never says a word: every connection hangs in its start.
const silentServer = () => {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const held: Deno.Conn[] = [];
  const accepting = (async () => {
    for await (const conn of listener) held.push(conn);
  })();
  return {
    port: listener.addr.port,
    close: async () => {
      listener.close();
      for (const conn of held) conn.close();
      await accepting.catch(() => {});
    },
  };
};

const silentPool = (port: number, waitMs = 200) =>
  new pg.Pool({
    host: "127.0.0.1",
    port,
    user: "nobody",
    database: "nothing",
    max: 1,
    connectionTimeoutMillis: waitMs,
  }).on("error", () => {});

Deno.test("a full pool whose database never answered is NOT_READY, not BUSY", async () => {
  const silent = silentServer();
  const pool = silentPool(silent.port);
  watchPool(pool, "primary", 20_000);
  try {
    // The first connection is made and times out; the second waits for the full pool and times out.
    const failures: Error[] = await Promise.all([pool.connect(), pool.connect()].map((p) =>
      p.then(
        (): Error => assert.fail("the silent server gave a connection"),
        (error: Error) => error,
      )
    ));
    assert.ok(
      failures.some((error) => error.message === "timeout exceeded when trying to connect"),
      failures.map((error) => error.message).join("; "),
    );
    for (const error of failures) assert.equal(await codeOf(error), "NOT_READY");
  } finally {
    unwatchPool(pool);
    await pool.end();
    await silent.close();
  }
});

Deno.test({
  name: "a full pool is judged by the database the request's statements went to",
  ignore: !testDatabaseUrl,
  fn: async () => {
    // A replica's pool, full and answering; a primary's, full and never answering.
    const answering = new pg.Pool({ connectionString: testDatabaseUrl, max: 1 });
    watchPool(answering, "replica", 20_000);
    await answering.query("SELECT 1");
    const holding = await answering.connect();
    const silent = silentServer();
    // Its one connection hangs in its start for the whole test.
    const stuck = silentPool(silent.port, 30_000);
    watchPool(stuck, "primary", 20_000);
    const connecting = stuck.connect().then(() => assert.fail("connected"), () => {});
    try {
      assert.equal(poolBusy("replica"), true);
      assert.equal(poolBusy("primary"), false);
      const timedOut = new Error("timeout exceeded when trying to connect");
      assert.equal(await codeOf(timedOut), "NOT_READY");
      assert.equal(await codeOf(timedOut, true), "BUSY");
    } finally {
      holding.release();
      // The silent server's end fails the hanging start.
      await silent.close();
      await connecting;
      unwatchPool(answering);
      unwatchPool(stuck);
      await answering.end();
      await stuck.end();
    }
  },
});

Deno.test({
  name: "a request that waited for a pool held by long statements is 503 BUSY with Retry-After, " +
    "and readiness holds",
  ignore: !testDatabaseUrl,
  fn: async () => {
    const db = await makeTestDatabase();
    // One connection, given up after 300 ms of waiting.
    const runtime = ManagedRuntime.make(pgLayer({
      url: Redacted.make(db.url!),
      maxConnections: 1,
      statementMs: DEFAULT_LIMITS.statementMs,
      lockMs: DEFAULT_LIMITS.lockMs,
      connectMs: 300,
    }));
    const layer = Layer.effectContext(runtime.runtimeEffect.pipe(Effect.map((rt) => rt.context)));
    const { key } = await runtime.runPromise(
      issueKey({ member: "m", permissions: ["read"], stores: null, lifetime: null }),
    );
    const { handler, dispose } = makeHandler(Layer.merge(layer, AppConfig.make({})), {
      log: quietLog,
    });
    try {
      assert.equal((await handler(new Request("http://x/health/ready"))).status, 200);
      // The one connection held by a statement longer than a client waits for a connection (and
      // than the pool's wait), within its time limit: the database answers it in the end.
      const holding = runtime.runPromise(
        Effect.flatMap(SqlClient.SqlClient, (sql) => sql`SELECT pg_sleep(10)`),
      );
      await new Promise((resolve) => setTimeout(resolve, 5_500));
      const ready = await handler(new Request("http://x/health/ready"));
      assert.equal(ready.status, 200, await ready.text());
      const stores = await handler(
        new Request("http://x/api/v1/stores", { headers: { authorization: `Bearer ${key}` } }),
      );
      const body = await stores.json();
      assertErrorBody({ status: stores.status, headers: stores.headers, body }, 503, "BUSY");
      assert.equal(stores.headers.get("retry-after"), "1");
      // The same refusal made by the front door's credential check, before a body is read (a
      // preview, an export, the portfolio): the console waits for its Retry-After and asks again.
      const portfolio = await handler(
        new Request("http://x/api/v1/portfolio?start=2026-01-01&end=2026-01-31", {
          headers: { authorization: `Bearer ${key}` },
        }),
      );
      assertErrorBody(
        { status: portfolio.status, headers: portfolio.headers, body: await portfolio.json() },
        503,
        "BUSY",
      );
      assert.equal(portfolio.headers.get("retry-after"), "1");
      await holding;
      // Free again: the same request is answered.
      const again = await handler(
        new Request("http://x/api/v1/stores", { headers: { authorization: `Bearer ${key}` } }),
      );
      assert.equal(again.status, 200);
      await again.body?.cancel();
    } finally {
      await dispose();
      await runtime.dispose();
      await db.close();
    }
  },
});

// Lets the forked fibers run up to their next wait.
const settle = Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 0)));

// The code of an item refused after waiting in line for a shared statement of `target`'s database.
const refusedInLine = (target: "primary" | "replica") =>
  Effect.runPromise(
    Effect.scoped(Effect.gen(function* () {
      const gate = yield* Deferred.make<void>();
      const ask = yield* makeBatched(
        (items: ReadonlyArray<number>) => Effect.as(Deferred.await(gate), items),
        { size: 1, running: 1 },
      );
      const first = yield* Effect.fork(onTarget(target)(ask(1)));
      yield* settle;
      const queued = yield* Effect.fork(onTarget(target)(ask(2)));
      yield* settle;
      yield* TestClock.adjust(POOL_WAIT_MS + 1);
      const exit = yield* Fiber.await(queued);
      yield* Deferred.succeed(gate, undefined);
      assert.deepEqual(yield* Fiber.await(first), Exit.succeed(1));
      assert.ok(Exit.isFailure(exit) && exit.cause._tag === "Fail", String(exit));
      return (exit.cause.error as { code: string }).code;
    })).pipe(Effect.provide(TestContext.TestContext)),
  );

Deno.test("an item that waited in line for a shared statement while its database is away is NOT_READY", async () => {
  const silent = silentServer();
  // The primary's pool, full with a connection that hangs in its start for the whole test.
  const stuck = silentPool(silent.port, 30_000);
  watchPool(stuck, "primary", 20_000);
  const connecting = stuck.connect().then(() => assert.fail("connected"), () => {});
  try {
    assert.equal(await refusedInLine("primary"), "NOT_READY");
    // The replica's line is judged by the replica's pool alone: the primary's says nothing of it.
    assert.equal(await refusedInLine("replica"), "BUSY");
  } finally {
    await silent.close();
    await connecting;
    unwatchPool(stuck);
    await stuck.end();
  }
});
