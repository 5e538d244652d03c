// The SqlClient layer: PostgreSQL when DATABASE_URL is set, else embedded PGlite in DATA_DIR.
import { SqlClient } from "@effect/sql";
import { PgClient } from "@effect/sql-pg";
import { PGlite } from "@electric-sql/pglite";
import { Data, Duration, Effect, Layer, Option } from "effect";
import { AppConfig } from "../config.ts";
import { layerPglite } from "./pglite_client.ts";

export const openPglite = (dataDir: string | undefined) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      if (dataDir !== undefined) await Deno.mkdir(dataDir, { recursive: true });
      const db = new PGlite(dataDir);
      await db.waitReady;
      return db;
    }),
    (db) => Effect.promise(() => db.close()),
  );

export const DatabaseLive: Layer.Layer<SqlClient.SqlClient, never, AppConfig> = Layer.unwrapScoped(
  Effect.gen(function* () {
    const config = yield* AppConfig;
    if (Option.isSome(config.databaseUrl)) {
      return PgClient.layer({
        url: config.databaseUrl.value,
        maxConnections: config.dbPoolMax,
        connectTimeout: Duration.seconds(5),
        applicationName: "energy-saving-service",
      }).pipe(Layer.orDie);
    }
    const db = yield* openPglite(config.dataDir);
    return layerPglite(db);
  }),
);

const pidFile = (dataDir: string) => `${dataDir}/service.pid`;

const isAlive = (pid: number) => {
  try {
    Deno.statSync(`/proc/${pid}`);
    return true;
  } catch {
    return false;
  }
};

const runningPid = (dataDir: string) => {
  try {
    const pid = Number(Deno.readTextFileSync(pidFile(dataDir)).trim());
    return Number.isInteger(pid) && pid > 0 && pid !== Deno.pid && isAlive(pid) ? pid : undefined;
  } catch {
    return undefined;
  }
};

export class DataDirBusy extends Data.TaggedError("DataDirBusy")<{ message: string }> {}

// The embedded database is one process's at a time: tools refuse while the service holds it.
export const refuseWhileServing = (dataDir: string) => {
  const pid = runningPid(dataDir);
  return pid === undefined ? Effect.void : Effect.fail(
    new DataDirBusy({
      message: `the service (pid ${pid}) is using ${dataDir}; stop it first, or use DATABASE_URL`,
    }),
  );
};

// Held by the running service: written at start, removed at shutdown.
export const holdDataDir = (dataDir: string) =>
  Effect.acquireRelease(
    Effect.flatMap(refuseWhileServing(dataDir), () =>
      Effect.sync(() => {
        Deno.mkdirSync(dataDir, { recursive: true });
        Deno.writeTextFileSync(pidFile(dataDir), String(Deno.pid));
      })),
    () => Effect.try(() => Deno.removeSync(pidFile(dataDir))).pipe(Effect.ignore),
  );
