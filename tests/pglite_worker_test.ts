// The embedded database in its worker: the event loop runs on during a long statement; values,
// parameters, errors and transactions are those of PGlite on this thread; a closed or lost worker
// fails its queries as "not ready" instead of leaving them waiting.
import assert from "node:assert/strict";
import { SqlClient } from "@effect/sql";
import { SqlError } from "@effect/sql/SqlError";
import { PGlite } from "@electric-sql/pglite";
import { Decimal } from "decimal.js";
import { Effect, Exit, ManagedRuntime } from "effect";
import { dbBoundary, isConnectionError, sqlStateOf } from "../src/db/errors.ts";
import { layerPglite, type PgliteHandle } from "../src/db/pglite_client.ts";
import { inProcess, startPgliteWorker } from "../src/db/pglite_worker.ts";

const worker = await startPgliteWorker(undefined, []);
const local = inProcess(await PGlite.create());
const runtime = ManagedRuntime.make(layerPglite(worker));
const run = <A, E>(effect: Effect.Effect<A, E, SqlClient.SqlClient>) => runtime.runPromise(effect);

// Both databases answer the same statement; the worker's answer must equal this thread's.
const same = async (ask: (db: PgliteHandle) => Promise<unknown>) => {
  const [there, here] = await Promise.all([ask(worker), ask(local)]);
  assert.deepStrictEqual(there, here);
  return there;
};

const failureOf = async (promise: Promise<unknown>) => {
  try {
    await promise;
  } catch (error) {
    return error as Error & Record<string, unknown>;
  }
  assert.fail("expected the statement to fail");
};

Deno.test("a long statement in the embedded database leaves the event loop running", async () => {
  let ticks = 0;
  const timer = setInterval(() => ticks++, 10);
  try {
    await run(Effect.flatMap(SqlClient.SqlClient, (sql) => sql`SELECT pg_sleep(1.5)`));
    // Blocked, the loop would run the timer at most once after the statement.
    assert.ok(ticks >= 5, `the timer fired ${ticks} times during the statement`);
  } finally {
    clearInterval(timer);
  }
});

const TYPES = `SELECT 1::int2 AS i2, 2::int4 AS i4, 3::int8 AS small8,
  9223372036854775807::int8 AS big8, 1.5::float4 AS f4, 'NaN'::float8 AS nan,
  '-Infinity'::float8 AS minf, 12345.678901234567890123::numeric AS num, true AS b,
  'text ü "q"'::text AS t, 'v'::varchar(3) AS v, 'c'::char(2) AS c, '2024-02-29'::date AS d,
  'infinity'::date AS dinf, '2024-03-31 01:30:00.123456+02'::timestamptz AS tz,
  '2024-03-31 01:30:00'::timestamp AS ts, '12:34:56'::time AS tm, '1 day 02:00'::interval AS iv,
  '{"a": [1, 2.5, null, "x"], "__proto__": {"p": 1}, "big": 12345678901234567890}'::jsonb AS jb,
  '{"z": 1, "a": 2}'::json AS j, '\\x00ff10'::bytea AS by, '\\x'::bytea AS empty,
  ARRAY[1, 2, 3]::int4[] AS ai, ARRAY[1, 9223372036854775807]::int8[] AS a8,
  ARRAY['a', NULL, 'b"c,{}']::text[] AS at, ARRAY[1.10, 2]::numeric[] AS an,
  ARRAY['2024-01-01'::date] AS ad, '{{1,2},{3,4}}'::int4[] AS a2, '{}'::int4[] AS a0,
  ARRAY['{"k": 1}'::jsonb] AS aj, NULL::int4 AS n, '5c4a2f5e-3b1a-4c2b-9d3e-1f2a3b4c5d6e'::uuid AS u`;

Deno.test("values cross as PGlite returns them on this thread, as objects and as arrays", async () => {
  const [row] = await same((db) => db.query(TYPES, [])) as Array<Record<string, unknown>>;
  await same((db) => db.values(TYPES, []));
  await same((db) => db.exec(TYPES));
  assert.equal(row.small8, 3);
  assert.equal(row.big8, 9223372036854775807n);
  assert.equal(row.num, "12345.678901234567890123");
  assert.ok(row.d instanceof Date && row.tz instanceof Date && row.ts instanceof Date);
  assert.ok(row.by instanceof Uint8Array);
  assert.deepStrictEqual(row.a8, [1, 9223372036854775807n]);
  assert.ok(Object.hasOwn(row.jb as object, "__proto__"));
});

Deno.test("parameters cross as PGlite serialises them on this thread", async () => {
  const params = [
    10n ** 18n,
    "1.23",
    new Date(Date.UTC(2024, 1, 29)),
    new Date(Date.UTC(2024, 2, 31, 1, 30, 0, 123)),
    { a: [1, "x", null], when: new Date(0), big: 7n, amount: new Decimal("1.50") },
    new Uint8Array([0, 255, 16]),
    [1, 2, 3],
    ["a", null, 'b"c'],
    new Decimal("2.50"),
    [new Decimal("0.1"), new Decimal("3")],
    true,
    null,
    "2024-01-01",
    42,
    { plain: true },
    new Decimal("9.90"),
  ];
  const sql = `SELECT $1::int8 AS i8, $2::numeric AS num, $3::date AS d, $4::timestamptz AS tz,
    $5::jsonb AS jb, $6::bytea AS by, $7::int4[] AS ai, $8::text[] AS at, $9::numeric AS dec,
    $10::numeric[] AS decs, $11::bool AS b, $12::text AS n, $13::date AS dtext, $14::int4 AS i4,
    $15::text AS object_text, $16::text AS dec_text`;
  const [row] = await same((db) => db.query(sql, params)) as Array<Record<string, unknown>>;
  await same((db) => db.values(sql, params));
  // A Decimal's text is its toString(), which drops trailing zeros.
  assert.equal(row.dec, "2.5");
  assert.deepStrictEqual(row.decs, ["0.1", "3"]);
  assert.deepStrictEqual(row.jb, {
    a: [1, "x", null],
    when: "1970-01-01T00:00:00.000Z",
    big: "7",
    amount: "1.5",
  });
  assert.equal(row.object_text, "[object Object]");
  assert.equal(row.dec_text, "9.9");
  // A parameter PGlite refuses is refused the same way.
  const there = await failureOf(worker.query("SELECT $1::bytea", ["not bytes"]));
  const here = await failureOf(local.query("SELECT $1::bytea", ["not bytes"]));
  assert.equal(there.message, here.message);
});

Deno.test("errors cross with PostgreSQL's fields, and the boundary classifies them", async () => {
  for (const text of ["CREATE TABLE uniq (k int PRIMARY KEY)", "INSERT INTO uniq VALUES (1)"]) {
    await same((db) => db.exec(text));
  }
  const cases: Array<[string, ReadonlyArray<unknown>, string]> = [
    ["INSERT INTO uniq VALUES ($1)", [1], "23505"],
    ["SELECT 1 / $1::int", [0], "22012"],
    ["SELECT 1 / 0", [], "22012"],
    ["SELEKT 1", [], "42601"],
    ["SELECT * FROM missing_table WHERE k = $1", [1], "42P01"],
  ];
  for (const [text, params, code] of cases) {
    const ask = (db: PgliteHandle) => params.length === 0 ? db.exec(text) : db.query(text, params);
    const there = await failureOf(ask(worker));
    const here = await failureOf(ask(local));
    assert.ok(there instanceof Error);
    assert.equal(there.code, code);
    assert.equal(there.message, here.message);
    for (const [key, value] of Object.entries(here)) {
      if (typeof value !== "object" || value === null) {
        assert.deepStrictEqual(there[key], value, key);
      }
    }
  }
  const unique = await failureOf(worker.query("INSERT INTO uniq VALUES ($1)", [1]));
  assert.equal(unique.detail, "Key (k)=(1) already exists.");
  assert.equal(unique.constraint, "uniq_pkey");

  const exit = await runtime.runPromiseExit(
    Effect.flatMap(SqlClient.SqlClient, (sql) => sql`INSERT INTO uniq VALUES (${1})`),
  );
  assert.ok(Exit.isFailure(exit));
  const failure = exit.cause._tag === "Fail" ? exit.cause.error : undefined;
  assert.equal(sqlStateOf(failure), "23505");
  assert.equal(isConnectionError(failure as SqlError), false);
});

Deno.test("a transaction rolls back, a savepoint too, and the client goes on", async () => {
  await run(Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient;
    yield* sql`CREATE TABLE tx (k int PRIMARY KEY)`;
    const failed = yield* Effect.exit(sql.withTransaction(Effect.gen(function* () {
      yield* sql`INSERT INTO tx VALUES (1)`;
      yield* sql`INSERT INTO tx VALUES (1)`;
    })));
    assert.ok(Exit.isFailure(failed));
    assert.deepStrictEqual(yield* sql`SELECT k FROM tx`, []);

    yield* sql.withTransaction(Effect.gen(function* () {
      yield* sql`INSERT INTO tx VALUES (2)`;
      const inner = yield* Effect.exit(sql.withTransaction(Effect.gen(function* () {
        yield* sql`INSERT INTO tx VALUES (3)`;
        return yield* Effect.fail("undo the savepoint");
      })));
      assert.ok(Exit.isFailure(inner));
    }));
    assert.deepStrictEqual(yield* sql`SELECT k FROM tx ORDER BY k`, [{ k: 2 }]);
    // A statement outside waits for a transaction to end: both see a consistent table.
    const [, outside] = yield* Effect.all([
      sql.withTransaction(Effect.zipRight(sql`INSERT INTO tx VALUES (4)`, Effect.sleep(50))),
      Effect.zipRight(Effect.sleep(10), sql`SELECT count(*)::int AS n FROM tx`),
    ], { concurrency: "unbounded" });
    assert.deepStrictEqual(outside, [{ n: 2 }]);
    assert.deepStrictEqual(yield* sql.unsafe("SELECT k FROM tx ORDER BY k").values, [[2], [4]]);
  }));
});

Deno.test("a closed handle fails at once, as a database that is not reachable", async () => {
  const db = await startPgliteWorker(undefined, []);
  assert.deepStrictEqual(await db.query("SELECT $1::int AS x", [1]), [{ x: 1 }]);
  await db.close();
  await db.close();
  const error = await failureOf(db.query("SELECT 1", [1]));
  assert.equal(error.message, "PGlite is closed");
  assert.ok(
    isConnectionError(new SqlError({ cause: error, message: "Failed to execute statement" })),
  );
  const exit = await Effect.runPromiseExit(
    dbBoundary(Effect.flatMap(SqlClient.SqlClient, (sql) => sql`SELECT 1`)).pipe(
      Effect.provide(layerPglite(db)),
    ),
  );
  assert.ok(Exit.isFailure(exit) && exit.cause._tag === "Fail");
  assert.equal((exit.cause.error as { code?: string }).code, "NOT_READY");
});

// A stand-in for the worker that answers "open", then ends in the way given on its first query.
const dyingWorker = (ending: string) =>
  new Worker(
    `data:application/javascript,${
      encodeURIComponent(`
        addEventListener("unload", () => postMessage({ gone: "the worker exited" }));
        onmessage = ({ data }) => {
          if (data.op === "open") return postMessage({ id: data.id, ok: true, value: undefined });
          ${ending};
        };`)
    }`,
    { type: "module" },
  );

for (
  const [how, ending] of [
    [
      "an uncaught error",
      `setTimeout(() => { throw new Error("a fatal error, thrown on purpose"); })`,
    ],
    ["an exit", "Deno.exit(1)"],
  ]
) {
  Deno.test(`a worker lost to ${how} fails the waiting queries as not reachable`, async () => {
    const db = await startPgliteWorker(undefined, [], { worker: dyingWorker(ending) });
    const error = await failureOf(db.query("SELECT 1", [1]));
    assert.equal(error.code, "08006");
    assert.ok(isConnectionError(new SqlError({ cause: error, message: "Failed" })));
    assert.equal((await failureOf(db.exec("SELECT 1"))).code, "08006");
    // The handle says the database is lost for good (the service's liveness then fails).
    assert.match((await db.lost!).message, /worker stopped/);
    await db.close();
  });
}

Deno.test("a worker closed on purpose is not lost", async () => {
  const db = await startPgliteWorker(undefined, []);
  await db.close();
  const settled = await Promise.race([
    db.lost!.then(() => "lost"),
    new Promise((r) => setTimeout(() => r("pending"), 100)),
  ]);
  assert.equal(settled, "pending");
});

Deno.test({
  name: "close the databases",
  fn: async () => {
    await runtime.dispose();
    await worker.close();
    await local.close();
  },
  sanitizeOps: false,
  sanitizeResources: false,
});
