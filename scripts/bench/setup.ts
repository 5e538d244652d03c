// What the benchmark sets up before it measures: wrk, the database (created, seeded, analysed), read
// keys, the store lists and windows the loads draw from, and the service as the start task runs it.
import pg from "pg";
import { addDays, capture, decoder, delay, DENO, log, ROOT, SetupError } from "./harness.ts";
import { serviceV8Flags } from "../service_env.ts";

// What setting up a benchmark database needs to know.
export interface DatabaseSettings {
  readonly databaseUrl: URL;
  readonly database: string;
  readonly reseed: boolean;
}

// --- The service as the start task runs it (deno.json): its V8 flags (service.env) and the
// environment the task sets before the command, unless BENCH_V8_FLAGS or BENCH_ENV say otherwise
// (BENCH_V8_FLAGS="": no flag at all, as on a host that takes no runtime flags).
const START_TASK: string = JSON.parse(Deno.readTextFileSync(`${ROOT}/deno.json`)).tasks.start;
const FLAGS_SET = Deno.env.get("BENCH_V8_FLAGS");
export const V8_FLAGS = (FLAGS_SET ?? serviceV8Flags(ROOT)).trim();
// Whether the flags are the start task's, and whether the service runs without any V8 flag because
// BENCH_V8_FLAGS="" says so.
export const FLAGS_FROM_TASK = FLAGS_SET === undefined;
export const NO_V8_FLAGS_MODE = !FLAGS_FROM_TASK && V8_FLAGS === "";

// "NAME=value" words, as the task writes them before `deno`.
const envWords = (text: string): Record<string, string> =>
  Object.fromEntries(
    text.split(/\s+/).filter((word) => word !== "").map((word) => {
      const at = word.indexOf("=");
      if (at <= 0) throw new Error(`not NAME=value: ${word}`);
      return [word.slice(0, at), word.slice(at + 1)];
    }),
  );
export const START_ENV = envWords(
  Deno.env.get("BENCH_ENV") ?? START_TASK.slice(0, Math.max(0, START_TASK.indexOf("deno run"))),
);
const startEnvText = () =>
  Object.entries(START_ENV).map(([name, value]) => `${name}=${value}`).join(" ") || "none";
// The entry the service runs from: src/main.ts as the start task runs it (default), or
// BENCH_ENTRY=deploy: src/deploy.ts under `deno serve` with Deno Deploy's permissions and no flag.
const ENTRY = Deno.env.get("BENCH_ENTRY")?.trim() || "main";
if (ENTRY !== "main" && ENTRY !== "deploy") {
  throw new SetupError(`BENCH_ENTRY must be main or deploy, got "${ENTRY}"`);
}
if (ENTRY === "deploy" && V8_FLAGS !== "") {
  throw new SetupError(`BENCH_ENTRY=deploy takes no V8 flag: set BENCH_V8_FLAGS=""`);
}
export const startSettingsText = () =>
  ENTRY === "deploy"
    ? `the Deploy entry (deno serve src/deploy.ts, --allow-net --allow-env --allow-read --allow-sys); environment ${startEnvText()}`
    : `V8 flags ${V8_FLAGS.trim() || "none"}; environment ${startEnvText()}`;
export const serviceArgs = (flags: string, port: number) =>
  ENTRY === "deploy"
    ? [
      "serve",
      "--allow-net",
      "--allow-env",
      "--allow-read",
      "--allow-sys",
      "--host",
      "127.0.0.1",
      "--port",
      String(port),
      "src/deploy.ts",
    ]
    : [
      "run",
      "-A",
      "--unstable-no-legacy-abort",
      ...(flags.trim() === "" ? [] : [`--v8-flags=${flags.trim()}`]),
      "src/main.ts",
    ];
// The service's arguments on `port` with the benchmark's flags.
export const serviceArgsOn = (port: number) => serviceArgs(V8_FLAGS, port);
// The service's environment: the start task's (unless `plain`), the benchmark's database and pool,
// loopback, no demo seed.
export const serviceEnv = (databaseUrl: URL, pool: number, port: number, plain = false) => ({
  ...(plain ? {} : START_ENV),
  DATABASE_URL: databaseUrl.toString(),
  DB_POOL_MAX: String(pool),
  HOST: "127.0.0.1",
  PORT: String(port),
  SEED_DEMO: "false",
});

export const safeUrl = (url: URL) => {
  const copy = new URL(url);
  if (copy.password !== "") copy.password = "***";
  return copy.toString();
};

export const wrkVersion = () => {
  try {
    const out = new Deno.Command("wrk", { args: ["-v"], stdout: "piped", stderr: "piped" })
      .outputSync();
    return (decoder.decode(out.stdout) + decoder.decode(out.stderr)).split("\n")[0].trim();
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return undefined;
    throw error;
  }
};

export const ensureWrk = async () => {
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

export const connect = async (url: URL) => {
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

const openAdmin = async (settings: DatabaseSettings) => {
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
export const prepareDatabase = async (settings: DatabaseSettings, storeCount: number) => {
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
    // An emptied but migrated database may still hold a dataset row; --reset clears it, and the
    // uploads earlier runs committed (the benchmark's own data) with it.
    if (before.migrated) args.push("--reset", "--discard-uploads");
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
  // seq-scans energy_revisions, so every run starts from fresh ones.
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

export const issueKey = async (
  settings: DatabaseSettings,
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

// The plain table of the minimal server: the served value of each stored day, refreshed per run.
export const preparePlainTable = async (url: URL) => {
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

// --- What the loads draw from: store/scope pairs and 366-day windows, one a line in files that
// random_store.lua reads.

// The store/scope pairs the key may read, as the service lists them, written to `file`.
export const writeTargets = async (port: number, key: string, file: string) => {
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

// The fixed window: the last 366 days of the seeded dataset; an overview's as_of is its end.
export const FIXED_WINDOW = "2025-11-20 2026-11-20";
export const WINDOW_DAYS = 366;

export const writeLines = async (file: string, lines: ReadonlyArray<string>) => {
  await Deno.writeTextFile(file, lines.join("\n") + "\n");
  return file;
};

// Every window of WINDOW_DAYS days within the days the database holds, as "start end" lines.
export const dataWindows = async (url: URL) => {
  const client = await connect(url);
  let first: string, last: string;
  try {
    const { rows } = await client.query(
      "SELECT min(business_date)::text AS first, max(business_date)::text AS last FROM energy_days",
    );
    ({ first, last } = rows[0]);
  } finally {
    await client.end();
  }
  const windows: Array<string> = [];
  for (let start = first; addDays(start, WINDOW_DAYS - 1) <= last; start = addDays(start, 1)) {
    windows.push(`${start} ${addDays(start, WINDOW_DAYS - 1)}`);
  }
  if (windows.length === 0) {
    throw new SetupError(
      `the database's days (${first} to ${last}) hold no ${WINDOW_DAYS}-day window`,
    );
  }
  return windows;
};

// The service's reads, their windows as {start} and {end}: the three compared with baselines, and
// the two lists.
export const SERVICE_READS = [
  {
    read: "energy",
    path: "/api/v1/stores/{store}/energy?scope_id={scope}&start={start}&end={end}",
  },
  {
    read: "metrics",
    path: "/api/v1/stores/{store}/metrics?scope_id={scope}&start={start}&end={end}",
  },
  { read: "periods", path: "/api/v1/stores/{store}/periods?scope_id={scope}&as_of={end}" },
  { read: "stores", path: "/api/v1/stores" },
  { read: "catalog", path: "/api/v1/catalog" },
] as const;
