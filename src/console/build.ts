// Builds the browser console (console/) into dist/console: one script and one stylesheet named by
// their hash, and the page that loads them. `deno task console:build` runs it; the service runs it
// on start when the bundle is missing or was made from other sources. The bundle is never
// committed: it is made from the sources and the locked npm packages (preact, htm, uplot).
import { createHash } from "node:crypto";
import { createRequire } from "node:module";

const ROOT = new URL("../../", import.meta.url);
export const CONSOLE_SOURCE = new URL("console/", ROOT);
export const CONSOLE_DIST = new URL("dist/console/", ROOT);
const STAMP = "stamp.json";

export interface ConsoleStamp {
  readonly source: string;
  readonly script: string;
  readonly stylesheet: string;
  readonly built_at: string;
}

// The files the bundle is made from: the console's sources (found by walking console/ at build
// time only), the page and the lock file that pins its packages.
const sourceFiles = async (): Promise<Array<URL>> => {
  const found: Array<URL> = [];
  const walk = async (dir: URL) => {
    for await (const entry of Deno.readDir(dir)) {
      const url = new URL(entry.name + (entry.isDirectory ? "/" : ""), dir);
      if (entry.isDirectory) await walk(url);
      else found.push(url);
    }
  };
  await walk(CONSOLE_SOURCE);
  found.push(new URL("deno.lock", ROOT), new URL("deno.json", ROOT));
  return found.sort((a, b) => (a.href < b.href ? -1 : a.href > b.href ? 1 : 0));
};

export const consoleSourceHash = async () => {
  const hash = createHash("sha256");
  for (const file of await sourceFiles()) {
    hash.update(file.href.slice(ROOT.href.length)).update("\0");
    hash.update(await Deno.readFile(file)).update("\0");
  }
  return hash.digest("hex");
};

export const readStamp = async (): Promise<ConsoleStamp | undefined> => {
  try {
    return JSON.parse(await Deno.readTextFile(new URL(STAMP, CONSOLE_DIST)));
  } catch {
    return undefined;
  }
};

const short = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex").slice(0, 12);

// uPlot's own stylesheet, from the locked package.
const uplotCss = () => {
  const require = createRequire(import.meta.url);
  return Deno.readTextFile(require.resolve("uplot/dist/uPlot.min.css"));
};

export interface BuildResult {
  readonly built: boolean;
  readonly stamp: ConsoleStamp;
  readonly ms: number;
}

// Builds unless the bundle in dist/ was made from the same sources (or `force`).
export const buildConsole = async (options: { force?: boolean } = {}): Promise<BuildResult> => {
  const started = performance.now();
  const source = await consoleSourceHash();
  const existing = await readStamp();
  if (!options.force && existing?.source === source) {
    return { built: false, stamp: existing, ms: performance.now() - started };
  }
  // Beside dist/console (one file system): the finished folder is moved into place.
  await Deno.mkdir(new URL("../", CONSOLE_DIST), { recursive: true });
  const work = await Deno.makeTempDir({
    dir: new URL("../", CONSOLE_DIST).pathname,
    prefix: ".console-build-",
  });
  try {
    const bundled = await new Deno.Command(Deno.execPath(), {
      args: [
        "bundle",
        "--platform",
        "browser",
        "--minify",
        "--quiet",
        new URL("main.ts", CONSOLE_SOURCE).pathname,
        "-o",
        `${work}/app.js`,
      ],
      cwd: ROOT,
      stdout: "piped",
      stderr: "piped",
    }).output();
    if (bundled.code !== 0) {
      throw new Error(`deno bundle failed:\n${new TextDecoder().decode(bundled.stderr)}`);
    }
    const script = await Deno.readFile(`${work}/app.js`);
    const stylesheet = new TextEncoder().encode(
      `${await uplotCss()}\n${await Deno.readTextFile(new URL("style.css", CONSOLE_SOURCE))}`,
    );
    const scriptName = `app.${short(script)}.js`;
    const stylesheetName = `app.${short(stylesheet)}.css`;
    const page = (await Deno.readTextFile(new URL("index.html", CONSOLE_SOURCE)))
      .replace("{{script}}", `/console/assets/${scriptName}`)
      .replace("{{stylesheet}}", `/console/assets/${stylesheetName}`);
    const stamp: ConsoleStamp = {
      source,
      script: scriptName,
      stylesheet: stylesheetName,
      built_at: new Date().toISOString(),
    };
    // Written to a new folder, then put in place: a reader sees the old bundle or the new one.
    const next = `${work}/dist`;
    await Deno.mkdir(`${next}/assets`, { recursive: true });
    await Deno.writeFile(`${next}/assets/${scriptName}`, script);
    await Deno.writeFile(`${next}/assets/${stylesheetName}`, stylesheet);
    await Deno.writeTextFile(`${next}/index.html`, page);
    await Deno.writeTextFile(`${next}/${STAMP}`, JSON.stringify(stamp, null, 2) + "\n");
    const old = `${work}/old`;
    await Deno.rename(CONSOLE_DIST, old).catch(() => {});
    try {
      await Deno.rename(next, CONSOLE_DIST);
    } catch (error) {
      // Another process built the same sources at the same time and put its bundle in place.
      const placed = await readStamp();
      if (placed?.source !== source) throw error;
      return { built: false, stamp: placed, ms: performance.now() - started };
    }
    return { built: true, stamp, ms: performance.now() - started };
  } finally {
    await Deno.remove(work, { recursive: true }).catch(() => {});
  }
};
