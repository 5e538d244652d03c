// Benchmark orchestrator: seed bench_energy, load the service and a baseline with wrk, time
// 10,000-value XLSX/CSV imports (import_bench.ts), check goals.
import { parseArgs } from "node:util";
import pg from "pg";
import { type ImportBenchResult, importTable, runImportBench } from "./import_bench.ts";
import { median } from "./stats.ts";
import { textTable } from "./text_table.ts";

const USAGE = `Usage: deno task bench [--reseed]

  --reseed   reload the benchmark database (seed --reset --stores 500) even if it holds stores

Environment:
  BENCH_SECONDS         seconds of load per endpoint and concurrency (default 10)
  BENCH_WARMUP_SECONDS  unrecorded load per endpoint before measuring (default 2, 0 disables)
  BENCH_DATABASE_URL    local PostgreSQL database to use
                        (default postgres://postgres@127.0.0.1:5432/bench_energy)
  DB_POOL_MAX           connection pool size of both servers (default 10)
  BENCH_SCALE_SECONDS   turns of one second per size, endpoint and concurrency in the scale run,
                        the sizes' services loaded in rotation (default 5)
  BENCH_FLAGS_ROUNDS    rounds per read in the flags' cost run (default 8)
  BENCH_FLAGS_LOAD      how the flags' cost run loads its three processes: alone (default: one
                        after another in each round) or together (all three in the same seconds)
  BENCH_V8_FLAGS        the service's --v8-flags (default: the start task's in deno.json; empty:
                        none, as on Deno Deploy, which takes no runtime flags)
  BENCH_ENV             the environment the service is started with besides the benchmark's own,
                        as NAME=value words (default: what the start task sets before
                        \`deno run\`; empty: nothing)
  BENCH_ONLY            reads: only the read endpoints (wrk against the service and the baselines);
                        imports: only the import benchmark (no wrk, no baseline server), e.g.
                        BENCH_ONLY=imports deno task bench   (about 1 min);
                        scale: only the scale run (60, 500 and 2,000 stores);
                        flags: only the flags' cost: the service's reads at c=32 with
                        BENCH_V8_FLAGS and BENCH_ENV and in two processes with neither (the
                        second a control of the method), all three also with --trace-gc
                        (BENCH_SECONDS=2: about 10 min alone, 6 min together)
                        unset: reads, imports and scale, the imports after the read endpoints on
                        the same service

Imports: 3 XLSX then 3 CSV files of 100 stores x 100 days (10,000 values each) are previewed
and committed over HTTP; each commit writes, so each file uses store-days without cleaned
values (the window ending at the dataset end first, then earlier ones); when earlier runs have
used them all up, the run says so and --reseed restores them.

Exit codes: 0 every goal passed and no request failed; 1 a goal failed or the load saw
non-2xx answers or socket errors, or an import preview or commit failed; 2 the benchmark could
not be set up (or the import benchmark could not run; the results file is still written).`;

const ROOT = decodeURIComponent(new URL("../../", import.meta.url).pathname).replace(/\/$/, "");
const OUT_DIR = `${ROOT}/.data/bench`;
const LUA = `${ROOT}/scripts/bench/random_store.lua`;
const DENO = Deno.execPath();
const STORES = 500;
const CONCURRENCY = [1, 32] as const;
const RANGE = "start=2025-11-20&end=2026-11-20";
// The service as the start task runs it (deno.json): its V8 flags and the environment the task sets
// before the command (the allocator's settings), unless BENCH_V8_FLAGS or BENCH_ENV say otherwise.
const START_TASK: string = JSON.parse(Deno.readTextFileSync(`${ROOT}/deno.json`)).tasks.start;
const V8_FLAGS = Deno.env.get("BENCH_V8_FLAGS") ?? START_TASK.match(/--v8-flags=(\S+)/)?.[1] ?? "";
// "NAME=value" words, as the task writes them before `deno`.
const envWords = (text: string): Record<string, string> =>
  Object.fromEntries(
    text.split(/\s+/).filter((word) => word !== "").map((word) => {
      const at = word.indexOf("=");
      if (at <= 0) throw new Error(`not NAME=value: ${word}`);
      return [word.slice(0, at), word.slice(at + 1)];
    }),
  );
const START_ENV = envWords(
  Deno.env.get("BENCH_ENV") ?? START_TASK.slice(0, Math.max(0, START_TASK.indexOf("deno run"))),
);
const startEnvText = () =>
  Object.entries(START_ENV).map(([name, value]) => `${name}=${value}`).join(" ") || "none";
const startSettingsText = () =>
  `V8 flags ${V8_FLAGS.trim() || "none"}; environment ${startEnvText()}`;
const serviceArgs = (flags: string) => [
  "run",
  "-A",
  "--unstable-no-legacy-abort",
  ...(flags.trim() === "" ? [] : [`--v8-flags=${flags.trim()}`]),
  "src/main.ts",
];
const SERVICE_ARGS = serviceArgs(V8_FLAGS);
// The service's environment: the start task's (unless `plain`), the benchmark's database and pool,
// loopback, no demo seed.
const serviceEnv = (databaseUrl: URL, pool: number, port: number, plain = false) => ({
  ...(plain ? {} : START_ENV),
  DATABASE_URL: databaseUrl.toString(),
  DB_POOL_MAX: String(pool),
  HOST: "127.0.0.1",
  PORT: String(port),
  SEED_DEMO: "false",
});
const AS_OF = "2026-11-20";
const LOOPBACK = new Set(["127.0.0.1", "localhost", "[::1]", "::1"]);

class SetupError extends Error {}

const decoder = new TextDecoder();
const delay = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const log = (line: string) => console.log(line);

const children = new Set<Deno.ChildProcess>();

const spawn = (command: string, args: Array<string>, options: Deno.CommandOptions = {}) => {
  const child = new Deno.Command(command, { args, cwd: ROOT, stdin: "null", ...options }).spawn();
  children.add(child);
  child.status.then(() => children.delete(child));
  return child;
};

const capture = async (command: string, args: Array<string>, env?: Record<string, string>) => {
  const child = spawn(command, args, { env, stdout: "piped", stderr: "piped" });
  const out = await child.output();
  return { code: out.code, stdout: decoder.decode(out.stdout), stderr: decoder.decode(out.stderr) };
};

const stopChild = async (child: Deno.ChildProcess) => {
  try {
    child.kill("SIGTERM");
  } catch {
    return; // already gone
  }
  const stopped = await Promise.race([
    child.status.then(() => true),
    delay(10_000).then(() => false),
  ]);
  if (!stopped) {
    try {
      child.kill("SIGKILL");
    } catch { /* gone meanwhile */ }
    await child.status;
  }
};

let cleaning: Promise<void> | undefined;
const stopAll = () => cleaning ??= Promise.all([...children].map(stopChild)).then(() => {});

let interrupted = false;
// deno task forwards the signal it got, so one Ctrl-C can arrive twice.
const onSignal = (signal: Deno.Signal) => () => {
  if (interrupted) return;
  interrupted = true;
  console.error(`\n${signal}: stopping the servers`);
  stopAll().finally(() => Deno.exit(130));
};
Deno.addSignalListener("SIGINT", onSignal("SIGINT"));
Deno.addSignalListener("SIGTERM", onSignal("SIGTERM"));
// Last resort when something calls Deno.exit before the async stop ran: no child may outlive us.
globalThis.addEventListener("unload", () => {
  for (const child of children) {
    try {
      child.kill("SIGKILL");
    } catch { /* gone */ }
  }
});

const wholeNumber = (name: string, fallback: number, min: number, unit = "seconds") => {
  const raw = Deno.env.get(name);
  if (raw === undefined || raw.trim() === "") return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min) {
    throw new SetupError(`${name} must be a whole number of ${unit} >= ${min}, got "${raw}"`);
  }
  return value;
};

const benchOnly = () => {
  const raw = Deno.env.get("BENCH_ONLY")?.trim() ?? "";
  if (raw === "") return undefined;
  if (raw === "reads" || raw === "imports" || raw === "scale" || raw === "flags") return raw;
  throw new SetupError(`BENCH_ONLY must be reads, imports, scale or flags, got "${raw}"`);
};

const flagsLoad = () => {
  const raw = Deno.env.get("BENCH_FLAGS_LOAD")?.trim() ?? "";
  if (raw === "" || raw === "alone") return "alone" as const;
  if (raw === "together") return raw;
  throw new SetupError(`BENCH_FLAGS_LOAD must be alone or together, got "${raw}"`);
};

const readSettings = () => {
  let args;
  try {
    args = parseArgs({
      args: Deno.args,
      options: {
        reseed: { type: "boolean", default: false },
        help: { type: "boolean", short: "h" },
      },
      strict: true,
      allowPositionals: false,
    }).values;
  } catch (error) {
    throw new SetupError(`${(error as Error).message}\n${USAGE}`);
  }
  if (args.help) {
    log(USAGE);
    Deno.exit(0);
  }
  const url = new URL(
    Deno.env.get("BENCH_DATABASE_URL") ?? "postgres://postgres@127.0.0.1:5432/bench_energy",
  );
  const socketHost = url.searchParams.get("host") ?? "";
  if (!(LOOPBACK.has(url.hostname) || (url.hostname === "" && socketHost.startsWith("/")))) {
    throw new SetupError(
      `BENCH_DATABASE_URL must point at this machine (loopback or a socket), not ${url.hostname}`,
    );
  }
  const database = decodeURIComponent(url.pathname.slice(1));
  if (database === "") throw new SetupError("BENCH_DATABASE_URL names no database");
  const pool = Number(Deno.env.get("DB_POOL_MAX") ?? "10");
  if (!Number.isInteger(pool) || pool < 1) throw new SetupError("DB_POOL_MAX must be >= 1");
  return {
    reseed: args.reseed ?? false,
    seconds: wholeNumber("BENCH_SECONDS", 10, 1),
    warmup: wholeNumber("BENCH_WARMUP_SECONDS", 2, 0),
    scaleSeconds: wholeNumber("BENCH_SCALE_SECONDS", 5, 1),
    rounds: wholeNumber("BENCH_FLAGS_ROUNDS", 8, 1, "rounds"),
    flagsLoad: flagsLoad(),
    databaseUrl: url,
    database,
    pool,
    only: benchOnly(),
  };
};
type Settings = ReturnType<typeof readSettings>;

const safeUrl = (url: URL) => {
  const copy = new URL(url);
  if (copy.password !== "") copy.password = "***";
  return copy.toString();
};

const wrkVersion = () => {
  try {
    const out = new Deno.Command("wrk", { args: ["-v"], stdout: "piped", stderr: "piped" })
      .outputSync();
    return (decoder.decode(out.stdout) + decoder.decode(out.stderr)).split("\n")[0].trim();
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return undefined;
    throw error;
  }
};

const ensureWrk = async () => {
  const found = wrkVersion();
  if (found !== undefined) return found;
  log("wrk is not installed: installing it with apt-get");
  const sudo = Deno.uid() === 0 ? [] : ["sudo"];
  const env = { DEBIAN_FRONTEND: "noninteractive" };
  for (const args of [["apt-get", "update"], ["apt-get", "install", "-y", "wrk"]]) {
    const [command, ...rest] = [...sudo, ...args];
    const out = await capture(command, rest, env);
    if (out.code !== 0) {
      throw new SetupError(`${args.join(" ")} failed:\n${(out.stdout + out.stderr).slice(-2000)}`);
    }
  }
  return wrkVersion() ?? (() => {
    throw new SetupError("wrk is still missing after apt-get install");
  })();
};

const connect = async (url: URL) => {
  const client = new pg.Client({ connectionString: url.toString(), connectionTimeoutMillis: 5000 });
  await client.connect();
  return client;
};

const startLocalPostgres = async () => {
  let versions: Array<string> = [];
  try {
    versions = [...Deno.readDirSync("/etc/postgresql")].map((entry) => entry.name);
  } catch {
    return false;
  }
  let started = false;
  for (const version of versions) {
    const out = await capture("pg_ctlcluster", [
      "--skip-systemctl-redirect",
      version,
      "main",
      "start",
    ]).catch(() => undefined);
    started ||= out?.code === 0;
  }
  return started;
};

const openAdmin = async (settings: Settings) => {
  const admin = new URL(settings.databaseUrl);
  admin.pathname = "/postgres";
  try {
    return await connect(admin);
  } catch (error) {
    const refused = (error as { code?: string }).code === "ECONNREFUSED";
    if (refused && await startLocalPostgres()) {
      log("PostgreSQL was not running: started the local cluster");
      await delay(1000);
      return await connect(admin);
    }
    throw new SetupError(
      `PostgreSQL at ${safeUrl(admin)} is not reachable: ${(error as Error).message}\n` +
        "Start it with: pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start",
    );
  }
};

// Creates the database if missing and seeds it with `storeCount` stores when it holds none (or on
// --reseed); returns the seed's wall time when it seeded.
const prepareDatabase = async (settings: Settings, storeCount: number) => {
  const admin = await openAdmin(settings);
  let postgresVersion: string;
  try {
    postgresVersion = (await admin.query("SHOW server_version")).rows[0].server_version;
    const exists = await admin.query("SELECT 1 FROM pg_database WHERE datname = $1", [
      settings.database,
    ]);
    if (exists.rowCount === 0) {
      log(`creating database ${settings.database}`);
      await admin.query(`CREATE DATABASE "${settings.database.replaceAll('"', '""')}"`);
    }
  } finally {
    await admin.end();
  }

  const countStores = async () => {
    const client = await connect(settings.databaseUrl);
    try {
      const table = await client.query("SELECT to_regclass('public.stores') IS NOT NULL AS t");
      if (!table.rows[0].t) return { migrated: false, stores: 0 };
      const count = await client.query("SELECT count(*)::int AS n FROM stores");
      return { migrated: true, stores: count.rows[0].n as number };
    } finally {
      await client.end();
    }
  };

  const before = await countStores();
  let seededSeconds: number | undefined;
  if (settings.reseed || before.stores === 0) {
    const args = ["run", "-A", "scripts/seed.ts", "--stores", String(storeCount)];
    // An emptied but migrated database may still hold a dataset row; --reset clears it.
    if (before.migrated) args.push("--reset");
    log(
      `seeding ${settings.database} with ${storeCount} stores (deno task seed ${
        args.slice(3).join(" ")
      })`,
    );
    const started = performance.now();
    const out = await capture(DENO, args, { DATABASE_URL: settings.databaseUrl.toString() });
    if (out.code !== 0) {
      throw new SetupError(`seed failed:\n${(out.stdout + out.stderr).slice(-3000)}`);
    }
    seededSeconds = (performance.now() - started) / 1000;
    log(`  seeded in ${seededSeconds.toFixed(1)} s`);
  }
  // A fresh load has no planner statistics until autovacuum runs; without them the energy query
  // seq-scans energy_revisions (~100 ms instead of ~5 ms), so every run starts from fresh ones.
  const client = await connect(settings.databaseUrl);
  try {
    await client.query("ANALYZE");
  } finally {
    await client.end();
  }
  const after = await countStores();
  if (after.stores === 0) {
    throw new SetupError(`${settings.database} holds no stores after seeding`);
  }
  log(
    `database ${
      safeUrl(settings.databaseUrl)
    }: ${after.stores} stores (PostgreSQL ${postgresVersion})`,
  );
  return { postgresVersion, stores: after.stores, seededSeconds };
};

const issueKey = async (
  settings: Settings,
  member = "bench",
  name = "Benchmark",
  permissions = "read",
) => {
  const out = await capture(DENO, [
    "run",
    "-A",
    "scripts/keys.ts",
    "issue",
    "--member",
    member,
    "--name",
    name,
    "--permissions",
    permissions,
    "--expires-in",
    "2h",
  ], { DATABASE_URL: settings.databaseUrl.toString() });
  const key = out.stdout.trim().split("\n").at(-1)?.trim() ?? "";
  if (out.code !== 0 || key === "" || /\s/.test(key)) {
    throw new SetupError(`keys issue failed:\n${(out.stdout + out.stderr).slice(-2000)}`);
  }
  return key;
};

interface Server {
  readonly name: string;
  readonly child: Deno.ChildProcess;
  readonly pid: number;
  readonly port: number;
  readonly logFile: string;
}

const freePort = (preferred: number, taken: ReadonlyArray<number> = []) => {
  for (const port of [preferred, 0]) {
    if (taken.includes(port)) continue;
    try {
      const listener = Deno.listen({ hostname: "127.0.0.1", port });
      const chosen = (listener.addr as Deno.NetAddr).port;
      listener.close();
      if (!taken.includes(chosen)) return chosen;
    } catch (error) {
      if (!(error instanceof Deno.errors.AddrInUse)) throw error;
    }
  }
  throw new SetupError(`no free port near ${preferred}`);
};

// The PID whose memory counts is the deno binary itself, not a shell or npm shim around it.
const denoPid = (pid: number) => {
  const binary = Deno.realPathSync(DENO);
  const queue = [pid];
  while (queue.length > 0) {
    const current = queue.shift()!;
    try {
      if (Deno.readLinkSync(`/proc/${current}/exe`) === binary) return current;
      for (const task of Deno.readDirSync(`/proc/${current}/task`)) {
        const kids = Deno.readTextFileSync(`/proc/${current}/task/${task.name}/children`);
        queue.push(...kids.split(" ").filter((s) => s !== "").map(Number));
      }
    } catch { /* the process left meanwhile */ }
  }
  throw new SetupError(`no deno process found under PID ${pid}`);
};

const rssBytes = (pid: number) => {
  try {
    const match = Deno.readTextFileSync(`/proc/${pid}/status`).match(/^VmRSS:\s+(\d+)\s+kB/m);
    return match ? Number(match[1]) * 1024 : 0;
  } catch {
    return 0;
  }
};

// The fields of /proc/PID/stat after the command name (field 3 first), or undefined once the
// process is gone. Times in it are in clock ticks of 10 ms.
const statFields = (pid: number) => {
  try {
    const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  } catch {
    return undefined;
  }
};

// CPU time the process has used, all its threads (user and system), in milliseconds: fields 14
// and 15.
const cpuMs = (pid: number) => {
  const fields = statFields(pid);
  return fields === undefined ? 0 : (Number(fields[11]) + Number(fields[12])) * 10;
};

// CPU time of the process's V8 worker threads (named "V8 DefaultWorker"; V8's parallel and
// concurrent collector work, and background compiling, run there), in milliseconds. Not in the
// collector's main-thread time that --trace-gc reports.
const v8WorkersCpuMs = (pid: number) => {
  let total = 0;
  try {
    for (const task of Deno.readDirSync(`/proc/${pid}/task`)) {
      try {
        const stat = Deno.readTextFileSync(`/proc/${pid}/task/${task.name}/stat`);
        const name = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
        if (!name.startsWith("V8 ")) continue;
        const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
        total += (Number(fields[11]) + Number(fields[12])) * 10;
      } catch {
        // the thread ended meanwhile
      }
    }
  } catch {
    return 0;
  }
  return total;
};

// How long the process has run, in milliseconds: now (/proc/uptime) less its start (field 22, in
// ticks after boot). V8's trace stamps its lines with the time since its isolate started, a few
// tens of milliseconds after the process.
const uptimeMs = (pid: number) => {
  const fields = statFields(pid);
  if (fields === undefined) return 0;
  const uptime = Number(Deno.readTextFileSync("/proc/uptime").split(" ")[0]);
  return uptime * 1000 - Number(fields[19]) * 10;
};

// One collection as V8's --trace-gc reports it: when (ms since the isolate started), whether it
// was a young-generation one (Scavenge) or a full one, and the main thread's time in it: the
// pause, plus for an incremental full collection the marking steps taken before it.
interface GcEvent {
  readonly at: number;
  readonly young: boolean;
  readonly mainMs: number;
}

const GC_LINE =
  /\]\s+([\d.]+) ms: ([A-Za-z() -]+?) [\d.]+ \([\d.]+\) -> [\d.]+ \([\d.]+\) MB, (?:pooled: [\d.]+ MB, )?([\d.]+) \/ [\d.]+ ms(?: \(\+ ([\d.]+) ms in)?/;

const gcEvents = (log: string): Array<GcEvent> =>
  log.split("\n").flatMap((line) => {
    const m = GC_LINE.exec(line);
    return m === null ? [] : [{
      at: Number(m[1]),
      young: m[2].includes("Scavenge"),
      mainMs: Number(m[3]) + Number(m[4] ?? 0),
    }];
  });

const tail = (file: string, lines = 30) => {
  try {
    return Deno.readTextFileSync(file).trimEnd().split("\n").slice(-lines).join("\n");
  } catch {
    return "(no log)";
  }
};

const startServer = async (
  name: string,
  args: Array<string>,
  env: Record<string, string>,
  port: number,
  readyPath: string,
  stamp: string,
): Promise<Server> => {
  const logFile = `${OUT_DIR}/${stamp}-${name}.log`;
  const child = spawn(DENO, args, { env, stdout: "piped", stderr: "piped" });
  for (const stream of [child.stdout, child.stderr]) {
    const file = await Deno.open(logFile, { create: true, append: true });
    stream.pipeTo(file.writable).catch(() => {});
  }
  let exited: Deno.CommandStatus | undefined;
  child.status.then((status) => exited = status);
  const deadline = Date.now() + 120_000;
  while (Date.now() < deadline) {
    if (exited !== undefined) {
      throw new SetupError(
        `${name} exited with code ${exited.code} before it was ready; its log:\n${tail(logFile)}`,
      );
    }
    try {
      const response = await fetch(`http://127.0.0.1:${port}${readyPath}`, {
        signal: AbortSignal.timeout(2000),
      });
      await response.body?.cancel();
      if (response.status === 200) {
        return { name, child, pid: denoPid(child.pid), port, logFile };
      }
    } catch { /* not listening yet */ }
    await delay(200);
  }
  throw new SetupError(`${name} was not ready within 120 s; its log:\n${tail(logFile)}`);
};

interface Target {
  readonly key: string;
  readonly label: string;
  readonly server: Server;
  readonly path: string;
  readonly auth: boolean;
}

interface Measurement {
  readonly target: string;
  readonly label: string;
  readonly connections: number;
  readonly threads: number;
  readonly seconds: number;
  readonly requests: number;
  readonly requests_per_second: number;
  readonly p50_ms: number;
  readonly p90_ms: number;
  readonly p99_ms: number;
  readonly max_ms: number;
  readonly non_2xx: number;
  readonly socket_errors: { connect: number; read: number; write: number; timeout: number };
  readonly peak_rss_bytes: number;
  readonly bytes_per_response: number;
  // The server's CPU time during the load (from wrk's start to its end), per request.
  readonly cpu_ms_per_request: number;
}

interface Probe {
  readonly status: number;
  readonly code?: string;
  readonly message?: string;
}

// A target's path for one "store scope" pair of the targets file.
const pathFor = (path: string, pair: string) => {
  const [store, scope] = pair.split(" ");
  return path.replaceAll("{store}", store).replaceAll("{scope}", scope);
};

const probe = async (target: Target, pair: string, key: string): Promise<Probe> => {
  const path = pathFor(target.path, pair);
  const response = await fetch(`http://127.0.0.1:${target.server.port}${path}`, {
    headers: target.auth ? { authorization: `Bearer ${key}` } : {},
  });
  const text = await response.text();
  if (response.ok) return { status: response.status };
  try {
    const error = JSON.parse(text).error;
    return { status: response.status, code: error?.code, message: error?.message };
  } catch {
    return { status: response.status, message: text.slice(0, 200) };
  }
};

const runWrk = async (
  target: Target,
  connections: number,
  seconds: number,
  targetsFile: string,
  key: string,
): Promise<Measurement> => {
  const threads = connections === 1 ? 1 : 2;
  const child = spawn("wrk", [
    "-t",
    String(threads),
    "-c",
    String(connections),
    "-d",
    `${seconds}s`,
    "--timeout",
    "10s",
    "-s",
    LUA,
    `http://127.0.0.1:${target.server.port}`,
    "--",
    targetsFile,
    target.path,
    target.auth ? key : "",
  ], { stdout: "piped", stderr: "piped" });
  let peak = rssBytes(target.server.pid);
  const cpuBefore = cpuMs(target.server.pid);
  const sampler = setInterval(() => peak = Math.max(peak, rssBytes(target.server.pid)), 100);
  const killer = setTimeout(() => child.kill("SIGKILL"), (seconds + 30) * 1000);
  let out: Deno.CommandOutput;
  try {
    out = await child.output();
  } finally {
    clearInterval(sampler);
    clearTimeout(killer);
  }
  peak = Math.max(peak, rssBytes(target.server.pid));
  const cpuDuring = cpuMs(target.server.pid) - cpuBefore;
  // wrk drops its connections with requests in flight; let the server finish or cancel them so
  // that their tail (and any query cancel still on its way) does not land in the next run.
  await delay(1000);
  const stdout = decoder.decode(out.stdout);
  const line = stdout.split("\n").find((l) => l.startsWith("BENCH_RESULT "));
  if (out.code !== 0 || line === undefined) {
    throw new Error(
      `wrk failed on ${target.label} (code ${out.code}):\n${stdout}${decoder.decode(out.stderr)}`,
    );
  }
  const v = Object.fromEntries(
    line.split(" ").slice(1).map((pair) => pair.split("=")).map(([k, n]) => [k, Number(n)]),
  );
  const measuredSeconds = v.duration_us / 1e6;
  return {
    target: target.key,
    label: target.label,
    connections,
    threads,
    seconds: measuredSeconds,
    requests: v.requests,
    requests_per_second: v.requests / measuredSeconds,
    p50_ms: v.p50_us / 1000,
    p90_ms: v.p90_us / 1000,
    p99_ms: v.p99_us / 1000,
    max_ms: v.max_us / 1000,
    non_2xx: v.non2xx,
    socket_errors: { connect: v.connect, read: v.read, write: v.write, timeout: v.timeout },
    peak_rss_bytes: peak,
    bytes_per_response: v.requests > 0 ? Math.round(v.bytes / v.requests) : 0,
    cpu_ms_per_request: v.requests > 0 ? cpuDuring / v.requests : 0,
  };
};

const failures = (m: Measurement) =>
  m.non_2xx + m.socket_errors.connect + m.socket_errors.read + m.socket_errors.write +
  m.socket_errors.timeout;

interface Goal {
  readonly goal: string;
  readonly measured: string;
  readonly pass: boolean;
  readonly note?: string;
}

const HANDWRITTEN = "handwritten.energy";
const MINIMAL = "minimal.energy";
const BASELINES = new Set([HANDWRITTEN, MINIMAL]);
const RSS_LIMIT_BYTES = 256 * 1024 * 1024;

// Goals at c=32: the service against the hand-written server running the same SQL, and against the
// minimal server over a plain table; the service's peak RSS over the whole benchmark.
const evaluate = (rows: ReadonlyArray<Measurement>, importPeak: number): Array<Goal> => {
  const find = (target: string, c: number) =>
    rows.find((r) => r.target === target && r.connections === c);
  const ratioGoal = (
    target: string,
    label: string,
    base: string,
    baseLabel: string,
    min: number,
  ) => {
    const row = find(target, 32);
    const baseRow = find(base, 32);
    const goal = `${label} req/s >= ${min.toFixed(1)}x ${baseLabel} at c=32`;
    if (!row || !baseRow) return { goal, measured: "not measured", pass: false };
    const ratio = row.requests_per_second / baseRow.requests_per_second;
    const bad = failures(row) + failures(baseRow);
    return {
      goal,
      measured: `${ratio.toFixed(2)}x (${row.requests_per_second.toFixed(0)} vs ${
        baseRow.requests_per_second.toFixed(0)
      } req/s)`,
      pass: bad === 0 && ratio >= min,
      note: bad > 0 ? "invalid: failed requests during the load" : undefined,
    };
  };
  const energy = find("service.energy", 32);
  const hw = find(HANDWRITTEN, 32);
  const p99: Goal = !energy || !hw
    ? { goal: "energy p99 <= 1.5x same-SQL at c=32", measured: "not measured", pass: false }
    : (() => {
      const ratio = energy.p99_ms / hw.p99_ms;
      const bad = failures(energy) + failures(hw);
      return {
        goal: "energy p99 <= 1.5x same-SQL at c=32",
        measured: `${ratio.toFixed(2)}x (${energy.p99_ms.toFixed(1)} vs ${
          hw.p99_ms.toFixed(1)
        } ms)`,
        pass: bad === 0 && ratio <= 1.5,
        note: bad > 0 ? "invalid: failed requests during the load" : undefined,
      };
    })();
  const servicePeak = Math.max(
    importPeak,
    ...rows.filter((r) => !BASELINES.has(r.target)).map((r) => r.peak_rss_bytes),
  );
  const serviceFailed = rows.some((r) => !BASELINES.has(r.target) && failures(r) > 0);
  return [
    ratioGoal("service.energy", "energy", HANDWRITTEN, "same-SQL", 1.0),
    ratioGoal("service.energy", "energy", MINIMAL, "minimal (plain table, date and kWh)", 0.5),
    p99,
    ratioGoal("service.metrics", "metrics", HANDWRITTEN, "same-SQL energy", 0.8),
    ratioGoal("service.periods", "periods", HANDWRITTEN, "same-SQL energy", 0.8),
    {
      goal: "service peak RSS over the whole benchmark <= 256 MiB",
      measured: `${mib(servicePeak)}`,
      pass: !serviceFailed && servicePeak <= RSS_LIMIT_BYTES,
      note: serviceFailed
        ? "invalid: failed requests during the load (error answers are cheap)"
        : undefined,
    },
  ];
};

const mib = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(0)} MiB`;

const table = (rows: ReadonlyArray<Measurement>) => {
  const hw = (c: number) => rows.find((r) => r.target === HANDWRITTEN && r.connections === c);
  const header = [
    "endpoint",
    "c",
    "req/s",
    "p50 ms",
    "p99 ms",
    "x hw req/s",
    "x hw p99",
    "peak RSS",
    "failed",
  ];
  const body = rows.map((r) => {
    const base = hw(r.connections);
    return [
      r.label,
      String(r.connections),
      r.requests_per_second.toFixed(1),
      r.p50_ms.toFixed(2),
      r.p99_ms.toFixed(2),
      base ? (r.requests_per_second / base.requests_per_second).toFixed(2) : "-",
      base ? (r.p99_ms / base.p99_ms).toFixed(2) : "-",
      mib(r.peak_rss_bytes),
      failures(r) > 0 ? `${failures(r)} !` : "0",
    ];
  });
  return textTable(header, body);
};

// 1, 5 and 15 minute load averages: other work on this shared machine skews the figures.
const loadAverage = () => {
  try {
    return Deno.readTextFileSync("/proc/loadavg").split(" ").slice(0, 3).map(Number);
  } catch {
    return [];
  }
};

const machine = () => {
  const read = (file: string) => {
    try {
      return Deno.readTextFileSync(file);
    } catch {
      return "";
    }
  };
  const memKb = Number(read("/proc/meminfo").match(/^MemTotal:\s+(\d+)/m)?.[1] ?? 0);
  return {
    cpus: navigator.hardwareConcurrency,
    cpu_model: read("/proc/cpuinfo").match(/^model name\s*:\s*(.+)$/m)?.[1] ?? "unknown",
    memory_gib: Math.round((memKb / 1024 / 1024) * 10) / 10,
    kernel: Deno.osRelease(),
  };
};

// The plain table of the minimal server: the served value of each stored day, refreshed per run.
const preparePlainTable = async (url: URL) => {
  const client = await connect(url);
  try {
    await client.query(`CREATE TABLE IF NOT EXISTS bench_plain_days (
      scope_id int NOT NULL, business_date date NOT NULL, kwh numeric NOT NULL,
      PRIMARY KEY (scope_id, business_date))`);
    await client.query("TRUNCATE bench_plain_days");
    await client.query(`INSERT INTO bench_plain_days
      SELECT scope_id, business_date, served_kwh FROM energy_days WHERE served_kwh IS NOT NULL
      ORDER BY scope_id, business_date`);
    await client.query("ANALYZE bench_plain_days");
  } finally {
    await client.end();
  }
};

// --- The scale run: the same reads over 60, 500 and 2,000 stores.

const SCALE_SIZES = [60, 500, 2000] as const;
const SEED_TIMES = `${OUT_DIR}/seed-times.json`;
const SEED_GOAL_SECONDS = 60;
const FLAT_RATIO = 1.2;

interface ScaleRow {
  readonly stores: number;
  readonly endpoint: string;
  readonly p50_c1_ms: number;
  readonly rps_c32: number;
  readonly failed: number;
}

const readSeedTimes = (): Record<string, { seconds: number; at: string }> => {
  try {
    return JSON.parse(Deno.readTextFileSync(SEED_TIMES));
  } catch {
    return {};
  }
};

// The sizes' services run side by side and are measured in turns: one second of each size in
// rotation, BENCH_SCALE_SECONDS turns at each concurrency, so that the machine's drift over the
// run falls on every size alike (measured one size after another, minutes apart, the same code's
// ratios moved between 0.73x and 1.31x). A size's p50 is the median of its turns' p50s; its
// requests a second, all its turns' requests over their seconds.
const scaleRun = async (settings: Settings, stamp: string) => {
  const seedTimes = readSeedTimes();
  const rows: Array<ScaleRow> = [];
  const services: Array<{ size: number; server: Server; key: string; targets: string }> = [];
  const ports: Array<number> = [];
  try {
    for (const size of SCALE_SIZES) {
      const url = new URL(settings.databaseUrl);
      url.pathname = `/bench_scale_${size}`;
      const scaleSettings = { ...settings, databaseUrl: url, database: `bench_scale_${size}` };
      const before = performance.now();
      const prepared = await prepareDatabase({ ...scaleSettings, reseed: false }, size);
      if (prepared.seededSeconds !== undefined) {
        seedTimes[String(size)] = { seconds: prepared.seededSeconds, at: new Date().toISOString() };
        await Deno.writeTextFile(SEED_TIMES, JSON.stringify(seedTimes, null, 2) + "\n");
      }
      log(`scale ${size}: database ready in ${((performance.now() - before) / 1000).toFixed(1)} s`);
      const key = await issueKey(scaleSettings, `bench-scale-${size}`, "Scale benchmark");
      const port = freePort(18083 + ports.length, ports);
      ports.push(port);
      const server = await startServer(
        `service-${size}`,
        SERVICE_ARGS,
        {
          ...serviceEnv(url, settings.pool, port),
          // The statement path's cost per request at each size: with answers kept, every year of
          // the 60 stores would be served from memory and only the larger sizes from PostgreSQL.
          ANSWER_CACHE_MB: "0",
        },
        port,
        "/health/ready",
        stamp,
      );
      const targets = `${OUT_DIR}/${stamp}-targets-${size}.txt`;
      await writeTargets(port, key, targets);
      services.push({ size, server, key, targets });
    }
    for (const [endpoint, path] of SCALE_ENDPOINTS) {
      const turns = new Map(
        services.map((s) => [s.size, { c1: [] as Measurement[], c32: [] as Measurement[] }]),
      );
      const measure = (s: (typeof services)[number], connections: 1 | 32, seconds: number) =>
        runWrk(
          { key: endpoint, label: endpoint, server: s.server, path, auth: true },
          connections,
          seconds,
          s.targets,
          s.key,
        );
      for (const s of services) await measure(s, 32, 1);
      for (const connections of [1, 32] as const) {
        for (let turn = 0; turn < settings.scaleSeconds; turn++) {
          // Each turn starts with the next size, so that no size always follows the same one.
          for (let i = 0; i < services.length; i++) {
            const s = services[(turn + i) % services.length];
            const m = await measure(s, connections, 1);
            turns.get(s.size)![connections === 1 ? "c1" : "c32"].push(m);
          }
        }
      }
      for (const s of services) {
        const { c1, c32 } = turns.get(s.size)!;
        const row = {
          stores: s.size,
          endpoint,
          p50_c1_ms: median(c1.map((m) => m.p50_ms)),
          rps_c32: c32.reduce((n, m) => n + m.requests, 0) /
            c32.reduce((n, m) => n + m.seconds, 0),
          failed: [...c1, ...c32].reduce((n, m) => n + failures(m), 0),
        };
        rows.push(row);
        log(
          `  ${String(s.size).padStart(4)} stores ${endpoint.padEnd(8)} p50 c=1 ${
            row.p50_c1_ms.toFixed(2)
          } ms (turns ${c1.map((m) => m.p50_ms.toFixed(2)).join(" ")}), c=32 ${
            row.rps_c32.toFixed(1)
          } req/s${row.failed > 0 ? `  ! ${row.failed} failed` : ""}`,
        );
      }
    }
  } finally {
    for (const s of services) await stopChild(s.server.child);
  }
  const goals: Array<Goal> = [];
  for (const [endpoint] of SCALE_ENDPOINTS) {
    const small = rows.find((r) => r.stores === SCALE_SIZES[0] && r.endpoint === endpoint);
    const large = rows.find((r) => r.stores === SCALE_SIZES.at(-1) && r.endpoint === endpoint);
    const goal = `${endpoint} p50 at c=1, ${SCALE_SIZES.at(-1)} stores <= ${FLAT_RATIO}x ${
      SCALE_SIZES[0]
    } stores`;
    if (!small || !large) {
      goals.push({ goal, measured: "not measured", pass: false });
      continue;
    }
    const ratio = large.p50_c1_ms / small.p50_c1_ms;
    goals.push({
      goal,
      measured: `${ratio.toFixed(2)}x (${large.p50_c1_ms.toFixed(2)} vs ${
        small.p50_c1_ms.toFixed(2)
      } ms)`,
      pass: small.failed + large.failed === 0 && ratio <= FLAT_RATIO,
      note: small.failed + large.failed > 0 ? "invalid: failed requests" : undefined,
    });
  }
  const seed = seedTimes[String(SCALE_SIZES.at(-1))];
  goals.push({
    goal: `seed of ${SCALE_SIZES.at(-1)} stores <= ${SEED_GOAL_SECONDS} s`,
    measured: seed === undefined ? "not measured" : `${seed.seconds.toFixed(1)} s (${seed.at})`,
    pass: seed !== undefined && seed.seconds <= SEED_GOAL_SECONDS,
  });
  return { rows, goals, seedTimes };
};

const SCALE_ENDPOINTS = [
  ["energy", `/api/v1/stores/{store}/energy?scope_id={scope}&${RANGE}`],
  ["metrics", `/api/v1/stores/{store}/metrics?scope_id={scope}&${RANGE}`],
  ["periods", `/api/v1/stores/{store}/periods?scope_id={scope}&as_of=${AS_OF}`],
] as const;

const scaleTable = (rows: ReadonlyArray<ScaleRow>) => {
  const lines = [
    "stores  endpoint  p50 c=1 ms  req/s c=32  failed",
    "------  --------  ----------  ----------  ------",
  ];
  for (const r of rows) {
    lines.push(
      `${String(r.stores).padStart(6)}  ${r.endpoint.padEnd(8)}  ${
        r.p50_c1_ms.toFixed(2).padStart(10)
      }  ${r.rps_c32.toFixed(1).padStart(10)}  ${String(r.failed).padStart(6)}`,
    );
  }
  return lines.join("\n");
};

const targetsFileOf = (stamp: string) => `${OUT_DIR}/${stamp}-targets.txt`;

// The store/scope pairs the key may read, as the service lists them, written to `file` for wrk's
// script.
const writeTargets = async (port: number, key: string, file: string) => {
  const list = await fetch(`http://127.0.0.1:${port}/api/v1/stores`, {
    headers: { authorization: `Bearer ${key}` },
  });
  if (list.status !== 200) {
    throw new SetupError(`GET /api/v1/stores answered ${list.status}: ${await list.text()}`);
  }
  const { stores: storeRows } = await list.json() as {
    stores: Array<{ id: number; scope_id: number }>;
  };
  const pairs = [...new Set(storeRows.map((s) => `${s.id} ${s.scope_id}`))];
  if (pairs.length === 0) throw new SetupError("GET /api/v1/stores listed no stores");
  await Deno.writeTextFile(file, pairs.join("\n") + "\n");
  return pairs;
};

interface FlagsRow {
  readonly target: string;
  readonly label: string;
  // Requests a second at c=32 and the server's CPU milliseconds per request, one per round, for
  // each process.
  readonly rate: Readonly<Record<FlagsSetting, ReadonlyArray<number>>>;
  readonly cpu: Readonly<Record<FlagsSetting, ReadonlyArray<number>>>;
  // Over the read's whole window (its rounds and the pauses in them, where the idle collections
  // run), for each process: the server's CPU time, the requests, and its collections as V8 traces
  // them.
  readonly window: Readonly<Record<FlagsSetting, WindowGc>>;
  // Failed requests (non-2xx answers and socket errors) over its rounds.
  readonly failed: number;
}

interface Mark {
  readonly uptime: number;
  readonly cpu: number;
  readonly workers: number;
}

interface WindowMark {
  readonly start: Mark;
  readonly end: Mark;
  readonly requests: number;
}

interface WindowGc {
  readonly cpuMs: number;
  // Of it, V8's worker threads' (parallel and concurrent collection, background compiling).
  readonly workersMs: number;
  readonly requests: number;
  readonly gcMs: number;
  readonly young: number;
  readonly full: number;
  // Of gcMs, the young collections'.
  readonly youngMs: number;
}

const FLAGS_COST_LIMIT = 0.05;

// One request of each read for every store/scope pair, four at a time, so that the measured load
// finds every answer kept (a fresh process computes each on its first request: a year of metrics
// takes tens of milliseconds), as a service that has been running does.
const primeAnswers = async (port: number, key: string, pairs: ReadonlyArray<string>) => {
  const paths = SERVICE_TARGETS.flatMap((t) =>
    t.path.includes("{store}") ? pairs.map((pair) => pathFor(t.path, pair)) : [t.path]
  );
  let next = 0;
  const worker = async () => {
    while (next < paths.length) {
      const path = paths[next++];
      const response = await fetch(`http://127.0.0.1:${port}${path}`, {
        headers: { authorization: `Bearer ${key}` },
      });
      await response.body?.cancel();
      if (response.status !== 200) {
        throw new SetupError(`priming: GET ${path} answered ${response.status}`);
      }
    }
  };
  await Promise.all([worker(), worker(), worker(), worker()]);
};

// The flags' cost: three processes of the service, one with V8_FLAGS ("flagged") and two with none
// ("plain" and "control"), the control the measure of the method itself: two processes that differ
// in nothing differ by what the run cannot resolve. A read is measured in rounds; each round loads
// every process at c=32 for BENCH_SECONDS, and the costs are medians over the rounds of each round's
// ratio, flagged to plain and control to plain. Two ways to load (BENCH_FLAGS_LOAD):
// - "alone" (default): one process after another, in an order rotated each round, so that no
//   process always follows the same one; each has the machine to itself while it is measured, and
//   the machine's drift over minutes falls on all three alike.
// - "together": the three by their own wrk in the same seconds. On two cores the scheduler's share
//   of each process moves from one turn to the next (2026-11-28: two processes without flags
//   differed by 9-12 % in requests a second and CPU time a request, and by 4 points in the
//   collector's share of CPU).
// A third measure does not depend on the machine's speed: the collector's share of each process's
// own CPU time, from V8's trace of its collections (main-thread time), over each read's window
// (its rounds and the pauses in them, where the idle collections run). After every second round
// all three sit idle for 8 s more (V8 reduces its heap after 8 s idle).
const flagsRun = async (settings: Settings, stamp: string, key: string) => {
  const ports: Array<number> = [];
  const start = async (setting: FlagsSetting, flags: string) => {
    const port = freePort(18080 + 3 * ports.length, ports);
    ports.push(port);
    return await startServer(
      `service-${setting}`,
      // All three trace their collections (--trace-gc: a line a collection on the process's
      // output, read back once it has stopped).
      serviceArgs([flags.trim(), "--trace-gc"].filter((f) => f !== "").join(",")),
      serviceEnv(settings.databaseUrl, settings.pool, port, setting !== "flagged"),
      port,
      "/health/ready",
      stamp,
    );
  };
  const servers: Record<FlagsSetting, Server> = {
    flagged: await start("flagged", V8_FLAGS),
    plain: await start("plain", ""),
    control: await start("control", ""),
  };
  const pairs = await writeTargets(servers.flagged.port, key, targetsFileOf(stamp));
  for (const setting of FLAGS_SETTINGS) await primeAnswers(servers[setting].port, key, pairs);
  const mark = (setting: FlagsSetting): Mark => ({
    uptime: uptimeMs(servers[setting].pid),
    cpu: cpuMs(servers[setting].pid),
    workers: v8WorkersCpuMs(servers[setting].pid),
  });
  const peaks = { flagged: 0, plain: 0, control: 0 };
  const load = (target: Target, seconds: number) =>
    runWrk(target, 32, seconds, targetsFileOf(stamp), key);
  const measured: Array<Omit<FlagsRow, "window"> & { marks: Record<FlagsSetting, WindowMark> }> =
    [];
  for (const t of SERVICE_TARGETS) {
    const targets = Object.fromEntries(
      FLAGS_SETTINGS.map((s) => [s, { ...t, server: servers[s], auth: true }]),
    ) as Record<FlagsSetting, Target>;
    // Each process of `order` loaded for `seconds`: at once, or one after another.
    const loadAll = async (order: ReadonlyArray<FlagsSetting>, seconds: number) => {
      if (settings.flagsLoad === "together") {
        return await Promise.all(order.map((s) => load(targets[s], seconds)));
      }
      const results: Array<Measurement> = [];
      for (const s of order) results.push(await load(targets[s], seconds));
      return results;
    };
    if (settings.warmup > 0) {
      await loadAll(FLAGS_SETTINGS, Math.min(settings.warmup, settings.seconds));
    }
    const turns = { flagged: [], plain: [], control: [] } as Record<FlagsSetting, Measurement[]>;
    const begin = Object.fromEntries(FLAGS_SETTINGS.map((s) => [s, mark(s)])) as Record<
      FlagsSetting,
      Mark
    >;
    for (let round = 1; round <= settings.rounds; round++) {
      const order = FLAGS_SETTINGS.map((_, i) => FLAGS_SETTINGS[(round + i) % 3]);
      const results = await loadAll(order, settings.seconds);
      order.forEach((s, i) => {
        turns[s].push(results[i]);
        peaks[s] = Math.max(peaks[s], results[i].peak_rss_bytes);
      });
      if (round % 2 === 0) await delay(8_000);
    }
    const requests = (s: FlagsSetting) => turns[s].reduce((n, m) => n + m.requests, 0);
    const marks = Object.fromEntries(FLAGS_SETTINGS.map((s) => {
      const end = mark(s);
      return [s, { start: begin[s], end, requests: requests(s) }];
    })) as Record<FlagsSetting, WindowMark>;
    const row = {
      target: t.key,
      label: t.label,
      rate: mapSettings((s) => turns[s].map((m) => m.requests_per_second)),
      cpu: mapSettings((s) => turns[s].map((m) => m.cpu_ms_per_request)),
      failed: FLAGS_SETTINGS.reduce((n, s) => n + turns[s].reduce((k, m) => k + failures(m), 0), 0),
      marks,
    };
    measured.push(row);
    log(
      `  ${t.label}: req/s ${
        FLAGS_SETTINGS.map((s) => row.rate[s].map((v) => v.toFixed(0)).join(" ")).join(" / ")
      }; CPU ms a request ${
        FLAGS_SETTINGS.map((s) => row.cpu[s].map((v) => v.toFixed(3)).join(" ")).join(" / ")
      } (flagged / plain / control); peak RSS so far ${
        FLAGS_SETTINGS.map((s) => mib(peaks[s])).join(" / ")
      }`,
    );
  }
  for (const setting of FLAGS_SETTINGS) await stopChild(servers[setting].child);
  // V8 writes its trace through a buffer that the process's exit flushes: read it now.
  const events = Object.fromEntries(
    await Promise.all(
      FLAGS_SETTINGS.map(async (s) => [s, gcEvents(await Deno.readTextFile(servers[s].logFile))]),
    ),
  ) as Record<FlagsSetting, Array<GcEvent>>;
  const windowGc = (setting: FlagsSetting, w: WindowMark): WindowGc => {
    const inside = events[setting].filter((e) => e.at >= w.start.uptime && e.at < w.end.uptime);
    return {
      cpuMs: w.end.cpu - w.start.cpu,
      workersMs: w.end.workers - w.start.workers,
      requests: w.requests,
      gcMs: inside.reduce((sum, e) => sum + e.mainMs, 0),
      young: inside.filter((e) => e.young).length,
      full: inside.filter((e) => !e.young).length,
      youngMs: inside.reduce((sum, e) => sum + (e.young ? e.mainMs : 0), 0),
    };
  };
  const rows: Array<FlagsRow> = measured.map(({ marks, ...row }) => ({
    ...row,
    window: mapSettings((s) => windowGc(s, marks[s])),
  }));
  const traced = rows.reduce((n, r) => n + r.window.flagged.young + r.window.plain.young, 0);
  if (traced === 0) throw new SetupError("the services' logs hold no --trace-gc line");
  const failed = rows.reduce((sum, r) => sum + r.failed, 0);
  const costs = rows.map((r) => flagsCost(r, "flagged"));
  const controls = rows.map((r) => flagsCost(r, "control"));
  const worst = Math.max(...costs.map((c) => Math.max(c.rate, c.cpu, c.gc)));
  const resolution = Math.max(
    ...controls.map((c) => Math.max(Math.abs(c.rate), Math.abs(c.cpu), Math.abs(c.gc))),
  );
  const figures = (list: ReadonlyArray<ReturnType<typeof flagsCost>>) =>
    rows.map((r, i) =>
      `${r.target.replace("service.", "")} ${(list[i].rate * 100).toFixed(1)} % / ${
        (list[i].cpu * 100).toFixed(1)
      } % / ${(list[i].gc * 100).toFixed(1)} pt`
    ).join(", ");
  const goals: Array<Goal> = [{
    goal: `the start task's settings (${startSettingsText()}) cost <= ${
      FLAGS_COST_LIMIT * 100
    } % on every read at c=32, in requests a second and in CPU time a request (medians of ${settings.rounds} rounds' ratios, loaded ${settings.flagsLoad}), and in the collector's share of CPU time (points, over the read's window)`,
    measured: figures(costs),
    pass: failed === 0 && worst <= FLAGS_COST_LIMIT,
    note: failed > 0
      ? "invalid: failed requests during the load"
      : `the control, a second process without flags: ${figures(controls)}${
        resolution > FLAGS_COST_LIMIT
          ? `; it differs by up to ${(resolution * 100).toFixed(1)}: this run does not resolve ${
            FLAGS_COST_LIMIT * 100
          } %`
          : ""
      }`,
  }, {
    goal: "service peak RSS with the flags <= 256 MiB",
    measured: `${mib(peaks.flagged)} (${mib(peaks.plain)} and ${mib(peaks.control)} without)`,
    pass: failed === 0 && peaks.flagged <= RSS_LIMIT_BYTES,
    note: failed > 0 ? "invalid: failed requests during the load" : undefined,
  }];
  return { rows, peaks, goals };
};

const FLAGS_SETTINGS = ["flagged", "plain", "control"] as const;
type FlagsSetting = (typeof FLAGS_SETTINGS)[number];

const mapSettings = <A>(f: (setting: FlagsSetting) => A): Record<FlagsSetting, A> => ({
  flagged: f("flagged"),
  plain: f("plain"),
  control: f("control"),
});

// The cost of `setting` against the plain process on one read: requests a second lost, and CPU
// time a request added (the server's, all its threads), each the median over the rounds of that
// round's ratio; over the whole window (idle collections included) the CPU time a request, and
// the collector's share of the process's CPU time (its main thread's part, as V8 counts it) less
// the plain process's.
const flagsCost = (r: FlagsRow, setting: "flagged" | "control") => ({
  rate: 1 - median(r.rate[setting].map((v, i) => v / r.rate.plain[i])),
  cpu: median(r.cpu[setting].map((v, i) => v / r.cpu.plain[i])) - 1,
  windowCpu: perRequest(r.window[setting]) / perRequest(r.window.plain) - 1,
  gc: gcShare(r.window[setting]) - gcShare(r.window.plain),
});

const perRequest = (w: WindowGc) => w.requests > 0 ? w.cpuMs / w.requests : 0;
const gcShare = (w: WindowGc) => w.cpuMs > 0 ? w.gcMs / w.cpuMs : 0;

// Each read's whole window (rounds and pauses): CPU time a request, and the collections V8 traced
// (main-thread milliseconds, young and full collections), flagged / plain / control.
const flagsGcTable = (rows: ReadonlyArray<FlagsRow>) => {
  const header = [
    "endpoint (c=32)",
    "CPU ms a request",
    "cost",
    "GC ms / 1,000 requests (young + full)",
    "GC share of CPU",
    "cost",
    "V8 workers ms / 1,000 requests",
    "young GCs",
    "full GCs",
  ];
  const all = (r: FlagsRow, f: (w: WindowGc) => string) =>
    FLAGS_SETTINGS.map((s) => f(r.window[s])).join(" / ");
  const both = (r: FlagsRow, f: (c: ReturnType<typeof flagsCost>) => number, unit: string) =>
    `${(f(flagsCost(r, "flagged")) * 100).toFixed(1)} ${unit} (${
      (f(flagsCost(r, "control")) * 100).toFixed(1)
    })`;
  const body = rows.map((r) => [
    r.label,
    all(r, (w) => perRequest(w).toFixed(3)),
    both(r, (c) => c.windowCpu, "%"),
    all(r, (w) => {
      const per = (ms: number) => (w.requests > 0 ? (ms / w.requests) * 1000 : 0).toFixed(0);
      return `${per(w.gcMs)} (${per(w.youngMs)} + ${per(w.gcMs - w.youngMs)})`;
    }),
    all(r, (w) => `${(gcShare(w) * 100).toFixed(1)} %`),
    both(r, (c) => c.gc, "pt"),
    all(r, (w) => (w.requests > 0 ? (w.workersMs / w.requests) * 1000 : 0).toFixed(0)),
    all(r, (w) => String(w.young)),
    all(r, (w) => String(w.full)),
  ]);
  return [
    "over each read's window (rounds and pauses), flagged / plain / control; costs against the " +
    "plain process, the control's in parentheses:",
    textTable(header, body),
  ].join("\n");
};

const flagsTable = (rows: ReadonlyArray<FlagsRow>) => {
  const header = [
    "endpoint (c=32)",
    "req/s (flagged / plain / control)",
    "cost (control)",
    "CPU ms a request",
    "cost (control)",
    "failed",
  ];
  const medians = (values: Readonly<Record<FlagsSetting, ReadonlyArray<number>>>, digits: number) =>
    FLAGS_SETTINGS.map((s) => median(values[s]).toFixed(digits)).join(" / ");
  const cost = (r: FlagsRow, f: (c: ReturnType<typeof flagsCost>) => number) =>
    `${(f(flagsCost(r, "flagged")) * 100).toFixed(1)} % (${
      (f(flagsCost(r, "control")) * 100).toFixed(1)
    } %)`;
  const body = rows.map((r) => [
    r.label,
    medians(r.rate, 0),
    cost(r, (c) => c.rate),
    medians(r.cpu, 3),
    cost(r, (c) => c.cpu),
    r.failed > 0 ? `${r.failed} !` : "0",
  ]);
  return [
    "medians of the rounds; a cost is the median of the rounds' ratios to the plain process:",
    textTable(header, body),
  ].join("\n");
};

const main = async (): Promise<number> => {
  const settings = readSettings();
  const startedAt = new Date();
  const loadAtStart = loadAverage();
  const stamp = startedAt.toISOString().replace(/[:.]/g, "-");
  await Deno.mkdir(OUT_DIR, { recursive: true });
  const doReads = settings.only === undefined || settings.only === "reads";
  const doImports = settings.only === undefined || settings.only === "imports";
  const doScale = settings.only === undefined || settings.only === "scale";
  const doFlags = settings.only === "flags";

  const wrk = doReads || doScale || doFlags ? await ensureWrk() : wrkVersion() ?? "not used";
  const { postgresVersion, stores } = doReads || doImports || doFlags
    ? await prepareDatabase(settings, STORES)
    : { postgresVersion: "", stores: 0 };
  const rows: Array<Measurement> = [];
  const probes: Record<string, Probe> = {};
  let imports: ImportBenchResult | undefined;
  let importError: string | undefined;
  let pairsCount = 0;

  if (doReads || doImports) {
    // A write key's member is a WRITER; raw lets it read batches and lineage.
    const importKey = doImports
      ? await issueKey(settings, "bench-import", "Import benchmark", "read,write,raw")
      : "";
    const key = doReads ? await issueKey(settings) : importKey;
    if (doReads) await preparePlainTable(settings.databaseUrl);

    const servicePort = freePort(18080);
    const handwrittenPort = freePort(18081, [servicePort]);
    const minimalPort = freePort(18082, [servicePort, handwrittenPort]);
    const common = {
      DATABASE_URL: settings.databaseUrl.toString(),
      DB_POOL_MAX: String(settings.pool),
      HOST: "127.0.0.1",
    };
    log(
      `starting the service on :${servicePort}` +
        (doReads
          ? `, the hand-written server on :${handwrittenPort}, the minimal server on :${minimalPort}`
          : ""),
    );
    const service = await startServer(
      "service",
      SERVICE_ARGS,
      serviceEnv(settings.databaseUrl, settings.pool, servicePort),
      servicePort,
      "/health/ready",
      stamp,
    );
    const handwritten = doReads
      ? await startServer(
        "handwritten",
        ["run", "-A", "scripts/bench/handwritten_server.ts"],
        { ...common, PORT: String(handwrittenPort) },
        handwrittenPort,
        "/health",
        stamp,
      )
      : undefined;
    const minimal = doReads
      ? await startServer(
        "minimal",
        ["run", "-A", "scripts/bench/minimal_server.ts"],
        { ...common, PORT: String(minimalPort) },
        minimalPort,
        "/health",
        stamp,
      )
      : undefined;
    log(
      `  service PID ${service.pid} (${startSettingsText()}); logs in ${OUT_DIR}`,
    );

    const pairs = await writeTargets(servicePort, key, targetsFileOf(stamp));
    pairsCount = pairs.length;
    const targetsFile = targetsFileOf(stamp);

    const targets: Array<Target> = handwritten === undefined || minimal === undefined ? [] : [
      {
        key: MINIMAL,
        label: "minimal energy 366d",
        server: minimal,
        path: `/energy?scope_id={scope}&${RANGE}`,
        auth: false,
      },
      {
        key: HANDWRITTEN,
        label: "same-SQL energy 366d",
        server: handwritten,
        path: `/energy?scope_id={scope}&${RANGE}`,
        auth: false,
      },
      ...SERVICE_TARGETS.map((t) => ({ ...t, server: service, auth: true })),
    ];

    const runs = targets.length * CONCURRENCY.length;
    if (doReads) {
      log(
        `load: ${runs} runs of ${settings.seconds} s (+${settings.warmup} s warm-up per endpoint), ` +
          `${pairs.length} store/scope pairs, pool ${settings.pool}, about ` +
          `${Math.ceil((runs * settings.seconds + targets.length * settings.warmup) / 60)} min`,
      );
    }
    for (const target of targets) {
      const answer = await probe(target, pairs[0], key);
      probes[target.key] = answer;
      log(
        `${target.label}: probe answered ${answer.status}` +
          (answer.code || answer.message ? ` ${answer.code ?? ""} ${answer.message ?? ""}` : ""),
      );
      if (settings.warmup > 0) {
        await runWrk(target, 32, Math.min(settings.warmup, settings.seconds), targetsFile, key);
      }
      for (const c of CONCURRENCY) {
        const m = await runWrk(target, c, settings.seconds, targetsFile, key);
        rows.push(m);
        log(
          `  c=${String(c).padEnd(2)} ${m.requests_per_second.toFixed(1).padStart(9)} req/s  ` +
            `p50 ${m.p50_ms.toFixed(2)} ms  p99 ${m.p99_ms.toFixed(2)} ms  ` +
            `RSS ${mib(m.peak_rss_bytes)}` +
            (failures(m) > 0
              ? `  ! ${m.non_2xx} non-2xx, ${failures(m) - m.non_2xx} socket errors`
              : ""),
        );
      }
    }

    if (doImports) {
      log(
        `imports: 3 XLSX then 3 CSV files of 100 stores x 100 days, preview and commit each ` +
          `(service PID ${service.pid}, RSS sampled every 20 ms during the preview)`,
      );
      try {
        imports = await runImportBench({
          baseUrl: `http://127.0.0.1:${servicePort}`,
          pid: service.pid,
          key: importKey,
          databaseUrl: settings.databaseUrl,
          log,
        });
      } catch (error) {
        if (interrupted) throw error;
        importError = (error as Error).stack ?? String(error);
        log(`! the import benchmark could not run: ${importError}`);
      }
    }
    await stopAll();
  }

  if (doFlags) {
    log(
      `flags' cost: ${settings.rounds} rounds of each read at c=32, ${settings.seconds} s ` +
        `a process (+${settings.warmup} s warm-up), loaded ${settings.flagsLoad}, with ` +
        `${startSettingsText()}, and in two processes with neither`,
    );
  }
  const flags = doFlags ? await flagsRun(settings, stamp, await issueKey(settings)) : undefined;

  if (doScale) log("scale run: 60, 500 and 2,000 stores");
  const scale = doScale ? await scaleRun(settings, stamp) : undefined;
  await stopAll();

  // The highest RSS sampled during any import (a format's summary names its largest growth).
  const importPeak = Math.max(0, ...(imports?.runs ?? []).map((r) => r.rss_peak_bytes));
  const goals: Array<Goal> = [
    ...(doReads ? evaluate(rows, importPeak) : []),
    ...(imports?.goals ?? []),
    ...(importError === undefined ? [] : [{
      goal: "import benchmark",
      measured: "not measured",
      pass: false,
      note: importError.split("\n")[0],
    }]),
    ...(scale?.goals ?? []),
    ...(flags?.goals ?? []),
  ];
  const failed = rows.filter((r) => failures(r) > 0);
  if (doReads) {
    log("");
    log(table(rows));
  }
  if (imports !== undefined) {
    log("");
    log(importTable(imports));
  }
  if (scale !== undefined) {
    log("");
    log(scaleTable(scale.rows));
  }
  if (flags !== undefined) {
    log("");
    log(flagsTable(flags.rows));
    log("");
    log(flagsGcTable(flags.rows));
  }
  const loadAtEnd = loadAverage();
  log("");
  log(
    `load average (1/5/15 min, ${machine().cpus} CPUs): ${loadAtStart.join(" ")} before the run, ` +
      `${loadAtEnd.join(" ")} at its end (counting the benchmark's own processes)`,
  );
  log("");
  log("Goals:");
  for (const g of goals) {
    log(`  ${g.pass ? "PASS" : "FAIL"}  ${g.goal}: ${g.measured}${g.note ? ` (${g.note})` : ""}`);
  }
  if (failed.length > 0) {
    log("");
    log("! FLAGGED: requests failed during the load; those figures do not measure the real work:");
    for (const r of failed) {
      const p = probes[r.target];
      log(
        `  ${r.label} c=${r.connections}: ${r.non_2xx} non-2xx answers of ${r.requests}, ` +
          `socket errors ${JSON.stringify(r.socket_errors)}` +
          (p && p.status >= 300 ? `; probe: ${p.status} ${p.code ?? ""}` : ""),
      );
    }
  }
  if (imports?.failed) {
    log("");
    log("! FLAGGED: an import preview or commit failed (its error is in the log above)");
  }

  const resultsFile = `${OUT_DIR}/results-${stamp}.json`;
  const results = {
    started_at: startedAt.toISOString(),
    finished_at: new Date().toISOString(),
    machine: machine(),
    load_average: { start: loadAtStart, end: loadAtEnd },
    deno: Deno.version.deno,
    postgres: postgresVersion,
    wrk,
    settings: {
      seconds: settings.seconds,
      warmup_seconds: settings.warmup,
      scale_seconds: settings.scaleSeconds,
      pool: settings.pool,
      database: safeUrl(settings.databaseUrl),
      stores,
      store_scope_pairs: pairsCount,
      range: RANGE,
      as_of: AS_OF,
      only: settings.only ?? null,
      rounds: settings.rounds,
    },
    probes,
    rows,
    imports: imports ?? (importError === undefined ? null : { error: importError }),
    scale: scale ?? null,
    flags: flags === undefined
      ? null
      : { v8_flags: V8_FLAGS.trim(), env: START_ENV, ...flags, goals: undefined },
    goals,
    flagged: failed.length > 0 || imports?.failed === true || importError !== undefined,
    passed: failed.length === 0 && imports?.failed !== true && importError === undefined &&
      goals.every((g) => g.pass),
  };
  await Deno.writeTextFile(resultsFile, JSON.stringify(results, null, 2) + "\n");
  log("");
  log(`results: ${resultsFile.slice(ROOT.length + 1)}`);
  return importError !== undefined ? 2 : results.passed ? 0 : 1;
};

const SERVICE_TARGETS: ReadonlyArray<Omit<Target, "server" | "auth">> = [
  {
    key: "service.energy",
    label: "service energy 366d",
    path: `/api/v1/stores/{store}/energy?scope_id={scope}&${RANGE}`,
  },
  {
    key: "service.metrics",
    label: "service metrics 366d",
    path: `/api/v1/stores/{store}/metrics?scope_id={scope}&${RANGE}`,
  },
  {
    key: "service.periods",
    label: "service periods YTD",
    path: `/api/v1/stores/{store}/periods?scope_id={scope}&as_of=${AS_OF}`,
  },
  { key: "service.stores", label: "service stores", path: "/api/v1/stores" },
  { key: "service.catalog", label: "service catalog", path: "/api/v1/catalog" },
];

let code: number;
try {
  code = await main();
} catch (error) {
  if (!interrupted) {
    console.error(
      error instanceof SetupError
        ? `bench: ${error.message}`
        : `bench failed: ${(error as Error).stack ?? error}`,
    );
  }
  code = 2;
} finally {
  await stopAll();
}
Deno.exit(interrupted ? 130 : code);
