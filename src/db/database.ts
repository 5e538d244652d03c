// The SqlClient layer: PostgreSQL when DATABASE_URL is set (reads of current data on the replica
// of DATABASE_READ_URL when that is set too), else embedded PGlite in DATA_DIR.
import * as SqlClient from "@effect/sql/SqlClient";
import * as PgClient from "@effect/sql-pg/PgClient";
import { SqlError } from "@effect/sql/SqlError";
import { Context, Data, Effect, Layer, Option, Redacted } from "effect";
import pg from "pg";
import { AppConfig, type AppConfigShape } from "../config.ts";
import { migrationsTable } from "./migrator.ts";
import { layerPglite } from "./pglite_client.ts";
import { startPgliteWorker } from "./pglite_worker.ts";
import { pgStream } from "./pg_socket.ts";
import { BytesClient } from "./pg_bytes.ts";
import { POOL_WAIT_MS, unwatchPool, watchPool } from "../ops/pg_pools.ts";
import type { ReadTarget } from "./read_target.ts";
import { noReplica, ReadReplica, routingLayer } from "./read_replica.ts";
import { ChangeNotices, changeNoticesLayer } from "./change_notices.ts";

// The embedded server's buffer cache lives inside this process (WASM memory, never given back):
// kept small, the files stay in the operating system's cache, from which a page is read back at
// the cost of a copy.
export const EMBEDDED_CONF = ["shared_buffers = 4MB"];

// Planner settings of the service's own connections. The service's statements look up a few
// thousand keys at most (a commit's days, a read's months): costing a random page read as a
// sequential one (1.1, the usual value where the data is cached or on SSD) plans those as index
// lookups instead of hashing the whole table, a cost that grows with the table. JIT compilation
// suits long analytic queries, not these: a statement planned at a few million (a month's days
// looked up by key, month by month) would be compiled for longer than it runs.
export const SESSION_SETTINGS = { jit: "off", random_page_cost: "1.1" } as const;

// The connection string and startup options of the pool: the service's settings, then the URL's own
// options (`?options=`), which win where both set one. (pg lets a URL's parameter replace the one
// given beside it, so the URL is passed without it.)
export const connectionOf = (url: string) => {
  const settings = Object.entries(SESSION_SETTINGS).map(([name, value]) => `-c ${name}=${value}`);
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return { connectionString: url, options: settings.join(" ") };
  }
  const own = parsed.searchParams.get("options") ?? "";
  parsed.searchParams.delete("options");
  return {
    connectionString: own === "" ? url : parsed.toString(),
    options: [...settings, own].filter((part) => part !== "").join(" "),
  };
};

// The embedded database in a folder (or in memory when undefined, from `image` when given: a data
// folder's image), run by a worker of its own so that a long statement does not hold up the event
// loop; closing the scope ends the worker.
export const openPglite = (dataDir: string | undefined, image?: Blob) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      if (dataDir !== undefined) await Deno.mkdir(dataDir, { recursive: true });
      const db = await startPgliteWorker(dataDir, EMBEDDED_CONF, { image });
      // Its one connection lives as long as the database: the settings are set once.
      await db.exec(
        Object.entries(SESSION_SETTINGS).map(([name, value]) => `SET ${name} = ${value};`).join(""),
      ).catch(async (error) => {
        await db.close();
        throw error;
      });
      return db;
    }),
    (db) => Effect.promise(() => db.close()),
  );

export interface PoolOptions {
  readonly url: Redacted.Redacted<string>;
  readonly maxConnections: number;
  // statement_timeout and lock_timeout of every connection: a held lock or a runaway statement
  // fails (503 BUSY) instead of holding a pooled connection, and so every other request, hostage.
  readonly statementMs: number;
  readonly lockMs: number;
  // How long a request may wait for a connection, new or pooled (default POOL_WAIT_MS).
  readonly connectMs?: number;
}

const poolLayer = (options: PoolOptions): Layer.Layer<SqlClient.SqlClient> =>
  Layer.unwrapScoped(Effect.map(
    makePool(options),
    (pool) =>
      PgClient.layerFromPool({ acquire: Effect.succeed(pool), applicationName: APPLICATION }),
  )).pipe(Layer.orDie);

// The service's pool, and the notices of changes heard on a connection of its own
// (change_notices.ts).
export const pgLayer = (
  options: PoolOptions,
): Layer.Layer<SqlClient.SqlClient | ChangeNotices> =>
  Layer.merge(
    poolLayer(options),
    changeNoticesLayer(connectionOf(Redacted.value(options.url))),
  );

const APPLICATION = "energy-saving-service";

// `role`: the database it reaches, for /metrics. `check`: one statement before the pool is handed
// out, so that a database away fails the start.
const makePool = (options: PoolOptions, role: ReadTarget = "primary", check = true) =>
  Effect.acquireRelease(
    Effect.try({
      try: () =>
        new pg.Pool({
          ...connectionOf(Redacted.value(options.url)),
          max: options.maxConnections,
          connectionTimeoutMillis: options.connectMs ?? POOL_WAIT_MS,
          // The idle timeout (10 s, pg-pool's default) stays: an open connection keeps its driver's
          // read buffer as large as the largest answer it read, so idle ones are let go.
          statement_timeout: options.statementMs,
          lock_timeout: options.lockMs,
          // A transaction left open by a client that went away is ended by the server.
          idle_in_transaction_session_timeout: Math.max(options.statementMs, 60_000),
          application_name: APPLICATION,
          // Deno's sockets with a read buffer per connection (pg_socket.ts).
          stream: pgStream,
          // Columns named for it read as bytes (pg_bytes.ts).
          Client: BytesClient,
        }).on("error", () => {}),
      catch: (cause) => new SqlError({ cause, message: "PgClient: Failed to create pool" }),
    }).pipe(
      Effect.tap((pool) =>
        check
          ? Effect.tryPromise({
            try: () => pool.query("SELECT 1"),
            catch: (cause) => new SqlError({ cause, message: "PgClient: Failed to connect" }),
          })
          : Effect.void
      ),
      Effect.tap((pool) =>
        watchPool(pool, role, options.statementMs + (options.connectMs ?? POOL_WAIT_MS))
      ),
    ),
    (pool) => Effect.promise(() => (unwatchPool(pool), pool.end())),
  );

// A replica that does not answer is left for the primary quickly: its connections get 2 s.
const REPLICA_CONNECT_MS = 2_000;

// The primary and the replica, each with a pool of DB_POOL_MAX connections.
const replicaLayer = (config: AppConfigShape, primaryUrl: Redacted.Redacted<string>) =>
  Layer.unwrapEffect(Effect.gen(function* () {
    const replicaUrl = Option.getOrThrow(config.databaseReadUrl);
    const where = (url: Redacted.Redacted<string>) => {
      try {
        const parsed = new URL(Redacted.value(url));
        return `${parsed.hostname}:${parsed.port || "5432"}${parsed.pathname}`;
      } catch {
        return "(unparsed URL)";
      }
    };
    yield* Effect.logInfo(
      `reads of current data go to the replica at ${where(replicaUrl)}; writes and reads of ` +
        `data it has not replayed go to the primary at ${where(primaryUrl)}`,
    );
    const options = {
      maxConnections: config.dbPoolMax,
      statementMs: config.limits.statementMs,
      lockMs: config.limits.lockMs,
    };
    // The replica's pool does not touch the server when made: a replica away at start leaves the
    // service reading the primary until it answers.
    const routing = routingLayer(
      makePool({ ...options, url: primaryUrl }),
      makePool({ ...options, url: replicaUrl, connectMs: REPLICA_CONNECT_MS }, "replica", false),
      config.replica,
      APPLICATION,
    );
    return config.changeNotices
      ? Layer.merge(routing, changeNoticesLayer(connectionOf(Redacted.value(primaryUrl))))
      : routing;
  })).pipe(Layer.orDie);

// `service`: the service's database (its replica, the notices of changes unless CHANGE_NOTICES is
// off), else an admin command's (the primary only).
const databaseLayer = (statementMs: (config: AppConfigShape) => number, service: boolean) =>
  Layer.unwrapScoped(
    Effect.gen(function* () {
      const config = yield* AppConfig;
      const none = Layer.succeed(ReadReplica, noReplica);
      if (Option.isSome(config.databaseUrl)) {
        if (service && Option.isSome(config.databaseReadUrl)) {
          return replicaLayer(config, config.databaseUrl.value);
        }
        return Layer.merge(
          (service && config.changeNotices ? pgLayer : poolLayer)({
            url: config.databaseUrl.value,
            maxConnections: config.dbPoolMax,
            statementMs: statementMs(config),
            lockMs: config.limits.lockMs,
          }),
          none,
        );
      }
      if (service && Option.isSome(config.databaseReadUrl)) {
        yield* Effect.logWarning(
          "DATABASE_READ_URL is ignored: the embedded database (DATABASE_URL unset) has no " +
            "replica; every read goes to it",
        );
      }
      const db = yield* openPglite(config.dataDir);
      let lostWhy: string | undefined;
      if (db.lost !== undefined) {
        yield* Effect.forkScoped(Effect.flatMap(Effect.promise(() => db.lost!), (reason) => {
          lostWhy = reason.message;
          return Effect.logError(
            `the embedded database is lost (${reason.message}): every request is answered 503 ` +
              "and /health/live fails until the service is started again",
          );
        }));
      }
      const loss = Layer.succeed(DatabaseLoss, {
        lost: Effect.sync(() => Option.fromNullable(lostWhy)),
      });
      return Layer.mergeAll(layerPglite(db), none, loss);
    }),
  );

// Whether the service's database is gone for good: the embedded database's worker ended (a fatal
// error in it). Liveness then fails, so that whoever runs the service starts it again; PostgreSQL
// away comes back by itself (readiness says so), and provides none.
export class DatabaseLoss extends Context.Tag("Db/DatabaseLoss")<
  DatabaseLoss,
  { readonly lost: Effect.Effect<Option.Option<string>> }
>() {}

// On PostgreSQL it also provides ChangeNotices (found by serviceOption).
export const DatabaseLive: Layer.Layer<SqlClient.SqlClient | ReadReplica, never, AppConfig> =
  databaseLayer((config) => config.limits.statementMs, true);

// Admin commands load whole snapshots in one statement per table: no statement time limit (0).
// They write, so they use the primary only.
const AdminConnectionLive: Layer.Layer<SqlClient.SqlClient, never, AppConfig> = databaseLayer(
  () => 0,
  false,
);

// The embedded database is one process's at a time: the service and each admin command hold an
// exclusive lock on this file in its folder for as long as they run, and write their pid and role
// into it for the message of a process refused meanwhile. The system lets the lock go when its
// process ends, however it ends, so a file left by a crash holds nothing; no process is judged
// alive or gone by its number.
const holderFile = (dataDir: string) => `${dataDir}/service.pid`;

interface Holder {
  readonly pid: number | undefined;
  readonly role: string;
}

// What the holder wrote of itself (empty while it has only just taken the lock).
const holderOf = (dataDir: string): Holder => {
  try {
    const [pidText, ...role] = Deno.readTextFileSync(holderFile(dataDir)).trim().split(" ");
    const pid = Number(pidText);
    return {
      pid: Number.isInteger(pid) && pid > 0 ? pid : undefined,
      role: role.join(" ") || "service",
    };
  } catch {
    return { pid: undefined, role: "service" };
  }
};

export class DataDirBusy extends Data.TaggedError("DataDirBusy")<{ message: string }> {}

const busy = (dataDir: string, holder: Holder) =>
  new DataDirBusy({
    message: `the ${holder.role} (pid ${
      holder.pid ?? "unknown"
    }) is using ${dataDir}; stop it first, or use DATABASE_URL`,
  });

// The file at the path is still the one `file` opened (a holder that let go removes it first).
const sameFile = (file: Deno.FsFile, path: string) => {
  try {
    const [held, named] = [file.statSync(), Deno.statSync(path)];
    return held.ino === named.ino && held.dev === named.dev;
  } catch {
    return false;
  }
};

// Holds the folder for `role` until the scope ends, or fails while another process holds it: the
// running service from its start to its shutdown, an admin command while it runs.
export const holdDataDir = (dataDir: string, role = "service") =>
  Effect.acquireRelease(
    Effect.suspend(() => {
      Deno.mkdirSync(dataDir, { recursive: true });
      const path = holderFile(dataDir);
      for (let attempt = 0; attempt < 3; attempt++) {
        const file = Deno.openSync(path, { read: true, write: true, create: true });
        if (!file.tryLockSync(true)) {
          file.close();
          return Effect.fail(busy(dataDir, holderOf(dataDir)));
        }
        // Locked after its holder removed it: a file no one finds any more; open the path again.
        if (!sameFile(file, path)) {
          file.close();
          continue;
        }
        file.truncateSync(0);
        file.writeSync(new TextEncoder().encode(`${Deno.pid} ${role}\n`));
        return Effect.succeed(file);
      }
      return Effect.fail(busy(dataDir, holderOf(dataDir)));
    }),
    // Removed while still locked, so that no process locks it afterwards and holds a file that is
    // gone from the folder.
    (file) =>
      Effect.sync(() => {
        try {
          Deno.removeSync(holderFile(dataDir));
        } catch {
          // already gone
        }
        file.close();
      }),
  );

// An embedded database's folder that holds none (a mistyped DATA_DIR): a command that only reads
// or changes a database says so instead of making an empty one there.
export class NoDatabase extends Data.TaggedError("NoDatabase")<{ message: string }> {}

const holdsDatabase = (dataDir: string) => {
  try {
    return Deno.statSync(`${dataDir}/PG_VERSION`).isFile;
  } catch {
    return false;
  }
};

const adminDatabase = (existing: boolean) =>
  Layer.unwrapScoped(
    Effect.gen(function* () {
      const config = yield* AppConfig;
      if (Option.isNone(config.databaseUrl)) {
        if (existing && !holdsDatabase(config.dataDir)) {
          return yield* new NoDatabase({
            message: `${config.dataDir} holds no database: set DATA_DIR to the service's folder ` +
              "(or DATABASE_URL), or start the service or run deno task seed there first",
          });
        }
        yield* holdDataDir(config.dataDir, "admin command");
        return AdminConnectionLive;
      }
      // On PostgreSQL, a database the service has never migrated is not its (a mistyped name, or
      // none at all, which is the user's own database): nothing is made there.
      return existing
        ? Layer.tap(AdminConnectionLive, (context) =>
          Effect.gen(function* () {
            const sql = Context.get(context, SqlClient.SqlClient);
            const [found] = yield* Effect.orDie(
              sql<{ found: boolean }>`SELECT to_regclass(${migrationsTable}) IS NOT NULL AS found`,
            );
            if (!found.found) {
              return yield* new NoDatabase({
                message: "DATABASE_URL names a database the service has not migrated: start the " +
                  "service on it once, or run deno task seed there, or check DATABASE_URL",
              });
            }
          }))
        : AdminConnectionLive;
    }),
  );

// The database of an admin command: refused, before anything is opened, while the service or
// another command holds the embedded database, which it holds itself until it ends. An embedded
// one is made where there is none (the seed command loads a new database).
export const AdminDatabaseLive = adminDatabase(false);

// The same for a command that works on a database that is there (keys, verify).
export const ExistingDatabaseLive: Layer.Layer<
  SqlClient.SqlClient,
  DataDirBusy | NoDatabase,
  AppConfig
> = adminDatabase(true);
