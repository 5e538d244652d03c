// What /metrics asks the database: one statement of index and catalog lookups, at most once per
// PROBE_TTL_MS whatever the scrape rate, under a time limit, never traced.
import * as SqlClient from "@effect/sql/SqlClient";
import * as PgClient from "@effect/sql-pg/PgClient";
import { Effect, Layer, Option, Runtime } from "effect";
import type { DatabaseFacts, OpsMetrics } from "./metrics.ts";
import { pgPoolFacts } from "./pg_pools.ts";
import { ReadReplica } from "../db/read_replica.ts";

const PROBE_TTL_MS = 5_000;
const PROBE_TIMEOUT = "2 seconds";

interface ProbeRow {
  readonly name: string;
  readonly value: number | string | null;
}

// max(id) is one step down the primary key's index, where count(*) would read the whole table (a
// million rows per 700 store-years); the tables that grow with the data are sized by the planner's
// estimates. pg_stat_activity and pg_class are in memory or small catalogs.
const probe = (sql: SqlClient.SqlClient) =>
  sql<ProbeRow>`
    SELECT 'revisions_last_id' AS name, coalesce(max(id), 0)::float8 AS value
      FROM energy_revisions
    UNION ALL
    SELECT 'connections', count(*)::float8 FROM pg_stat_activity
      WHERE datname = current_database()
    UNION ALL
    SELECT 'max_connections', current_setting('max_connections')::float8
    UNION ALL
    SELECT 'rows:' || c.relname, c.reltuples::float8 FROM pg_class c
      WHERE c.oid IN (to_regclass('energy_days'), to_regclass('energy_revisions'),
        to_regclass('energy_months'), to_regclass('import_rows'))`;

const toFacts = (
  driver: DatabaseFacts["driver"],
  rows: ReadonlyArray<ProbeRow>,
  probeSeconds: number,
): DatabaseFacts => {
  const values = new Map(rows.map((r) => [r.name, Number(r.value)]));
  return {
    driver,
    up: true,
    probeSeconds,
    revisionsLastId: values.get("revisions_last_id"),
    // -1: never analysed.
    tableRows: rows.filter((r) => r.name.startsWith("rows:") && Number(r.value) >= 0)
      .map((r) => ({ table: r.name.slice(5), rows: Number(r.value) })),
    serverConnections: values.get("connections"),
    serverMaxConnections: values.get("max_connections"),
  };
};

// Gives the metrics their database sources when the service's layers are built.
export const databaseProbeLayer = (metrics: OpsMetrics) =>
  Layer.effectDiscard(Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient;
    const driver = Option.isSome(yield* Effect.serviceOption(PgClient.PgClient))
      ? "postgres" as const
      : "pglite" as const;
    const runtime = yield* Effect.runtime<never>();
    const run = Effect.gen(function* () {
      const started = performance.now();
      const rows = yield* probe(sql).pipe(Effect.timeout(PROBE_TIMEOUT), Effect.option);
      const seconds = (performance.now() - started) / 1000;
      return Option.match(rows, {
        onNone: (): DatabaseFacts => ({ driver, up: false, probeSeconds: seconds }),
        onSome: (rows) => toFacts(driver, rows, seconds),
      });
    }).pipe(
      Effect.catchAllDefect(() => Effect.succeed({ driver, up: false, probeSeconds: 0 })),
      Effect.withTracerEnabled(false),
    );
    // With a read replica configured: whether reads go to it now (its probe, at most one per
    // quarter second).
    const replica = Option.filter(yield* Effect.serviceOption(ReadReplica), (r) => r.configured);
    let last: { at: number; facts: Promise<DatabaseFacts> } | undefined;
    metrics.setSources({
      replica: Option.isNone(replica)
        ? undefined
        : () => Runtime.runPromise(runtime)(replica.value.status),
      database: () => {
        const now = performance.now();
        if (last === undefined || now - last.at > PROBE_TTL_MS) {
          last = { at: now, facts: Runtime.runPromise(runtime)(run) };
        }
        return last.facts;
      },
      pool: driver === "postgres" ? pgPoolFacts : undefined,
    });
  }));
