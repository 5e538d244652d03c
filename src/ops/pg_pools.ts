// The state of the service's pg connection pools, for /metrics and for telling a busy database
// from one away: src/db/ hands each pool it makes to watchPool, which counts its checkouts from
// the pool's own "acquire" event and notes when a connection last came back from the database.
import type pg from "pg";
import type { ReadTarget } from "../db/read_target.ts";
import type { PoolFacts } from "./metrics.ts";

// How long a request waits for a connection of a pool whose connections are all in use (pg-pool's
// connectionTimeoutMillis, which also bounds making a new connection).
export const POOL_WAIT_MS = 5_000;

// Each pool, with the database it reaches, its checkouts, when one of its connections was last
// given back without an error (a statement that reached the database and was answered), and how
// long after that its connections may all still be held by statements the database will answer (a
// statement's time limit, then the wait for a connection).
interface PoolState {
  readonly role: ReadTarget;
  readonly answersWithinMs: number;
  checkouts: number;
  answeredAt: number;
}
const pools = new Map<pg.Pool, PoolState>();

export const watchPool = (pool: pg.Pool, role: ReadTarget, answersWithinMs: number) => {
  const state: PoolState = { role, answersWithinMs, checkouts: 0, answeredAt: -Infinity };
  pools.set(pool, state);
  pool.on("acquire", () => {
    state.checkouts++;
  });
  pool.on("release", (error: unknown) => {
    if (!error) state.answeredAt = performance.now();
  });
};

// pg-pool's own default when no max is given.
const maxOf = (pool: pg.Pool) => pool.options.max ?? 10;

const isFull = (pool: pg.Pool) =>
  pool.waitingCount > 0 || (pool.totalCount >= maxOf(pool) && pool.idleCount === 0);

// Whether a full pool (every connection in use, or requests waiting for one) is busy rather than
// cut off from its database: one of its connections came back answered within its window. The
// pool judged is the full one reaching `role` (the database the request's statements went to),
// else the other one if that one is full; false when no pool is full.
export const poolBusy = (role: ReadTarget): boolean => {
  const now = performance.now();
  let other: boolean | undefined;
  for (const [pool, state] of pools) {
    if (pool.ended || !isFull(pool)) continue;
    const answering = now - state.answeredAt <= state.answersWithinMs;
    if (state.role === role) return answering;
    other ??= answering;
  }
  return other ?? false;
};

// Whether the pool reaching `role` itself is full and its database has not answered it within its
// window: that database is away. (Unlike poolBusy, which judges a request pg-pool refused, the other
// database's pool says nothing about this one.)
export const poolAway = (role: ReadTarget): boolean => {
  const now = performance.now();
  for (const [pool, state] of pools) {
    if (state.role !== role || pool.ended || !isFull(pool)) continue;
    if (now - state.answeredAt > state.answersWithinMs) return true;
  }
  return false;
};

export const unwatchPool = (pool: pg.Pool) => {
  pools.delete(pool);
};

// Each live pool (the service has one, two with a read replica); none when none has been made.
export const pgPoolFacts = (): ReadonlyArray<PoolFacts> => {
  const facts: Array<PoolFacts> = [];
  for (const [pool, state] of pools) {
    if (pool.ended) {
      pools.delete(pool);
      continue;
    }
    facts.push({
      role: state.role,
      total: pool.totalCount,
      idle: pool.idleCount,
      waiting: pool.waitingCount,
      max: maxOf(pool),
      checkouts: state.checkouts,
    });
  }
  return facts;
};
