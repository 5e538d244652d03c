// CLI: deno task compile [--output FILE] [--no-check] — the service as one executable (default
// dist/energy-saving-service). It embeds the modules reachable from src/binary.ts (the migrations
// and SQL routines among them, as modules), the embedded database's worker, the console's bundle
// (built first when missing or stale) and the npm packages those modules reach, and no other:
// `--node-modules-dir=none --exclude-unused-npm`, because with the project's node_modules folder
// `deno compile` would embed the whole folder, test tools (puppeteer-core, the OpenAPI validators)
// included. The executable writes only under DATA_DIR.
//
// `deno compile` copies a runtime (denort) into the executable: DENORT_BIN names one, else it is
// looked for in Deno's download cache, else downloaded. Where none can be had this says so and
// exits 1 without compiling.
import { buildConsole } from "../src/console/build.ts";
import { serviceV8Flags } from "./service_env.ts";

export const ROOT = new URL("../", import.meta.url);

export const BINARY_ENTRY = "src/binary.ts";

// Loaded at run time but not imported: the embedded database's worker (a Worker's module), and the
// console's bundle (read from the executable's embedded files on the first request for it).
export const BINARY_INCLUDES = ["src/db/pglite_worker.ts", "dist/console"] as const;

// What the executable may do: read its embedded files, listen and reach PostgreSQL, read its
// settings, write the embedded database under DATA_DIR. No child process, no FFI.
export const BINARY_PERMISSIONS = [
  "--allow-read",
  "--allow-write",
  "--allow-net",
  "--allow-env",
  "--allow-sys",
] as const;

// As `deno task start` runs the service: its V8 flags (service.env) are built into the binary.
const V8_FLAGS = serviceV8Flags(ROOT);
export const BINARY_FLAGS: ReadonlyArray<string> = [
  "--unstable-no-legacy-abort",
  ...(V8_FLAGS === "" ? [] : [`--v8-flags=${V8_FLAGS}`]),
];

// Only the npm packages the module graph reaches, from Deno's cache, not the node_modules folder.
export const NPM_SELECTION = ["--node-modules-dir=none", "--exclude-unused-npm"] as const;

export const DEFAULT_OUTPUT = "dist/energy-saving-service";

export const compileArgs = (output: string, options: { readonly check?: boolean } = {}) => [
  "compile",
  "--frozen",
  ...(options.check === false ? ["--no-check"] : []),
  ...NPM_SELECTION,
  ...BINARY_PERMISSIONS,
  ...BINARY_FLAGS,
  ...BINARY_INCLUDES.flatMap((path) => ["--include", path]),
  "--output",
  output,
  BINARY_ENTRY,
];

export type Runtime =
  | { readonly found: true; readonly how: string }
  | { readonly found: false; readonly why: string };

const RUNTIME_NAME = `denort-${Deno.build.target}.zip`;
const RELEASE = `release/v${Deno.version.deno}`;
const DOWNLOAD_URL = `https://dl.deno.land/${RELEASE}/${RUNTIME_NAME}`;

const exists = async (path: string) => {
  try {
    return (await Deno.stat(path)).isFile;
  } catch {
    return false;
  }
};

const denoDir = async () => {
  const info = await new Deno.Command(Deno.execPath(), {
    args: ["info", "--json"],
    stdout: "piped",
    stderr: "null",
  }).output();
  return (JSON.parse(new TextDecoder().decode(info.stdout)) as { denoDir: string }).denoDir;
};

// Where `deno compile` would take its runtime from: DENORT_BIN, Deno's download cache, or the
// download (asked with a bounded wait).
export const findRuntime = async (probeMs = 5_000): Promise<Runtime> => {
  const named = Deno.env.get("DENORT_BIN");
  if (named !== undefined && named !== "") {
    return await exists(named)
      ? { found: true, how: `DENORT_BIN=${named}` }
      : { found: false, why: `DENORT_BIN names no file (${named})` };
  }
  const cached = `${await denoDir()}/dl/${RELEASE}/${RUNTIME_NAME}`;
  if (await exists(cached)) return { found: true, how: `cached: ${cached}` };
  try {
    const response = await fetch(DOWNLOAD_URL, {
      method: "HEAD",
      signal: AbortSignal.timeout(probeMs),
    });
    await response.body?.cancel();
    if (response.ok) return { found: true, how: `downloadable: ${DOWNLOAD_URL}` };
    return {
      found: false,
      why: `no denort runtime: DENORT_BIN is unset, ${cached} is missing and ${DOWNLOAD_URL} ` +
        `answers ${response.status}`,
    };
  } catch (error) {
    return {
      found: false,
      why: `no denort runtime: DENORT_BIN is unset, ${cached} is missing and ${DOWNLOAD_URL} ` +
        `cannot be reached (${error instanceof Error ? error.message : String(error)})`,
    };
  }
};

if (import.meta.main) {
  const args = [...Deno.args];
  const at = args.indexOf("--output");
  const output = at >= 0 ? args[at + 1] : DEFAULT_OUTPUT;
  if (output === undefined || output === "") {
    console.error("usage: deno task compile [--output FILE] [--no-check]");
    Deno.exit(2);
  }
  const runtime = await findRuntime();
  if (!runtime.found) {
    console.error(
      `compile: ${runtime.why}.\n` +
        `deno compile copies the denort runtime of Deno ${Deno.version.deno} ` +
        `(${RUNTIME_NAME}, from the Deno release downloads) into the executable: ` +
        "set DENORT_BIN to its unzipped binary, or put the zip in Deno's download cache.",
    );
    Deno.exit(1);
  }
  const console_ = await buildConsole();
  console.log(
    console_.built
      ? `console built: ${console_.stamp.script}`
      : `console is up to date: ${console_.stamp.script}`,
  );
  console.log(`runtime: ${runtime.how}`);
  const compiled = await new Deno.Command(Deno.execPath(), {
    args: compileArgs(output, { check: !args.includes("--no-check") }),
    cwd: ROOT,
    stdout: "inherit",
    stderr: "inherit",
  }).output();
  if (compiled.code !== 0) {
    console.error(`compile: deno compile failed (exit ${compiled.code})`);
    Deno.exit(1);
  }
  const path = new URL(output, ROOT);
  const size = (await Deno.stat(path)).size;
  console.log(`${path.pathname}: ${(size / 1024 / 1024).toFixed(1)} MiB`);
}
