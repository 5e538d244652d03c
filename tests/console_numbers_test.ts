// Numbers, times and names for people in a real browser (Debian's chromium, driven by
// puppeteer-core): a store's figures grouped and rounded by the language with the service's exact
// decimal on hover and kept for copy, units in the headings, codes in words; the changes page's
// instants in the dataset's time zone with the zone named, equal to the service's instants
// converted; store names and batch numbers where ids were; translated page titles and chart axes.
// In English and in Chinese. Skipped without chromium (CHROMIUM_PATH, else /usr/bin/chromium).
import assert from "node:assert/strict";
import type * as changeSchemas from "../src/domain/changes.ts";
import type * as energySchemas from "../src/domain/energy.ts";
import type * as metricSchemas from "../src/domain/metrics.ts";
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
  signIn,
  start,
  texts,
} from "./console_harness.ts";

// The answers as they cross the wire.
type Dataset = typeof storeSchemas.Dataset.Encoded;
type StoresResponse = typeof storeSchemas.StoresResponse.Encoded;
type StoreReference = typeof storeSchemas.StoreReference.Encoded;
type MetricsResponse = typeof metricSchemas.MetricsResponse.Encoded;
type EnergyResponse = typeof energySchemas.EnergyResponse.Encoded;
type EnergyVersions = typeof energySchemas.EnergyVersions.Encoded;
type ChangesPage = typeof changeSchemas.ChangesPage.Encoded;

type Lang = "en" | "zh-CN";

// A cell's text, its hover text and the value kept for copy.
const shown = (page: Page, selector: string) =>
  page.$eval(selector, (n) => ({
    text: (n as El).textContent!.trim(),
    title: (n as El).getAttribute("title"),
    exact: (n as El).getAttribute("data-exact"),
  }));

// The service's decimal as the test expects a person to read it (independently of the console's
// helpers: through a float, which is exact enough at these sizes).
const rounded = (value: string, digits: number, lang: Lang) =>
  Number(value).toLocaleString(lang, {
    minimumFractionDigits: digits,
    maximumFractionDigits: digits,
  });

// An instant on the wall clock of a zone, "2026-11-18 14:03", as Sweden's locale writes it.
const wallClock = (iso: string, zone: string) =>
  new Intl.DateTimeFormat("sv-SE", {
    timeZone: zone,
    year: "numeric",
    month: "2-digit",
    day: "2-digit",
    hour: "2-digit",
    minute: "2-digit",
  }).format(new Date(iso));

const setLanguage = async (page: Page, lang: Lang) => {
  await page.select("header .language select", lang);
  await page.waitForFunction(`document.documentElement.lang === '${lang}'`);
};

const WORDS = {
  en: {
    app: "Energy-saving console",
    committed: "Committed",
    dayTitle: (store: string, date: string) => `${date} at ${store}`,
    date: "Date",
  },
  "zh-CN": {
    app: "节能数据控制台",
    committed: "提交时间",
    dayTitle: (store: string, date: string) => `${store} · ${date}`,
    date: "日期",
  },
} as const;

const storePageChecks = async (run: Running, page: Page, lang: Lang) => {
  const dataset = (await api<Dataset>(page, "/api/v1/dataset")).body;
  const store = (await api<StoresResponse>(page, "/api/v1/stores")).body.stores[0];
  const start = `${Number(dataset.end.slice(0, 4)) - 1}${dataset.end.slice(4)}`;
  const range = `scope_id=${store.scope_id}&start=${start}&end=${dataset.end}`;
  const metrics = (await api<MetricsResponse>(page, `/api/v1/stores/${store.id}/metrics?${range}`))
    .body;
  const energy = (await api<EnergyResponse>(page, `/api/v1/stores/${store.id}/energy?${range}`))
    .body;
  await page.goto(`${run.base}/console/stores/${store.id}?start=${start}&end=${dataset.end}`, {
    waitUntil: "networkidle0",
  });
  await page.waitForSelector("[data-testid=metric-cards]");
  await page.waitForSelector("[data-testid=chart] canvas");

  // A year's actual energy is thousands of kWh: grouped, one decimal, exact on hover and for copy.
  const actual = metrics.summary.actual_kwh!;
  assert.ok(Number(actual) >= 1000, actual);
  const card = await shown(
    page,
    "[data-testid=metric-cards] [data-field=actual_kwh] [data-testid=card-value]",
  );
  assert.match(card.text, /^\d{1,3}(,\d{3})+\.\d$/);
  assert.equal(card.text, rounded(actual, 1, lang));
  assert.equal(card.title, `${actual} kWh`);
  assert.equal(card.exact, actual);
  const total = await shown(page, "[data-testid=total-kwh]");
  assert.equal(total.exact, energy.summary.available_energy_kwh);
  assert.match(total.text, /,\d{3}\.\d$/);

  // Each day: the service's four decimals, grouped; the exact value on hover too.
  const day = energy.days.find((d) => d.energy_kwh !== null)!;
  const cell = await shown(
    page,
    `[data-testid=day-row][data-date="${day.business_date}"] [data-testid=kwh]`,
  );
  assert.equal(cell.text, rounded(day.energy_kwh!, 4, lang));
  assert.equal(cell.title, `${day.energy_kwh} kWh`);

  // Units in the headings, no empty heading, codes in words with the code on hover.
  const heads = await texts(page, "main th[scope=col]");
  assert.ok(heads.every((h) => h !== ""), `an empty heading among ${heads.join(" | ")}`);
  assert.ok(heads.some((h) => /AER.*%/.test(h)), "the rate's heading names %");
  assert.ok(heads.some((h) => /kWh/.test(h)), "the energy's heading names kWh");
  const reference = (await api<StoreReference>(page, `/api/v1/stores/${store.id}/reference`))
    .body;
  const stage = reference.stage_history[0].stage;
  const codes = await page.$$eval(
    "main .code",
    (nodes) => nodes.map((n) => [(n as El).getAttribute("title"), (n as El).textContent!.trim()]),
  );
  const stageShown = codes.find(([code]) => code === stage);
  assert.ok(stageShown !== undefined, `the stage ${stage} is shown`);
  assert.notEqual(stageShown[1], stage, "the stage in words");
  const body = (await texts(page, "main"))[0];
  for (const raw of ["availability[]", "eba_pass", "tes_kwh", "OPERATING", "UNREVIEWED"]) {
    assert.ok(!body.includes(raw), `${raw} is not shown as it is`);
  }
  // The device events name their device.
  for (const e of reference.device_events.events) {
    const device = reference.devices.find((d) => d.id === e.device_id)!;
    assert.ok(body.includes(device.device_name ?? device.device_code), "the device by name");
  }
  // The chart's axes and legend in the page's language.
  const legend = await texts(page, "[data-testid=chart] .u-legend .u-label");
  assert.equal(legend[0], WORDS[lang].date);
  assert.equal(
    await page.evaluate("document.title"),
    `${store.name} · ${WORDS[lang].app}`,
  );
  return { store, energy };
};

const changesChecks = async (run: Running, page: Page, lang: Lang) => {
  const dataset = (await api<Dataset>(page, "/api/v1/dataset")).body;
  const zone = dataset.timezone;
  const names = new Map(
    (await api<StoresResponse>(page, "/api/v1/stores")).body.stores.map((s) => [s.id, s.name]),
  );
  await page.goto(`${run.base}/console/changes`, { waitUntil: "networkidle0" });
  await page.waitForSelector("[data-testid=change-row]");
  // The page's first rows are the last commit's, as the feed gives them from its head.
  const head = (await api<ChangesPage>(page, "/api/v1/changes?limit=1")).body;
  const feed = (await api<ChangesPage>(
    page,
    `/api/v1/changes?limit=200&after=${encodeURIComponent(head.head_cursor)}`,
  )).body.changes;
  const rows = await page.$$eval("[data-testid=change-row]", (trs) =>
    trs.map((tr) => ({
      at: tr.querySelector("[data-testid=change-at]")!.textContent!.trim(),
      datetime: tr.querySelector("[data-testid=change-at]")!.getAttribute("datetime"),
      store: tr.querySelector("[data-testid=change-store]")!.textContent!.trim(),
      after: tr.querySelector("[data-testid=change-after] [data-exact]")?.getAttribute(
        "data-exact",
      ) ?? null,
    })));
  assert.ok(rows.length > 0 && rows.length >= Math.min(feed.length, 200));
  feed.slice(0, 20).forEach((c, i) => {
    assert.equal(rows[i].datetime, c.committed_at);
    assert.equal(rows[i].at, wallClock(c.committed_at, zone), `${c.committed_at} in ${zone}`);
    assert.equal(rows[i].store, names.get(c.store_id), "the store by its name");
    if (c.status === "AVAILABLE") assert.equal(rows[i].after, c.energy_kwh);
  });
  // Never the UTC text cut short.
  const utc = feed[0].committed_at.slice(0, 16).replace("T", " ");
  if (utc !== wallClock(feed[0].committed_at, zone)) assert.notEqual(rows[0].at, utc);
  const heads = await texts(page, "main thead th");
  assert.ok(
    heads.some((h) => h.startsWith(WORDS[lang].committed) && h.includes(zone)),
    `the zone is named: ${heads.join(" | ")}`,
  );
  assert.ok(heads.some((h) => h.includes("kWh")), "the values' unit is named");
};

const dayChecks = async (
  run: Running,
  page: Page,
  lang: Lang,
  store: { id: number; name: string },
  date: string,
) => {
  const zone = (await api<Dataset>(page, "/api/v1/dataset")).body.timezone;
  const versions = (await api<EnergyVersions>(
    page,
    `/api/v1/stores/${store.id}/energy/${date}/versions`,
  )).body;
  await page.goto(`${run.base}/console/stores/${store.id}/days/${date}`, {
    waitUntil: "networkidle0",
  });
  await page.waitForSelector("[data-testid=version-row]");
  assert.equal(
    (await texts(page, "[data-testid=day-title]"))[0],
    WORDS[lang].dayTitle(store.name, date),
  );
  assert.equal((await texts(page, "[data-testid=day-back]"))[0], `← ${store.name}`);
  assert.equal(
    await page.evaluate("document.title"),
    `${WORDS[lang].dayTitle(store.name, date)} · ${WORDS[lang].app}`,
  );
  const current = await shown(page, "[data-testid=current-kwh]");
  assert.equal(current.exact, versions.current!.energy_kwh);
  assert.equal(current.text, rounded(versions.current!.energy_kwh!, 4, lang));
  // The version's time in the zone; the lineage names its batch by its number.
  const last = versions.versions.at(-1)!;
  const at = (await texts(page, "[data-testid=version-at]")).at(-1)!;
  assert.equal(at, wallClock(last.committed_at, zone));
  const trace = await page.$$("[data-testid=version-row] button");
  await trace.at(-1)!.click();
  await page.waitForSelector("[data-testid=lineage] dd a");
  assert.equal((await texts(page, "[data-testid=lineage] dd a"))[0], last.batch!.batch_no);
  const heads = await texts(page, "main thead th");
  assert.ok(heads.every((h) => h !== ""), heads.join(" | "));
};

Deno.test({
  name: "console: numbers, times and names for people, in English and Chinese",
  ignore: !runsJourneys("numbers"),
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async (t) => {
    const run = await start();
    try {
      for (const lang of ["en", "zh-CN"] as const) {
        await journey(t, `${lang}: a store, the changes, a day`, async () => {
          const { page, errors } = await openPage(run);
          await signIn(run, page, "demo-analyst");
          if (lang !== "en") await setLanguage(page, lang);
          const { store, energy } = await storePageChecks(run, page, lang);
          await shoot(page, `numbers-store-${lang}`);
          await changesChecks(run, page, lang);
          await shoot(page, `numbers-changes-${lang}`, false);
          // A day with a cleaned revision where there is one (two versions, each of its batch).
          const dataset = (await api<{ start: string }>(page, "/api/v1/dataset")).body;
          const early = (await api<EnergyResponse>(
            page,
            `/api/v1/stores/${store.id}/energy?scope_id=${store.scope_id}&start=${dataset.start}` +
              `&end=${energy.start}`,
          )).body;
          const days = [...early.days, ...energy.days].filter((d) => d.energy_kwh !== null);
          const day = days.find((d) => d.source_kind === "CLEANED") ?? days[0];
          await dayChecks(run, page, lang, store, day.business_date);
          await shoot(page, `numbers-day-${lang}`);
          if (lang !== "en") await setLanguage(page, "en");
          assert.deepEqual(errors, []);
        });
      }
    } finally {
      await run.stop();
    }
  },
});
