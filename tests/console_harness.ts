// What the console's browser journeys share: the service started as a person starts it (a process
// over a fresh database with the demo), Debian's chromium driven by puppeteer-core, a page per
// journey in its own profile, sign-in, and a screenshot in .data/screenshots/ (one on failure too).
// Without chromium on the machine (CHROMIUM_PATH, else /usr/bin/chromium) the journeys are skipped.
import pg from "pg";
// @ts-types="./puppeteer_core.d.ts"
import puppeteer, { type Browser, type Page } from "puppeteer-core";

export type { Page };
import { buildConsole } from "../src/console/build.ts";
import { testDatabaseUrl } from "./db.ts";

export const CHROMIUM = Deno.env.get("CHROMIUM_PATH") ?? "/usr/bin/chromium";
const hasChromium = (() => {
  try {
    return Deno.statSync(CHROMIUM).isFile;
  } catch {
    return false;
  }
})();
// BROWSER_JOURNEYS picks the journey files to walk: unset, all of them; "0", none; else their names,
// separated by commas (console, a11y, managers, numbers, review, savings, zh). CI walks them once, on one of
// the two databases: they drive the console through the HTTP API, which both runs test.
const picked = (Deno.env.get("BROWSER_JOURNEYS") ?? "").split(",").map((n) => n.trim());
export const runsJourneys = (name: string) =>
  hasChromium && (Deno.env.get("BROWSER_JOURNEYS") === undefined || picked.includes(name));
const SHOTS = new URL("../.data/screenshots/", import.meta.url);

export interface DemoKey {
  readonly member: string;
  readonly key: string;
  readonly stores: ReadonlyArray<number> | null;
}

export interface Running {
  readonly base: string;
  readonly keys: ReadonlyArray<DemoKey>;
  readonly browser: Browser;
  readonly stop: () => Promise<void>;
}

const adminQuery = async (text: string) => {
  const client = new pg.Client({ connectionString: testDatabaseUrl });
  await client.connect();
  try {
    await client.query(text);
  } finally {
    await client.end();
  }
};

// The service as a person starts it (demo on first start), on a free loopback port.
export const start = async (): Promise<Running> => {
  await buildConsole();
  const dataDir = await Deno.makeTempDir({ prefix: "console-test-" });
  let databaseUrl = "";
  let drop = async () => {};
  if (testDatabaseUrl) {
    const name = `console_${crypto.randomUUID().replaceAll("-", "").slice(0, 16)}`;
    await adminQuery(`CREATE DATABASE ${name}`);
    const url = new URL(testDatabaseUrl);
    url.pathname = `/${name}`;
    databaseUrl = url.toString();
    drop = () => adminQuery(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  }
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "src/main.ts"],
    cwd: new URL("..", import.meta.url),
    env: {
      PORT: "0",
      HOST: "127.0.0.1",
      DATA_DIR: dataDir,
      DATABASE_URL: databaseUrl,
      LOG_FORMAT: "json",
      LOG_LEVEL: "info",
      BUILD_CONSOLE: "false",
    },
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let seen = "";
  let port = 0;
  while (port === 0) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`the service stopped before it was ready:\n${seen}`);
    seen += value;
    port = Number(/ready on http:\/\/[^:]+:(\d+)/.exec(seen)?.[1] ?? 0);
  }
  const draining = (async () => {
    while (!(await reader.read()).done) { /* the access log */ }
  })();
  child.stderr.cancel();
  const keys = JSON.parse(await Deno.readTextFile(`${dataDir}/demo-keys.json`)) as DemoKey[];
  const browser = await puppeteer.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      "--lang=en-US",
    ],
  });
  return {
    base: `http://127.0.0.1:${port}`,
    keys,
    browser,
    stop: async () => {
      await browser.close();
      child.kill("SIGTERM");
      await child.status;
      await draining.catch(() => {});
      await drop();
      await Deno.remove(dataDir, { recursive: true }).catch(() => {});
    },
  };
};

export const keyOf = (run: Running, member: string) => run.keys.find((k) => k.member === member)!;

// Where a screenshot of `name` is written (each run writes over the last one's).
export const shotPath = (name: string) => new URL(`${name}.png`, SHOTS).pathname;

export const shoot = async (page: Page, name: string, fullPage = true) => {
  await Deno.mkdir(SHOTS, { recursive: true });
  await page.screenshot({ path: shotPath(name), fullPage });
};

// A page's downloads go to a new folder; `file` waits (10 s at most) for the first one whose name
// matches, as a person waits for the browser to save it.
export const downloadsOf = async (page: Page) => {
  const dir = await Deno.makeTempDir({ prefix: "console-downloads-" });
  const cdp = await page.createCDPSession();
  await cdp.send("Browser.setDownloadBehavior", {
    behavior: "allow",
    downloadPath: dir,
    browserContextId: page.browserContext().id,
  });
  const file = async (matches: (name: string) => boolean) => {
    for (let i = 0; i < 100; i++) {
      for (const entry of Deno.readDirSync(dir)) {
        if (matches(entry.name)) return `${dir}/${entry.name}`;
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`no such download in ${dir}`);
  };
  return { dir, file };
};

// The page of the journey under way: shot when the journey fails, closed when it ends.
let current: Page | undefined;

// Each journey in its own browser profile, as another person on another machine.
export const openPage = async (run: Running, width = 1280) => {
  const context = await run.browser.createBrowserContext();
  const page = await context.newPage();
  page.setDefaultTimeout(15_000);
  const close = page.close.bind(page);
  let closed = false;
  page.close = async () => {
    if (closed) return;
    closed = true;
    await close();
    await context.close();
  };
  current = page;
  await page.setViewport({ width, height: 900 });
  const errors: string[] = [];
  page.on("pageerror", (error) => errors.push(String(error)));
  return { page, errors };
};

export const signIn = async (run: Running, page: Page, member: string) => {
  await page.goto(`${run.base}/`, { waitUntil: "networkidle0" });
  await page.waitForSelector("#access_key");
  await page.type("#access_key", keyOf(run, member).key);
  await page.click("form button[type=submit]");
  // The portfolio is the page a person lands on.
  await page.waitForSelector("[data-testid=portfolio-row]", { timeout: 20_000 });
};

// The page's element, then a moment without requests for what it fetches after rendering. The wait
// for quiet is bounded: after the language is switched the browser counts a request as in flight
// that never ends, and the page's default timeout (15 s) would pass on every page.
export const settle = async (page: Page, selector: string, idleTime = 200) => {
  await page.waitForSelector(selector, { timeout: 20_000 });
  await page.waitForNetworkIdle({ idleTime, timeout: 2_000 }).catch(() => {});
};

// The store list, from the navigation.
export const openStores = async (page: Page) => {
  await page.click("nav a[href='/console/stores']");
  await page.waitForSelector("[data-testid=store-row]");
};

// An API answer as the signed-in page gets it (its cookie).
export const api = <T>(page: Page, path: string) =>
  page.evaluate(async (p: string) => {
    const response = await fetch(p, { credentials: "same-origin" });
    return { status: response.status, body: await response.json() };
  }, path) as Promise<{ status: number; body: T }>;

// What a test reads of an element it picked by selector.
export type El = { readonly textContent: string | null; getAttribute(name: string): string | null };

export const texts = (page: Page, selector: string) =>
  page.$$eval(selector, (nodes) => nodes.map((n) => (n.textContent ?? "").trim()));

export const journey = (t: Deno.TestContext, name: string, fn: () => Promise<void>) =>
  t.step(name, async () => {
    try {
      await fn();
    } catch (error) {
      if (current !== undefined) {
        await shoot(current, `failed-${name.replace(/[^a-z0-9]+/gi, "-").slice(0, 40)}`)
          .catch(() => {});
      }
      throw error;
    } finally {
      await current?.close().catch(() => {});
      current = undefined;
    }
  });
