// CLI: deno task backup:check [--source URL] [--stores N] [--answer-stores N] — proves a backup
// restores to the same service: dumps a database with pg_dump (custom format), restores it into a
// fresh database with pg_restore, compares every table's row count and every read answer of the
// service on both (scripts/answers.ts; --answer-stores N: those of the first N stores only, for a
// large database), and drops what it created. Without --source it first creates a database and
// seeds it with the demo (deno task seed, --stores N, default 60). With --source (a database the
// service runs on) the answers need a read,raw key there: it is issued for member "answers" and
// revoked at the end.
// ADMIN_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/postgres) is where databases are
// created and dropped. Exit codes: 0 equal, 1 a difference or a failed step, 2 usage.
import { parseArgs } from "node:util";
import { adminQuery, withDatabase } from "./pg_admin.ts";

const USAGE =
  "usage: deno task backup:check [--source postgres://...] [--stores N] [--answer-stores N]";
const root = new URL("..", import.meta.url);
const adminUrl = Deno.env.get("ADMIN_DATABASE_URL") ??
  "postgres://postgres@127.0.0.1:5432/postgres";

let args: { source?: string; stores?: string; "answer-stores"?: string; help?: boolean };
try {
  args = parseArgs({
    args: Deno.args,
    options: {
      source: { type: "string" },
      stores: { type: "string" },
      "answer-stores": { type: "string" },
      help: { type: "boolean", short: "h" },
    },
    strict: true,
  }).values;
} catch (error) {
  console.error(`${(error as Error).message}\n${USAGE}`);
  Deno.exit(2);
}
if (args.help) {
  console.log(USAGE);
  Deno.exit(0);
}
const stores = Number(args.stores ?? 60);
if (!Number.isInteger(stores) || stores < 1 || stores > 2_000) {
  console.error(`--stores takes 1 to 2000\n${USAGE}`);
  Deno.exit(2);
}

const answerStores = args["answer-stores"] === undefined
  ? undefined
  : Number(args["answer-stores"]);
if (answerStores !== undefined && !(Number.isInteger(answerStores) && answerStores >= 1)) {
  console.error(`--answer-stores takes a positive whole number\n${USAGE}`);
  Deno.exit(2);
}

// The URL without its password, for messages.
const shown = (url: string) => {
  const u = new URL(url);
  if (u.password !== "") u.password = "***";
  return u.toString();
};

const decoder = new TextDecoder();

const exec = async (
  command: string,
  commandArgs: Array<string>,
  env: Record<string, string> = {},
) => {
  const started = performance.now();
  const output = await new Deno.Command(command, {
    args: commandArgs,
    cwd: root,
    env: { NO_COLOR: "1", BUILD_CONSOLE: "false", ...env },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = (decoder.decode(output.stdout) + decoder.decode(output.stderr)).trim();
  if (!output.success) {
    throw new Error(
      `${command} ${commandArgs[0] ?? ""} failed:\n${text.split("\n").slice(-20).join("\n")}`,
    );
  }
  return { text, ms: performance.now() - started };
};

const deno = (commandArgs: Array<string>, env: Record<string, string>) =>
  exec(Deno.execPath(), commandArgs, env);

// Exact rows of every table of the public schema (a full count: fine for a check, which reads
// every answer anyway).
const tableCounts = async (url: string) => {
  const tables = await adminQuery<{ name: string }>(
    url,
    `SELECT tablename AS name FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename`,
  );
  const counts = new Map<string, number>();
  for (const { name } of tables) {
    const [row] = await adminQuery<{ n: string }>(url, `SELECT count(*) AS n FROM "${name}"`);
    counts.set(name, Number(row.n));
  }
  return counts;
};

// Planner statistics of every table (a restore brings none: pg_dump does not dump them).
const analyze = (url: string) =>
  exec("psql", ["--quiet", "--no-psqlrc", "-v", "ON_ERROR_STOP=1", "-c", "ANALYZE", url]);

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

const checkStarted = performance.now();
const suffix = crypto.randomUUID().replaceAll("-", "").slice(0, 12);
const created: Array<string> = [];
const work = await Deno.makeTempDir({ prefix: "backup_check_" });
let sourceUrl = args.source ?? "";
let keysBefore = new Set<string>();
let failed = false;

const answerKeys = async (url: string) => {
  const list = await deno(["run", "-A", "scripts/keys.ts", "list"], { DATABASE_URL: url });
  return list.text.split("\n").map((l) => l.split("\t")).filter((c) =>
    c[1] === "answers" && c[5] === "-"
  ).map((c) => c[0]);
};

try {
  for (const tool of ["pg_dump", "pg_restore", "psql"]) {
    await exec(tool, ["--version"]).catch(() => {
      throw new Error(`${tool} is not installed (apt-get install postgresql-client)`);
    });
  }
  const [{ version }] = await adminQuery<{ version: string }>(
    adminUrl,
    "SELECT current_setting('server_version') AS version",
  );
  const dumpVersion = (await exec("pg_dump", ["--version"])).text;
  console.log(`server ${version}; ${dumpVersion}`);

  if (sourceUrl === "") {
    const name = `backup_src_${suffix}`;
    await adminQuery(adminUrl, `CREATE DATABASE ${name}`);
    created.push(name);
    sourceUrl = withDatabase(adminUrl, name);
    const seed = await deno(["task", "seed", "--stores", String(stores)], {
      DATABASE_URL: sourceUrl,
    });
    console.log(`seeded ${name} with the demo (${stores} stores) in ${seconds(seed.ms)}`);
    // A freshly loaded database has no planner statistics either (docs/performance.md).
    await analyze(sourceUrl);
  } else {
    keysBefore = new Set(await answerKeys(sourceUrl));
    console.log(`source ${shown(sourceUrl)}`);
  }

  const dumpFile = `${work}/service.dump`;
  const dump = await exec("pg_dump", [
    "--format=custom",
    "--no-owner",
    "--no-privileges",
    `--file=${dumpFile}`,
    sourceUrl,
  ]);
  const size = (await Deno.stat(dumpFile)).size;
  console.log(`pg_dump: ${(size / 1024 / 1024).toFixed(1)} MiB in ${seconds(dump.ms)}`);

  const target = `backup_dst_${suffix}`;
  await adminQuery(adminUrl, `CREATE DATABASE ${target}`);
  created.push(target);
  const targetUrl = withDatabase(adminUrl, target);
  const restore = await exec("pg_restore", [
    "--no-owner",
    "--no-privileges",
    "--exit-on-error",
    "--single-transaction",
    `--dbname=${targetUrl}`,
    dumpFile,
  ]);
  console.log(`pg_restore into ${target}: ${seconds(restore.ms)}`);
  // Restored tables have no planner statistics until autovacuum reaches them (docs/performance.md).
  const analyzed = await analyze(targetUrl);
  console.log(`ANALYZE of the restored copy: ${seconds(analyzed.ms)}`);

  const [before, after] = [await tableCounts(sourceUrl), await tableCounts(targetUrl)];
  const differing = [...new Set([...before.keys(), ...after.keys()])].filter((t) =>
    before.get(t) !== after.get(t)
  );
  for (const t of differing) {
    console.log(
      `table ${t}: ${before.get(t) ?? "missing"} rows, restored ${after.get(t) ?? "missing"}`,
    );
  }
  const rows = [...before.values()].reduce((a, b) => a + b, 0);
  console.log(
    `tables: ${before.size} tables, ${rows} rows; ${differing.length} differ after the restore`,
  );
  if (differing.length > 0) failed = true;

  const answersOf = (url: string, dir: string, compare?: string) =>
    deno(
      [
        "run",
        "-A",
        "scripts/answers.ts",
        dir,
        ...(compare ? ["--compare", compare] : []),
        ...(answerStores === undefined ? [] : ["--stores", String(answerStores)]),
      ],
      { DATABASE_URL: url },
    );
  const first = await answersOf(sourceUrl, `${work}/source`);
  console.log(`answers of the source: ${first.text.split("\n").at(-1)} (${seconds(first.ms)})`);
  const second = await answersOf(targetUrl, `${work}/restored`, `${work}/source`).catch(
    (error: Error) => {
      failed = true;
      return { text: error.message, ms: 0 };
    },
  );
  const verdict = second.text.split("\n").filter((l) => !l.startsWith("Task")).slice(-3);
  console.log(`answers of the restored copy compared: ${verdict.join("; ")}`);
} catch (error) {
  failed = true;
  console.error(error instanceof Error ? error.message : String(error));
} finally {
  if (args.source !== undefined) {
    // The key answers.ts issued on the source is revoked.
    for (const id of await answerKeys(sourceUrl).catch(() => [] as Array<string>)) {
      if (!keysBefore.has(id)) {
        await deno(["run", "-A", "scripts/keys.ts", "revoke", id], { DATABASE_URL: sourceUrl })
          .catch(() => console.error(`key ${id} of member answers could not be revoked`));
      }
    }
  }
  for (const name of created) {
    await adminQuery(adminUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch((error) =>
      console.error(`${name} could not be dropped: ${error.message}`)
    );
  }
  await Deno.remove(work, { recursive: true }).catch(() => {});
  const took = seconds(performance.now() - checkStarted);
  console.log(
    failed
      ? `backup check FAILED (${took})`
      : `backup check passed: the restore answers the same (${took})`,
  );
}
Deno.exit(failed ? 1 : 0);
