// The repository boundary: statements are not cancelled by an interrupted request, and a lost
// database is "not ready" while any other SQL failure is a defect.
import assert from "node:assert/strict";
import { SqlClient, SqlError } from "@effect/sql";
import { Effect, Exit, Fiber } from "effect";
import { dbBoundary } from "../src/db/errors.ts";
import pg from "pg";
import { databaseKind, makeTestDatabase } from "./db.ts";

const db = await makeTestDatabase();
const run = <A, E>(f: (sql: SqlClient.SqlClient) => Effect.Effect<A, E>) =>
  db.run(Effect.flatMap(SqlClient.SqlClient, f));

Deno.test("an interrupted request lets its statement finish instead of cancelling it", async () => {
  await run((sql) => sql`CREATE TABLE boundary_probe (n int)`);
  await run((sql) =>
    Effect.gen(function* () {
      const fiber = yield* Effect.fork(dbBoundary(
        sql`INSERT INTO boundary_probe SELECT 1 FROM pg_sleep(0.3)`,
      ));
      yield* Effect.sleep("50 millis");
      yield* Fiber.interrupt(fiber);
    })
  );
  const rows = await run((sql) =>
    sql<{ n: number }>`SELECT count(*)::int AS n FROM boundary_probe`
  );
  assert.equal(rows[0].n, 1);
});

Deno.test("a failing statement is a defect (500), not a client error", async () => {
  const exit = await db.run(Effect.exit(
    Effect.flatMap(SqlClient.SqlClient, (sql) => dbBoundary(sql`SELECT * FROM no_such_table`)),
  ));
  assert.ok(Exit.isFailure(exit));
  assert.equal(exit.cause._tag, "Die");
});

Deno.test("a connection failure is 503 NOT_READY", async () => {
  const lost = new SqlError.SqlError({
    message: "Failed to acquire connection",
    cause: Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" }),
  });
  const exit = await Effect.runPromiseExit(dbBoundary(Effect.fail(lost)));
  assert.ok(Exit.isFailure(exit) && exit.cause._tag === "Fail");
  assert.equal((exit.cause.error as { code: string }).code, "NOT_READY");
});

Deno.test("a write refused by a read-only database is 503 NOT_READY, not a defect", async () => {
  const exit = await db.run(Effect.exit(
    Effect.flatMap(SqlClient.SqlClient, (sql) =>
      sql.withTransaction(
        Effect.gen(function* () {
          yield* sql`SET TRANSACTION READ ONLY`;
          return yield* dbBoundary(sql`INSERT INTO boundary_probe VALUES (2)`);
        }),
      )),
  ));
  assert.ok(Exit.isFailure(exit) && exit.cause._tag === "Fail", String(exit));
  assert.equal((exit.cause.error as { code: string }).code, "NOT_READY");
});

Deno.test("a connection lost inside a transaction is 503 NOT_READY, even when its ROLLBACK fails as a defect", async () => {
  // As the SQL client's transaction fails when its ROLLBACK finds the connection gone.
  const lost = new SqlError.SqlError({
    message: "Failed to execute statement",
    cause: new Error("Client has encountered a connection error and is not queryable"),
  });
  const died = await Effect.runPromiseExit(dbBoundary(Effect.die(lost)));
  assert.ok(Exit.isFailure(died) && died.cause._tag === "Fail", String(died));
  assert.equal((died.cause.error as { code: string }).code, "NOT_READY");
  // Any other defect stays one.
  const other = await Effect.runPromiseExit(dbBoundary(Effect.die(new Error("a bug"))));
  assert.ok(Exit.isFailure(other) && other.cause._tag === "Die");
});

Deno.test({
  name:
    "a transaction whose backend is terminated is 503 NOT_READY (PostgreSQL), and keeps nothing",
  ignore: databaseKind !== "postgres",
  fn: async () => {
    await run((sql) => sql`CREATE TABLE IF NOT EXISTS boundary_lost (n int)`);
    // Another connection ends the transaction's backend, as a restart of the database would.
    const terminate = async (pid: number) => {
      const other = new pg.Client({ connectionString: db.url });
      await other.connect();
      await other.query("SELECT pg_terminate_backend($1)", [pid]);
      await other.end();
    };
    const exit = await db.run(Effect.exit(
      Effect.flatMap(SqlClient.SqlClient, (sql) =>
        dbBoundary(sql.withTransaction(
          Effect.gen(function* () {
            yield* sql`INSERT INTO boundary_lost VALUES (1)`;
            const [{ pid }] = yield* sql<{ pid: number }>`SELECT pg_backend_pid() AS pid`;
            yield* Effect.promise(() => terminate(pid));
            yield* sql`INSERT INTO boundary_lost VALUES (2)`;
          }),
        ))),
    ));
    assert.ok(Exit.isFailure(exit) && exit.cause._tag === "Fail", String(exit));
    assert.equal((exit.cause.error as { code: string }).code, "NOT_READY");
    const rows = await run((sql) =>
      sql<{ n: number }>`SELECT count(*)::int AS n FROM boundary_lost`
    );
    assert.equal(rows[0].n, 0);
  },
});

Deno.test({
  name: "close the database",
  fn: () => db.close(),
  sanitizeOps: false,
  sanitizeResources: false,
});
