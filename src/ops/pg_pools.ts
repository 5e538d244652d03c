// The state of the service's pg connection pools, for /metrics: src/db/ hands each pool it makes
// to watchPool, which counts its checkouts from the pool's own "acquire" event.
import type pg from "pg";
import type { PoolFacts } from "./metrics.ts";

const pools = new Set<pg.Pool>();
let checkouts = 0;
const counted = () => {
  checkouts++;
};

export const watchPool = (pool: pg.Pool) => {
  pools.add(pool);
  pool.on("acquire", counted);
};

export const unwatchPool = (pool: pg.Pool) => {
  pools.delete(pool);
};

// Every live pool together (the service has one, two with a read replica); undefined when none has
// been made.
export const pgPoolFacts = (): PoolFacts | undefined => {
  let total = 0, idle = 0, waiting = 0, max = 0, live = 0;
  for (const pool of pools) {
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
