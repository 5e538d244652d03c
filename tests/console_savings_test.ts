// The store page's savings in a real browser (Debian's chromium, driven by puppeteer-core): the
// consumption chart without the savings targets, the savings panel with the TES targets on its own
// axis and each verdict said once, the daily and summed views, and the monthly table beside the
// same month a year earlier, with numbers for people and the exact value on hover; in English and
// in Chinese, each leaving a screenshot in .data/screenshots/. Skipped without chromium
// (CHROMIUM_PATH, else /usr/bin/chromium).
import assert from "node:assert/strict";
import type * as metricSchemas from "../src/domain/metrics.ts";
import type * as monthSchemas from "../src/domain/months.ts";
import type * as storeSchemas from "../src/domain/stores.ts";
import {
  api,
  type El,
  journey,
  openPage,
  type Page,
  type Running,
  runsJourneys,
  shoot,
  shotPath,
  signIn,
  start as startService,
  texts,
} from "./console_harness.ts";

const cells = (page: Page, selector: string) =>
  page.$$eval(
    selector,
    (nodes) => nodes.map((n) => [(n as El).textContent!.trim(), (n as El).getAttribute("title")]),
  );

// The answers as they cross the wire (the console's own types would bring the DOM's into this file).
type MetricsResponse = typeof metricSchemas.MetricsResponse.Encoded;
type MonthsResponse = typeof monthSchemas.MonthsResponse.Encoded;
type StoresResponse = typeof storeSchemas.StoresResponse.Encoded;

const VERDICT_FIELDS = [
  "eba_pass",
  "tes_pass",
  "tes_180_pass",
  "tes_210_pass",
  "tev_pass",
] as const;
const LABELS = ["EBA", "TES", "TES-180", "TES-210", "TEV"];

// A signed-in page on a store with counted savings in the dataset's last summer, over a range
// that cuts its first month and reaches the dataset's end; its metrics and months answers.
const openStore = async (run: Running, page: Page) => {
  const dataset = (await api<{ end: string }>(page, "/api/v1/dataset")).body;
  const start = `${dataset.end.slice(0, 4)}-01-15`;
  const end = dataset.end;
  const stores = (await api<StoresResponse>(page, "/api/v1/stores")).body.stores;
  for (const store of stores) {
    const range = `scope_id=${store.scope_id}&start=${start}&end=${end}`;
    const months = await api<MonthsResponse>(page, `/api/v1/stores/${store.id}/months?${range}`);
    assert.equal(months.status, 200);
    if (months.body.total.summary.savings_days === 0) continue;
    const metrics = await api<MetricsResponse>(page, `/api/v1/stores/${store.id}/metrics?${range}`);
    await page.goto(`${run.base}/console/stores/${store.id}?start=${start}&end=${end}`, {
      waitUntil: "networkidle0",
    });
    await page.waitForSelector("[data-testid=savings-chart] canvas");
    await page.waitForSelector("[data-testid=month-row]");
    return { metrics: metrics.body, months: months.body };
  }
  throw new Error("no demo store has savings");
};

const expectedVerdicts = (metrics: MetricsResponse, words: (value: boolean | null) => string) =>
  VERDICT_FIELDS.map((field, i) => `${LABELS[i]}${words(metrics.summary[field])}`);

Deno.test({
  name: "console: the savings panel and the monthly table, in English and Chinese",
  ignore: !runsJourneys("savings"),
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async (t) => {
    const run = await startService();
    try {
      await journey(t, "English: consumption with EBA, savings with the TES targets", async () => {
        const { page, errors } = await openPage(run);
        await signIn(run, page, "demo-manager");
        const { metrics, months } = await openStore(run, page);
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
          expectedVerdicts(
            metrics,
            (v) => `: ${v === null ? "not evaluated" : v ? "met" : "not met"}`,
          ),
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
        assert.equal(rows.length, months.months.length);
        assert.ok(await page.$("[data-testid=months-total]"));
        const actual = await cells(page, "[data-testid=month-row] [data-testid=month-actual]");
        months.months.forEach((m, i) => {
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
        const first = months.months[0].year_earlier!;
        assert.equal(
          earlier[0][1],
          `${first.summary.actual_kwh} kWh (${first.start} – ${first.end})`,
        );
        // The first month is cut by the range, and says so.
        const heads = await texts(page, "[data-testid=month-row] th");
        assert.match(heads[0], /^Jan \d{4} \(15–31\)$/);
        const saved = months.months.find((m) => m.summary.aes_kwh !== null)!;
        const aes = await cells(
          page,
          `[data-testid=month-row]:nth-child(${
            months.months.indexOf(saved) + 1
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
        await shoot(page, "savings-en");
        assert.deepEqual(errors, []);
      });

      await journey(t, "Chinese: the same panel and table in Chinese", async () => {
        const { page, errors } = await openPage(run);
        await signIn(run, page, "demo-manager");
        await page.select("header .language select", "zh-CN");
        await page.waitForFunction("document.documentElement.lang === 'zh-CN'");
        const { metrics } = await openStore(run, page);
        const verdicts = await texts(page, "[data-testid=verdict]");
        assert.deepEqual(
          verdicts,
          expectedVerdicts(metrics, (v) => `：${v === null ? "未评估" : v ? "达标" : "未达标"}`),
        );
        assert.equal((await texts(page, "#savings-title"))[0], "相对基线的节能量");
        assert.equal((await texts(page, "#months-title"))[0], "按月");
        const heads = await texts(page, "[data-testid=month-row] th");
        assert.match(heads[0], /^\d{4}年1月（15–31）$/);
        const header = await texts(page, "[data-testid=months] thead th");
        assert.equal(header[0], "月份");
        assert.equal(header[6], "上年同期实际（kWh）");
        const legend = (await texts(page, "[data-testid=savings] .legend li")).join(" ");
        assert.match(legend, /每日节能量/);
        await shoot(page, "savings-zh");
        for (const name of ["savings-en", "savings-zh"]) {
          assert.ok((await Deno.stat(shotPath(name))).size > 10_000, name);
        }
        await page.select("header .language select", "en");
        assert.deepEqual(errors, []);
      });
    } finally {
      await run.stop();
    }
  },
});
