// A database client for tests that watch the statements the service runs: each statement (already
// compiled) goes to the test database's client unchanged, its text noted in `statements` first.
import * as Reactivity from "@effect/experimental/Reactivity";
import * as SqlClient from "@effect/sql/SqlClient";
import type { Connection } from "@effect/sql/SqlConnection";
import * as PgClient from "@effect/sql-pg/PgClient";
import { Effect, Layer, Stream } from "effect";

const countingClient = (statements: Array<string>) => {
  const noted = (sql: string) => Effect.sync(() => statements.push(sql));
  const counting = (connection: Connection): Connection => ({
    execute: (sql, params, rows) =>
      Effect.zipRight(noted(sql), connection.execute(sql, params, rows)),
    executeRaw: (sql, params) => Effect.zipRight(noted(sql), connection.executeRaw(sql, params)),
    executeValues: (sql, params) =>
      Effect.zipRight(noted(sql), connection.executeValues(sql, params)),
    executeUnprepared: (sql, params, rows) =>
      Effect.zipRight(noted(sql), connection.executeUnprepared(sql, params, rows)),
    executeStream: (sql, params, rows) =>
      Stream.unwrap(Effect.as(noted(sql), connection.executeStream(sql, params, rows))),
  });
  return Effect.gen(function* () {
    const inner = yield* SqlClient.SqlClient;
    const shared: Connection = {
      execute: (sql, params) => inner.unsafe(sql, params),
      executeRaw: (sql, params) => inner.unsafe(sql, params).raw,
      executeValues: (sql, params) => inner.unsafe(sql, params).values,
      executeUnprepared: (sql, params) => inner.unsafe(sql, params).unprepared,
      executeStream: (sql, params) => inner.unsafe(sql, params).stream,
    };
    return yield* SqlClient.make({
      acquirer: Effect.succeed(counting(shared)),
      transactionAcquirer: Effect.map(inner.reserve, counting),
      compiler: PgClient.makeCompiler(),
      spanAttributes: [],
    });
  });
};

// makeTestApp's wrapDatabase for such a client.
export const countingStatements = (statements: Array<string>) =>
(
  layer: Layer.Layer<SqlClient.SqlClient>,
): Layer.Layer<SqlClient.SqlClient> =>
  // What else the database's layer gives (the notices of changes) is kept.
  Layer.provideMerge(
    Layer.effect(SqlClient.SqlClient, countingClient(statements)),
    Layer.merge(layer, Reactivity.layer),
  );
