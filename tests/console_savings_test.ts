// The store page's savings in a real browser (Debian's chromium, driven by puppeteer-core): the
// consumption chart without the savings targets, the savings panel with the TES targets on its own
// axis and each verdict said once, the daily and summed views, and the monthly table beside the
// same month a year earlier, with numbers for people and the exact value on hover; in English and
// in Chinese, each leaving a screenshot in a temporary folder. Skipped without chromium
// (CHROMIUM_PATH, else /usr/bin/chromium).
import assert from "node:assert/strict";
import pg from "pg";
// @ts-types="./puppeteer_core.d.ts"
import puppeteer, { type Page } from "puppeteer-core";
import type * as metrics from "../src/domain/metrics.ts";
import type * as months from "../src/domain/months.ts";
import type * as stores from "../src/domain/stores.ts";
import { buildConsole } from "../src/console/build.ts";
import { testDatabaseUrl } from "./db.ts";
import { baseEnv, READY_LINE, spawnService } from "./service_process.ts";

const CHROMIUM = Deno.env.get("CHROMIUM_PATH") ?? "/usr/bin/chromium";
const hasChromium = (() => {
  try {
    return Deno.statSync(CHROMIUM).isFile;
  } catch {
    return false;
  }
})();

const adminQuery = async (text: string) => {
  const client = new pg.Client({ connectionString: testDatabaseUrl });
  await client.connect();
  try {
    await client.query(text);
  } finally {
    await client.end();
  }
};

// An API answer as the signed-in page gets it (its cookie).
const api = <T>(page: Page, path: string) =>
  page.evaluate(async (p: string) => {
    const response = await fetch(p, { credentials: "same-origin" });
    return { status: response.status, body: await response.json() };
  }, path) as Promise<{ status: number; body: T }>;

const texts = (page: Page, selector: string) =>
  page.$$eval(selector, (nodes) => nodes.map((n) => (n.textContent ?? "").trim()));

type El = { readonly textContent: string | null; getAttribute(name: string): string | null };

const cells = (page: Page, selector: string) =>
  page.$$eval(
    selector,
    (nodes) => nodes.map((n) => [(n as El).textContent!.trim(), (n as El).getAttribute("title")]),
  );

// The answers as they cross the wire (the console's own types would bring the DOM's into this file).
type MetricsResponse = typeof metrics.MetricsResponse.Encoded;
type MonthsResponse = typeof months.MonthsResponse.Encoded;
type StoresResponse = typeof stores.StoresResponse.Encoded;

const VERDICT_FIELDS = ["eba_pass", "tes_pass", "tes_180_pass", "tes_210_pass", "tev_pass"];
const LABELS = ["EBA", "TES", "TES-180", "TES-210", "TEV"];

Deno.test({
  name: "console: the savings panel and the monthly table, in English and Chinese",
  ignore: !hasChromium,
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async (t) => {
    await buildConsole();
    const dataDir = await Deno.makeTempDir({ prefix: "console-savings-" });
    const shots = await Deno.makeTempDir({ prefix: "console-savings-shots-" });
    let databaseUrl = "";
    let drop = async () => {};
    if (testDatabaseUrl) {
      const name = `savings_${crypto.randomUUID().replaceAll("-", "").slice(0, 16)}`;
      await adminQuery(`CREATE DATABASE ${name}`);
      const url = new URL(testDatabaseUrl);
      url.pathname = `/${name}`;
      databaseUrl = url.toString();
      drop = () => adminQuery(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    }
    const service = spawnService(Deno.execPath(), ["run", "-A", "src/main.ts"], {
      cwd: new URL("..", import.meta.url),
      env: {
        ...baseEnv(),
        PORT: "0",
        HOST: "127.0.0.1",
        DATA_DIR: dataDir,
        DATABASE_URL: databaseUrl,
        LOG_FORMAT: "json",
        LOG_LEVEL: "info",
        BUILD_CONSOLE: "false",
      },
    });
    const browser = await puppeteer.launch({
      executablePath: CHROMIUM,
      headless: true,
      args: ["--no-sandbox", "--disable-gpu", "--no-first-run", "--lang=en-US"],
    });
    try {
      const port = Number((await service.waitFor(READY_LINE, 120_000))[1]);
      const base = `http://127.0.0.1:${port}`;
      const keys = JSON.parse(await Deno.readTextFile(`${dataDir}/demo-keys.json`)) as Array<
        { member: string; key: string }
      >;
      const context = await browser.createBrowserContext();
      const page = await context.newPage();
      page.setDefaultTimeout(20_000);
      await page.setViewport({ width: 1280, height: 900 });
      const errors: string[] = [];
      page.on("pageerror", (error) => errors.push(String(error)));

      await page.goto(`${base}/`, { waitUntil: "networkidle0" });
      await page.waitForSelector("#access_key");
      await page.type("#access_key", keys.find((k) => k.member === "demo-manager")!.key);
      await page.click("form button[type=submit]");
      await page.waitForSelector("[data-testid=portfolio-row]", { timeout: 30_000 });

      // A store with counted savings in the dataset's last summer, read over a range that cuts
      // its first month and reaches the dataset's end.
      const dataset = (await api<{ end: string }>(page, "/api/v1/dataset")).body;
      const start = `${dataset.end.slice(0, 4)}-01-15`;
      const end = dataset.end;
      const stores = (await api<StoresResponse>(page, "/api/v1/stores")).body.stores;
      let chosen: { id: number; scope_id: number } | undefined;
      let months: MonthsResponse | undefined;
      for (const store of stores) {
        const answer = await api<MonthsResponse>(
          page,
          `/api/v1/stores/${store.id}/months?scope_id=${store.scope_id}&start=${start}&end=${end}`,
        );
        assert.equal(answer.status, 200);
        if (answer.body.total.summary.savings_days > 0) {
          chosen = store;
          months = answer.body;
          break;
        }
      }
      assert.ok(chosen !== undefined && months !== undefined, "a demo store has savings");
      const metrics = (await api<MetricsResponse>(
        page,
        `/api/v1/stores/${chosen.id}/metrics?scope_id=${chosen.scope_id}&start=${start}&end=${end}`,
      )).body;

      const openStore = async () => {
        await page.goto(`${base}/console/stores/${chosen!.id}?start=${start}&end=${end}`, {
          waitUntil: "networkidle0",
        });
        await page.waitForSelector("[data-testid=savings-chart] canvas");
        await page.waitForSelector("[data-testid=month-row]");
      };

      await t.step("English: consumption with EBA, savings with the TES targets", async () => {
        await openStore();
        // The consumption chart draws no savings target; the savings chart draws them all.
        const legend = async (chart: string) =>
          (await texts(page, `[data-testid=${chart}] .u-legend .u-label`)).join(" | ");
        const consumption = await legend("chart");
        assert.match(consumption, /EBA/);
        assert.doesNotMatch(consumption, /TES/);
        const savings = await legend("savings-chart");
        for (const label of ["TES", "TES-180", "TES-210", "Savings kWh"]) {
          assert.ok(savings.includes(label), `${label} in ${savings}`);
        }
        // Each verdict once, in words, as the summary has it.
        const verdicts = await texts(page, "[data-testid=verdict]");
        assert.deepEqual(
          verdicts,
          VERDICT_FIELDS.map((field, i) => {
            const value = (metrics.summary as Record<string, unknown>)[field];
            return `${LABELS[i]}: ${value === null ? "not evaluated" : value ? "met" : "not met"}`;
          }),
        );
        const body = (await texts(page, "main"))[0];
        assert.doesNotMatch(body, /(pass|fail)\s*TES/i, "no verdict is said twice");
        assert.doesNotMatch(body, /TES(-180|-210)? met/, "no verdict is said twice");

        // Per day, then summed: the chart says which it shows.
        const label = () =>
          page.$eval("[data-testid=savings-chart]", (e) => (e as El).getAttribute("aria-label"));
        assert.match((await label())!, /per day/);
        await page.click("[data-testid=savings-cumulative]");
        await page.waitForFunction(
          "document.querySelector('[data-testid=savings-chart]').getAttribute('aria-label')" +
            ".includes('summed')",
        );
        assert.ok(await page.$("[data-testid=savings-chart] canvas"));

        // The monthly table: one row per month and the total, rounded for people, exact on hover.
        const rows = await page.$$("[data-testid=month-row]");
        assert.equal(rows.length, months!.months.length);
        assert.ok(await page.$("[data-testid=months-total]"));
        const actual = await cells(page, "[data-testid=month-row] [data-testid=month-actual]");
        months!.months.forEach((m, i) => {
          if (m.summary.actual_kwh === null) return;
          assert.equal(actual[i][1], `${m.summary.actual_kwh} kWh`);
          assert.equal(
            actual[i][0],
            Number(m.summary.actual_kwh).toLocaleString("en", {
              minimumFractionDigits: 1,
              maximumFractionDigits: 1,
            }),
          );
        });
        const earlier = await cells(page, "[data-testid=month-row] [data-testid=month-earlier]");
        const first = months!.months[0].year_earlier!;
        assert.equal(
          earlier[0][1],
          `${first.summary.actual_kwh} kWh (${first.start} – ${first.end})`,
        );
        // The first month is cut by the range, and says so.
        const heads = await texts(page, "[data-testid=month-row] th");
        assert.match(heads[0], /^Jan \d{4} \(15–31\)$/);
        const saved = months!.months.find((m) => m.summary.aes_kwh !== null)!;
        const aes = await cells(
          page,
          `[data-testid=month-row]:nth-child(${
            months!.months.indexOf(saved) + 1
          }) [data-testid=month-aes]`,
        );
        assert.equal(aes[0][1], `${saved.summary.aes_kwh} kWh`);
        const header = await texts(page, "[data-testid=months] thead th");
        assert.deepEqual(header.slice(1, 4), [
          "Actual (kWh)",
          "Matched EBA (kWh)",
          "Savings AES (kWh)",
        ]);
        await page.$eval(
          "[data-testid=savings]",
          (e) => (e as unknown as { scrollIntoView(): void }).scrollIntoView(),
        );
        await page.screenshot({ path: `${shots}/savings-en.png`, fullPage: true });
        assert.deepEqual(errors, []);
      });

      await t.step("Chinese: the same panel and table in Chinese", async () => {
        await page.select("header .language select", "zh-CN");
        await page.waitForFunction("document.documentElement.lang === 'zh-CN'");
        await openStore();
        const verdicts = await texts(page, "[data-testid=verdict]");
        assert.deepEqual(
          verdicts,
          VERDICT_FIELDS.map((field, i) => {
            const value = (metrics.summary as Record<string, unknown>)[field];
            return `${LABELS[i]}：${value === null ? "未评估" : value ? "达标" : "未达标"}`;
          }),
        );
        assert.equal((await texts(page, "#savings-title"))[0], "相对基线的节能量");
        assert.equal((await texts(page, "#months-title"))[0], "按月");
        const heads = await texts(page, "[data-testid=month-row] th");
        assert.match(heads[0], /^\d{4}年1月 \(15–31\)$/);
        const header = await texts(page, "[data-testid=months] thead th");
        assert.equal(header[0], "月份");
        assert.equal(header[6], "上年同期实际（kWh）");
        const legend = (await texts(page, "[data-testid=savings] .legend li")).join(" ");
        assert.match(legend, /每日节能量/);
        await page.screenshot({ path: `${shots}/savings-zh.png`, fullPage: true });
        for (const name of ["savings-en.png", "savings-zh.png"]) {
          assert.ok((await Deno.stat(`${shots}/${name}`)).size > 10_000, name);
        }
        console.log(`screenshots in ${shots}`);
        await page.select("header .language select", "en");
        assert.deepEqual(errors, []);
      });
      await context.close();
    } finally {
      await browser.close();
      await service.stop();
      await drop();
      await Deno.remove(dataDir, { recursive: true }).catch(() => {});
    }
  },
});
