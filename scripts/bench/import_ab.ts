// Previews and commits of two versions of the service, side by side: `deno task bench:imports-ab
// REF [ROUNDS]` checks out REF (a commit, branch or tag) in .data/ab/<commit>, seeds one 500-store
// database for it and one for this checkout (each by its own code, so that either may have a schema
// the other lacks), starts both services (each with its own start task's V8 flags) and runs the
// import benchmark's six imports against each in turn (REF, this, this, REF, ...), ROUNDS rounds
// (default 2). The machine's drift falls on both alike, where single runs minutes apart differ on
// the same code (docs/performance.md).
//
// Prints each import's preview and commit seconds and the medians of both. Needs git, and
// PostgreSQL on this machine (BENCH_DATABASE_URL's server; databases bench_ab_ref and
// bench_ab_head are created and reseeded).
import pg from "pg";
import { runImportBench } from "./import_bench.ts";
import { median } from "./stats.ts";
import { serviceV8Flags } from "../service_env.ts";

const ROOT = decodeURIComponent(new URL("../../", import.meta.url).pathname).replace(/\/$/, "");
const DENO = Deno.execPath();
const STORES = 500;

// The V8 flags a tree's service runs with, so that each side runs as its own release does.
const startFlags = (tree: string) => {
  const flags = serviceV8Flags(tree);
  return flags === "" ? [] : [`--v8-flags=${flags}`];
};

const [ref, roundsArg] = Deno.args;
const rounds = Number(roundsArg ?? 2);
if (ref === undefined || !Number.isInteger(rounds) || rounds < 1 || Deno.args.length > 2) {
  console.error("usage: deno task bench:imports-ab REF [ROUNDS]");
  Deno.exit(2);
}

const run = async (command: string, args: Array<string>, cwd: string, env = {}) => {
  const out = await new Deno.Command(command, { args, cwd, env, stdin: "null" }).output();
  const text = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
  if (out.code !== 0) throw new Error(`${command} ${args.join(" ")} failed:\n${text.slice(-3000)}`);
  return text;
};

const commit = (await run("git", ["rev-parse", "--verify", `${ref}^{commit}`], ROOT)).trim();
const refTree = `${ROOT}/.data/ab/${commit.slice(0, 12)}`;
try {
  await Deno.stat(refTree);
} catch {
  await run("git", ["worktree", "add", "--detach", refTree, commit], ROOT);
}
try {
  await Deno.lstat(`${refTree}/node_modules`);
} catch {
  await Deno.symlink(`${ROOT}/node_modules`, `${refTree}/node_modules`);
}

const server = new URL(
  Deno.env.get("BENCH_DATABASE_URL") ?? "postgres://postgres@127.0.0.1:5432/bench_energy",
);
const databaseOf = (name: string) => {
  const url = new URL(server);
  url.pathname = `/${name}`;
  return url;
};
const admin = databaseOf("postgres");

const sides = [
  { name: "ref", tree: refTree, db: databaseOf("bench_ab_ref"), port: 18211 },
  { name: "head", tree: ROOT, db: databaseOf("bench_ab_head"), port: 18212 },
] as const;

const children: Array<Deno.ChildProcess> = [];
try {
  const prepared = [];
  for (const side of sides) {
    const name = side.db.pathname.slice(1);
    const client = new pg.Client({ connectionString: admin.toString() });
    await client.connect();
    try {
      await client.query(`DROP DATABASE IF EXISTS "${name}"`);
      await client.query(`CREATE DATABASE "${name}"`);
    } finally {
      await client.end();
    }
    console.log(`${side.name}: seeding ${name} with ${STORES} stores by ${side.tree}`);
    await run(DENO, ["run", "-A", "scripts/seed.ts", "--stores", String(STORES)], side.tree, {
      DATABASE_URL: side.db.toString(),
    });
    const issued = await run(
      DENO,
      [
        "run",
        "-A",
        "scripts/keys.ts",
        "issue",
        "--member",
        "bench-ab",
        "--permissions",
        "read,write,raw",
        "--expires-in",
        "2h",
      ],
      side.tree,
      { DATABASE_URL: side.db.toString() },
    );
    const key = issued.trim().split("\n").at(-1)!.trim();
    const child = new Deno.Command(DENO, {
      args: [
        "run",
        "-A",
        "--unstable-no-legacy-abort",
        ...startFlags(side.tree),
        "src/main.ts",
      ],
      cwd: side.tree,
      stdin: "null",
      stdout: "null",
      stderr: "null",
      env: {
        DATABASE_URL: side.db.toString(),
        HOST: "127.0.0.1",
        PORT: String(side.port),
        SEED_DEMO: "false",
      },
    }).spawn();
    children.push(child);
    prepared.push({ ...side, key, pid: child.pid });
  }
  for (const side of prepared) {
    for (let i = 0;; i++) {
      const ready = await fetch(`http://127.0.0.1:${side.port}/health/ready`).then(
        async (r) => (await r.body?.cancel(), r.ok),
        () => false,
      );
      if (ready) break;
      if (i > 300) throw new Error(`${side.name}: the service did not become ready`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }

  const seconds = new Map(
    prepared.map((s) => [s.name, { preview: [] as Array<number>, commit: [] as Array<number> }]),
  );
  for (let round = 0; round < rounds; round++) {
    const order = round % 2 === 0 ? prepared : [...prepared].reverse();
    for (const side of order) {
      const result = await runImportBench({
        baseUrl: `http://127.0.0.1:${side.port}`,
        pid: side.pid,
        key: side.key,
        databaseUrl: side.db,
        log: () => {},
      });
      const mine = seconds.get(side.name)!;
      for (const r of result.runs) {
        mine.preview.push(r.preview_seconds);
        if (r.commit_seconds !== null) mine.commit.push(r.commit_seconds);
      }
      console.log(
        `${side.name.padEnd(4)} ${
          result.runs.map((r) =>
            `${r.format} ${r.preview_seconds.toFixed(3)}/${
              r.commit_seconds?.toFixed(3)
            } (${r.writes})`
          ).join("  ")
        }`,
      );
    }
  }
  for (const side of prepared) {
    const s = seconds.get(side.name)!;
    console.log(
      `${side.name} (${
        side.name === "ref" ? commit.slice(0, 12) : "this checkout"
      }): preview median ${median(s.preview).toFixed(3)} s, commit median ${
        median(s.commit).toFixed(3)
      } s (${s.preview.length} imports)`,
    );
  }
} finally {
  for (const child of children) {
    try {
      child.kill();
    } catch {
      // already gone
    }
  }
}
