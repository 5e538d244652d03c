// Starvation run: starts the service on a loopback port and replays the attacks that could starve
// it (many large bodies, maximum exports, slow readers, large previews, oversize uploads, large
// headers) while a probe asks /health/live every 100 ms and the server's RSS is sampled every
// 50 ms. Prints one row per attack, a table, and PASS/FAIL per goal; exits 1 when a goal fails.
// Every attack has a deadline and a fixed number of clients; with the defaults the run takes a few
// minutes.
//
// Usage: deno task starve
// Options (environment):
//   DATABASE_URL        a PostgreSQL server, as the URL of any database on it (for example
//                       postgres://postgres@127.0.0.1:5432/postgres): the run creates a fresh
//                       database starve_<random> there, runs the service on it and drops it at the
//                       end. Unset: the embedded database in a temporary DATA_DIR.
//   STARVE_ONLY         attacks to run, separated by commas (names below); default all
//   STARVE_STORES       stores of the generated dataset loaded before the run (default: the demo's
//                       60), for the export attacks; loaded with scripts/seed.ts --reset --stores N
//                       between the first and the second start (thousands of stores take minutes)
//   STARVE_SERVICE_DIR  the service's source folder (default: the repository of this script)
//   STARVE_V8_FLAGS     the service's --v8-flags (default: DENO_V8_FLAGS of that folder's
//                       service.env; empty: plain `deno run -A src/main.ts`)
// Attacks: bodies-unauth, bodies-auth, exports-max, exports-slow, preview-10k, preview-10k-x4,
// oversize, headers.
import { adminQuery, withDatabase } from "./pg_admin.ts";
import { serviceV8Flags } from "./service_env.ts";

const RSS_LIMIT_MB = 400;
const LIVE_LIMIT_MS = 1_000;
const PROBE_EVERY_MS = 100;
const RSS_EVERY_MS = 50;
// After each attack the window stays open this long, so that its aftermath counts as its own.
const SETTLE_MS = 1_500;
const DEMO_STORES = 60;
// All attacks together, after the service is ready.
const RUN_LIMIT_MS = 20 * 60_000;
const START_LIMIT_MS = 300_000;
const SEED_LIMIT_MS = 60 * 60_000;

const ATTACKS = [
  "bodies-unauth",
  "bodies-auth",
  "exports-max",
  "exports-slow",
  "preview-10k",
  "preview-10k-x4",
  "oversize",
  "headers",
] as const;
type AttackName = typeof ATTACKS[number];

const encoder = new TextEncoder();
const decoder = new TextDecoder();
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

// ---------------------------------------------------------------------------------------------
// HTTP/1.1 over a raw connection: the client decides when it writes, reads and closes, and sees
// exactly what the server sent before it closed (a client library reports an early close as its
// own error and drops the answer it had).

// Reads one response as it arrives: status, headers, a body by length, chunks or close; keeps the
// first bytes of the body to judge an error body.
class ResponseReader {
  status: number | null = null;
  complete = false;
  bodyBytes = 0;
  #head = new Uint8Array(0);
  #headDone = false;
  #mode: "length" | "chunked" | "close" = "close";
  #remaining = 0;
  #chunk: "size" | "data" | "crlf" | "trailer" = "size";
  #line = "";
  #kept: Array<Uint8Array> = [];
  #keptBytes = 0;
  static readonly KEEP = 64 * 1024;
  static readonly HEAD_LIMIT = 256 * 1024;

  feed(bytes: Uint8Array) {
    if (this.complete) return;
    if (!this.#headDone) {
      const all = new Uint8Array(this.#head.length + bytes.length);
      all.set(this.#head);
      all.set(bytes, this.#head.length);
      const end = indexOfBlankLine(all);
      if (end < 0) {
        // A head this long is not an answer; what follows is ignored.
        this.#head = all.length > ResponseReader.HEAD_LIMIT ? new Uint8Array(0) : all;
        return;
      }
      this.#headDone = true;
      this.#head = new Uint8Array(0);
      this.#readHead(decoder.decode(all.subarray(0, end)));
      if (!this.complete) this.#body(all.subarray(end + 4));
      return;
    }
    this.#body(bytes);
  }

  // The connection ended: a body delimited by the close is then complete.
  finish() {
    if (this.#headDone && this.#mode === "close") this.complete = true;
  }

  // The body as {"error":{"code","message"}}, or null.
  errorBody(): { code: string } | null {
    if (!this.complete) return null;
    const bytes = new Uint8Array(this.#keptBytes);
    let at = 0;
    for (const part of this.#kept) {
      bytes.set(part, at);
      at += part.length;
    }
    try {
      const parsed = JSON.parse(decoder.decode(bytes));
      const error = parsed?.error;
      return typeof error?.code === "string" && typeof error?.message === "string"
        ? { code: error.code }
        : null;
    } catch {
      return null;
    }
  }

  #readHead(text: string) {
    const lines = text.split("\r\n");
    this.status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(lines[0])?.[1] ?? 0) || null;
    const headers = new Map<string, string>();
    for (const line of lines.slice(1)) {
      const colon = line.indexOf(":");
      if (colon > 0) {
        headers.set(line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim());
      }
    }
    const length = headers.get("content-length");
    if (/chunked/i.test(headers.get("transfer-encoding") ?? "")) {
      this.#mode = "chunked";
    } else if (length !== undefined) {
      this.#mode = "length";
      this.#remaining = Number(length);
      if (this.#remaining === 0) this.complete = true;
    }
    if (this.status === 204 || this.status === 304) this.complete = true;
  }

  #keep(bytes: Uint8Array) {
    this.bodyBytes += bytes.length;
    if (this.#keptBytes < ResponseReader.KEEP) {
      const part = bytes.slice(0, ResponseReader.KEEP - this.#keptBytes);
      this.#kept.push(part);
      this.#keptBytes += part.length;
    }
  }

  #body(bytes: Uint8Array) {
    if (this.#mode === "close") return this.#keep(bytes);
    if (this.#mode === "length") {
      const take = Math.min(this.#remaining, bytes.length);
      this.#keep(bytes.subarray(0, take));
      this.#remaining -= take;
      if (this.#remaining === 0) this.complete = true;
      return;
    }
    let i = 0;
    while (i < bytes.length && !this.complete) {
      if (this.#chunk === "data") {
        const take = Math.min(this.#remaining, bytes.length - i);
        this.#keep(bytes.subarray(i, i + take));
        this.#remaining -= take;
        i += take;
        if (this.#remaining === 0) this.#chunk = "crlf";
        continue;
      }
      const byte = bytes[i++];
      if (byte !== 0x0a) {
        if (byte !== 0x0d && this.#line.length < 1024) this.#line += String.fromCharCode(byte);
        continue;
      }
      const line = this.#line;
      this.#line = "";
      if (this.#chunk === "crlf") {
        this.#chunk = "size";
      } else if (this.#chunk === "size") {
        const size = parseInt(line.split(";")[0].trim(), 16);
        if (Number.isNaN(size)) return;
        if (size === 0) {
          this.#chunk = "trailer";
        } else {
          this.#remaining = size;
          this.#chunk = "data";
        }
      } else if (line === "") {
        this.complete = true;
      }
    }
  }
}

const indexOfBlankLine = (bytes: Uint8Array) => {
  for (let i = 0; i + 3 < bytes.length; i++) {
    if (bytes[i] === 13 && bytes[i + 1] === 10 && bytes[i + 2] === 13 && bytes[i + 3] === 10) {
      return i;
    }
  }
  return -1;
};

// How one exchange ended. complete: the whole answer was read; cut: the server closed before the
// answer's end; reset: the connection failed; closed: closed before any answer; timeout: the
// deadline came first; held: a slow reader left at its time; refused: no connection.
type End = "complete" | "cut" | "reset" | "closed" | "timeout" | "held" | "refused";

interface Outcome {
  readonly status: number | null;
  readonly end: End;
  readonly code: string | null;
  readonly errorBody: boolean;
  readonly bytes: number;
  readonly ms: number;
  readonly detail?: string;
}

interface RawOptions {
  readonly port: number;
  // Request line and headers, each ending in CRLF, without the blank line.
  readonly head: string;
  readonly body?: Uint8Array;
  readonly deadlineMs: number;
  readonly readSize?: number;
  // A slow reader: one read of readSize, then this pause.
  readonly readPauseMs?: number;
  // A slow reader leaves (closes) after this long.
  readonly holdMs?: number;
}

const SLICE = 64 * 1024;

const writeAll = async (conn: Deno.Conn, bytes: Uint8Array) => {
  let at = 0;
  while (at < bytes.length) at += await conn.write(bytes.subarray(at));
};

// Writes the request (the body in slices, while no complete answer has come) and reads the answer
// at the same time, as a browser does; closes when the answer is read or the deadline passes.
const rawRequest = async (o: RawOptions): Promise<Outcome> => {
  const started = performance.now();
  let conn: Deno.TcpConn;
  try {
    conn = await Deno.connect({ hostname: "127.0.0.1", port: o.port });
  } catch (error) {
    return {
      status: null,
      end: "refused",
      code: null,
      errorBody: false,
      bytes: 0,
      ms: performance.now() - started,
      detail: String(error),
    };
  }
  const reader = new ResponseReader();
  let stopped: "timeout" | "held" | null = null;
  let closed = false;
  const close = () => {
    if (closed) return;
    closed = true;
    try {
      conn.close();
    } catch { /* already closed */ }
  };
  const timers = [setTimeout(() => {
    stopped ??= "timeout";
    close();
  }, o.deadlineMs)];
  if (o.holdMs !== undefined) {
    timers.push(setTimeout(() => {
      stopped ??= "held";
      close();
    }, o.holdMs));
  }
  const reading = (async (): Promise<"eof" | "error" | "done" | "stopped"> => {
    const buffer = new Uint8Array(o.readSize ?? SLICE);
    while (!closed && performance.now() - started < o.deadlineMs) {
      let n: number | null;
      try {
        n = await conn.read(buffer);
      } catch {
        return "error";
      }
      if (n === null) {
        reader.finish();
        return "eof";
      }
      reader.feed(buffer.subarray(0, n));
      if (reader.complete) return "done";
      if (o.readPauseMs !== undefined) await sleep(o.readPauseMs);
    }
    return "stopped";
  })();
  const writing = (async () => {
    try {
      await writeAll(conn, encoder.encode(o.head + "\r\n"));
      const body = o.body ?? new Uint8Array(0);
      for (let at = 0; at < body.length && !reader.complete && !closed; at += SLICE) {
        await writeAll(conn, body.subarray(at, Math.min(body.length, at + SLICE)));
      }
    } catch {
      // The server closed or reset the connection: what was answered is the reader's.
    }
  })();
  const how = await reading;
  close();
  for (const timer of timers) clearTimeout(timer);
  await writing;
  const error = reader.errorBody();
  const end: End = reader.complete
    ? "complete"
    : stopped !== null
    ? stopped
    : how === "error"
    ? "reset"
    : reader.status !== null
    ? "cut"
    : "closed";
  return {
    status: reader.status,
    end,
    code: error?.code ?? null,
    errorBody: error !== null,
    bytes: reader.bodyBytes,
    ms: performance.now() - started,
  };
};

// ---------------------------------------------------------------------------------------------
// The probe and the RSS sampler run in a worker: a busy client thread must not delay the probe
// and make the server look slow.

type ToProbe =
  | { readonly kind: "start"; readonly port: number; readonly pid: number }
  | { readonly kind: "mark" }
  | { readonly kind: "stop" };

interface Window {
  readonly liveMaxMs: number;
  readonly probes: number;
  readonly probeFailures: number;
  readonly rssPeakMb: number;
  readonly rssNowMb: number;
}

interface WorkerScope {
  onmessage: ((event: MessageEvent<ToProbe>) => void) | null;
  postMessage(message: Window): void;
  close(): void;
}

const readRssMb = (pid: number) => {
  try {
    const status = Deno.readTextFileSync(`/proc/${pid}/status`);
    return Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? 0) / 1024;
  } catch {
    return 0;
  }
};

const runProbeWorker = () => {
  const scope = globalThis as unknown as WorkerScope;
  let running = true;
  let liveMaxMs = 0;
  let probes = 0;
  let probeFailures = 0;
  let rssNow = 0;
  let rssPeak = 0;
  let inFlightSince: number | null = null;
  let sampler: ReturnType<typeof setInterval> | undefined;
  const probeLoop = async (port: number) => {
    const limit = performance.now() + RUN_LIMIT_MS + SEED_LIMIT_MS;
    while (running && performance.now() < limit) {
      inFlightSince = performance.now();
      const answer = await rawRequest({
        port,
        head: `GET /health/live HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: close\r\n`,
        deadlineMs: 10_000,
      });
      inFlightSince = null;
      liveMaxMs = Math.max(liveMaxMs, answer.ms);
      probes++;
      if (answer.status !== 200 || answer.end !== "complete") probeFailures++;
      await sleep(PROBE_EVERY_MS);
    }
  };
  scope.onmessage = (event) => {
    const message = event.data;
    if (message.kind === "start") {
      rssNow = rssPeak = readRssMb(message.pid);
      sampler = setInterval(() => {
        rssNow = readRssMb(message.pid);
        rssPeak = Math.max(rssPeak, rssNow);
      }, RSS_EVERY_MS);
      probeLoop(message.port);
    } else if (message.kind === "mark") {
      // A probe still waiting ends in this window (within its own deadline), so that its whole
      // wait counts where it began; the next attack starts only after.
      (async () => {
        const until = performance.now() + 12_000;
        while (inFlightSince !== null && performance.now() < until) await sleep(20);
        const waiting = inFlightSince === null ? 0 : performance.now() - inFlightSince;
        scope.postMessage({
          liveMaxMs: Math.max(liveMaxMs, waiting),
          probes,
          probeFailures,
          rssPeakMb: rssPeak,
          rssNowMb: rssNow,
        });
        liveMaxMs = probes = probeFailures = 0;
        rssPeak = rssNow;
      })();
    } else {
      running = false;
      clearInterval(sampler);
      scope.close();
    }
  };
};

// ---------------------------------------------------------------------------------------------
// The service.

interface Service {
  readonly child: Deno.ChildProcess;
  readonly ready: Promise<{ port: number; startedMs: number | null }>;
  readonly warnings: Array<string>;
  readonly tail: Array<string>;
  exited: boolean;
  warningCount: number;
  stop(): Promise<void>;
}

const startTaskArgs = (serviceDir: string) => {
  const flags = Deno.env.get("STARVE_V8_FLAGS") ?? serviceV8Flags(serviceDir);
  return ["run", "-A", ...(flags === "" ? [] : [`--v8-flags=${flags}`]), "src/main.ts"];
};

const startService = (
  serviceDir: string,
  args: Array<string>,
  env: Record<string, string>,
): Service => {
  const child = new Deno.Command(Deno.execPath(), {
    args,
    cwd: serviceDir,
    env: {
      ...env,
      PORT: "0",
      HOST: "127.0.0.1",
      LOG_FORMAT: "json",
      LOG_LEVEL: "info",
      BUILD_CONSOLE: "false",
      NO_COLOR: "1",
    },
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const tail: Array<string> = [];
  const warnings: Array<string> = [];
  let found: ((value: { port: number; startedMs: number | null }) => void) | null = null;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const ready = new Promise<{ port: number; startedMs: number | null }>((resolve, reject) => {
    found = resolve;
    timer = setTimeout(
      () => reject(new Error(`the service did not start:\n${tail.join("\n")}`)),
      START_LIMIT_MS,
    );
    child.status.then((status) =>
      reject(new Error(`the service exited (${status.code}):\n${tail.join("\n")}`))
    );
  });
  ready.then(() => clearTimeout(timer), () => clearTimeout(timer));
  const pump = async (stream: ReadableStream<Uint8Array>) => {
    let rest = "";
    for await (const chunk of stream.pipeThrough(new TextDecoderStream())) {
      const lines = (rest + chunk).split("\n");
      rest = lines.pop() ?? "";
      for (const line of lines) {
        if (line.trim() === "") continue;
        tail.push(line);
        if (tail.length > 40) tail.shift();
        if (/"level":"(warn|error)"/.test(line)) {
          service.warningCount++;
          warnings.push(line);
          if (warnings.length > 200) warnings.shift();
        }
        const port = /"msg":"ready on http:\/\/[^:]+:(\d+) /.exec(line)?.[1];
        if (port !== undefined && found !== null) {
          found({
            port: Number(port),
            startedMs: Number(/started in (\d+) ms/.exec(line)?.[1] ?? NaN) || null,
          });
          found = null;
        }
      }
    }
  };
  const pumping = Promise.all([pump(child.stdout), pump(child.stderr)]);
  const service: Service = {
    child,
    ready,
    warnings,
    tail,
    exited: false,
    warningCount: 0,
    async stop() {
      if (!service.exited) {
        try {
          child.kill("SIGTERM");
        } catch { /* gone */ }
        const killer = setTimeout(() => {
          try {
            child.kill("SIGKILL");
          } catch { /* gone */ }
        }, 15_000);
        await child.status;
        clearTimeout(killer);
      }
      await pumping.catch(() => {});
    },
  };
  child.status.then(() => (service.exited = true));
  return service;
};

// Other work on the machine shares its CPUs with the service and the clients: the load average
// says how much there was.
const loadAverage = () => {
  try {
    return Deno.readTextFileSync("/proc/loadavg").split(" ").slice(0, 3).join(" ");
  } catch {
    return "unknown";
  }
};

// ---------------------------------------------------------------------------------------------
// Rows and the table.

interface Row {
  readonly name: string;
  readonly outcomes: ReadonlyArray<Outcome>;
  readonly upload: boolean;
  readonly seconds: number;
  readonly window: Window;
  readonly note: string;
}

// "401", "503(BUSY)", "408(empty)" (an answer >= 400 without a body), "413(other)" (a body that is
// not the contract's error), "413(reset)" (the status came, the connection failed before the body
// ended), "noanswer(held)" (a slow reader left before any answer), "reset", "closed".
const label = (o: Outcome) => {
  if (o.status === null) {
    return o.end === "timeout" || o.end === "held" ? `noanswer(${o.end})` : o.end;
  }
  if (o.end !== "complete") return `${o.status}(${o.end})`;
  if (o.status >= 400 && !o.errorBody) return `${o.status}(${o.bytes === 0 ? "empty" : "other"})`;
  return o.status === 503 ? `503(${o.code})` : String(o.status);
};

const answersText = (outcomes: ReadonlyArray<Outcome>) => {
  const counts = new Map<string, number>();
  for (const o of outcomes) counts.set(label(o), (counts.get(label(o)) ?? 0) + 1);
  return [...counts].sort((a, b) => b[1] - a[1]).map(([l, n]) => `${l}x${n}`).join(" ") || "none";
};

// An answer >= 500 other than a fully read 503 BUSY.
const isServerFailure = (o: Outcome) =>
  o.status !== null && o.status >= 500 &&
  !(o.status === 503 && o.code === "BUSY" && o.end === "complete");

const isAccepted = (o: Outcome) =>
  o.status !== null && o.status >= 200 && o.status < 300 && o.end === "complete";

// A refused client read its refusal: a status >= 400 and a complete error body.
const readRefusal = (o: Outcome) =>
  o.status !== null && o.status >= 400 && o.end === "complete" && o.errorBody;

const refusedText = (row: Row) => {
  if (!row.upload) return "-";
  const refused = row.outcomes.filter((o) => !isAccepted(o));
  return `${refused.filter(readRefusal).length}/${refused.length}`;
};

const COLUMNS = [
  "attack",
  "answers",
  ">=500",
  "RSS MB",
  "live ms",
  "refused read",
  "secs",
  "note",
];

const cells = (row: Row) => {
  const failures = row.outcomes.filter(isServerFailure);
  return [
    row.name,
    answersText(row.outcomes),
    failures.length === 0 ? "no" : `yes ${answersText(failures)}`,
    String(Math.round(row.window.rssPeakMb)),
    String(Math.round(row.window.liveMaxMs)) +
    (row.window.probeFailures > 0 ? ` (${row.window.probeFailures} failed)` : ""),
    refusedText(row),
    row.seconds.toFixed(1),
    row.note,
  ];
};

// Aligned on the widest cell of each column, at least `least` wide (the rows printed as they come
// use fixed widths).
const table = (rows: ReadonlyArray<Row>, least: ReadonlyArray<number> = []) => {
  const all = [COLUMNS, ...rows.map(cells)];
  const widths = COLUMNS.map((_, i) => Math.max(least[i] ?? 0, ...all.map((r) => r[i].length)));
  const line = (r: Array<string>) => r.map((c, i) => c.padEnd(widths[i])).join("  ").trimEnd();
  return [line(all[0]), line(widths.map((w) => "-".repeat(w))), ...all.slice(1).map(line)]
    .join("\n");
};

// ---------------------------------------------------------------------------------------------
// Inputs.

const base64 = (bytes: Uint8Array) => {
  const parts: Array<string> = [];
  for (let at = 0; at < bytes.length; at += 0x8000) {
    parts.push(String.fromCharCode(...bytes.subarray(at, at + 0x8000)));
  }
  return btoa(parts.join(""));
};

const csvCell = (text: string) => /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;

const addDays = (date: string, days: number) =>
  new Date(Date.parse(`${date}T00:00:00Z`) + days * 86_400_000).toISOString().slice(0, 10);

interface StoreRow {
  readonly id: number;
  readonly name: string;
  readonly brand_name: string;
}

// A CSV long table of `rows` store-days of the loaded stores, the latest days first, each row with
// a note that brings the file to about `fileBytes`.
const previewCsv = (
  stores: ReadonlyArray<StoreRow>,
  first: string,
  last: string,
  rows: number,
  fileBytes: number,
) => {
  const records: Array<string> = [];
  let seed = 7;
  for (let day = 0; records.length < rows && addDays(last, -day) >= first; day++) {
    const date = addDays(last, -day);
    for (const store of stores) {
      if (records.length >= rows) break;
      seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648;
      const kwh = (seed % 4_000_000) / 10_000;
      records.push(`${csvCell(store.brand_name)},${csvCell(store.name)},${date},${kwh}`);
    }
  }
  const header = "品牌,门店,日期,日能耗,备注\n";
  const plain = encoder.encode(header + records.join(",\n") + ",\n").length;
  const noteLength = Math.max(1, Math.floor((fileBytes - plain) / Math.max(1, records.length)));
  const note = "starve run note ".repeat(Math.ceil(noteLength / 16)).slice(0, noteLength);
  return {
    bytes: encoder.encode(header + records.map((r) => `${r},${note}\n`).join("")),
    rows: records.length,
  };
};

// ---------------------------------------------------------------------------------------------
// The run.

const usage = (message: string): never => {
  console.error(`${message}\nattacks: ${ATTACKS.join(", ")}`);
  Deno.exit(2);
};

const main = async () => {
  const only = (Deno.env.get("STARVE_ONLY") ?? "").split(",").map((s) => s.trim()).filter((s) =>
    s !== ""
  );
  for (const name of only) {
    if (!(ATTACKS as ReadonlyArray<string>).includes(name)) usage(`unknown attack ${name}`);
  }
  const selected = (name: AttackName) => only.length === 0 || only.includes(name);
  const storesText = Deno.env.get("STARVE_STORES") ?? String(DEMO_STORES);
  const storeCount = Number(storesText);
  if (!Number.isInteger(storeCount) || storeCount < 1) usage(`STARVE_STORES: ${storesText}`);
  const serviceDir = Deno.realPathSync(
    Deno.env.get("STARVE_SERVICE_DIR") ?? new URL("..", import.meta.url).pathname,
  );
  const serverUrl = Deno.env.get("DATABASE_URL") ?? "";
  const args = startTaskArgs(serviceDir);

  const dataDir = await Deno.makeTempDir({ prefix: "starve-" });
  const dbName = serverUrl === ""
    ? null
    : `starve_${crypto.randomUUID().replaceAll("-", "").slice(0, 12)}`;
  let service: Service | null = null;
  let worker: Worker | null = null;
  let cleaned = false;
  const cleanup = async () => {
    if (cleaned) return;
    cleaned = true;
    worker?.terminate();
    await service?.stop();
    if (dbName !== null) {
      await adminQuery(serverUrl, `DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`).catch((e) =>
        console.error(`could not drop ${dbName}: ${e}`)
      );
    }
    await Deno.remove(dataDir, { recursive: true }).catch(() => {});
  };
  const interrupted = async () => {
    console.error("interrupted: stopping the service");
    await cleanup();
    Deno.exit(130);
  };
  Deno.addSignalListener("SIGINT", interrupted);
  Deno.addSignalListener("SIGTERM", interrupted);

  let exitCode = 1;
  try {
    if (dbName !== null) await adminQuery(serverUrl, `CREATE DATABASE ${dbName}`);
    const env = {
      DATA_DIR: dataDir,
      DATABASE_URL: dbName === null ? "" : withDatabase(serverUrl, dbName),
    };
    console.log(
      `service: ${serviceDir}: deno ${args.join(" ")}; database: ${
        dbName === null ? "embedded (PGlite)" : `PostgreSQL ${dbName}`
      }`,
    );

    // The first start creates the database and loads the demo: the run measures a second start
    // over the same data, as a service runs day to day, and reports the first one's RSS once ready.
    const first = startService(serviceDir, args, env);
    service = first;
    const firstReady = await first.ready;
    const firstRss = Math.round(readRssMb(first.child.pid));
    await first.stop();
    console.log(
      `first start (demo load): ready in ${firstReady.startedMs ?? "?"} ms, RSS ${firstRss} MB`,
    );
    if (storeCount !== DEMO_STORES) {
      const seedStarted = performance.now();
      const seed = new Deno.Command(Deno.execPath(), {
        args: ["run", "-A", "scripts/seed.ts", "--reset", "--stores", String(storeCount)],
        cwd: serviceDir,
        env: { ...env, NO_COLOR: "1" },
        stdout: "piped",
        stderr: "piped",
        signal: AbortSignal.timeout(SEED_LIMIT_MS),
      }).output();
      const done = await seed;
      if (!done.success) {
        throw new Error(`seed of ${storeCount} stores failed:\n${decoder.decode(done.stderr)}`);
      }
      console.log(
        `loaded ${storeCount} stores in ${((performance.now() - seedStarted) / 1000).toFixed(0)} s`,
      );
    }
    service = startService(serviceDir, args, env);
    const { port, startedMs } = await service.ready;
    const live = service;
    const origin = `http://127.0.0.1:${port}`;
    const host = `127.0.0.1:${port}`;
    console.log(`load average ${loadAverage()}`);
    console.log(
      `second start: ready in ${startedMs ?? "?"} ms on ${origin}, RSS ${
        Math.round(readRssMb(service.child.pid))
      } MB`,
    );
    const runDeadline = setTimeout(async () => {
      console.error("the run passed its time limit: stopping");
      await cleanup();
      Deno.exit(1);
    }, RUN_LIMIT_MS);

    const keys = JSON.parse(await Deno.readTextFile(`${dataDir}/demo-keys.json`)) as Array<
      { member: string; permissions: Array<string>; stores: Array<number> | null; key: string }
    >;
    const readKey = keys.find((k) => !k.permissions.includes("write") && k.stores === null)?.key;
    const writeKey = keys.find((k) => k.permissions.includes("write") && k.stores === null)?.key;
    if (readKey === undefined || writeKey === undefined) {
      throw new Error("demo-keys.json holds no read-only or no write key over all stores");
    }
    const getJson = async <T>(path: string): Promise<T> => {
      const r = await fetch(origin + path, {
        headers: { authorization: `Bearer ${writeKey}` },
        signal: AbortSignal.timeout(60_000),
      });
      if (!r.ok) throw new Error(`GET ${path}: ${r.status} ${await r.text()}`);
      return await r.json() as T;
    };
    const dataset = await getJson<{ start: string; end: string }>("/api/v1/dataset");
    const { stores } = await getJson<{ stores: Array<StoreRow> }>("/api/v1/stores");
    const exportStart = addDays(dataset.end, -365) < dataset.start
      ? dataset.start
      : addDays(dataset.end, -365);
    const exportPath = `/api/v1/stores/export?start=${exportStart}&end=${dataset.end}&format=csv`;
    console.log(
      `${stores.length} stores, dataset ${dataset.start}..${dataset.end}; export ${exportStart}..${dataset.end}`,
    );

    worker = new Worker(import.meta.url, { type: "module", name: "starve-probe" });
    const windows: Array<(w: Window) => void> = [];
    worker.onmessage = (event: MessageEvent<Window>) => windows.shift()?.(event.data);
    const mark = () => {
      const next = new Promise<Window>((resolve) => windows.push(resolve));
      worker!.postMessage({ kind: "mark" } satisfies ToProbe);
      return next;
    };
    worker.postMessage({ kind: "start", port, pid: service.child.pid } satisfies ToProbe);
    await sleep(1_000);
    const idle = await mark();
    console.log(
      `idle: RSS ${Math.round(idle.rssNowMb)} MB, /health/live ${Math.round(idle.liveMaxMs)} ms\n`,
    );
    const PROGRESS_WIDTHS = [18, 26, 5, 6, 7, 12, 5];
    console.log(table([], PROGRESS_WIDTHS));

    const rows: Array<Row> = [];
    const row = async (
      name: string,
      upload: boolean,
      limitMs: number,
      run: () => Promise<{ outcomes: Array<Outcome>; note?: string }>,
    ) => {
      if (live.exited) return;
      const started = performance.now();
      // Each attack bounds its own clients; this bounds the attack should one of them hang.
      let timer: ReturnType<typeof setTimeout> | undefined;
      const result = await Promise.race([
        run().catch((error) => ({ outcomes: [], note: `error: ${error}` })),
        new Promise<{ outcomes: Array<Outcome>; note: string }>((resolve) => {
          timer = setTimeout(
            () => resolve({ outcomes: [], note: "did not end within its limit" }),
            limitMs + 30_000,
          );
        }),
      ]);
      clearTimeout(timer);
      const seconds = (performance.now() - started) / 1000;
      await sleep(SETTLE_MS);
      const window = await mark();
      const done: Row = {
        name,
        upload,
        seconds,
        window,
        outcomes: result.outcomes,
        note: (result.note ?? "") + (live.exited ? " SERVICE EXITED" : ""),
      };
      rows.push(done);
      console.log(table([done], PROGRESS_WIDTHS).split("\n")[2]);
    };
    const many = (count: number, one: (i: number) => Promise<Outcome>) =>
      Promise.all(Array.from({ length: count }, (_, i) => one(i)));
    const mb = (bytes: number) => (bytes / 1e6).toFixed(1);

    // Attacks 1 and 2: 5.8 MB JSON bodies, each on its own connection.
    const BODY_BYTES = 5_800_000;
    const bodyPrefix = '{"filename":"starve.csv","reason":"starve run","content_base64":"';
    const bigBody = new Uint8Array(BODY_BYTES).fill(0x41);
    bigBody.set(encoder.encode(bodyPrefix));
    bigBody.set(encoder.encode('"}'), BODY_BYTES - 2);
    const previewHead = (auth: string | null, length: number) =>
      `POST /api/v1/imports/preview HTTP/1.1\r\nHost: ${host}\r\nOrigin: ${origin}\r\n` +
      `Content-Type: application/json\r\nContent-Length: ${length}\r\n` +
      (auth === null ? "" : `Authorization: Bearer ${auth}\r\n`) +
      `Idempotency-Key: ${crypto.randomUUID()}\r\n`;
    const bodies = (auth: string | null, count: number) => async () => {
      const outcomes = await many(count, () =>
        rawRequest({
          port,
          head: previewHead(auth, BODY_BYTES),
          body: bigBody,
          deadlineMs: 60_000,
        }));
      return { outcomes, note: `${count} x ${mb(BODY_BYTES)} MB` };
    };
    if (selected("bodies-unauth")) await row("bodies-unauth", true, 60_000, bodies(null, 300));
    if (selected("bodies-auth")) {
      await row("bodies-auth-read", true, 60_000, bodies(readKey, 300));
      await row("bodies-auth-write", true, 60_000, bodies(writeKey, 40));
    }

    // Attacks 3 and 4: maximum exports, read fast to the end, then slowly by many.
    const exportHead = `GET ${exportPath} HTTP/1.1\r\nHost: ${host}\r\n` +
      `Authorization: Bearer ${readKey}\r\n`;
    const bytesNote = (outcomes: ReadonlyArray<Outcome>) =>
      `largest body ${mb(Math.max(0, ...outcomes.map((o) => o.bytes)))} MB, slowest ${
        (Math.max(0, ...outcomes.map((o) => o.ms)) / 1000).toFixed(1)
      } s`;
    if (selected("exports-max")) {
      await row("exports-max", false, 300_000, async () => {
        const outcomes = await many(
          20,
          () => rawRequest({ port, head: exportHead, deadlineMs: 300_000 }),
        );
        return {
          outcomes,
          note: `20 x ${stores.length} stores x 366 days; ${bytesNote(outcomes)}`,
        };
      });
    }
    if (selected("exports-slow")) {
      await row("exports-slow", false, 30_000, async () => {
        const outcomes = await many(100, () =>
          rawRequest({
            port,
            head: exportHead,
            deadlineMs: 30_000,
            readSize: 16 * 1024,
            readPauseMs: 100,
            holdMs: 20_000,
          }));
        return {
          outcomes,
          note: `100 readers of 16 KB per 100 ms for 20 s; ${bytesNote(outcomes)}`,
        };
      });
    }

    // Attack 5: a preview of 10,000 valid rows, alone and four at once.
    if (selected("preview-10k") || selected("preview-10k-x4")) {
      const csv = previewCsv(stores, dataset.start, dataset.end, 10_000, 3_600_000);
      const body = encoder.encode(JSON.stringify({
        filename: "starve-10k.csv",
        content_base64: base64(csv.bytes),
        reason: "starve run",
      }));
      const note = `${csv.rows} rows, file ${mb(csv.bytes.length)} MB, body ${mb(body.length)} MB`;
      const previews = (count: number) => async () => {
        const outcomes = await many(
          count,
          () =>
            rawRequest({
              port,
              head: previewHead(writeKey, body.length),
              body,
              deadlineMs: 120_000,
            }),
        );
        return { outcomes, note: `${note}; ${bytesNote(outcomes)}` };
      };
      if (selected("preview-10k")) await row("preview-10k", true, 120_000, previews(1));
      if (selected("preview-10k-x4")) await row("preview-10k-x4", true, 120_000, previews(4));
    }

    // Attack 6: oversize uploads sent by fetch, as a browser sends them (the whole body, then the
    // answer): does the client get the 413 and its body, or a reset?
    if (selected("oversize")) {
      const viaFetch = async (body: Uint8Array<ArrayBuffer>): Promise<Outcome> => {
        const started = performance.now();
        const ms = () => performance.now() - started;
        let status: number | null = null;
        try {
          const r = await fetch(`${origin}/api/v1/imports/preview`, {
            method: "POST",
            headers: {
              "content-type": "application/json",
              origin,
              authorization: `Bearer ${writeKey}`,
              "idempotency-key": crypto.randomUUID(),
            },
            body,
            signal: AbortSignal.timeout(30_000),
          });
          status = r.status;
          const text = await r.text();
          let code: string | null = null;
          try {
            const error = JSON.parse(text)?.error;
            if (typeof error?.code === "string" && typeof error?.message === "string") {
              code = error.code;
            }
          } catch { /* not JSON */ }
          return {
            status,
            end: "complete",
            code,
            errorBody: code !== null,
            bytes: text.length,
            ms: ms(),
          };
        } catch (error) {
          const timedOut = error instanceof DOMException && error.name === "TimeoutError";
          return {
            status,
            end: timedOut ? "timeout" : "reset",
            code: null,
            errorBody: false,
            bytes: 0,
            ms: ms(),
            detail: String(error).slice(0, 100),
          };
        }
      };
      const tries = 5;
      const sequential = async (body: Uint8Array<ArrayBuffer>) => {
        const outcomes: Array<Outcome> = [];
        for (let i = 0; i < tries; i++) outcomes.push(await viaFetch(body));
        const failed = outcomes.find((o) => o.detail !== undefined)?.detail;
        return { outcomes, failed };
      };
      const file = new Uint8Array(9 * 1024 * 1024).fill(0x61);
      const nineMiB = encoder.encode(JSON.stringify({
        filename: "starve-9MiB.csv",
        content_base64: base64(file),
        reason: "starve run",
      }));
      await row("oversize-9MiB-file", true, 5 * 30_000, async () => {
        const { outcomes, failed } = await sequential(nineMiB);
        return {
          outcomes,
          note: `${tries} x body ${mb(nineMiB.length)} MB by fetch${failed ? `; ${failed}` : ""}`,
        };
      });
      const twentyMB = new Uint8Array(20_000_000).fill(0x20);
      twentyMB.set(encoder.encode('{"filename":"x.csv","reason":"starve run","content_base64":"'));
      twentyMB.set(encoder.encode('"}'), twentyMB.length - 2);
      twentyMB.fill(0x41, 60, twentyMB.length - 2);
      await row("oversize-20MB-json", true, 5 * 30_000, async () => {
        const { outcomes, failed } = await sequential(twentyMB);
        return {
          outcomes,
          note: `${tries} x body ${mb(twentyMB.length)} MB by fetch${failed ? `; ${failed}` : ""}`,
        };
      });
    }

    // Attack 7: large request heads.
    if (selected("headers")) {
      for (const kib of [16, 32, 64]) {
        await row(`headers-${kib}KiB`, false, 15_000, async () => {
          let head =
            `GET /api/v1/stores HTTP/1.1\r\nHost: ${host}\r\nAuthorization: Bearer ${readKey}\r\n`;
          for (let i = 0; head.length < kib * 1024; i++) {
            const room = kib * 1024 - head.length - `X-Pad-${i}: \r\n`.length;
            head += `X-Pad-${i}: ${"a".repeat(Math.max(1, Math.min(1000, room)))}\r\n`;
          }
          const outcome = await rawRequest({ port, head, deadlineMs: 15_000 });
          const shaped = outcome.status === null || outcome.status < 400
            ? ""
            : outcome.errorBody
            ? "; contract error body"
            : "; no contract error body";
          return { outcomes: [outcome], note: `${head.length} bytes of head${shaped}` };
        });
      }
    }

    clearTimeout(runDeadline);
    worker.postMessage({ kind: "stop" } satisfies ToProbe);
    const diedEarly = live.exited;
    await cleanup();

    // The summary.
    console.log(`\n${table(rows)}\n`);
    console.log(`machine: ${navigator.hardwareConcurrency} CPUs, load average ${loadAverage()}\n`);
    const failures = rows.flatMap((r) => r.outcomes.filter(isServerFailure).map(() => r.name));
    const peak = rows.reduce(
      (m, r) => (r.window.rssPeakMb > m.mb ? { mb: r.window.rssPeakMb, at: r.name } : m),
      {
        mb: 0,
        at: "",
      },
    );
    const slow = rows.reduce(
      (m, r) => (r.window.liveMaxMs > m.ms ? { ms: r.window.liveMaxMs, at: r.name } : m),
      {
        ms: 0,
        at: "",
      },
    );
    const probeFailures = rows.reduce((n, r) => n + r.window.probeFailures, 0);
    const unread = rows.filter((r) => r.upload).flatMap((r) =>
      r.outcomes.filter((o) => !isAccepted(o) && !readRefusal(o)).map((o) =>
        `${r.name} ${label(o)}`
      )
    );
    const unreadCounts = new Map<string, number>();
    for (const u of unread) unreadCounts.set(u, (unreadCounts.get(u) ?? 0) + 1);
    const goals: Array<[boolean, string]> = [
      [
        failures.length === 0,
        `no answer >= 500 other than 503 BUSY (${failures.length} such answers${
          failures.length > 0 ? `: ${[...new Set(failures)].join(", ")}` : ""
        })`,
      ],
      [
        peak.mb <= RSS_LIMIT_MB,
        `server RSS <= ${RSS_LIMIT_MB} MB (peak ${Math.round(peak.mb)} MB in ${peak.at || "-"})`,
      ],
      [
        slow.ms <= LIVE_LIMIT_MS && probeFailures === 0,
        `no /health/live wait over ${LIVE_LIMIT_MS} ms (longest ${Math.round(slow.ms)} ms in ${
          slow.at || "-"
        }; ${probeFailures} probes failed)`,
      ],
      [
        unread.length === 0,
        `every refused upload's client read its 4xx and error body (${unread.length} did not${
          unread.length > 0
            ? `: ${[...unreadCounts].map(([what, n]) => `${what} x${n}`).join(", ")}`
            : ""
        })`,
      ],
      [!diedEarly, "the service stayed up"],
    ];
    for (const [ok, text] of goals) console.log(`${ok ? "PASS" : "FAIL"}  ${text}`);
    if (live.warnings.length > 0) {
      console.log(`\nthe service wrote ${live.warningCount} warnings or errors; the last:`);
      for (const line of live.warnings.slice(-5)) console.log(`  ${line.slice(0, 300)}`);
    }
    if (diedEarly) console.log(`\nthe service's last lines:\n${live.tail.join("\n")}`);
    exitCode = goals.every(([ok]) => ok) ? 0 : 1;
  } catch (error) {
    console.error(error instanceof Error ? error.message : String(error));
    exitCode = 1;
  } finally {
    await cleanup();
  }
  Deno.exit(exitCode);
};

if ("WorkerGlobalScope" in globalThis) {
  runProbeWorker();
} else if (import.meta.main) {
  await main();
}
