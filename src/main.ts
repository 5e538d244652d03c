// Serves the service: bootstrap the database, warm up, listen, and shut down cleanly on a signal.
import { Effect, Layer, ManagedRuntime, Option } from "effect";
import { makeHandler } from "./app.ts";
import { bootstrap, type DemoKey } from "./bootstrap.ts";
import { AppConfig } from "./config.ts";
import { DatabaseLive, holdDataDir } from "./db/database.ts";

const started = performance.now();
const config = await Effect.runPromise(Effect.provide(AppConfig, AppConfig.layer));
const embedded = Option.isNone(config.databaseUrl);

const Infrastructure = Layer.provideMerge(
  embedded
    ? Layer.merge(DatabaseLive, Layer.scopedDiscard(holdDataDir(config.dataDir)))
    : DatabaseLive,
  AppConfig.layer,
);
const runtime = ManagedRuntime.make(Infrastructure);

const announceKeys = async (keys: ReadonlyArray<DemoKey>) => {
  if (keys.length === 0) return;
  const file = `${config.dataDir}/demo-keys.json`;
  await Deno.writeTextFile(file, JSON.stringify(keys, null, 2) + "\n", { mode: 0o600 });
  console.log(`Demo snapshot loaded. Demo access keys (also in ${file}):`);
  for (const k of keys) {
    console.log(`  ${k.member.padEnd(14)} ${k.permissions.join(",").padEnd(15)} ${k.key}`);
  }
  console.log(
    `Try: curl -H "Authorization: Bearer ${
      keys[0].key
    }" http://localhost:${config.port}/api/v1/stores`,
  );
};

try {
  await announceKeys(await runtime.runPromise(bootstrap));
} catch (error) {
  console.error("start-up failed:", error instanceof Error ? error.message : error);
  await runtime.dispose();
  Deno.exit(1);
}

const context = await runtime.runtime();
const { handler, dispose } = makeHandler(Layer.succeedContext(context.context));

// Layers are built on the first request: build them, and touch the database, before listening.
const warm = await handler(new Request("http://localhost/health/ready"));
if (warm.status !== 200) {
  console.error(`start-up failed: readiness answered ${warm.status}: ${await warm.text()}`);
  await dispose();
  await runtime.dispose();
  Deno.exit(1);
}

const server = Deno.serve({
  port: config.port,
  hostname: config.host,
  onListen: (addr: Deno.NetAddr) =>
    console.log(
      `ready on http://${addr.hostname}:${addr.port} (${
        embedded ? `embedded database in ${config.dataDir}` : "PostgreSQL"
      }; ` +
        `started in ${Math.round(performance.now() - started)} ms); docs at /api-docs`,
    ),
}, (request) => handler(request));

let stopping = false;
const stop = async (signal: string) => {
  if (stopping) return;
  stopping = true;
  console.log(`${signal}: finishing requests in flight and stopping`);
  await server.shutdown();
  await dispose();
  await runtime.dispose();
  Deno.exit(0);
};
Deno.addSignalListener("SIGINT", () => stop("SIGINT"));
Deno.addSignalListener("SIGTERM", () => stop("SIGTERM"));
