// The state of the service's pg connection pools, for /metrics and for telling a busy database
// from one away: src/db/ hands each pool it makes to watchPool, which counts its checkouts from
// the pool's own "acquire" event and notes when a connection last came back from the database.
import type pg from "pg";
import type { PoolFacts } from "./metrics.ts";

// How long a request waits for a connection of a pool whose connections are all in use (pg-pool's
// connectionTimeoutMillis, which also bounds making a new connection).
export const POOL_WAIT_MS = 5_000;

// Which database a pool's connections go to.
export type PoolRole = "primary" | "replica";

// Each pool, with its role, its checkouts, and when one of its connections was last given back
// without an error (a statement that reached the database and was answered).
const pools = new Map<pg.Pool, { role: PoolRole; checkouts: number; answeredAt: number }>();

export const watchPool = (pool: pg.Pool, role: PoolRole) => {
  const state = { role, checkouts: 0, answeredAt: -Infinity };
  pools.set(pool, state);
  pool.on("acquire", () => {
    state.checkouts++;
  });
  pool.on("release", (error: unknown) => {
    if (!error) state.answeredAt = performance.now();
  });
};

// Whether a pool has every connection in use (or requests waiting for one) while its database
// answered within the last `ms`: a pool that is busy, not a database away. A request that waited
// for a connection past the pool's wait, or a readiness probe, is then told the service is busy.
export const poolBusyWithin = (ms: number): boolean => {
  const now = performance.now();
  for (const [pool, state] of pools) {
    if (pool.ended || now - state.answeredAt > ms) continue;
    const max = pool.options.max ?? 10;
    if (pool.waitingCount > 0 || (pool.totalCount >= max && pool.idleCount === 0)) return true;
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
      max: pool.options.max ?? 10,
      checkouts: state.checkouts,
    });
  }
  return facts;
};
