// An @effect/sql client over embedded PGlite: one connection, its statements in line for one permit.
import * as Reactivity from "@effect/experimental/Reactivity";
import * as SqlClient from "@effect/sql/SqlClient";
import * as SqlError from "@effect/sql/SqlError";
import type { Connection } from "@effect/sql/SqlConnection";
import * as PgClient from "@effect/sql-pg/PgClient";
import { Context, Effect, Layer, Stream } from "effect";
import { makePermits } from "../ops/permits.ts";

// An embedded database: PGlite in its worker (pglite_worker.ts), or on this thread. Rows and
// errors are PGlite's own (an error's SQLSTATE in `code`).
export interface PgliteHandle {
  // One statement with parameters; its rows as objects, or (values) as arrays.
  readonly query: (sql: string, params: ReadonlyArray<unknown>) => Promise<ReadonlyArray<object>>;
  readonly values: (
    sql: string,
    params: ReadonlyArray<unknown>,
  ) => Promise<ReadonlyArray<ReadonlyArray<unknown>>>;
  // Parameterless text of one or more statements (migrations): the rows of the last.
  readonly exec: (sql: string) => Promise<ReadonlyArray<object>>;
  readonly close: () => Promise<void>;
  // Settles with why, if the database is lost for good while open (its worker ended); never once
  // it is closed.
  readonly lost?: Promise<Error>;
}

// PGlite's extended protocol takes one statement; parameterless text (migrations) may hold several.
const run = (
  db: PgliteHandle,
  sql: string,
  params: ReadonlyArray<unknown>,
): Effect.Effect<ReadonlyArray<object>, SqlError.SqlError> =>
  Effect.tryPromise({
    try: () => params.length === 0 ? db.exec(sql) : db.query(sql, params),
    catch: (cause) => new SqlError.SqlError({ cause, message: "Failed to execute statement" }),
  });

const runValues = (db: PgliteHandle, sql: string, params: ReadonlyArray<unknown>) =>
  Effect.tryPromise({
    try: () => db.values(sql, params),
    catch: (cause) => new SqlError.SqlError({ cause, message: "Failed to execute statement" }),
  });

const makeConnection = (
  db: PgliteHandle,
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

export const makePgliteClient = (db: PgliteHandle) =>
  Effect.gen(function* () {
    const permit = yield* makePermits(1);
    // Outside a transaction each statement takes the permit; a transaction holds it for its whole scope.
    const shared = makeConnection(db, permit.withPermit);
    const reserved = makeConnection(db, (effect) => effect);
    return yield* SqlClient.make({
      acquirer: Effect.succeed(shared),
      transactionAcquirer: Effect.as(
        Effect.acquireRelease(permit.take, () => permit.release),
        reserved,
      ),
      compiler: PgClient.makeCompiler(),
      spanAttributes: [["db.system.name", "pglite"]],
    });
  });

export const layerPglite = (db: PgliteHandle): Layer.Layer<SqlClient.SqlClient> =>
  Layer.effectContext(
    Effect.map(makePgliteClient(db), (client) => Context.make(SqlClient.SqlClient, client)),
  ).pipe(Layer.provide(Reactivity.layer));
