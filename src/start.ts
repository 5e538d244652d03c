// Starting the service, shared by its entries: src/main.ts (`deno run` from the source tree),
// src/binary.ts (the single binary of `deno task compile`) and src/deploy.ts (`deno serve`, Deno
// Deploy). prepareService bootstraps the database and makes the warmed-up handler; startService
// also listens on node:http and stops cleanly on a signal.
import { Effect, Layer, ManagedRuntime, Option, Redacted } from "effect";
import { makeHandler } from "./app.ts";
import { bootstrap, type DemoKey } from "./bootstrap.ts";
import { buildConsole, readStamp } from "./console/build.ts";
import { AppConfig, type AppConfigShape } from "./config.ts";
import { DatabaseLive, holdDataDir } from "./db/database.ts";
import { settlesWithin } from "./http/deadlines.ts";
import { serve } from "./http/serve.ts";
import {
  effectLoggerLayer,
  failureReason,
  type Log,
  logSettingsProblem,
  processLog,
} from "./log.ts";

// A start that failed and was logged: the entry ends the process, or its module's evaluation.
export class StartupFailed extends Error {}
// The message of a start stopped by a signal (not a failure).
const STOPPED = "stopped";
// How long a stop waits, once the answers are sent, for work still running (a write past its time
// limit), then for the database's connections to close.
const FINISH_WORK_MS = 10_000;
const CLOSE_DATABASE_MS = 5_000;

export const readConfig = async (log: Log): Promise<AppConfigShape> => {
  const logProblem = logSettingsProblem();
  if (logProblem !== undefined) {
    log.error("start-up failed: bad configuration", { cause: logProblem });
    throw new StartupFailed("bad configuration");
  }
  try {
    return await Effect.runPromise(Effect.provide(AppConfig, AppConfig.layer));
  } catch (error) {
    log.error("start-up failed: bad configuration", { cause: String(error) });
    throw new StartupFailed("bad configuration");
  }
};

// Where the demo's four keys go when this start loads the demo (bootstrap.ts: inside the demo's
// transaction, so a failure here loads nothing).
export type KeepDemoKeys = (
  keys: ReadonlyArray<DemoKey>,
  config: AppConfigShape,
) => Effect.Effect<void, unknown>;

export const demoKeysFile = (config: AppConfigShape) => `${config.dataDir}/demo-keys.json`;

// Written before the demo's transaction commits (see bootstrap): keys are never lost.
export const keepDemoKeysInDataDir: KeepDemoKeys = (keys, config) =>
  Effect.promise(async () => {
    await Deno.mkdir(config.dataDir, { recursive: true });
    await Deno.writeTextFile(demoKeysFile(config), JSON.stringify(keys, null, 2) + "\n", {
      mode: 0o600,
    });
  });

export interface PrepareOptions {
  readonly log: Log;
  readonly config: AppConfigShape;
  // "build": the console's bundle is built on start when BUILD_CONSOLE is true and it is missing
  // or stale (a source tree, which has console/ and may spawn `deno bundle`). "served": the bundle
  // that is there is served and never built (the binary embeds it, Deno Deploy's build step makes
  // it); a warning says when there is none.
  readonly console: "build" | "served";
  readonly keepDemoKeys?: KeepDemoKeys;
  // Aborted by a stop signal during the start: the start is interrupted (a demo load rolled back)
  // and ends with StartupFailed("stopped").
  readonly signal?: AbortSignal;
}

export interface PreparedService {
  readonly embedded: boolean;
  readonly handler: ReturnType<typeof makeHandler>["handler"];
  // The handler's runtime, then the database's.
  readonly dispose: () => Promise<void>;
}

// Migrates, installs the routines and loads the demo on a first start, then makes the handler and
// warms it up with a readiness check. Throws StartupFailed (logged) when any step fails.
export const prepareService = async (options: PrepareOptions): Promise<PreparedService> => {
  const { log, config } = options;
  const keep = options.keepDemoKeys ?? keepDemoKeysInDataDir;
  const embedded = Option.isNone(config.databaseUrl);

  // The embedded database's folder is held (tools refuse it) from before the database is opened
  // until the service stops, across the reopening below.
  const hold = embedded
    ? ManagedRuntime.make(Layer.scopedDiscard(holdDataDir(config.dataDir)))
    : undefined;
  // The configuration given is the one the service runs on (an entry may have set some of it).
  const Infrastructure = Layer.provideMerge(
    DatabaseLive,
    Layer.merge(Layer.succeed(AppConfig, config), effectLoggerLayer(log)),
  );
  let runtime = ManagedRuntime.make(Infrastructure);
  const disposeAll = async () => {
    await runtime.dispose();
    await hold?.dispose();
  };

  // The keys themselves stay where `keep` put them: a log line may travel where a key must not.
  const announceKeys = (keys: ReadonlyArray<DemoKey>) => {
    if (keys.length === 0) return;
    log.info(
      `demo snapshot loaded; ${keys.length} demo access keys are in ${demoKeysFile(config)}`,
      { members: keys.map((k) => k.member).join(",") },
    );
  };

  try {
    await hold?.runtime();
    const prepared = await runtime.runPromise(bootstrap((keys) => keep(keys, config)), {
      signal: options.signal,
    });
    announceKeys(prepared.keys);
    // The embedded database's engine keeps the memory it grew to while it was created, migrated or
    // loaded with the demo: it is closed and opened again, so that the service does not carry that
    // memory for as long as it runs.
    if (embedded && prepared.built) {
      await runtime.dispose();
      runtime = ManagedRuntime.make(Infrastructure);
    }
  } catch (error) {
    if (options.signal?.aborted) {
      await disposeAll();
      throw new StartupFailed(STOPPED);
    }
    log.error("start-up failed", { cause: failureReason(error) });
    await disposeAll();
    throw new StartupFailed("bootstrap");
  }
  if (options.signal?.aborted) {
    await disposeAll();
    throw new StartupFailed(STOPPED);
  }

  if (options.console === "build") {
    // The browser console is built when its bundle is missing or was made from other sources.
    if (config.buildConsole) {
      try {
        const console = await buildConsole();
        if (console.built) {
          log.info(`console built in ${Math.round(console.ms)} ms`, {
            script: console.stamp.script,
          });
        }
      } catch (error) {
        log.warn("the console could not be built; the API is served without it", {
          cause: error instanceof Error ? error.message.slice(0, 500) : String(error),
        });
      }
    }
  } else if (await readStamp() === undefined) {
    log.warn("the console's bundle is missing; the API is served without it", {
      hint: "build it beforehand: deno task console:build",
    });
  }

  const metricsToken = Option.getOrUndefined(config.metricsToken);
  // A short token can be guessed by a scraper that may try as often as it likes.
  if (metricsToken !== undefined && Redacted.value(metricsToken).trim().length < 16) {
    log.warn("METRICS_TOKEN is shorter than 16 characters; use a long random one");
  }
  if (Option.isSome(config.tracing)) {
    log.info("tracing on", {
      otlp: new URL(config.tracing.value.tracesUrl).origin,
      service: config.tracing.value.serviceName,
      ratio: config.tracing.value.ratio,
    });
  }

  const context = await runtime.runtime();
  const { handler, dispose } = makeHandler(Layer.succeedContext(context.context), {
    limits: config.limits,
    admission: config.admission,
    log,
    metricsToken,
  });

  // Layers are built on the first request: build them, and touch the database, before serving.
  const warm = await handler(new Request("http://localhost/health/ready"));
  if (warm.status !== 200) {
    log.error("start-up failed: readiness check", { status: warm.status, body: await warm.text() });
    await dispose();
    await disposeAll();
    throw new StartupFailed("readiness check");
  }

  return {
    embedded,
    handler,
    dispose: async () => {
      await dispose();
      await disposeAll();
    },
  };
};

// Serves the service: bootstrap the database, warm up, listen, and shut down cleanly on a signal.
// A failed start ends the process with exit code 1.
export const startService = async (options: Pick<PrepareOptions, "console">) => {
  const started = performance.now();
  const log = processLog();
  let config: AppConfigShape;
  let service: PreparedService;
  // A stop signal before the service listens interrupts the start (a first start's demo load is
  // rolled back and made again on the next start) and ends the process with 0.
  const starting = new AbortController();
  const early = (signal: string) => () => {
    if (starting.signal.aborted) return;
    log.info(`${signal} during start-up: stopping`);
    starting.abort();
  };
  const earlyListeners = [["SIGINT", early("SIGINT")], ["SIGTERM", early("SIGTERM")]] as const;
  for (const [name, listener] of earlyListeners) Deno.addSignalListener(name, listener);
  try {
    config = await readConfig(log);
    service = await prepareService({
      log,
      config,
      console: options.console,
      signal: starting.signal,
    });
  } catch (error) {
    if (error instanceof StartupFailed) Deno.exit(error.message === STOPPED ? 0 : 1);
    throw error;
  }

  const server = await serve(service.handler, {
    port: config.port,
    hostname: config.host,
    headersMs: config.limits.headersMs,
    requestMs: config.limits.requestMs,
    idleMs: config.limits.idleMs,
  }).catch((error) => {
    log.error("start-up failed: cannot listen (HOST, PORT)", {
      host: config.host,
      port: config.port,
      cause: String(error),
    });
    Deno.exit(1);
  });
  log.info(
    `ready on http://${
      config.host.includes(":") ? `[${config.host}]` : config.host
    }:${server.port} (${
      service.embedded
        ? `embedded database in ${config.dataDir}`
        : Option.isSome(config.databaseReadUrl)
        ? "PostgreSQL, reads on a replica"
        : "PostgreSQL"
    }; started in ${Math.round(performance.now() - started)} ms); docs at /api-docs${
      Option.isNone(config.metricsToken) ? "" : "; metrics at /metrics"
    }`,
  );

  // Requests in flight get the request's time limit to finish; an answer still being sent after it
  // (a slow client's export) is cut. A second signal stops at once.
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) {
      log.warn(`${signal} again: stopping now`);
      Deno.exit(1);
    }
    stopping = true;
    log.info(`${signal}: finishing requests in flight and stopping`);
    if (!await server.shutdown(config.limits.requestMs)) {
      log.warn(`answers still being sent after ${config.limits.requestMs} ms were cut`);
    }
    // A write answered 503 TIMEOUT may still be running: closing the database now would roll back
    // what its answer said may yet be applied.
    if (!await service.handler.settled(FINISH_WORK_MS)) {
      log.warn(
        `work still running after ${FINISH_WORK_MS} ms more was left to end with the process`,
      );
    }
    // Closing the database's connections waits for their statements: one that a database which no
    // longer answers never ends would hold the stop forever. Past this, the process ends without
    // them (the server side drops a connection whose client is gone; nothing uncommitted stays).
    if (!await settlesWithin(service.dispose(), CLOSE_DATABASE_MS)) {
      log.warn(`the database's connections did not close within ${CLOSE_DATABASE_MS} ms: stopping`);
    }
    Deno.exit(0);
  };
  for (const [name, listener] of earlyListeners) Deno.removeSignalListener(name, listener);
  Deno.addSignalListener("SIGINT", () => stop("SIGINT"));
  Deno.addSignalListener("SIGTERM", () => stop("SIGTERM"));
  // A signal that came while the service began to listen.
  if (starting.signal.aborted) await stop("a signal during start-up");
};
