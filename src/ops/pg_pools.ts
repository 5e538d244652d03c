// The state of the pg connection pools of this process, for /metrics. src/db/ makes the service's
// pool inside @effect/sql-pg, which keeps it to itself; every pool takes its connections through
// connect(), so that method is wrapped once to learn the pools and count the checkouts.
import pg from "pg";
import type { PoolFacts } from "./metrics.ts";

interface PoolState {
  readonly totalCount: number;
  readonly idleCount: number;
  readonly waitingCount: number;
  readonly ended: boolean;
  readonly options: { readonly max?: number };
}

const pools = new Set<PoolState>();
let checkouts = 0;
let tracking = false;

// Idempotent: the first call wraps pg.Pool.prototype.connect (one Set.add per checkout).
export const trackPgPools = () => {
  if (tracking) return;
  tracking = true;
  const proto = pg.Pool.prototype as unknown as {
    connect: (this: PoolState, ...args: Array<unknown>) => unknown;
  };
  const connect = proto.connect;
  proto.connect = function (this: PoolState, ...args: Array<unknown>) {
    pools.add(this);
    checkouts++;
    return connect.apply(this, args);
  };
};

// Every live pool together (the service has one); undefined when none has been used.
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
