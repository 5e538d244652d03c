// Two versions of the service side by side, for the benchmarks that compare them in turns
// (import_ab.ts, reads_ab.ts): REF (a commit, branch or tag) checked out in .data/ab/<commit>, and
// this checkout. Each side gets a database of its own, seeded with STORES stores by its own code (so
// that either may have a schema or routines the other lacks), a key, and its service started as
// its own start task runs it (its own V8 flags). Needs git, and PostgreSQL on this machine
// (BENCH_DATABASE_URL's server; databases bench_ab_ref and bench_ab_head are created and reseeded).
// BENCH_AB_SHARED=1: both sides read BENCH_DATABASE_URL's database as it is (seeded before), for
// two versions with the same schema and routines: a difference then cannot come from two databases
// seeded apart.
import pg from "pg";
import { serviceV8Flags } from "../service_env.ts";
import { spawn } from "./harness.ts";

const ROOT = decodeURIComponent(new URL("../../", import.meta.url).pathname).replace(/\/$/, "");
const DENO = Deno.execPath();
const STORES = 500;

export interface Side {
  readonly name: "ref" | "head";
  readonly tree: string;
  readonly db: URL;
  readonly port: number;
  readonly key: string;
  readonly child: Deno.ChildProcess;
}

export interface Sides {
  // The commit REF names.
  readonly commit: string;
  readonly sides: ReadonlyArray<Side>;
  readonly stop: () => void;
}

const run = async (command: string, args: Array<string>, cwd: string, env = {}) => {
  const out = await new Deno.Command(command, { args, cwd, env, stdin: "null" }).output();
  const text = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
  if (out.code !== 0) throw new Error(`${command} ${args.join(" ")} failed:\n${text.slice(-3000)}`);
  return text;
};

// The V8 flags a tree's service runs with, so that each side runs as its own release does.
const startFlags = (tree: string) => {
  const flags = serviceV8Flags(tree);
  return flags === "" ? [] : [`--v8-flags=${flags}`];
};

// Checks REF out (once), seeds both databases, issues a key of `permissions` on each and starts
// both services; resolves once both answer /health/ready.
export const startSides = async (ref: string, permissions: string): Promise<Sides> => {
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
  const shared = Deno.env.get("BENCH_AB_SHARED") === "1";
  const plan = [
    { name: "ref", tree: refTree, db: shared ? server : databaseOf("bench_ab_ref"), port: 18211 },
    { name: "head", tree: ROOT, db: shared ? server : databaseOf("bench_ab_head"), port: 18212 },
  ] as const;
  // A side's own database, made anew and seeded by its own code.
  const reseed = async (tree: string, name: string, env: Record<string, string>) => {
    const client = new pg.Client({ connectionString: databaseOf("postgres").toString() });
    await client.connect();
    try {
      await client.query(`DROP DATABASE IF EXISTS "${name}"`);
      await client.query(`CREATE DATABASE "${name}"`);
    } finally {
      await client.end();
    }
    console.log(`seeding ${name} with ${STORES} stores by ${tree}`);
    await run(DENO, ["run", "-A", "scripts/seed.ts", "--stores", String(STORES)], tree, env);
  };
  const sides: Array<Side> = [];
  const stop = () => {
    for (const side of sides) {
      try {
        side.child.kill();
      } catch {
        // already gone
      }
    }
  };
  try {
    for (const side of plan) {
      const name = side.db.pathname.slice(1);
      const env = { DATABASE_URL: side.db.toString() };
      if (!shared) await reseed(side.tree, name, env);
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
          permissions,
          "--expires-in",
          "2h",
        ],
        side.tree,
        env,
      );
      // Through the harness, which stops it on an interrupt too (stopChildrenOnSignal).
      const child = spawn(
        DENO,
        ["run", "-A", "--unstable-no-legacy-abort", ...startFlags(side.tree), "src/main.ts"],
        {
          cwd: side.tree,
          stdout: "null",
          stderr: "null",
          env: { ...env, HOST: "127.0.0.1", PORT: String(side.port), SEED_DEMO: "false" },
        },
      );
      sides.push({ ...side, key: issued.trim().split("\n").at(-1)!.trim(), child });
    }
    for (const side of sides) {
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
  } catch (error) {
    stop();
    throw error;
  }
  return { commit, sides, stop };
};
