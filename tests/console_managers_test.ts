// What an energy manager and a cleaning analyst rely on in the console, in a real browser (Debian's
// chromium, driven by puppeteer-core): a sign-out that did not reach the service says so and keeps
// the page signed in; what one key's portfolio named is not offered to the next key signed in on
// the same page; a store above its baseline says so and comes first when the worst come first; a
// file changed after its preview is previewed again, a file over the cap is not sent; a rename
// shows in the store's heading; a day a key may not see and a page past the last row show no
// empty table or range.
// Skipped without chromium (CHROMIUM_PATH, else /usr/bin/chromium).
import assert from "node:assert/strict";
import type * as portfolioSchemas from "../src/domain/portfolio.ts";
import type * as storeSchemas from "../src/domain/stores.ts";
import { addDays } from "../src/domain/range.ts";
import {
  api,
  type El,
  journey,
  openPage,
  type Page,
  runsJourneys,
  settle,
  shoot,
  signIn,
  start as startService,
  texts,
} from "./console_harness.ts";

type PortfolioResponse = typeof portfolioSchemas.PortfolioResponse.Encoded;
type StoresResponse = typeof storeSchemas.StoresResponse.Encoded;

const signOut = async (page: Page) => {
  await page.click("header .who button");
  await page.waitForSelector("#access_key");
};

const brandChoices = (page: Page) =>
  page.$$eval(
    "select[name=brand_id] option",
    (nodes) =>
      nodes.map((n) => (n as unknown as { value: string }).value).filter((v) => v !== "").sort(),
  );

Deno.test({
  name: "console: what managers and analysts rely on",
  ignore: !runsJourneys("managers"),
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async (t) => {
    const run = await startService();
    try {
      await journey(t, "the portfolio's filters keep the keyboard's focus", async () => {
        const { page, errors } = await openPage(run);
        await signIn(run, page, "demo-manager");
        const focused = () =>
          page.evaluate<string | null>(
            "document.activeElement?.getAttribute('data-control') ?? null",
          );
        await page.focus("select[name=brand_id]");
        for (const step of [1, 2]) {
          const before = page.url();
          await page.keyboard.press("ArrowDown");
          await page.waitForFunction(`location.href !== ${JSON.stringify(before)}`);
          await settle(page, "[data-testid=portfolio-row]");
          assert.match(page.url(), /brand_id=\d+/, `step ${step}`);
          assert.equal(await focused(), "brand", `step ${step}: the brand list keeps the focus`);
        }
        // Keys pressed one after another move through the list: one read once the choice settles.
        const reads: Array<string> = [];
        page.on("request", (request) => {
          if (new URL(request.url()).pathname === "/api/v1/portfolio") reads.push(request.url());
        });
        const before = page.url();
        const pages = await page.evaluate<number>("history.length");
        await page.keyboard.press("ArrowUp");
        await page.keyboard.press("ArrowUp");
        await page.keyboard.press("ArrowDown");
        await page.waitForFunction(`location.href !== ${JSON.stringify(before)}`);
        await settle(page, "[data-testid=portfolio-row]");
        assert.equal(reads.length, 1, reads.join(" "));
        assert.equal(await page.evaluate<number>("history.length"), pages + 1);
        await page.click("[data-control=summer]");
        await settle(page, "[data-testid=portfolio-row]");
        assert.equal(await focused(), "summer");
        assert.deepEqual(errors, []);
        await page.close();
      });

      await journey(t, "a refused read offers no retry that could not help", async () => {
        const { page, errors } = await openPage(run);
        await signIn(run, page, "demo-analyst");
        const [store] = (await api<StoresResponse>(page, "/api/v1/stores")).body.stores;
        // An end before the start: every read of the page is refused (400) and would be again.
        await page.goto(`${run.base}/console/stores/${store.id}?start=2026-11-20&end=2026-01-01`, {
          waitUntil: "networkidle0",
        });
        await page.waitForSelector("[role=alert]");
        assert.equal(await page.$("[role=alert] button"), null);
        assert.deepEqual(errors, []);
        await page.close();
      });

      await journey(t, "a sign-out that does not reach the service says so", async () => {
        const { page } = await openPage(run);
        await signIn(run, page, "demo-manager");
        await page.setRequestInterception(true);
        let refuse = true;
        page.on("request", (request) => {
          if (request.isInterceptResolutionHandled()) return;
          if (refuse && new URL(request.url()).pathname === "/auth/logout") {
            request.respond({
              status: 503,
              contentType: "application/json",
              body: JSON.stringify({ error: { code: "BUSY", message: "The service is busy" } }),
            });
          } else request.continue();
        });
        await page.click("header .who button");
        await page.waitForSelector("[data-testid=sign-out-failed]");
        assert.match((await texts(page, "[data-testid=sign-out-failed]"))[0], /still be signed in/);
        assert.ok(await page.$("[data-testid=member]"), "still signed in");
        await shoot(page, "managers-sign-out-failed", false);
        assert.equal((await api(page, "/auth/session")).status, 200);
        refuse = false;
        await signOut(page);
        assert.equal((await api(page, "/auth/session")).status, 401);
      });

      await journey(
        t,
        "the next key signed in is offered only the brands its answers name",
        async () => {
          const { page } = await openPage(run);
          await signIn(run, page, "demo-manager");
          assert.ok((await brandChoices(page)).length > 1);
          await signOut(page);
          await page.type("#access_key", run.keys.find((k) => k.member === "demo-regional")!.key);
          await page.click("form button[type=submit]");
          await page.waitForSelector("[data-testid=portfolio-row]");
          const { end } = (await api<{ end: string }>(page, "/api/v1/dataset")).body;
          const own = (await api<PortfolioResponse>(
            page,
            `/api/v1/portfolio?start=${end}&end=${end}`,
          )).body.brands.map((b) => String(b.brand_id)).sort();
          assert.deepEqual(await brandChoices(page), own);
        },
      );

      await journey(
        t,
        "a store above its baseline says so, and comes first worst first",
        async () => {
          const { page } = await openPage(run);
          await signIn(run, page, "demo-manager");
          const dataset = (await api<{ end: string }>(page, "/api/v1/dataset")).body;
          // A summer day on which some store used more than its baseline.
          let found: { day: string; store: number } | undefined;
          for (let day = `${dataset.end.slice(0, 4)}-07-01`; found === undefined;) {
            const answer = await api<PortfolioResponse>(
              page,
              `/api/v1/portfolio?start=${day}&end=${day}`,
            );
            const over = answer.body.stores.find((s) =>
              s.summary.aes_kwh === null && s.summary.matched_days > 0
            );
            if (over !== undefined) found = { day, store: over.store_id };
            day = addDays(day, 1);
            assert.ok(day < `${dataset.end.slice(0, 4)}-09-01`, "a store above its baseline");
          }
          await page.goto(
            `${run.base}/console/portfolio?start=${found.day}&end=${found.day}&sort=aes&dir=asc`,
            { waitUntil: "networkidle0" },
          );
          await page.waitForSelector("[data-testid=portfolio-row]");
          const first = await page.$eval(
            "[data-testid=portfolio-row] [data-testid=aes]",
            (e) => [(e as El).textContent!.trim(), (e as El).getAttribute("title")],
          );
          assert.deepEqual(first, [
            "above baseline",
            "more energy than the baseline: no savings",
          ]);
          await shoot(page, "managers-portfolio-above-baseline", false);
          await page.goto(
            `${run.base}/console/stores/${found.store}?start=${found.day}&end=${found.day}`,
            { waitUntil: "networkidle0" },
          );
          await page.waitForSelector("[data-testid=metric-cards]");
          const card = await texts(page, "[data-field=aes_kwh] [data-testid=card-value]");
          assert.deepEqual(card, ["above baseline"]);
          await page.$eval(
            "[data-testid=metric-cards]",
            (e) => (e as unknown as { scrollIntoView(): void }).scrollIntoView(),
          );
          await shoot(page, "managers-cards-above-baseline", false);
        },
      );

      await journey(t, "a file changed after its preview is previewed again", async () => {
        const { page, errors } = await openPage(run);
        await signIn(run, page, "demo-analyst");
        const [store] = (await api<StoresResponse>(page, "/api/v1/stores")).body.stores;
        const dataset = (await api<{ end: string }>(page, "/api/v1/dataset")).body;
        const files = await Deno.makeTempDir({ prefix: "console-managers-" });
        await page.click("nav a[href='/console/imports']");
        await page.waitForSelector("[data-testid=template]");
        for (const value of ["66.66", "77.77"]) {
          const path = `${files}/fix.csv`;
          await Deno.writeTextFile(
            path,
            `品牌,门店,日期,日能耗\r\n${store.brand_name},${store.name},${dataset.end},${value}\r\n`,
          );
          await (await page.$("input[type=file]"))!.uploadFile(path);
          await page.$eval(
            "input[name=reason]",
            (el) => ((el as El & { value: string }).value = ""),
          );
          await page.type("input[name=reason]", "meter fix");
          await page.click("form.upload button[type=submit]");
          // The preview shows the row's proposed value.
          await page.waitForFunction(
            `document.body.textContent.includes(${JSON.stringify(value)})`,
          );
          assert.equal(await page.$("[data-testid=import-error]"), null, value);
        }
        await Deno.remove(files, { recursive: true });
        assert.deepEqual(errors, []);
      });

      await journey(t, "a rename shows in the store's heading and the tab's title", async () => {
        const { page } = await openPage(run);
        await signIn(run, page, "demo-analyst");
        const stores = (await api<StoresResponse>(page, "/api/v1/stores")).body.stores;
        const editable = [];
        for (const s of stores) {
          const reference = await api<
            { can_edit_profile: boolean; profile: { address: string | null } }
          >(page, `/api/v1/stores/${s.id}/reference`);
          if (reference.body.can_edit_profile && reference.body.profile.address !== null) {
            editable.push(s);
          }
          if (editable.length > 0) break;
        }
        const [store] = editable;
        assert.ok(store !== undefined, "an editable store");
        await page.goto(`${run.base}/console/stores/${store.id}`, { waitUntil: "networkidle0" });
        await page.waitForSelector("input[name=name]");
        const renamed = `${store.name}（新）`;
        await page.$eval("input[name=name]", (el) => ((el as El & { value: string }).value = ""));
        await page.type("input[name=name]", renamed);
        await page.click("[data-testid=profile-form] button[type=submit]");
        await page.waitForSelector("[data-testid=profile-saved]");
        await page.waitForFunction(
          `document.querySelector("[data-testid=store-title]")?.textContent === ${
            JSON.stringify(renamed)
          }`,
        );
        // The tab's title follows (set once the page is drawn).
        await page.waitForFunction(`document.title.includes(${JSON.stringify(renamed)})`);
      });

      await journey(t, "a day a key may not see shows no empty history", async () => {
        const { page } = await openPage(run);
        await signIn(run, page, "demo-manager");
        const dataset = (await api<{ end: string }>(page, "/api/v1/dataset")).body;
        const [store] = (await api<StoresResponse>(page, "/api/v1/stores")).body.stores;
        await page.goto(`${run.base}/console/stores/${store.id}/days/${dataset.end}`, {
          waitUntil: "networkidle0",
        });
        await page.waitForSelector("[data-testid=day-title]");
        await page.waitForSelector("main .alert");
        assert.deepEqual(await texts(page, "main h2"), [], "no history heading");
        assert.equal(await page.$("[data-testid=history-row]"), null);
      });

      await journey(
        t,
        "imports: a page past the last row shows none; a file over 4 MiB is not sent",
        async () => {
          const { page, errors } = await openPage(run);
          await signIn(run, page, "demo-analyst");
          const [listed] = (await api<{ batches: Array<{ id: number }> }>(
            page,
            "/api/v1/imports?limit=1",
          )).body.batches;
          const batch = (await api<{ id: number; total_rows: number }>(
            page,
            `/api/v1/imports/${listed.id}?row_limit=1`,
          )).body;
          await page.goto(
            `${run.base}/console/imports/${batch.id}?offset=${batch.total_rows + 1000}`,
            {
              waitUntil: "networkidle0",
            },
          );
          await page.waitForFunction(
            `document.body.textContent.includes("of ${batch.total_rows}")`,
          );
          assert.ok(
            (await texts(page, "main p.muted")).includes(`Rows 0–0 of ${batch.total_rows}`),
            (await texts(page, "main p.muted")).join(" | "),
          );
          await page.click("nav a[href='/console/imports']");
          await page.waitForSelector("[data-testid=template]");
          const files = await Deno.makeTempDir({ prefix: "console-managers-" });
          const path = `${files}/large.csv`;
          await Deno.writeFile(path, new Uint8Array(4 * 1024 * 1024 + 1).fill(0x31));
          let sent = 0;
          page.on("request", (request) => {
            if (new URL(request.url()).pathname === "/api/v1/imports/preview") sent++;
          });
          await (await page.$("input[type=file]"))!.uploadFile(path);
          await page.type("input[name=reason]", "too large");
          await page.click("form.upload button[type=submit]");
          await page.waitForFunction(`document.body.textContent.includes("at most 4 MiB")`);
          await Deno.remove(files, { recursive: true });
          assert.equal(sent, 0, "nothing was sent");
          assert.deepEqual(errors, []);
        },
      );
    } finally {
      await run.stop();
    }
  },
});
