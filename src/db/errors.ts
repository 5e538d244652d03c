// The repository boundary: a lost database or a busy one becomes 503, any other SQL failure a
// defect (500).
import type { SqlError } from "@effect/sql/SqlError";
import { Effect, FiberRef, Option } from "effect";
import { type ServiceUnavailable, unavailable } from "../domain/errors.ts";
import { Messages } from "../domain/messages.ts";
import { poolBusy } from "../ops/pg_pools.ts";
import { readTarget } from "./read_target.ts";

const connectionCodes = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ETIMEDOUT",
  "ENOTFOUND",
  "EPIPE",
  "57P01", // admin_shutdown
  "57P02", // crash_shutdown
  "57P03", // cannot_connect_now
  "53300", // too_many_connections
]);

// statement_timeout or lock_timeout fired: the database is busy, not broken.
const busyCodes = new Set(["57014", "55P03"]);

// A write refused by a database that takes none now (a standby, a primary being failed over, a
// database set read-only for maintenance): not a defect of the request either.
const READ_ONLY = "25006";

// pg-pool's failure of a request that waited for a connection of a full pool past the wait.
const POOL_WAIT_TIMEOUT = "timeout exceeded when trying to connect";

// A request that waited past the pool's wait while the database kept answering that pool's
// connections (the pool of the database its statements went to) met a busy service (503 BUSY,
// retry shortly), not a database away (NOT_READY).
const unreachableOrBusy = (error: SqlError) =>
  Effect.map(
    FiberRef.get(readTarget),
    (target) =>
      (error.cause as { message?: unknown } | undefined)?.message === POOL_WAIT_TIMEOUT &&
        poolBusy(target)
        ? unavailable(Messages.connectionsBusy())
        : unavailable(Messages.databaseUnreachable()),
  );

export const isConnectionError = (error: SqlError): boolean => {
  if (/acquire connection|Connection error|Failed to connect|timed out/i.test(error.message)) {
    return true;
  }
  const cause = error.cause as { code?: unknown; message?: unknown } | undefined;
  const code = typeof cause?.code === "string" ? cause.code : "";
  if (connectionCodes.has(code) || code.startsWith("08")) return true;
  const text = typeof cause?.message === "string" ? cause.message : "";
  return /Connection terminated|connect ECONNREFUSED|Client has encountered a connection error|PGlite is closed/i
    .test(text);
};

// The statements run uninterruptibly: a client that disconnects must not cancel its query, since
// the driver cancels by backend pid from another connection, and that cancel can land on the next
// request's query once the connection is back in the pool. Interruption takes effect right after.
// A transaction's COMMIT and ROLLBACK fail as defects (the SQL client runs them under orDie): one
// that failed because the connection was lost (the database stopped, the backend terminated) is
// the database's absence too, and nothing of the transaction was kept.
export const dbBoundary = <A, E, R>(
  effect: Effect.Effect<A, E | SqlError, R>,
): Effect.Effect<A, Exclude<E, SqlError> | ServiceUnavailable, R> =>
  Effect.catchIf(
    Effect.uninterruptible(effect),
    (e): e is SqlError => isSqlError(e),
    (error) =>
      isConnectionError(error)
        ? Effect.flip(unreachableOrBusy(error))
        : busyCodes.has(sqlStateOf(error) ?? "")
        ? Effect.fail(unavailable(Messages.dataBusy()))
        : sqlStateOf(error) === READ_ONLY
        ? Effect.fail(unavailable(Messages.noWrites()))
        : Effect.die(error),
  ).pipe(
    Effect.catchSomeDefect((defect) =>
      isSqlError(defect) && isConnectionError(defect)
        ? Option.some(Effect.flip(unreachableOrBusy(defect)))
        : Option.none()
    ),
  ) as Effect.Effect<A, Exclude<E, SqlError> | ServiceUnavailable, R>;

const isSqlError = (e: unknown): e is SqlError => (e as { _tag?: string })?._tag === "SqlError";

// The SQLSTATE of a failed statement ("23505" unique_violation, ...), when the driver gives one.
export const sqlStateOf = (error: unknown): string | undefined => {
  const cause = (error as { cause?: { code?: unknown } } | undefined)?.cause;
  return typeof cause?.code === "string" ? cause.code : undefined;
};

// Turns the SQL failures with the given SQLSTATEs into a contract error; others pass through.
export const onSqlState = <A, E, R, F>(
  effect: Effect.Effect<A, E | SqlError, R>,
  states: ReadonlyArray<string>,
  toError: (state: string) => F,
): Effect.Effect<A, E | SqlError | F, R> =>
  Effect.catchIf(
    effect,
    (e): e is SqlError =>
      (e as { _tag?: string })?._tag === "SqlError" && states.includes(sqlStateOf(e) ?? ""),
    (error) => Effect.fail(toError(sqlStateOf(error) ?? "")),
  ) as Effect.Effect<A, E | SqlError | F, R>;
