// The clerk's review of an import in a real browser (Debian's chromium, puppeteer-core), in English
// and in Chinese: every problem of a refused file at once, rows named by their cell, paging and
// filters, a download of the rows, warnings shown as warnings, commit disabled when nothing
// changes, and a discarded preview. The service runs as a process over a fresh database with the
// demo; screenshots go to .data/screenshots/ (import-*.png). Without chromium
// (CHROMIUM_PATH, else /usr/bin/chromium) the journeys are skipped.
import assert from "node:assert/strict";
import { downloadsOf, type Page, runsJourneys, shoot, start, texts } from "./console_harness.ts";

// An API answer as the signed-in page gets it (its cookie).
const api = <T>(page: Page, path: string) =>
  page.evaluate(async (p: string) => {
    const response = await fetch(p, { credentials: "same-origin" });
    return { status: response.status, body: await response.text() };
  }, path).then((a) => ({ status: a.status, text: a.body, body: JSON.parse(a.body) as T }));

// What a test reads of an element it picked by selector.
type El = {
  readonly textContent: string | null;
  readonly className: string;
  getAttribute(name: string): string | null;
  hasAttribute(name: string): boolean;
  value: string;
};
// (A function handed to the page takes nothing from here: the selector and name go as text.)
const attribute = (page: Page, selector: string, name: string) =>
  page.evaluate<string | null>(
    `document.querySelector(${JSON.stringify(selector)})?.getAttribute(${
      JSON.stringify(name)
    }) ?? null`,
  );
const disabled = (page: Page, selector: string) =>
  page.$eval(selector, (el) => (el as El).hasAttribute("disabled"));
// Waits until the text of the first element of `selector` includes `text`.
const untilText = (page: Page, selector: string, text: string) =>
  page.waitForFunction(
    `document.querySelector(${JSON.stringify(selector)})?.textContent?.includes(${
      JSON.stringify(text)
    })`,
  );

type Store = { id: number; name: string; brand_name: string; scope_id: number };
type Day = { business_date: string; energy_kwh: string | null; source_kind: string | null };

const addDays = (date: string, n: number) =>
  new Date(Date.parse(`${date}T00:00:00Z`) + n * 86_400_000).toISOString().slice(0, 10);

Deno.test({
  name: "the clerk's import review in a real browser, in English and Chinese",
  ignore: !runsJourneys("review"),
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async (t) => {
    const run = await start();
    const files = await Deno.makeTempDir({ prefix: "console-review-files-" });
    const context = await run.browser.createBrowserContext();
    const page = await context.newPage();
    page.setDefaultTimeout(20_000);
    await page.setViewport({ width: 1280, height: 900 });
    const errors: string[] = [];
    page.on("pageerror", (error) => errors.push(String(error)));
    const shot = (name: string) => shoot(page, `import-${name}`);
    try {
      await page.goto(`${run.base}/`, { waitUntil: "networkidle0" });
      await page.waitForSelector("#access_key");
      await page.type("#access_key", run.keys.find((k) => k.member === "demo-analyst")!.key);
      await page.click("form button[type=submit]");
      // Signed in: the navigation offers the import page (the landing page may still be loading).
      await page.waitForSelector("nav a[href='/console/imports']");

      // Days to correct: two legacy days with a month of history behind them, and 150 blank
      // store-days to page through.
      const end = (await api<{ end: string }>(page, "/api/v1/dataset")).body.end;
      const stores = (await api<{ stores: Store[] }>(page, "/api/v1/stores")).body.stores;
      const legacy: Array<{ store: Store; day: Day }> = [];
      for (const store of stores) {
        const days = (await api<{ days: Day[] }>(
          page,
          `/api/v1/stores/${store.id}/energy?scope_id=${store.scope_id}&start=${
            addDays(end, -120)
          }&end=${addDays(end, -1)}`,
        )).body.days;
        days.forEach((day, i) => {
          const recent = days.slice(Math.max(0, i - 28), i).filter((d) => d.energy_kwh !== null);
          if (
            i >= 28 && day.source_kind === "LEGACY_DIRECT" && Number(day.energy_kwh) > 0 &&
            recent.length >= 20 && legacy.length < 2 &&
            !legacy.some((l) => l.store.id === store.id)
          ) legacy.push({ store, day });
        });
        if (legacy.length === 2) break;
      }
      assert.equal(legacy.length, 2, "the demo has legacy days with history");
      const [high, zero] = legacy;
      const other = stores.find((s) => s.id !== high.store.id && s.id !== zero.store.id)!;
      const line = (s: Store, date: string, value: string) =>
        `${s.brand_name},${s.name},${date},${value}`;
      const blanks = Array.from(
        { length: 150 },
        (_, i) => line(other, addDays(end, -1 - i), ""),
      );
      const header = "品牌,门店,日期,日能耗";
      const upload = async (name: string, lines: ReadonlyArray<string>, reason: string) => {
        const path = `${files}/${name}`;
        await Deno.writeTextFile(path, [header, ...lines].join("\r\n") + "\r\n");
        const input = (await page.$("input[type=file]"))!;
        await input.uploadFile(path);
        await page.$eval("input[name=reason]", (el) => ((el as El).value = ""));
        await page.type("input[name=reason]", reason);
        await page.click("form.upload button[type=submit]");
      };
      const openImports = async () => {
        await page.click("nav a[href='/console/imports']");
        await page.waitForSelector("[data-testid=template]");
      };

      await t.step("every problem of a refused file in one answer", async () => {
        await openImports();
        await upload("bad.csv", [
          line(high.store, high.day.business_date, "12x"),
          line(high.store, high.day.business_date, "3"),
        ], "bad file");
        await page.waitForSelector("[data-testid=import-error] .problems li");
        const problems = await texts(page, "[data-testid=import-error] .problems li");
        assert.equal(problems.length, 2, problems.join("\n"));
        assert.match(problems[0], /row 2.*not a number/);
        assert.match(problems[1], /row 3.*duplicate store-day/);
      });

      const good = [
        line(high.store, high.day.business_date, "99999.9"),
        line(zero.store, zero.day.business_date, "0"),
        ...blanks,
      ];

      await t.step(
        "rows named by their cell, paged, filtered, downloadable; warnings",
        async () => {
          await upload("july.csv", good, "meter check");
          await page.waitForSelector("[data-testid=review-row]");
          const names = await texts(page, "[data-testid=row-name]");
          assert.equal(names[0], "row 2, column 日能耗");
          assert.equal(names[1], "row 3, column 日能耗");
          assert.equal(names.length, 100, "a page of 100 rows");
          assert.match((await texts(page, "[data-testid=review-shown]"))[0], /Rows 1–100 of 152/);

          // Warnings are warnings: amber, a status, not an alert; the commit stays possible.
          const summary = await page.$eval(
            "[data-testid=warnings-summary]",
            (el) => ({
              role: (el as El).getAttribute("role"),
              cls: (el as El).className,
              text: (el as El).textContent,
            }),
          );
          assert.equal(summary.role, "status");
          assert.equal(summary.cls, "warning");
          assert.match(summary.text ?? "", /Values that look unusual for their store: 2\./);
          assert.equal(await page.$("[data-testid=import-error]"), null);
          const codes = await page.$$eval(
            "[data-testid=row-warning]",
            (nodes) => nodes.map((n) => n.getAttribute("data-code")),
          );
          assert.deepEqual(codes, ["FAR_ABOVE_RECENT", "DROP_TO_ZERO"]);
          const warnings = await texts(page, "[data-testid=row-warning]");
          assert.match(warnings[0], /more than 3 times the store's mean of/);
          assert.match(warnings[1], /drops to 0 from/);
          assert.equal(
            await disabled(page, "[data-testid=commit]"),
            false,
          );
          await shot("review-en");

          // Next page, then only the warned rows, then only the blank ones.
          await page.click("[data-testid=review-next]");
          await untilText(page, "[data-testid=review-shown]", "101–152");
          assert.equal((await texts(page, "[data-testid=row-name]"))[0], "row 102, column 日能耗");
          await page.click("[data-testid=filter-warned]");
          await page.waitForFunction(
            'document.querySelectorAll("[data-testid=review-row]").length === 2',
          );
          assert.deepEqual(await texts(page, "[data-testid=row-name]"), [
            "row 2, column 日能耗",
            "row 3, column 日能耗",
          ]);
          await page.click("[data-testid=action-group][data-action=SKIP_MISSING]");
          await untilText(page, "[data-testid=review-shown]", "of 150");
          const href = (await attribute(page, "[data-testid=review-download]", "href")) ?? "";
          assert.match(href, /download=csv&action=SKIP_MISSING$/);
          const raw = await page.evaluate(async (p: string) => (await fetch(p)).text(), href);
          const lines = raw.trim().split("\r\n");
          assert.equal(lines.length, 151);
          assert.match(lines[1], /^,4,日能耗,/);
        },
      );

      await t.step("the preview outlasts a switch of language and a reload", async () => {
        const href = (await attribute(page, "[data-testid=review-download]", "href")) ?? "";
        const id = /imports\/(\d+)\/review/.exec(href)![1];
        const sameShown = async () => {
          await page.waitForSelector("[data-testid=review-row]");
          const now = (await attribute(page, "[data-testid=review-download]", "href")) ?? "";
          assert.equal(/imports\/(\d+)\/review/.exec(now)![1], id);
          assert.equal(await disabled(page, "[data-testid=commit]"), false);
        };
        await page.select("header .language select", "zh-CN");
        await page.waitForFunction("document.documentElement.lang === 'zh-CN'");
        await sameShown();
        await page.select("header .language select", "en");
        await page.waitForFunction("document.documentElement.lang === 'en'");
        await page.reload({ waitUntil: "networkidle0" });
        await sameShown();
      });

      await t.step("discard clears the preview; it can no longer be committed", async () => {
        const href = (await attribute(page, "[data-testid=review-download]", "href")) ?? "";
        const id = /imports\/(\d+)\/review/.exec(href)![1];
        await page.click("[data-testid=discard]");
        await page.waitForSelector("[data-testid=discarded]");
        assert.equal(await page.$("[data-testid=preview]"), null);
        const after = await api<{ status: string; batch_no: string }>(
          page,
          `/api/v1/imports/${id}/review?row_limit=1`,
        );
        assert.equal(after.body.status, "EXPIRED");
        assert.match(
          (await texts(page, "[data-testid=discarded]"))[0],
          new RegExp(after.body.batch_no),
        );
        await shot("discarded-en");
        // The discarded preview's address (a bookmark, a link sent on) says it can no longer be
        // committed and links its batch; an address naming no batch says it could not be opened.
        await page.goto(`${run.base}/console/imports?preview=${id}`, { waitUntil: "networkidle0" });
        await page.waitForSelector("[data-testid=preview-gone]");
        assert.match(
          (await texts(page, "[data-testid=preview-gone]"))[0],
          new RegExp(`${after.body.batch_no}.*can no longer be committed`),
        );
        assert.equal(
          await attribute(page, "[data-testid=preview-gone] a", "href"),
          `/console/imports/${id}`,
        );
        assert.equal(await page.$("[data-testid=preview]"), null);
        await shot("preview-gone-en");
        await page.goto(`${run.base}/console/imports?preview=999999999`, {
          waitUntil: "networkidle0",
        });
        await page.waitForSelector("[data-testid=preview-gone][role=alert]");
        assert.match(
          (await texts(page, "[data-testid=preview-gone]"))[0],
          /could not be opened: .+/,
        );
        // The same file and reason again make a new preview that can be committed (not the
        // discarded one handed back for the same request key).
        await upload("july.csv", good, "meter check");
        await page.waitForSelector("[data-testid=review-row]");
        const again = (await attribute(page, "[data-testid=review-download]", "href")) ?? "";
        assert.notEqual(/imports\/(\d+)\/review/.exec(again)![1], id);
        assert.equal(await disabled(page, "[data-testid=commit]"), false);
        await page.click("[data-testid=discard]");
        await page.waitForSelector("[data-testid=discarded]");
      });

      await t.step("commit is disabled when nothing changes", async () => {
        await upload("blank.csv", blanks.slice(0, 5), "nothing");
        await page.waitForSelector("[data-testid=review-row]");
        assert.equal(
          await disabled(page, "[data-testid=commit]"),
          true,
        );
        assert.match(
          (await texts(page, "[data-testid=nothing-to-commit]"))[0],
          /Nothing to commit/,
        );
        await shot("nothing-to-commit-en");
      });

      await t.step("the same review in Chinese", async () => {
        await page.select("header .language select", "zh-CN");
        await page.waitForFunction("document.documentElement.lang === 'zh-CN'");
        await upload("july-zh.csv", good, "核对电表");
        // The preview of the step before, named in the address, is shown again first.
        await page.waitForSelector("[data-testid=row-warning]");
        await untilText(page, "[data-testid=row-name]", "第 2 行");
        assert.equal((await texts(page, "[data-testid=row-name]"))[0], "第 2 行，日能耗 列");
        const warnings = await texts(page, "[data-testid=row-warning]");
        assert.match(warnings[0], /超过门店最近 \d+ 天平均值 .* kWh 的 3 倍/);
        assert.match(warnings[1], /降为 0/);
        assert.match((await texts(page, "[data-testid=warnings-summary]"))[0], /不会阻止提交/);
        assert.match((await texts(page, "[data-testid=discard]"))[0], /放弃/);
        // The rows as a file, written in the page's language (the browser's is English).
        const downloads = await downloadsOf(page);
        await page.click("[data-testid=review-download]");
        const csv = await Deno.readTextFile(await downloads.file((n) => n.endsWith(".csv")));
        assert.match(csv, /FAR_ABOVE_RECENT: [\d.]+ kWh 超过门店在/);
        await Deno.remove(downloads.dir, { recursive: true });
        await shot("review-zh");
        // Committed as it is: warnings never block.
        await page.click("[data-testid=commit]");
        await page.waitForSelector("[data-testid=committed]");
        await page.select("header .language select", "en");
        await page.waitForFunction("document.documentElement.lang === 'en'");
      });

      await t.step("a committed day's new value is kept out, and the page says why", async () => {
        await openImports();
        // The day committed with 99999.9 above now has a cleaned value: a different one is not
        // written (KEEP_CLEANED), its cell struck through.
        await upload("again.csv", [line(high.store, high.day.business_date, "70.5")], "again");
        await page.waitForSelector("[data-testid=keep-cleaned-hint]");
        assert.match((await texts(page, "[data-testid=keep-cleaned-hint]"))[0], /never overwrites/);
        const struck = await page.$$eval(
          "[data-testid=review-row][data-action=KEEP_CLEANED] td.ignored",
          (cells) => cells.map((c) => c.textContent?.trim()),
        );
        assert.deepEqual(struck, ["70.5"]);
        await page.click("[data-testid=discard]");
        await page.waitForSelector("[data-testid=discarded]");
      });

      await t.step("a download once the session has ended says so", async () => {
        await page.goto(`${run.base}/console/portfolio`, { waitUntil: "networkidle0" });
        await page.waitForSelector("[data-testid=portfolio-csv]");
        await page.deleteCookie(...await page.cookies());
        await page.click("[data-testid=portfolio-csv]");
        await page.waitForSelector("[data-testid=signin-message]");
        assert.match((await texts(page, "[data-testid=signin-message]"))[0], /session ended/);
      });
      assert.deepEqual(errors, []);
    } catch (error) {
      await shot("failed").catch(() => {});
      throw error;
    } finally {
      await context.close().catch(() => {});
      await run.stop();
      await Deno.remove(files, { recursive: true }).catch(() => {});
    }
  },
});
