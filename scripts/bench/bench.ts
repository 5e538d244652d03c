// Benchmark orchestrator: the service's reads against reference servers run on the same machine in
// the same run (a minimal server, a server with the service's own SQL, a floor app of the
// framework), 10,000-value XLSX/CSV imports (import_bench.ts), the scale run (scale.ts), the
// service's peak RSS over all of it; then a PASS/FAIL line per goal.
import { parseArgs } from "node:util";
import { flagsGcTable, flagsRun, flagsTable } from "./flags.ts";
import {
  combineTurns,
  failures,
  freePort,
  type Goal,
  loadAverage,
  log,
  machine,
  machineText,
  type Measurement,
  mib,
  OUT_DIR,
  pathFor,
  type Probe,
  probe,
  ROOT,
  runWrk,
  type Server,
  SetupError,
  startServer,
  stopAll,
  stopChildrenOnSignal,
  type Target,
  wasInterrupted,
} from "./harness.ts";
import { type ImportBenchResult, importTable, runImportBench } from "./import_bench.ts";
import { scaleRun, scaleTable } from "./scale.ts";
import { portfolioRun, portfolioTable } from "./portfolio_bench.ts";
import {
  dataWindows,
  ensureWrk,
  FIXED_WINDOW,
  FLAGS_FROM_TASK,
  issueKey,
  NO_V8_FLAGS_MODE,
  prepareDatabase,
  preparePlainTable,
  safeUrl,
  SERVICE_READS,
  serviceArgsOn,
  serviceEnv,
  START_ENV,
  startSettingsText,
  V8_FLAGS,
  WINDOW_DAYS,
  writeLines,
  writeTargets,
  wrkVersion,
} from "./setup.ts";
import { textTable } from "./text_table.ts";

const USAGE = `Usage: deno task bench [--reseed]

  --reseed   reload the benchmark database (seed --reset --stores 500) even if it holds stores

Reads, each at c=32 for BENCH_SECONDS after a warm-up, the service and the servers it is compared
with loaded in turns (rotated), in two modes:
  repeated  the fixed window (${FIXED_WINDOW.replace(" ", " to ")}) of the first
            BENCH_REPEATED_PAIRS stores, one drawn at random per request: every answer can be kept
  random    a random store and a random ${WINDOW_DAYS}-day window within the stored days per request
  energy    service vs the minimal server (and the same-SQL server, for reference)
  metrics   service vs the same-SQL server
  periods   service vs the same-SQL server (as_of: the window's end)
  floor     a one-endpoint Effect HttpApi app with a fixed body (floor_app.ts), against the
            service's CPU time a request on a kept energy answer
The service's RSS is sampled every 50 ms from its start to its end (reads and imports).

Environment:
  BENCH_SECONDS         seconds of load per read, mode and server (default 10)
  BENCH_TURNS           turns those seconds are measured in (default 5; at most one a second):
                        req/s over all turns, each latency percentile the median of the turns'
  BENCH_WARMUP_SECONDS  unrecorded load before each server's first turn (default 2, 0 disables)
  BENCH_CONCURRENCY     the concurrencies measured, separated by commas (default 32; the goals
                        are taken at 32), e.g. 1,32
  BENCH_REPEATED_PAIRS  stores in the repeated mode (default 16)
  FLOOR_BODY_BYTES      the floor app's body (default 131072)
  BENCH_DATABASE_URL    local PostgreSQL database to use
                        (default postgres://postgres@127.0.0.1:5432/bench_energy)
  DB_POOL_MAX           connection pool size of the service and the baselines (default 10)
  BENCH_SCALE_SECONDS   turns of one second per size, endpoint and concurrency in the scale run,
                        the sizes' services loaded in rotation (default 5)
  BENCH_V8_FLAGS        the service's --v8-flags (default: DENO_V8_FLAGS of service.env, as the
                        start task runs it; empty: none). The RSS goal is 256 MiB as the start
                        task runs the service, 400 MiB with BENCH_V8_FLAGS="" (no V8 flag at all).
  BENCH_ENV             the environment the service is started with besides the benchmark's own,
                        as NAME=value words (default: what the start task sets before
                        \`deno run\`; empty: nothing)
  BENCH_FLAGS_ROUNDS    rounds per read in the flags' cost run (default 8)
  BENCH_FLAGS_LOAD      how the flags' cost run loads its three processes: alone (default: one
                        after another in each round) or together (all three in the same seconds)
  BENCH_HEAP            1: the service also counts what V8 allocates in its heap per request
                        (its GET /metrics, on with a METRICS_TOKEN the run sets, which also counts
                        the requests: a little more CPU a request than without); default off
  BENCH_ENTRY           main (default): src/main.ts as the start task runs it; deploy: the Deno
                        Deploy entry, src/deploy.ts under deno serve with Deploy's permissions
                        (--allow-net --allow-env --allow-read --allow-sys) and no flag (needs BENCH_V8_FLAGS="")
  BENCH_ONLY            reads: only the reads (and the RSS over them);
                        imports: only the import benchmark (no wrk, no baseline server);
                        scale: only the scale run (60, 500 and 2,000 stores) and the portfolio;
                        portfolio: only the portfolio read over those stores x 366 days, cold
                        (a year read for the first time) and kept (read again);
                        flags: only the flags' cost: the service's reads at c=32 with
                        BENCH_V8_FLAGS and BENCH_ENV and in two processes with neither (the
                        second a control of the method), all three also with --trace-gc
                        unset: reads, imports, scale and portfolio (about 9 minutes once the databases are
                        seeded), the imports after the reads on the same service

Imports: 3 XLSX then 3 CSV files of 100 stores x 100 days (10,000 values each) are previewed
and committed over HTTP; each commit writes, so each file uses store-days without cleaned
values (the window ending at the dataset end first, then earlier ones); when earlier runs have
used them all up, the run says so and --reseed restores them.

Exit codes: 0 every goal passed and no request failed; 1 a goal failed or the load saw
non-2xx answers or socket errors, or an import preview or commit failed; 2 the benchmark could
not be set up (or the import benchmark could not run; the results file is still written).`;

const STORES = 500;
const LOOPBACK = new Set(["127.0.0.1", "localhost", "[::1]", "::1"]);
// The concurrency the goals are taken at.
const GOAL_C = 32;

// --- Settings.

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
  if (
    raw === "reads" || raw === "imports" || raw === "scale" || raw === "flags" ||
    raw === "portfolio"
  ) return raw;
  throw new SetupError(
    `BENCH_ONLY must be reads, imports, scale, portfolio or flags, got "${raw}"`,
  );
};

const flagsLoad = () => {
  const raw = Deno.env.get("BENCH_FLAGS_LOAD")?.trim() ?? "";
  if (raw === "" || raw === "alone") return "alone" as const;
  if (raw === "together") return "together" as const;
  throw new SetupError(`BENCH_FLAGS_LOAD must be alone or together, got "${raw}"`);
};

const concurrencies = () => {
  const raw = Deno.env.get("BENCH_CONCURRENCY")?.trim() || String(GOAL_C);
  const list = [...new Set(raw.split(",").map((part) => Number(part.trim())))];
  if (list.some((c) => !Number.isInteger(c) || c < 1 || c > 1024)) {
    throw new SetupError(`BENCH_CONCURRENCY must list whole numbers from 1 to 1024, got "${raw}"`);
  }
  return list.sort((a, b) => a - b);
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
    turns: wholeNumber("BENCH_TURNS", 5, 1, "turns"),
    concurrency: concurrencies(),
    repeatedPairs: wholeNumber("BENCH_REPEATED_PAIRS", 16, 1, "stores"),
    scaleSeconds: wholeNumber("BENCH_SCALE_SECONDS", 5, 1),
    rounds: wholeNumber("BENCH_FLAGS_ROUNDS", 8, 1, "rounds"),
    flagsLoad: flagsLoad(),
    databaseUrl: url,
    database,
    pool,
    only: benchOnly(),
    heap: (Deno.env.get("BENCH_HEAP") ?? "") === "1",
  };
};
type Settings = ReturnType<typeof readSettings>;

// --- The reads and what they are compared with.

const MODES = ["repeated", "random"] as const;
type Mode = typeof MODES[number];

// The reads the goals compare with a baseline: `reference` is the server the goals name; every
// baseline listed is measured in each mode, in turns with the service.
const COMPARED = [
  {
    read: "energy",
    reference: "minimal",
    baselines: [
      { server: "minimal", path: "/energy?scope_id={scope}&start={start}&end={end}" },
      { server: "same-SQL", path: "/energy?scope_id={scope}&start={start}&end={end}" },
    ],
  },
  {
    read: "metrics",
    reference: "same-SQL",
    baselines: [{ server: "same-SQL", path: "/metrics?scope_id={scope}&start={start}&end={end}" }],
  },
  {
    read: "periods",
    reference: "same-SQL",
    baselines: [{ server: "same-SQL", path: "/periods?scope_id={scope}&as_of={end}" }],
  },
] as const;

// The service's requests a second against its reference, at least, per mode; its p99 against the
// reference's, at most; its CPU time a request on a kept answer against the floor app's, at most.
const MIN_RATE: Record<Mode, number> = { repeated: 1.5, random: 0.6 };
const MAX_P99 = 2.0;
const MAX_FLOOR = 3.0;
// The service's peak RSS as the start task runs it, and in the mode without V8 flags.
const RSS_LIMIT_START = 256 * 1024 * 1024;
const RSS_LIMIT_NO_FLAGS = 400 * 1024 * 1024;

const servicePath = (read: string) => SERVICE_READS.find((r) => r.read === read)!.path;

// A measured load, with what it loaded (read, mode and server) and its turns' figures.
interface Row extends Measurement {
  readonly read: string;
  readonly mode: Mode;
  readonly server: string;
  readonly turn_requests_per_second: ReadonlyArray<number>;
  readonly turn_p99_ms: ReadonlyArray<number>;
}

const keyOf = (read: string, mode: Mode, server: string) => `${read}.${mode}.${server}`;

const findRow = (rows: ReadonlyArray<Row>, key: string, c = GOAL_C) =>
  rows.find((r) => r.target === key && r.connections === c);

const ratioText = (ratio: number, a: string, b: string, unit: string) =>
  `${ratio.toFixed(3)}x (${a} vs ${b} ${unit})`;

// A goal on two rows of the same run; a row with failed requests makes it invalid (an error answer
// is much cheaper than the real work).
const compareGoal = (
  goal: string,
  row: Row | undefined,
  base: Row | undefined,
  measure: (r: Row) => number,
  digits: number,
  unit: string,
  pass: (ratio: number) => boolean,
): Goal => {
  if (row === undefined || base === undefined) {
    return { goal, measured: "not measured", pass: false };
  }
  const ratio = measure(row) / measure(base);
  const bad = failures(row) + failures(base);
  return {
    goal,
    measured: ratioText(ratio, measure(row).toFixed(digits), measure(base).toFixed(digits), unit),
    pass: bad === 0 && pass(ratio),
    note: bad > 0 ? "invalid: failed requests during the load" : undefined,
  };
};

// `same`: per read, whether the same-SQL server answered it as the service does.
const readGoals = (
  rows: ReadonlyArray<Row>,
  same: Readonly<Record<string, boolean>>,
): Array<Goal> => {
  const goals: Array<Goal> = [];
  for (const { read, reference } of COMPARED) {
    const unlike = reference === "same-SQL" && same[read] === false;
    for (const mode of MODES) {
      const service = findRow(rows, keyOf(read, mode, "service"));
      const base = findRow(rows, keyOf(read, mode, reference));
      const what = `${read} ${mode} at c=${GOAL_C}`;
      const compared = [
        compareGoal(
          `${what}: req/s >= ${MIN_RATE[mode].toFixed(1)}x ${reference}`,
          service,
          base,
          (r) => r.requests_per_second,
          0,
          "req/s",
          (ratio) => ratio >= MIN_RATE[mode],
        ),
        compareGoal(
          `${what}: p99 <= ${MAX_P99.toFixed(1)}x ${reference}`,
          service,
          base,
          (r) => r.p99_ms,
          1,
          "ms",
          (ratio) => ratio <= MAX_P99,
        ),
      ];
      goals.push(
        ...compared.map((g) =>
          unlike ? { ...g, pass: false, note: "invalid: the same-SQL server answers otherwise" } : g
        ),
      );
    }
  }
  goals.push(
    compareGoal(
      `service CPU time a kept energy answer (repeated, c=${GOAL_C}) <= ${
        MAX_FLOOR.toFixed(1)
      }x the floor app's`,
      findRow(rows, keyOf("energy", "repeated", "service")),
      findRow(rows, keyOf("energy", "repeated", "floor")),
      (r) => r.cpu_ms_per_request,
      3,
      "ms",
      (ratio) => ratio <= MAX_FLOOR,
    ),
  );
  return goals;
};

interface RssFacts {
  readonly peak: number;
  readonly hwm: number;
  readonly samples: number;
}

// The service's peak RSS over its whole run: the higher of the sampled peak and the kernel's
// high-water mark (which also sees a peak shorter than the sampling interval). The limit is the
// start task's settings' unless the run is the mode without V8 flags.
const rssGoal = (rss: RssFacts, importPeak: number, failed: boolean): Goal => {
  const limit = NO_V8_FLAGS_MODE ? RSS_LIMIT_NO_FLAGS : RSS_LIMIT_START;
  const peak = Math.max(rss.peak, rss.hwm, importPeak);
  return {
    goal: `service peak RSS over the whole benchmark <= ${mib(limit)} (${
      NO_V8_FLAGS_MODE
        ? `BENCH_V8_FLAGS="": no V8 flags`
        : FLAGS_FROM_TASK
        ? `the start task's settings: V8 flags ${V8_FLAGS || "none"}`
        : `BENCH_V8_FLAGS=${V8_FLAGS}`
    })`,
    measured: `${mib(peak)} (sampled every 50 ms: ${mib(rss.peak)} over ${rss.samples} samples; ` +
      `kernel high-water mark ${mib(rss.hwm)})`,
    pass: !failed && peak <= limit,
    note: failed ? "invalid: failed requests during the load (error answers are cheap)" : undefined,
  };
};

const readsTable = (rows: ReadonlyArray<Row>) => {
  const withHeap = rows.some((r) => r.heap_kib_per_request !== null);
  const reference = (r: Row) => {
    const ref = COMPARED.find((c) => c.read === r.read)?.reference;
    return ref === undefined ? undefined : findRow(rows, keyOf(r.read, r.mode, ref), r.connections);
  };
  const header = [
    "read",
    "mode",
    "server",
    "c",
    "req/s",
    "p50 ms",
    "p99 ms",
    "x ref req/s",
    "x ref p99",
    "CPU ms/req",
    ...(withHeap ? ["heap KiB/req"] : []),
    "KB/answer",
    "peak RSS",
    "failed",
  ];
  const body = rows.map((r) => {
    const ref = reference(r);
    return [
      r.read,
      r.mode,
      r.server,
      String(r.connections),
      r.requests_per_second.toFixed(1),
      r.p50_ms.toFixed(2),
      r.p99_ms.toFixed(2),
      ref ? (r.requests_per_second / ref.requests_per_second).toFixed(2) : "-",
      ref ? (r.p99_ms / ref.p99_ms).toFixed(2) : "-",
      r.cpu_ms_per_request.toFixed(3),
      ...(withHeap
        ? [r.heap_kib_per_request === null ? "-" : r.heap_kib_per_request.toFixed(0)]
        : []),
      (r.bytes_per_response / 1000).toFixed(1),
      mib(r.peak_rss_bytes),
      failures(r) > 0 ? `${failures(r)} !` : "0",
    ];
  });
  return [
    `x ref: against the read's reference server (energy: minimal; metrics, periods: same-SQL) in ` +
    `the same mode; CPU ms/req: the server's CPU time (all its threads) over the load, per request` +
    (withHeap ? "; heap KiB/req: what V8 allocated in its main heap, per request" : ""),
    textTable(header, body, [0, 1, 2]),
  ].join("\n");
};

// The servers of the reads: the service, and for the comparison the baselines and the floor app.
interface ReadServers {
  readonly service: Server;
  readonly others: Readonly<Record<string, Server>>;
}

const startReadServers = async (
  settings: Settings,
  stamp: string,
  withBaselines: boolean,
): Promise<ReadServers> => {
  const ports: Array<number> = [];
  const port = (preferred: number) => {
    const chosen = freePort(preferred, ports);
    ports.push(chosen);
    return chosen;
  };
  const servicePort = port(18080);
  const metricsToken = settings.heap ? crypto.randomUUID() : undefined;
  const service = await startServer(
    "service",
    serviceArgsOn(servicePort),
    {
      ...serviceEnv(settings.databaseUrl, settings.pool, servicePort),
      ...(metricsToken === undefined ? {} : { METRICS_TOKEN: metricsToken }),
    },
    servicePort,
    "/health/ready",
    stamp,
    metricsToken,
  );
  log(`  service on :${servicePort}, PID ${service.pid} (${startSettingsText()})`);
  if (!withBaselines) return { service, others: {} };
  const common = {
    DATABASE_URL: settings.databaseUrl.toString(),
    DB_POOL_MAX: String(settings.pool),
    HOST: "127.0.0.1",
  };
  const others: Record<string, Server> = {};
  const [start, end] = FIXED_WINDOW.split(" ");
  for (
    const [name, file, preferred, ready] of [
      ["same-SQL", "handwritten_server.ts", 18081, "/health"],
      ["minimal", "minimal_server.ts", 18082, "/health"],
      [
        "floor",
        "floor_app.ts",
        18084,
        `/api/v1/stores/1/energy?scope_id=1&start=${start}&end=${end}`,
      ],
    ] as const
  ) {
    const chosen = port(preferred);
    others[name] = await startServer(
      name === "same-SQL" ? "handwritten" : name,
      ["run", "-A", `scripts/bench/${file}`],
      { ...common, PORT: String(chosen) },
      chosen,
      ready,
      stamp,
    );
    log(`  ${name} server on :${chosen}, PID ${others[name].pid}`);
  }
  return { service, others };
};

// The reads' loads in groups measured together: for each compared read and mode its baselines and
// the service, and with the repeated energy the floor app; then the lists, each alone.
const readGroups = (servers: ReadServers, files: Record<Mode | "fixed" | "all", string>) => {
  type Entry = { target: Target; read: string; mode: Mode; server: string };
  const entry = (read: string, mode: Mode, server: string, path: string, auth: boolean): Entry => ({
    read,
    mode,
    server,
    target: {
      key: keyOf(read, mode, server),
      label: `${read} ${mode} ${server}`,
      server: server === "service" ? servers.service : servers.others[server],
      path,
      auth,
      pairs: mode === "repeated" ? files.repeated : files.all,
      windows: path.includes("{start}") || path.includes("{end}")
        ? (mode === "repeated" ? files.fixed : files.random)
        : undefined,
    },
  });
  const groups: Array<Array<Entry>> = [];
  for (const { read, baselines } of COMPARED) {
    for (const mode of MODES) {
      groups.push([
        ...baselines.map((b) => entry(read, mode, b.server, b.path, false)),
        entry(read, mode, "service", servicePath(read), true),
        // The same request as the service's (the floor reads no credential).
        ...(read === "energy" && mode === "repeated"
          ? [entry(read, mode, "floor", servicePath(read), true)]
          : []),
      ]);
    }
  }
  for (const read of ["stores", "catalog"]) {
    groups.push([entry(read, "repeated", "service", servicePath(read), true)]);
  }
  return groups;
};

// BENCH_SECONDS of load in BENCH_TURNS turns of whole seconds (the first ones a second longer when
// they do not divide evenly).
const turnLengths = (seconds: number, turns: number) => {
  const count = Math.min(turns, seconds);
  return Array.from(
    { length: count },
    (_, i) => Math.floor(seconds / count) + (i < seconds % count ? 1 : 0),
  );
};

// Each group's servers are loaded in turns, one after another in an order rotated each turn, so
// that the machine's drift (and other work on it) over the group's minutes falls on all of them
// alike, and no server always follows the same one.
const measureReads = async (
  settings: Settings,
  servers: ReadServers,
  files: Record<Mode | "fixed" | "all", string>,
  key: string,
) => {
  const rows: Array<Row> = [];
  const probes: Record<string, Probe> = {};
  const groups = readGroups(servers, files);
  const lengths = turnLengths(settings.seconds, settings.turns);
  const loads = groups.flat().length;
  // Each wrk run is followed by half a second for the server to settle.
  const estimate = loads * (settings.warmup + 0.6) +
    loads * settings.concurrency.length * (settings.seconds + 0.6 * lengths.length);
  log(
    `reads: ${loads} loads of ${settings.seconds} s at c=${settings.concurrency.join(",")} in ` +
      `${lengths.length} turns each (+${settings.warmup} s warm-up), pool ${settings.pool}, ` +
      `about ${Math.ceil(estimate / 60)} min`,
  );
  for (const group of groups) {
    for (const { target } of group) {
      const answer = await probe(target, key);
      probes[target.key] = answer;
      log(
        `${target.label}: probe answered ${answer.status}` +
          (answer.code || answer.message ? ` ${answer.code ?? ""} ${answer.message ?? ""}` : ""),
      );
      if (settings.warmup > 0) {
        await runWrk(target, GOAL_C, Math.min(settings.warmup, settings.seconds), key);
      }
    }
    for (const c of settings.concurrency) {
      const turns = group.map(() => [] as Array<Measurement>);
      for (let t = 0; t < lengths.length; t++) {
        for (let i = 0; i < group.length; i++) {
          const at = (t + i) % group.length;
          turns[at].push(await runWrk(group[at].target, c, lengths[t], key));
        }
      }
      group.forEach(({ read, mode, server, target }, i) => {
        const m = combineTurns(turns[i]);
        rows.push({
          ...m,
          read,
          mode,
          server,
          turn_requests_per_second: turns[i].map((t) => t.requests_per_second),
          turn_p99_ms: turns[i].map((t) => t.p99_ms),
        });
        log(
          `  ${target.label} c=${c}: ${m.requests_per_second.toFixed(1)} req/s (turns ${
            turns[i].map((t) => t.requests_per_second.toFixed(0)).join(" ")
          })  p50 ${m.p50_ms.toFixed(2)} ms  p99 ${m.p99_ms.toFixed(2)} ms (turns ${
            turns[i].map((t) => t.p99_ms.toFixed(1)).join(" ")
          })  CPU ${m.cpu_ms_per_request.toFixed(3)} ms/req${
            m.heap_kib_per_request === null
              ? ""
              : `  heap ${m.heap_kib_per_request.toFixed(0)} KiB/req`
          }  RSS ${mib(m.peak_rss_bytes)}` +
            (failures(m) > 0
              ? `  ! ${m.non_2xx} non-2xx, ${failures(m) - m.non_2xx} socket errors`
              : ""),
        );
      });
    }
  }
  return { rows, probes };
};

// JSON text with every object's keys in order: two answers are the same when these are equal.
const canonical = (value: unknown): string =>
  Array.isArray(value)
    ? `[${value.map(canonical).join(",")}]`
    : value !== null && typeof value === "object"
    ? `{${
      Object.keys(value).sort().map((k) =>
        `${JSON.stringify(k)}:${canonical((value as Record<string, unknown>)[k])}`
      ).join(",")
    }}`
    : JSON.stringify(value);

// Whether the same-SQL server answers each compared read as the service does, for the first pair
// and two windows (the fixed one and one of the random ones): its figures are those of the same
// answers only if so.
const checkSameAnswers = async (
  servers: ReadServers,
  files: Record<Mode | "fixed" | "all", string>,
  key: string,
) => {
  const pair = Deno.readTextFileSync(files.all).split("\n")[0];
  const random = Deno.readTextFileSync(files.random).trim().split("\n");
  const windows = [FIXED_WINDOW, random[Math.floor(random.length / 2)]];
  const body = async (port: number, path: string, auth: boolean) => {
    const response = await fetch(`http://127.0.0.1:${port}${path}`, {
      headers: auth ? { authorization: `Bearer ${key}` } : {},
    });
    const text = await response.text();
    try {
      return `${response.status} ${canonical(JSON.parse(text))}`;
    } catch {
      return `${response.status} ${text}`;
    }
  };
  const same: Record<string, boolean> = {};
  for (const { read, baselines } of COMPARED) {
    const baseline = baselines.find((b) => b.server === "same-SQL");
    if (baseline === undefined) continue;
    same[read] = true;
    for (const window of windows) {
      const [service, own] = await Promise.all([
        body(servers.service.port, pathFor(servicePath(read), pair, window), true),
        body(servers.others["same-SQL"].port, pathFor(baseline.path, pair, window), false),
      ]);
      if (service !== own || !service.startsWith("200 ")) same[read] = false;
    }
  }
  const differ = Object.keys(same).filter((read) => !same[read]);
  log(
    differ.length === 0
      ? `  the same-SQL server answers ${Object.keys(same).join(", ")} as the service does ` +
        `(store/scope ${pair}, windows ${windows.join(" and ")})`
      : `  ! the same-SQL server's ${differ.join(", ")} answers differ from the service's ` +
        `(store/scope ${pair}, windows ${windows.join(" and ")}): those comparisons are not like ` +
        `for like`,
  );
  return same;
};

// The files the loads draw from: every store/scope pair the key may read, the first
// BENCH_REPEATED_PAIRS of them, the fixed window and every window of the stored days.
const writeLoadFiles = async (settings: Settings, stamp: string, port: number, key: string) => {
  const all = `${OUT_DIR}/${stamp}-pairs-all.txt`;
  const pairs = await writeTargets(port, key, all);
  const windows = await dataWindows(settings.databaseUrl);
  if (!windows.includes(FIXED_WINDOW)) {
    throw new SetupError(`the database's days do not cover the fixed window ${FIXED_WINDOW}`);
  }
  const repeated = pairs.slice(0, settings.repeatedPairs);
  return {
    pairs: pairs.length,
    repeatedPairs: repeated.length,
    windows: windows.length,
    files: {
      all,
      repeated: await writeLines(`${OUT_DIR}/${stamp}-pairs-repeated.txt`, repeated),
      fixed: await writeLines(`${OUT_DIR}/${stamp}-windows-fixed.txt`, [FIXED_WINDOW]),
      random: await writeLines(`${OUT_DIR}/${stamp}-windows-random.txt`, windows),
    },
  };
};

const floorText = (rows: ReadonlyArray<Row>) => {
  const floor = findRow(rows, keyOf("energy", "repeated", "floor"));
  const kept = findRow(rows, keyOf("energy", "repeated", "service"));
  if (floor === undefined || kept === undefined) return undefined;
  return `floor app (Effect HttpApi over the node:http bridge, fixed ${
    (floor.bytes_per_response / 1000).toFixed(1)
  } KB answers): ${floor.requests_per_second.toFixed(0)} req/s, ${
    floor.cpu_ms_per_request.toFixed(3)
  } ms CPU a request; the service on a kept energy answer (${
    (kept.bytes_per_response / 1000).toFixed(1)
  } KB): ${kept.requests_per_second.toFixed(0)} req/s, ${
    kept.cpu_ms_per_request.toFixed(3)
  } ms CPU a request, ${(kept.cpu_ms_per_request / floor.cpu_ms_per_request).toFixed(2)}x`;
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
  log(`machine: ${machineText()}; load average ${loadAtStart.join(" ")}`);

  const wrk = doReads || doScale || doFlags ? await ensureWrk() : wrkVersion() ?? "not used";
  const { postgresVersion, stores } = doReads || doImports || doFlags
    ? await prepareDatabase(settings, STORES)
    : { postgresVersion: "", stores: 0 };
  let rows: Array<Row> = [];
  let probes: Record<string, Probe> = {};
  let imports: ImportBenchResult | undefined;
  let importError: string | undefined;
  let loads: Awaited<ReturnType<typeof writeLoadFiles>> | undefined;
  let rss: RssFacts | undefined;
  let sameAnswers: Record<string, boolean> | undefined;

  if (doReads || doImports) {
    // A write key's member is a WRITER; raw lets it read batches and lineage.
    const importKey = doImports
      ? await issueKey(settings, "bench-import", "Import benchmark", "read,write,raw")
      : "";
    const key = doReads ? await issueKey(settings) : importKey;
    if (doReads) await preparePlainTable(settings.databaseUrl);
    log("starting the servers");
    const servers = await startReadServers(settings, stamp, doReads);
    if (doReads) {
      loads = await writeLoadFiles(settings, stamp, servers.service.port, key);
      log(
        `  ${loads.pairs} store/scope pairs (repeated: the first ${loads.repeatedPairs}), ` +
          `${loads.windows} windows of ${WINDOW_DAYS} days (repeated: ${FIXED_WINDOW}); ` +
          `logs and lists in ${OUT_DIR}`,
      );
      sameAnswers = await checkSameAnswers(servers, loads.files, key);
      ({ rows, probes } = await measureReads(settings, servers, loads.files, key));
    }
    if (doImports) {
      log(
        `imports: 3 XLSX then 3 CSV files of 100 stores x 100 days, preview and commit each ` +
          `(service PID ${servers.service.pid}, RSS sampled every 20 ms during the preview)`,
      );
      try {
        imports = await runImportBench({
          baseUrl: `http://127.0.0.1:${servers.service.port}`,
          pid: servers.service.pid,
          key: importKey,
          databaseUrl: settings.databaseUrl,
          log,
        });
      } catch (error) {
        if (wasInterrupted()) throw error;
        importError = (error as Error).stack ?? String(error);
        log(`! the import benchmark could not run: ${importError}`);
      }
    }
    rss = servers.service.rss.facts();
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
  const doPortfolio = doScale || settings.only === "portfolio";
  if (doPortfolio) log("portfolio: 60, 500 and 2,000 stores x 366 days, cold and kept");
  const portfolio = doPortfolio ? await portfolioRun(settings, stamp) : undefined;
  await stopAll();

  // The highest RSS sampled during any import (a format's summary names its largest growth).
  const importPeak = Math.max(0, ...(imports?.runs ?? []).map((r) => r.rss_peak_bytes));
  const failed = rows.filter((r) => failures(r) > 0);
  const serviceFailed = failed.some((r) => r.server === "service");
  const goals: Array<Goal> = [
    ...(doReads ? readGoals(rows, sameAnswers ?? {}) : []),
    ...(rss === undefined ? [] : [rssGoal(rss, importPeak, serviceFailed)]),
    ...(imports?.goals ?? []),
    ...(importError === undefined ? [] : [{
      goal: "import benchmark",
      measured: "not measured",
      pass: false,
      note: importError.split("\n")[0],
    }]),
    ...(scale?.goals ?? []),
    ...(portfolio?.goals ?? []),
    ...(flags?.goals ?? []),
  ];
  if (doReads) {
    log("");
    log(readsTable(rows));
    const floor = floorText(rows);
    if (floor !== undefined) log(floor);
  }
  if (imports !== undefined) {
    log("");
    log(importTable(imports));
  }
  if (scale !== undefined) {
    log("");
    log(scaleTable(scale.rows));
  }
  if (portfolio !== undefined) {
    log("");
    log(portfolioTable(portfolio.rows));
  }
  if (flags !== undefined) {
    log("");
    log(flagsTable(flags.rows));
    log("");
    log(flagsGcTable(flags.rows));
  }
  const loadAtEnd = loadAverage();
  const finishedAt = new Date();
  log("");
  log(`machine: ${machineText()}`);
  log(
    `load average (1/5/15 min): ${loadAtStart.join(" ")} before the run, ${
      loadAtEnd.join(" ")
    } at its end (counting the benchmark's own processes); ${
      ((finishedAt.getTime() - startedAt.getTime()) / 60_000).toFixed(1)
    } min`,
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
    finished_at: finishedAt.toISOString(),
    machine: machine(),
    load_average: { start: loadAtStart, end: loadAtEnd },
    deno: Deno.version.deno,
    postgres: postgresVersion,
    wrk,
    settings: {
      seconds: settings.seconds,
      warmup_seconds: settings.warmup,
      turns: settings.turns,
      concurrency: settings.concurrency,
      scale_seconds: settings.scaleSeconds,
      pool: settings.pool,
      database: safeUrl(settings.databaseUrl),
      stores,
      store_scope_pairs: loads?.pairs ?? 0,
      repeated_pairs: loads?.repeatedPairs ?? 0,
      random_windows: loads?.windows ?? 0,
      fixed_window: FIXED_WINDOW,
      v8_flags: V8_FLAGS,
      env: START_ENV,
      only: settings.only ?? null,
      rounds: settings.rounds,
    },
    same_sql_answers: sameAnswers ?? null,
    probes,
    rows,
    service_rss: rss ?? null,
    imports: imports ?? (importError === undefined ? null : { error: importError }),
    scale: scale ?? null,
    flags: flags === undefined ? null : { ...flags, goals: undefined },
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

stopChildrenOnSignal();
let code: number;
try {
  code = await main();
} catch (error) {
  if (!wasInterrupted()) {
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
Deno.exit(wasInterrupted() ? 130 : code);
