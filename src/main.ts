// Serves the service: bootstrap the database, warm up, listen, and shut down cleanly on a signal.
import { Effect, Layer, ManagedRuntime, Option, Redacted } from "effect";
import { makeHandler } from "./app.ts";
import { bootstrap, type DemoKey } from "./bootstrap.ts";
import { buildConsole } from "./console/build.ts";
import { AppConfig } from "./config.ts";
import { DatabaseLive, holdDataDir } from "./db/database.ts";
import { serve } from "./http/serve.ts";
import { effectLoggerLayer, processLog } from "./log.ts";

const started = performance.now();
const log = processLog();
const config = await Effect.runPromise(Effect.provide(AppConfig, AppConfig.layer)).catch(
  (error) => {
    log.error("start-up failed: bad configuration", { cause: String(error) });
    Deno.exit(1);
  },
);
const embedded = Option.isNone(config.databaseUrl);

const Infrastructure = Layer.provideMerge(
  embedded
    ? Layer.merge(DatabaseLive, Layer.scopedDiscard(holdDataDir(config.dataDir)))
    : DatabaseLive,
  Layer.merge(AppConfig.layer, effectLoggerLayer(log)),
);
const runtime = ManagedRuntime.make(Infrastructure);

const keysFile = `${config.dataDir}/demo-keys.json`;

// Written before the demo's transaction commits (see bootstrap): keys are never lost.
const keepKeys = (keys: ReadonlyArray<DemoKey>) =>
  Effect.promise(async () => {
    await Deno.mkdir(config.dataDir, { recursive: true });
    await Deno.writeTextFile(keysFile, JSON.stringify(keys, null, 2) + "\n", { mode: 0o600 });
  });

// The keys themselves stay in the file (mode 600): a log line may travel where a key must not.
const announceKeys = (keys: ReadonlyArray<DemoKey>) => {
  if (keys.length === 0) return;
  log.info(`demo snapshot loaded; ${keys.length} demo access keys are in ${keysFile}`, {
    members: keys.map((k) => k.member).join(","),
  });
};

try {
  announceKeys(await runtime.runPromise(bootstrap(keepKeys)));
} catch (error) {
  log.error("start-up failed", { cause: error instanceof Error ? error.message : String(error) });
  await runtime.dispose();
  Deno.exit(1);
}

// The browser console is built when its bundle is missing or was made from other sources.
if (config.buildConsole) {
  try {
    const console = await buildConsole();
    if (console.built) {
      log.info(`console built in ${Math.round(console.ms)} ms`, { script: console.stamp.script });
    }
  } catch (error) {
    log.warn("the console could not be built; the API is served without it", {
      cause: error instanceof Error ? error.message.slice(0, 500) : String(error),
    });
  }
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

// Layers are built on the first request: build them, and touch the database, before listening.
const warm = await handler(new Request("http://localhost/health/ready"));
if (warm.status !== 200) {
  log.error("start-up failed: readiness check", { status: warm.status, body: await warm.text() });
  await dispose();
  await runtime.dispose();
  Deno.exit(1);
}

const server = await serve(handler, {
  port: config.port,
  hostname: config.host,
  headersMs: config.limits.headersMs,
  requestMs: config.limits.requestMs,
  idleMs: config.limits.idleMs,
}).catch((error) => {
  log.error("start-up failed: cannot listen", { port: config.port, cause: String(error) });
  Deno.exit(1);
});
log.info(
  `ready on http://${config.host}:${server.port} (${
    embedded ? `embedded database in ${config.dataDir}` : "PostgreSQL"
  }; started in ${Math.round(performance.now() - started)} ms); docs at /api-docs${
    metricsToken === undefined ? "" : "; metrics at /metrics"
  }`,
);

let stopping = false;
const stop = async (signal: string) => {
  if (stopping) return;
  stopping = true;
  log.info(`${signal}: finishing requests in flight and stopping`);
  await server.shutdown();
  await dispose();
  await runtime.dispose();
  Deno.exit(0);
};
Deno.addSignalListener("SIGINT", () => stop("SIGINT"));
Deno.addSignalListener("SIGTERM", () => stop("SIGTERM"));
