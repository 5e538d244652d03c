// An @effect/sql client over embedded PGlite: one connection, serialised by a one-permit semaphore.
import * as Reactivity from "@effect/experimental/Reactivity";
import * as SqlClient from "@effect/sql/SqlClient";
import * as SqlError from "@effect/sql/SqlError";
import type { Connection } from "@effect/sql/SqlConnection";
import * as PgClient from "@effect/sql-pg/PgClient";
import type { PGlite } from "@electric-sql/pglite";
import { Context, Effect, Layer, Stream } from "effect";

// PGlite's extended protocol takes one statement; parameterless text (migrations) may hold several.
const run = (
  db: PGlite,
  sql: string,
  params: ReadonlyArray<unknown>,
): Effect.Effect<ReadonlyArray<object>, SqlError.SqlError> =>
  Effect.tryPromise({
    try: async (): Promise<ReadonlyArray<object>> => {
      if (params.length === 0) {
        const results = await db.exec(sql);
        return results.length === 0 ? [] : results[results.length - 1].rows;
      }
      return (await db.query<object>(sql, params as Array<unknown>)).rows;
    },
    catch: (cause) => new SqlError.SqlError({ cause, message: "Failed to execute statement" }),
  });

const runValues = (db: PGlite, sql: string, params: ReadonlyArray<unknown>) =>
  Effect.tryPromise({
    try: async () =>
      (await db.query<Array<unknown>>(sql, params as Array<unknown>, { rowMode: "array" }))
        .rows as ReadonlyArray<ReadonlyArray<unknown>>,
    catch: (cause) => new SqlError.SqlError({ cause, message: "Failed to execute statement" }),
  });

const makeConnection = (
  db: PGlite,
  guard: <A, E>(effect: Effect.Effect<A, E>) => Effect.Effect<A, E>,
): Connection => {
  const execute = (
    sql: string,
    params: ReadonlyArray<unknown>,
    transformRows: (<A extends object>(row: ReadonlyArray<A>) => ReadonlyArray<A>) | undefined,
  ) => {
    const rows = guard(run(db, sql, params));
    return transformRows ? Effect.map(rows, transformRows) : rows;
  };
  return {
    execute,
    executeRaw: (sql, params) => guard(run(db, sql, params)),
    executeValues: (sql, params) => guard(runValues(db, sql, params)),
    executeUnprepared: execute,
    executeStream: (sql, params, transformRows) =>
      Stream.fromIterableEffect(execute(sql, params, transformRows)),
  };
};

export const makePgliteClient = (db: PGlite) =>
  Effect.gen(function* () {
    const permit = yield* Effect.makeSemaphore(1);
    // Outside a transaction each statement takes the permit; a transaction holds it for its whole scope.
    const shared = makeConnection(db, permit.withPermits(1));
    const reserved = makeConnection(db, (effect) => effect);
    return yield* SqlClient.make({
      acquirer: Effect.succeed(shared),
      transactionAcquirer: Effect.as(
        Effect.acquireRelease(permit.take(1), () => permit.release(1)),
        reserved,
      ),
      compiler: PgClient.makeCompiler(),
      spanAttributes: [["db.system.name", "pglite"]],
    });
  });

export const layerPglite = (db: PGlite): Layer.Layer<SqlClient.SqlClient> =>
  Layer.effectContext(
    Effect.map(makePgliteClient(db), (client) => Context.make(SqlClient.SqlClient, client)),
  ).pipe(Layer.provide(Reactivity.layer));
