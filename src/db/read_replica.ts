// A read replica (DATABASE_READ_URL, a streaming standby of DATABASE_URL): the SqlClient that sends
// a fiber's statements to the primary or to the replica, and ReadReplica, which decides where a read
// goes from what the replica has replayed. docs/scaling.md#read-replicas states the rules.
//
// A read's data is named by a commit number (commit_clock.seq, the number inside its Data-Token);
// the replica's position is its own commit_clock row, read on the replica: it holds every commit up
// to that number, since a standby replays commits in the order they became visible.
import * as Reactivity from "@effect/experimental/Reactivity";
import * as SqlClient from "@effect/sql/SqlClient";
import type { SqlError } from "@effect/sql/SqlError";
import * as PgClient from "@effect/sql-pg/PgClient";
import {
  Context,
  Deferred,
  Effect,
  Exit,
  FiberId,
  FiberRef,
  Layer,
  Schedule,
  type Scope,
} from "effect";
import type pg from "pg";
import type { ReplicaSettings } from "../config.ts";
import { isConnectionError } from "./errors.ts";
import { type ReadTarget, readTarget } from "./read_target.ts";

export function onTarget(target: ReadTarget) {
  return <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    Effect.locally(effect, readTarget, target);
}

// Statements that write whatever request runs them (a setting stored on first use).
export const onPrimary = onTarget("primary");

// The running fiber's target, for effects run later outside it (an export's pages, read while
// its body is sent).
export const keepTarget = Effect.map(FiberRef.get(readTarget), onTarget);

// What a read asks for: the current data, the data of a commit (a data token: its number and the
// snapshot's generation), or the data known at an instant (known_at, RFC 3339 as the API took it).
export type ReadNeed =
  | { readonly kind: "current" }
  | { readonly kind: "commit"; readonly seq: bigint; readonly generation: string }
  | { readonly kind: "instant"; readonly at: string };

export interface ReplicaStatus {
  // Reads go to the replica.
  readonly used: boolean;
  // Why they go to the primary instead.
  readonly reason: string | undefined;
}

export interface ReadReplicaShape {
  readonly configured: boolean;
  // Where a read with this need goes: the replica when it has the data (waiting up to the
  // setting for it to replay a newer commit), else the primary.
  readonly route: (need: ReadNeed) => Effect.Effect<ReadTarget>;
  // Probed now (at most one probe per quarter second).
  readonly status: Effect.Effect<ReplicaStatus>;
  // Completes once reads no longer go to the replica (at once if they do not now): a read in
  // flight there when a probe finds it frozen or gone is made again on the primary.
  readonly unusable: Effect.Effect<void>;
}

export class ReadReplica extends Context.Tag("Db/ReadReplica")<ReadReplica, ReadReplicaShape>() {}

// No replica: every read on the one database.
export const noReplica: ReadReplicaShape = {
  configured: false,
  route: () => Effect.succeed("primary"),
  status: Effect.succeed({ used: false, reason: "no replica configured" }),
  unusable: Effect.void,
};

const PROBE_EVERY = "1 second";
const PROBE_TIMEOUT = "1 second";
// A read waiting for the replica looks again this often.
const POLL_MS = 20;

// The replica's position: its last replayed commit (number, instant in ms), the snapshot it holds,
// and the WAL it has replayed (as a byte count, compared with the primary's).
const REPLICA_SQL = `
SELECT k.seq::text AS seq,
  floor(extract(epoch FROM k.committed_at) * 1000)::float8 AS committed_ms,
  (SELECT left(d.generation, 16) FROM dataset d LIMIT 1) AS generation,
  pg_wal_lsn_diff(CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn()
    ELSE pg_current_wal_lsn() END, '0/0')::text AS lsn
FROM commit_clock k`;

const PRIMARY_SQL = `SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::text AS lsn`;

// The primary's last commit made at or before an instant: what a known_at read needs.
const INSTANT_SQL = `
SELECT coalesce((SELECT max(c.seq) FROM commits c WHERE c.committed_at <= $1::timestamptz), 0)::text
    AS seq,
  (SELECT left(d.generation, 16) FROM dataset d LIMIT 1) AS generation`;

interface ReplicaRow {
  readonly seq: string;
  readonly committed_ms: number | null;
  readonly generation: string | null;
  readonly lsn: string | null;
}

interface Seen {
  readonly up: boolean;
  // It answered, with an error (its schema not replayed yet, say).
  readonly reachable: boolean;
  readonly error: string | undefined;
  readonly seq: bigint;
  readonly generation: string | null;
  readonly committedMs: number | null;
  readonly lsn: bigint;
  // performance.now() of the probe.
  readonly at: number;
}

// An instant's milliseconds (the fraction cut to 3 digits, which Date.parse reads).
const instantMs = (at: string) => Date.parse(at.replace(/(\.\d{3})\d+/, "$1"));

// The replica answered the probe with an error of its own (not a lost connection or a timeout).
const isSqlAnswer = (error: unknown) =>
  (error as { _tag?: string })?._tag === "SqlError" && !isConnectionError(error as SqlError);

const messageOf = (error: unknown) =>
  String((error as { cause?: { message?: unknown } })?.cause?.message ?? error).slice(0, 200);

export const makeReadReplica = (
  primary: SqlClient.SqlClient,
  replica: SqlClient.SqlClient,
  settings: ReplicaSettings,
) =>
  Effect.gen(function* () {
    let seen: Seen = {
      up: false,
      reachable: false,
      error: "not probed yet",
      seq: 0n,
      generation: null,
      committedMs: null,
      lsn: 0n,
      at: -Infinity,
    };
    // The primary's WAL position at each probe of the last max-lag window: the replica is behind
    // by at least the age of the oldest one it has not replayed.
    let samples: Array<{ readonly at: number; readonly lsn: bigint }> = [];
    let behindMs = 0;
    let used: boolean | undefined;
    // Completed when reads stop going to the replica; a new one each time they go there again.
    let dropped = Deferred.unsafeMake<void>(FiberId.none);
    const probing = yield* Effect.makeSemaphore(1);

    const usable = () => seen.up && behindMs < settings.maxLagMs;
    // Why reads go to the primary, in words that name no address (the ready answer needs no
    // credential); the log has the driver's message.
    const reason = () =>
      !seen.up
        ? seen.reachable ? "replica not readable" : "replica unreachable"
        : behindMs >= settings.maxLagMs
        ? `replica behind by more than ${settings.maxLagMs} ms`
        : undefined;

    // A change of where current reads go is logged once.
    const noteChange = Effect.suspend(() => {
      const now = usable();
      if (now === used) return Effect.void;
      used = now;
      if (now) dropped = Deferred.unsafeMake<void>(FiberId.none);
      else Deferred.unsafeDone(dropped, Exit.void);
      if (now) return Effect.logInfo("reads of current data go to the replica");
      const detail = seen.up ? "" : `: ${seen.error ?? "no answer"}`;
      return Effect.logWarning(`reads go to the primary: ${reason()}${detail}`);
    });

    const lagOf = (now: number) => {
      const missed = samples.find((s) => s.lsn > seen.lsn);
      behindMs = missed === undefined ? 0 : now - missed.at;
    };

    const probeReplica = Effect.gen(function* () {
      const rows = yield* replica.unsafe<ReplicaRow>(REPLICA_SQL).pipe(
        Effect.timeoutFail({
          duration: PROBE_TIMEOUT,
          onTimeout: () => new Error("no answer within 1 s"),
        }),
      );
      const row = rows[0];
      seen = {
        up: true,
        reachable: true,
        error: undefined,
        seq: BigInt(row?.seq ?? "0"),
        generation: row?.generation ?? null,
        committedMs: row?.committed_ms ?? null,
        lsn: BigInt(row?.lsn ?? "0"),
        at: performance.now(),
      };
    }).pipe(
      Effect.catchAll((error) =>
        Effect.sync(() => {
          seen = {
            ...seen,
            up: false,
            reachable: isSqlAnswer(error),
            error: messageOf(error),
            at: performance.now(),
          };
        })
      ),
      Effect.tap(() => lagOf(performance.now())),
    );

    // The primary's position first, then the replica's: a replica that replayed it is not behind.
    const probeBoth = Effect.gen(function* () {
      const rows = yield* primary.unsafe<{ lsn: string }>(PRIMARY_SQL).pipe(
        Effect.timeout(PROBE_TIMEOUT),
        Effect.option,
      );
      const now = performance.now();
      if (rows._tag === "Some" && rows.value[0] !== undefined) {
        samples.push({ at: now, lsn: BigInt(rows.value[0].lsn) });
      }
      // Kept: the window, and the newest sample older than it.
      const old = samples.filter((s) => s.at <= now - settings.maxLagMs);
      samples = [...old.slice(-1), ...samples.filter((s) => s.at > now - settings.maxLagMs)];
      yield* probeReplica;
    });

    // One probe at a time; a caller content with one at most `maxAgeMs` old shares the last.
    const fresh = (maxAgeMs: number, probe: Effect.Effect<void>) => {
      const probed = Effect.zipRight(probe, noteChange);
      const unlessRecent = Effect.suspend(() =>
        performance.now() - seen.at <= maxAgeMs ? Effect.void : probed
      );
      return probing.withPermits(1)(unlessRecent);
    };

    yield* fresh(0, probeBoth);
    yield* Effect.forkScoped(
      Effect.repeat(fresh(0, probeBoth), Schedule.spaced(PROBE_EVERY)).pipe(
        Effect.withTracerEnabled(false),
      ),
    );

    const has = (need: { readonly seq: bigint; readonly generation: string | null }) =>
      seen.generation === need.generation && seen.seq >= need.seq;

    // The replica when it replays the commit within the wait, else the primary.
    const waitFor = (need: { readonly seq: bigint; readonly generation: string | null }) =>
      Effect.gen(function* () {
        if (has(need)) return "replica" as const;
        if (settings.waitMs === 0) return "primary" as const;
        const deadline = performance.now() + settings.waitMs;
        while (true) {
          yield* fresh(POLL_MS / 2, probeReplica);
          if (!usable()) return "primary" as const;
          if (has(need)) return "replica" as const;
          const left = deadline - performance.now();
          if (left <= 0) return "primary" as const;
          yield* Effect.sleep(Math.min(POLL_MS, left));
        }
      });

    const route = (need: ReadNeed): Effect.Effect<ReadTarget> =>
      Effect.gen(function* () {
        if (!usable()) return "primary" as const;
        if (need.kind === "current") return "replica" as const;
        if (need.kind === "commit") return yield* waitFor(need);
        // Commit instants never go backwards: a replayed commit later than the instant means every
        // commit made by then is replayed. Otherwise the primary names the last one made by then.
        const at = instantMs(need.at);
        if (seen.committedMs !== null && seen.committedMs > at) return "replica" as const;
        const rows = yield* primary.unsafe<{ seq: string; generation: string | null }>(
          INSTANT_SQL,
          [need.at],
        ).pipe(Effect.option);
        if (rows._tag === "None" || rows.value[0] === undefined) return "primary" as const;
        const row = rows.value[0];
        return yield* waitFor({ seq: BigInt(row.seq), generation: row.generation });
      }).pipe(Effect.withTracerEnabled(false));

    // The replica failed to give a connection: reads go to the primary until a probe finds it back.
    const lost = (error: SqlError) =>
      Effect.suspend(() => {
        seen = {
          ...seen,
          up: false,
          reachable: false,
          error: messageOf(error),
          at: performance.now(),
        };
        return noteChange;
      });

    const status = Effect.map(
      fresh(250, probeBoth),
      (): ReplicaStatus => ({ used: usable(), reason: reason() }),
    );

    const unusable = Effect.suspend(() => usable() ? Deferred.await(dropped) : Effect.void);

    return {
      shape: { configured: true, route, status, unusable } satisfies ReadReplicaShape,
      usable,
      lost,
    };
  });

// The client every service gets when a replica is configured: a statement (or a transaction) goes
// where the fiber's readTarget says, to the primary when the replica is not usable or gives no
// connection. Each statement takes a pooled connection of the chosen pool and gives it back.
export const routingLayer = (
  primaryPool: Effect.Effect<pg.Pool, SqlError, Scope.Scope>,
  replicaPool: Effect.Effect<pg.Pool, SqlError, Scope.Scope>,
  settings: ReplicaSettings,
  applicationName: string,
): Layer.Layer<SqlClient.SqlClient | PgClient.PgClient | ReadReplica, SqlError> =>
  Layer.scopedContext(Effect.gen(function* () {
    const primary = yield* PgClient.fromPool({ acquire: primaryPool, applicationName });
    const replica = yield* PgClient.fromPool({ acquire: replicaPool, applicationName });
    const decider = yield* makeReadReplica(primary, replica, settings);
    const acquire = Effect.flatMap(
      FiberRef.get(readTarget),
      (target) =>
        target === "replica" && decider.usable()
          ? Effect.catchAll(
            replica.reserve,
            (error) => Effect.zipRight(decider.lost(error), primary.reserve),
          )
          : primary.reserve,
    );
    const client = yield* SqlClient.make({
      acquirer: acquire,
      transactionAcquirer: acquire,
      compiler: PgClient.makeCompiler(),
      spanAttributes: [["db.system.name", "postgresql"]],
    });
    return Context.make(SqlClient.SqlClient, client).pipe(
      Context.add(PgClient.PgClient, primary),
      Context.add(ReadReplica, decider.shape),
    );
  })).pipe(Layer.provide(Reactivity.layer));
