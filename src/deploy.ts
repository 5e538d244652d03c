// The Deno Deploy entry, for `deno serve` (`deno task serve:deploy`): the handler every entry serves
// (makeHandler: the HttpApi behind the front door, with its routes, body limits, admission and
// request time limits), answering the platform's web Requests. An instance there has no disk that
// outlives it, so DATABASE_URL is required and nothing is written: no embedded database, no pid
// file, no demo keys, no console build (its bundle comes from the build step). It needs no FFI, no
// child process and no runtime or V8 flag: `--allow-net --allow-env --allow-read --allow-sys` suffice
// (exceljs reads the process's umask). The listening socket is `deno serve`'s (the platform's edge
// bounds slow and idle connections), and so is the graceful stop on SIGINT and SIGTERM (no new
// request, those in flight finish), after which the pool is closed.
import { Effect, Option } from "effect";
import { processLog } from "./log.ts";
import {
  type KeepDemoKeys,
  type PreparedService,
  prepareService,
  readConfig,
  StartupFailed,
} from "./start.ts";

// An empty database with SEED_DEMO on would get demo keys that no one can read: the start fails
// instead and loads nothing.
const refuseDemo: KeepDemoKeys = () =>
  Effect.fail(
    new Error(
      "the database has no stores and SEED_DEMO is true, but this entry cannot keep the demo's " +
        "keys (it writes no file): set SEED_DEMO=false and load data with deno task seed",
    ),
  );

const log = processLog();
let service: PreparedService;
try {
  // The port is the platform's (deno serve's): the one a request reached is the service's own for
  // its origin check, as with PORT=0; PORT is not read.
  const config = { ...(await readConfig(log)), port: 0 };
  if (Option.isNone(config.databaseUrl)) {
    log.error("start-up failed: DATABASE_URL is not set", {
      cause: "this entry serves PostgreSQL only: the embedded database needs a lasting disk",
    });
    throw new StartupFailed("DATABASE_URL is not set");
  }
  service = await prepareService({ log, config, console: "served", keepDemoKeys: refuseDemo });
} catch (error) {
  if (error instanceof StartupFailed) Deno.exit(1);
  throw error;
}
log.info("ready for deno serve (PostgreSQL); docs at /api-docs");

// The client's address holds the admission shares of a request without a credential.
const peerOf = (info: Deno.ServeHandlerInfo | undefined) => {
  const address = info?.remoteAddr;
  return address?.transport === "tcp" || address?.transport === "udp"
    ? address.hostname
    : undefined;
};

// Requests whose answer is being made or sent: on a stop signal, deno serve stops accepting and
// finishes them; the database's pool is closed once they have their answers, to the last byte of a
// streamed one (an export reads its pages while it is sent), and not at once, which would cut them
// (an instance stopped by Deploy is killed 5 s after its SIGINT).
let making = 0;

// The answer, counted as being made until a streamed body (one without a length) has been sent,
// has failed, or its client has gone.
const countedUntilSent = (response: Response): Response => {
  if (response.body === null || response.headers.has("content-length")) {
    making--;
    return response;
  }
  const reader = response.body.getReader();
  let sent = false;
  const done = () => {
    if (sent) return;
    sent = true;
    making--;
  };
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const next = await reader.read();
        if (next.done) {
          done();
          controller.close();
        } else controller.enqueue(next.value);
      } catch (error) {
        done();
        controller.error(error);
      }
    },
    cancel(reason) {
      done();
      return reader.cancel(reason);
    },
  }, { highWaterMark: 0 });
  return new Response(body, response);
};
let stopping = false;
const stop = async (signal: string) => {
  if (stopping) return;
  stopping = true;
  log.info(`${signal}: finishing requests in flight and stopping`);
  while (making > 0) await new Promise((resolve) => setTimeout(resolve, 20));
  await service.dispose();
};
Deno.addSignalListener("SIGINT", () => stop("SIGINT"));
Deno.addSignalListener("SIGTERM", () => stop("SIGTERM"));

export default {
  fetch: async (request, info) => {
    making++;
    let response: Response;
    try {
      response = await service.handler(request, undefined, peerOf(info));
    } catch (error) {
      making--;
      throw error;
    }
    return countedUntilSent(response);
  },
} satisfies Deno.ServeDefaultExport;
