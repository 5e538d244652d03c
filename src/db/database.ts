// The SqlClient layer: PostgreSQL when DATABASE_URL is set, else embedded PGlite in DATA_DIR.
import { SqlClient } from "@effect/sql";
import { PgClient } from "@effect/sql-pg";
import { PGlite } from "@electric-sql/pglite";
import { Duration, Effect, Layer, Option } from "effect";
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
