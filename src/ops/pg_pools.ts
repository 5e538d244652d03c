// The state of the service's pg connection pools, for /metrics and for telling a busy database
// from one away: src/db/ hands each pool it makes to watchPool, which counts its checkouts from
// the pool's own "acquire" event and notes when a connection last came back from the database.
import type pg from "pg";
import type { PoolFacts } from "./metrics.ts";

// How long a request waits for a connection of a pool whose connections are all in use (pg-pool's
// connectionTimeoutMillis, which also bounds making a new connection).
export const POOL_WAIT_MS = 5_000;

// Each pool, with when one of its connections was last given back without an error (a statement
// that reached the database and was answered).
const pools = new Map<pg.Pool, { answeredAt: number }>();
let checkouts = 0;
const counted = () => {
  checkouts++;
};

export const watchPool = (pool: pg.Pool) => {
  const state = { answeredAt: -Infinity };
  pools.set(pool, state);
  pool.on("acquire", counted);
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

// Every live pool together (the service has one, two with a read replica); undefined when none has
// been made.
export const pgPoolFacts = (): PoolFacts | undefined => {
  let total = 0, idle = 0, waiting = 0, max = 0, live = 0;
  for (const pool of pools.keys()) {
    if (pool.ended) {
      pools.delete(pool);
      continue;
    }
    live++;
    total += pool.totalCount;
    idle += pool.idleCount;
    waiting += pool.waitingCount;
    max += pool.options.max ?? 10;
  }
  return live === 0 ? undefined : { total, idle, waiting, max, checkouts };
};
