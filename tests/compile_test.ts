// The single binary (`deno task compile`, scripts/compile.ts). Without a denort runtime the binary
// itself cannot be made here, and its test is skipped with the reason in its name; the others always
// run: the module graph of its entry holds only run-time code, `deno compile` embeds only what that
// graph reaches (its listing, made with this deno standing in for the runtime), and the entry starts
// from a read-only copy of the files the binary embeds (its npm packages from Deno's cache), writing
// only under DATA_DIR.
import assert from "node:assert/strict";
import {
  BINARY_ENTRY,
  BINARY_FLAGS,
  BINARY_INCLUDES,
  BINARY_PERMISSIONS,
  compileArgs,
  findRuntime,
  ROOT,
} from "../scripts/compile.ts";
import { buildConsole } from "../src/console/build.ts";
import { embeddedRunOnly } from "./db.ts";
import { assertErrorBody, readAnswer } from "./helpers.ts";
import { baseEnv, READY_LINE, spawnService } from "./service_process.ts";

// Packages only the tests, the browser checks and the contract checks use.
const TEST_ONLY = [
  "puppeteer-core",
  "@redocly/openapi-core",
  "@seriousme/openapi-schema-validator",
  "@apidevtools/swagger-parser",
  "fast-check",
];
// The browser console's packages: bundled into dist/console, never loaded by the service.
const CONSOLE_ONLY = ["preact", "htm", "uplot"];

interface Graph {
  readonly modules: ReadonlyArray<
    { readonly specifier: string; readonly kind?: string; readonly npmPackage?: string }
  >;
  readonly npmPackages: Readonly<
    Record<string, { readonly name: string; readonly dependencies: ReadonlyArray<string> }>
  >;
}

const graphOf = async (entry: string): Promise<Graph> => {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["info", "--json", entry],
    cwd: ROOT,
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
  return JSON.parse(new TextDecoder().decode(out.stdout));
};

// The entry's files in the tree (relative paths), and the npm packages its modules import and
// those reach through their dependencies: package id -> who depends on it ("<graph>" for an
// import by a module).
const reach = async (entries: ReadonlyArray<string>) => {
  const files = new Set<string>();
  const packages = new Map<string, Set<string>>();
  const names = new Map<string, string>();
  for (const entry of entries) {
    const graph = await graphOf(entry);
    for (const [id, p] of Object.entries(graph.npmPackages)) names.set(id, p.name);
    const stack: Array<[string, string]> = [];
    for (const m of graph.modules) {
      if (m.specifier.startsWith(ROOT.href)) files.add(m.specifier.slice(ROOT.href.length));
      if (m.kind === "npm" && m.npmPackage !== undefined) stack.push([m.npmPackage, "<graph>"]);
    }
    while (stack.length > 0) {
      const [id, by] = stack.pop()!;
      const seen = packages.get(id);
      if (seen !== undefined) {
        seen.add(by);
        continue;
      }
      packages.set(id, new Set([by]));
      for (const dep of graph.npmPackages[id]?.dependencies ?? []) stack.push([dep, id]);
    }
  }
  const named = new Map<string, Set<string>>();
  for (const [id, by] of packages) {
    const set = named.get(names.get(id) ?? id) ?? new Set();
    for (const b of by) set.add(b === "<graph>" ? b : names.get(b) ?? b);
    named.set(names.get(id) ?? id, set);
  }
  return { files, packages: named };
};

const MODULE_ENTRIES = [BINARY_ENTRY, "src/deploy.ts", "src/db/pglite_worker.ts"];

Deno.test("single binary: its entries reach only run-time modules and packages", async () => {
  const { files, packages } = await reach(MODULE_ENTRIES);
  const outside = [...files].filter((f) => !f.startsWith("src/") && !f.startsWith("migrations/"));
  assert.deepEqual(outside, [], "only src/ and migrations/ are reachable");
  // Every migration is a module of the graph (a text import), not a file read at run time.
  for await (const entry of Deno.readDir(new URL("migrations/", ROOT))) {
    if (entry.name.endsWith(".sql")) assert.ok(files.has(`migrations/${entry.name}`), entry.name);
  }
  for (const name of [...TEST_ONLY, ...CONSOLE_ONLY]) {
    const by = packages.get(name);
    if (name === "fast-check" && by !== undefined) {
      // effect's Schema module imports it (effect/FastCheck): a dependency of effect, and of
      // nothing else; no module of the service imports it.
      assert.deepEqual([...by], ["effect"], `fast-check is reached by ${[...by].join(", ")}`);
      continue;
    }
    assert.equal(by, undefined, `${name} is reached by ${[...(by ?? [])].join(", ")}`);
  }
  for (const name of ["effect", "@effect/platform", "pg", "@electric-sql/pglite", "exceljs"]) {
    assert.ok(packages.has(name), `${name} is reached`);
  }
});

// The paths in deno compile's listing of what it embeds (a tree drawn two columns a level; a
// folder shown whole ends in "/*").
const embeddedPaths = (text: string) => {
  const lines = text.slice(text.indexOf("Embedded Files")).split("\n").slice(1);
  const stack: Array<string> = [];
  const paths: Array<string> = [];
  for (const line of lines) {
    if (/^Files:/.test(line)) break;
    const at = line.search(/[^│├└─┬ ]/);
    if (at < 4) continue;
    const depth = (at - 4) / 2;
    const name = line.slice(at).replace(/ \(.*\)$/, "");
    stack.length = depth;
    stack.push(name);
    paths.push(stack.join("/"));
  }
  return paths;
};

Deno.test({
  ...embeddedRunOnly(
    "single binary: deno compile embeds the service's modules, the console's bundle and only " +
      "the npm packages they reach (its listing, this deno standing in for the runtime)",
  ),
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    await buildConsole();
    const dir = await Deno.makeTempDir({ prefix: "compile-listing-" });
    try {
      const out = await new Deno.Command(Deno.execPath(), {
        args: compileArgs(`${dir}/listing`, { check: false }),
        cwd: ROOT,
        env: { DENORT_BIN: Deno.execPath(), NO_COLOR: "1" },
        stdout: "piped",
        stderr: "piped",
      }).output();
      const text = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
      assert.equal(out.code, 0, text);
      const paths = embeddedPaths(text);
      // The npm packages come from Deno's cache, one by one: the project's node_modules folder,
      // which holds the test tools too, is not embedded.
      const top = new Set(paths.map((p) => p.split("/")[0]));
      assert.deepEqual([...top].sort(), [
        ".deno_compile_node_modules",
        "dist",
        "migrations",
        "src",
      ]);
      assert.ok(paths.some((p) => p.startsWith("dist/")), "the console's bundle");
      const embedded = new Set(
        paths.map((p) =>
          /^\.deno_compile_node_modules\/[^/]+\/(@[^/]+\/[^/*]+|[^@/*][^/*]*)/.exec(p)?.[1]
        )
          .filter((name) => name !== undefined),
      );
      for (const name of ["effect", "@effect/platform", "pg", "@electric-sql/pglite", "exceljs"]) {
        assert.ok(embedded.has(name), `${name} is not embedded`);
      }
      const { packages } = await reach([BINARY_ENTRY, "src/db/pglite_worker.ts"]);
      const unreached = [...embedded].filter((name) => !packages.has(name!));
      assert.deepEqual(unreached, [], "every embedded package is reached by the graph");
      for (const name of [...TEST_ONLY.filter((n) => n !== "fast-check"), ...CONSOLE_ONLY]) {
        assert.ok(!embedded.has(name), `${name} is embedded`);
      }
      const files = /Files: ([\d.]+ ?[KMG]?B)/.exec(text)?.[1];
      console.log(`embedded files: ${files}`);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

// What a started service answers, from its embedded database with the demo loaded on its first start:
// readiness, a read with a demo key, error bodies, the console and its script, the contract, the
// docs page.
const smoke = async (base: string, dataDir: string) => {
  const ready = await fetch(`${base}/health/ready`);
  assert.deepEqual([ready.status, await ready.json()], [200, { status: "ready" }]);
  const keys = JSON.parse(await Deno.readTextFile(`${dataDir}/demo-keys.json`));
  assert.equal(keys.length, 4);
  const stores = await fetch(`${base}/api/v1/stores`, {
    headers: { authorization: `Bearer ${keys[0].key}` },
  });
  assert.equal(stores.status, 200);
  assert.equal((await stores.json()).stores.length, 60);
  assertErrorBody(
    await readAnswer(await fetch(`${base}/api/v1/stores`)),
    401,
    "MISSING_CREDENTIAL",
  );
  assertErrorBody(await readAnswer(await fetch(`${base}/no/such/path`)), 404, "NOT_FOUND");
  const page = await fetch(`${base}/`);
  assert.equal(page.status, 200);
  assert.match(page.headers.get("content-type") ?? "", /^text\/html/);
  assert.ok(page.headers.get("content-security-policy")?.includes("default-src 'none'"));
  const script = /src="(\/console\/assets\/app\.[0-9a-f]+\.js)"/.exec(await page.text())?.[1];
  assert.ok(script, "the page names its script");
  const js = await fetch(base + script);
  assert.equal(js.status, 200);
  assert.ok((await js.arrayBuffer()).byteLength > 10_000);
  const contract = await fetch(`${base}/openapi.json`);
  assert.equal(contract.status, 200);
  assert.match((await contract.json()).openapi, /^3\./);
  const docs = await fetch(`${base}/api-docs`);
  assert.equal(docs.status, 200);
  assert.match(await docs.text(), /<html/i);
};

// Files under a folder with their sizes and modification times.
const listTree = async (root: string) => {
  const found: Array<string> = [];
  const walk = async (dir: string) => {
    for await (const entry of Deno.readDir(dir)) {
      const path = `${dir}/${entry.name}`;
      if (entry.isDirectory) await walk(path);
      else {
        const info = await Deno.stat(path);
        found.push(`${path.slice(root.length)} ${info.size} ${info.mtime?.getTime()}`);
      }
    }
  };
  await walk(root);
  return found.sort();
};

const setWritable = async (root: string, writable: boolean) => {
  const walk = async (dir: string) => {
    for await (const entry of Deno.readDir(dir)) {
      const path = `${dir}/${entry.name}`;
      if (entry.isDirectory) await walk(path);
      else await Deno.chmod(path, writable ? 0o644 : 0o444);
    }
    await Deno.chmod(dir, writable ? 0o755 : 0o555);
  };
  await walk(root);
};

const names = async (dir: string) => {
  const found: Array<string> = [];
  for await (const entry of Deno.readDir(dir)) found.push(entry.name);
  return found.sort();
};

Deno.test({
  ...embeddedRunOnly(
    "single binary's entry: starts from a read-only copy of the files the binary embeds, " +
      "writes only under DATA_DIR, loads the demo, serves the console and the contract",
  ),
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    await buildConsole();
    const dir = await Deno.makeTempDir({ prefix: "binary-tree-" });
    const tree = `${dir}/tree`;
    const run = `${dir}/run`;
    const dataDir = `${run}/.data`;
    await Deno.mkdir(run);
    // The binary's files: the modules its entry and the worker reach, the included bundle, and
    // the configuration that resolves their imports.
    const { files } = await reach([BINARY_ENTRY, "src/db/pglite_worker.ts"]);
    const copy = async (file: string) => {
      await Deno.mkdir(`${tree}/${file.slice(0, file.lastIndexOf("/") + 1)}`, { recursive: true });
      await Deno.copyFile(new URL(file, ROOT), `${tree}/${file}`);
    };
    for (const file of [...files, "deno.json", "deno.lock"]) await copy(file);
    const walkCopy = async (path: string) => {
      for await (const entry of Deno.readDir(new URL(path, ROOT))) {
        const child = `${path}/${entry.name}`;
        if (entry.isDirectory) await walkCopy(child);
        else await copy(child);
      }
    };
    // Another test that builds the same bundle at this moment moves the folder away for an
    // instant as it puts its own in place: the bundle is copied again then.
    for (let attempt = 1;; attempt++) {
      try {
        for (const include of BINARY_INCLUDES.filter((p) => p.startsWith("dist/"))) {
          await walkCopy(include);
        }
        break;
      } catch (error) {
        if (!(error instanceof Deno.errors.NotFound) || attempt === 3) throw error;
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    }
    await setWritable(tree, false);
    const before = await listTree(tree);
    // The binary's permissions, with writes narrowed to DATA_DIR (which binds root too).
    const permissions = BINARY_PERMISSIONS.map((p) =>
      p === "--allow-write" ? `--allow-write=${dataDir}` : p
    );
    const service = spawnService(Deno.execPath(), [
      "run",
      "--frozen",
      "--cached-only",
      "--node-modules-dir=none",
      ...permissions,
      ...BINARY_FLAGS,
      `${tree}/${BINARY_ENTRY}`,
    ], {
      cwd: run,
      env: { ...baseEnv(), PORT: "0", HOST: "127.0.0.1", LOG_FORMAT: "json" },
    });
    try {
      const port = Number((await service.waitFor(READY_LINE, 120_000))[1]);
      await smoke(`http://127.0.0.1:${port}`, dataDir);
      assert.equal(await service.stop("SIGTERM"), 0, service.lines.join("\n"));
      assert.deepEqual(await names(run), [".data"], "nothing is written beside DATA_DIR");
      assert.deepEqual(await listTree(tree), before, "the tree is unchanged");
      assert.ok(
        !service.lines.some((l) => l.includes('"level":"warn"') || l.includes('"level":"error"')),
        service.lines.join("\n"),
      );
    } finally {
      await service.kill();
      await setWritable(tree, true);
      await Deno.remove(dir, { recursive: true });
    }
  },
});

const runtime = await findRuntime();
if (!runtime.found) console.warn(`compile_test: the binary is not built: ${runtime.why}`);

const built = embeddedRunOnly(
  runtime.found
    ? `single binary: built (${runtime.how}), started from an empty folder, migrates, loads the ` +
      "demo, serves the console and the contract"
    : `single binary: built and started (skipped: ${runtime.why})`,
);

Deno.test({
  name: built.name,
  ignore: !runtime.found || built.ignore,
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    await buildConsole();
    const dir = await Deno.makeTempDir({ prefix: "binary-" });
    const binary = `${dir}/bin/energy-saving-service`;
    const run = `${dir}/run`;
    await Deno.mkdir(run, { recursive: true });
    try {
      const out = await new Deno.Command(Deno.execPath(), {
        args: compileArgs(binary, { check: false }),
        cwd: ROOT,
        stdout: "piped",
        stderr: "piped",
      }).output();
      assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
      console.log(`binary: ${((await Deno.stat(binary)).size / 1024 / 1024).toFixed(1)} MiB`);
      const service = spawnService(binary, [], {
        cwd: run,
        env: { ...baseEnv(), PORT: "0", HOST: "127.0.0.1", LOG_FORMAT: "json" },
      });
      try {
        const port = Number((await service.waitFor(READY_LINE, 120_000))[1]);
        await smoke(`http://127.0.0.1:${port}`, `${run}/.data`);
        assert.equal(await service.stop("SIGTERM"), 0, service.lines.join("\n"));
        assert.deepEqual(await names(run), [".data"], "nothing is written beside DATA_DIR");
      } finally {
        await service.kill();
      }
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});
