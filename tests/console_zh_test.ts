// Every console page in Chinese shows no English word outside data: the visible text of the header
// and the main area (closed details opened, <code> left out as codes shown on purpose) holds no
// ASCII word of three or more letters but the names the API gives (stores, brands, cities, devices,
// members), ids, dates and numbers, and the short list of terms below.
import assert from "node:assert/strict";
import {
  api,
  journey,
  openPage,
  type Page,
  type Running,
  runsJourneys,
  settle,
  shoot,
  signIn,
  start,
  texts,
} from "./console_harness.ts";

// Terms kept as they are in Chinese text: file formats, the metric and target abbreviations of
// rules.md, the energy unit, the name of the spreadsheet program, and the language switch's
// "English" (each language named in its own words), and VOID, the value a file's cell holds to
// void a day, which an import problem names as the value to write.
const ALLOWED = new Set([
  "VOID",
  "English",
  "CSV",
  "XLSX",
  "EBA",
  "AES",
  "AER",
  "TES",
  "TEV",
  "Excel",
  "kWh",
]);

// The visible text of the header and main, one string per text node (options of a visible select
// included; <code>, <kbd> and <samp> left out).
const visibleText = (page: Page) =>
  page.evaluate(() => {
    // deno-lint-ignore no-explicit-any
    const doc = (globalThis as any).document;
    // deno-lint-ignore no-explicit-any
    for (const d of doc.querySelectorAll("main details")) (d as any).open = true;
    const found: Array<string> = [];
    for (const root of doc.querySelectorAll("header, main")) {
      const walker = doc.createTreeWalker(root, 4 /* NodeFilter.SHOW_TEXT */);
      for (let node = walker.nextNode(); node !== null; node = walker.nextNode()) {
        const parent = node.parentElement;
        if (parent === null || parent.closest("code, kbd, samp, script, style") !== null) continue;
        const select = parent.closest("select");
        const shown = select !== null ? select.checkVisibility() : parent.checkVisibility();
        const text = (node.textContent ?? "").trim();
        if (shown && text !== "") found.push(text);
      }
    }
    return found;
  }) as Promise<Array<string>>;

// The ASCII words of three letters or more that are neither data nor allowed.
// Each is listed once, with the text it was found in.
const englishWords = (lines: ReadonlyArray<string>, data: ReadonlySet<string>) => {
  const found = new Map<string, string>();
  for (const line of lines) {
    for (const token of line.match(/[A-Za-z0-9_'’.\-]+/g) ?? []) {
      // A token with a digit (an id, a date, a number) or a file's name is data.
      if (/\d/.test(token) || /\.(csv|xlsx)$/i.test(token)) continue;
      for (const word of token.match(/[A-Za-z]{3,}/g) ?? []) {
        if (!ALLOWED.has(word) && !data.has(word.toLowerCase()) && !found.has(word)) {
          found.set(word, `${word} in "${line.slice(0, 100)}"`);
        }
      }
    }
  }
  return [...found.values()];
};

const wordsOf = (values: ReadonlyArray<string | null | undefined>) =>
  new Set(
    values.flatMap((v) => (v ?? "").match(/[A-Za-z]{3,}/g) ?? []).map((w) => w.toLowerCase()),
  );

const toChinese = async (page: Page) => {
  await page.select("header .language select", "zh-CN");
  await page.waitForFunction(`document.documentElement.lang === 'zh-CN'`);
};

interface Store {
  readonly id: number;
  readonly scope_id: number;
  readonly name: string;
  readonly brand_name: string;
  readonly city: string | null;
}

// The fields of the API's answers that hold data written by people or by the snapshot: names,
// reasons and notes stored with the data, shown as they were written, and the dataset's time zone
// (an IANA identifier, named as it is).
const DATA_FIELDS = new Set([
  "timezone",
  "name",
  "brand_name",
  "city",
  "address",
  "device_name",
  "display_name",
  "login_name",
  "change_reason",
  "reason",
  "note",
  "quality_note",
  "filename",
]);

// The words of the data the API holds at these paths, which a page may show as they are.
const dataWords = async (page: Page, paths: ReadonlyArray<string>) => {
  const strings: Array<string> = [];
  const walk = (value: unknown, field: string) => {
    if (typeof value === "string") {
      if (DATA_FIELDS.has(field)) strings.push(value);
    } else if (Array.isArray(value)) value.forEach((v) => walk(v, field));
    else if (value !== null && typeof value === "object") {
      for (const [k, v] of Object.entries(value)) walk(v, k);
    }
  };
  for (const path of paths) {
    const answer = await api<unknown>(page, path);
    assert.equal(answer.status, 200, path);
    walk(answer.body, "");
    // The dataset's name, as the snapshot gives it.
    if (path === "/api/v1/dataset") strings.push((answer.body as { label: string }).label);
  }
  return wordsOf(strings);
};

const NAMES = ["/api/v1/stores", "/api/v1/catalog", "/api/v1/dataset", "/auth/session"];

Deno.test({
  name: "console: every page in Chinese shows no English word outside data",
  ignore: !runsJourneys("zh"),
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async (t) => {
    const run: Running = await start();
    const files = await Deno.makeTempDir({ prefix: "console-zh-" });
    try {
      await journey(t, "the analyst's pages in Chinese", async () => {
        const { page, errors } = await openPage(run);
        await signIn(run, page, "demo-analyst");
        await toChinese(page);
        // From here on every call the console makes asks for Chinese (the harness's own reads of
        // the API, made with a plain fetch, are told apart by not asking for JSON).
        const asked: Array<string> = [];
        page.on("request", (request) => {
          const headers = request.headers();
          if (
            new URL(request.url()).pathname.startsWith("/api/") &&
            headers.accept === "application/json"
          ) {
            asked.push(`${headers["accept-language"]} ${request.url()}`);
          }
        });
        const stores = (await api<{ stores: Store[] }>(page, "/api/v1/stores")).body.stores;
        const end = (await api<{ end: string }>(page, "/api/v1/dataset")).body.end;
        const found: Array<string> = [];
        const check = async (name: string) => {
          const lines = await visibleText(page);
          const english = englishWords(lines, words);
          for (const word of english) found.push(`${name}: ${word}`);
          // Chinese punctuation after and around Chinese words: "数据集：", "明细（366）".
          const joined = lines.join("");
          for (const m of joined.matchAll(/[\u4e00-\u9fff][:;] |[\u4e00-\u9fff] ?\(/g)) {
            found.push(`${name}: western punctuation in "${joined.slice(m.index, m.index + 12)}"`);
          }
        };

        // A store with savings in the dataset's last summer, for the savings panel and months.
        const start = `${end.slice(0, 4)}-01-15`;
        let store = stores[0];
        for (const s of stores) {
          const months = await api<{ total: { summary: { savings_days: number } } }>(
            page,
            `/api/v1/stores/${s.id}/months?scope_id=${s.scope_id}&start=${start}&end=${end}`,
          );
          if (months.body.total.summary.savings_days > 0) {
            store = s;
            break;
          }
        }
        const energy = await api<{ days: Array<{ business_date: string; energy_kwh: unknown }> }>(
          page,
          `/api/v1/stores/${store.id}/energy?scope_id=${store.scope_id}&start=${start}&end=${end}`,
        );
        const day = energy.body.days.find((d) => d.energy_kwh !== null)!.business_date;
        const range = `scope_id=${store.scope_id}&start=${start}&end=${end}`;
        const words = await dataWords(page, [
          ...NAMES,
          `/api/v1/stores/${store.id}/reference`,
          `/api/v1/stores/${store.id}/energy?${range}`,
          `/api/v1/stores/${store.id}/energy/${day}/versions`,
          "/api/v1/changes?limit=200",
          "/api/v1/imports?limit=200",
        ]);

        const pages: ReadonlyArray<readonly [string, string, string]> = [
          ["portfolio", "/console/portfolio", "[data-testid=portfolio-row]"],
          ["stores", "/console/stores", "[data-testid=store-row]"],
          [
            "store",
            `/console/stores/${store.id}?start=${start}&end=${end}`,
            "[data-testid=month-row]",
          ],
          ["day", `/console/stores/${store.id}/days/${day}`, "main h1"],
          ["changes", "/console/changes", "main h1"],
          ["imports", "/console/imports", "[data-testid=template]"],
          ["unknown page", "/console/nope", "main h1"],
          ["missing store", "/console/stores/999999", "[data-testid=store-missing]"],
        ];
        for (const [name, path, ready] of pages) {
          await page.goto(`${run.base}${path}`, { waitUntil: "networkidle0" });
          await settle(page, ready, 300);
          assert.equal(await page.evaluate("document.documentElement.lang"), "zh-CN");
          if (name === "store") await settle(page, "[data-testid=savings-chart] canvas", 300);
          await check(name);
        }

        // An import with one problem and one valid row: the problems, then the valid row's preview.
        await page.goto(`${run.base}/console/imports`, { waitUntil: "networkidle0" });
        await settle(page, "[data-testid=template]", 300);
        const upload = async (name: string, lines: ReadonlyArray<string>) => {
          const path = `${files}/${name}`;
          await Deno.writeTextFile(
            path,
            ["品牌,门店,日期,日能耗", ...lines].join("\r\n") + "\r\n",
          );
          await (await page.$("input[type=file]"))!.uploadFile(path);
          await page.$eval(
            "input[name=reason]",
            (el) => ((el as unknown as { value: string }).value = ""),
          );
          await page.type("input[name=reason]", "核对");
          await page.click("form.upload button[type=submit]");
        };
        const row = (date: string, value: string) =>
          `${store.brand_name},${store.name},${date},${value}`;
        await upload("problem.csv", [row(day, "12x"), row(start, "10.5")]);
        await settle(page, "[data-testid=import-error] .problems li", 300);
        // The service wrote the problem in the language the console asked for.
        const problems = await page.$$eval(
          "[data-testid=import-error] .problems li",
          (nodes) => nodes.map((n) => n.textContent ?? ""),
        );
        assert.match(problems[0], /第 2 行/);
        await check("imports, a file with a problem");
        await upload("valid.csv", [row(start, "10.5")]);
        await settle(page, "[data-testid=review-row]", 300);
        await check("imports, a preview");

        await shoot(page, "console-zh-analyst");
        assert.ok(asked.length > 10, `${asked.length} calls seen`);
        assert.deepEqual(asked.filter((a) => !a.startsWith("zh-CN ")), []);
        assert.deepEqual(found, [], `English words in Chinese pages:\n${found.join("\n")}`);
        assert.deepEqual(errors, []);
      });

      await journey(t, "the read-only manager's portfolio in Chinese", async () => {
        const { page, errors } = await openPage(run);
        await signIn(run, page, "demo-manager");
        await toChinese(page);
        await settle(page, "[data-testid=portfolio-row]", 300);
        const words = await dataWords(page, NAMES);
        const english = englishWords(await visibleText(page), words);
        await shoot(page, "console-zh-manager");
        assert.deepEqual(
          english,
          [],
          `English words on the manager's portfolio:\n${english.join("\n")}`,
        );
        assert.deepEqual(errors, []);
      });
      await journey(
        t,
        "a read that gets no answer, or one without the contract's body",
        async () => {
          const { page, errors } = await openPage(run);
          await signIn(run, page, "demo-analyst");
          await toChinese(page);
          // The store list's read fails: first the connection, then a proxy's page of its own.
          let answer: "abort" | "proxy" = "abort";
          await page.setRequestInterception(true);
          page.on("request", (request) => {
            if (request.isInterceptResolutionHandled()) return;
            if (new URL(request.url()).pathname !== "/api/v1/catalog") return request.continue();
            if (answer === "abort") return request.abort("failed");
            request.respond({
              status: 502,
              contentType: "text/html",
              body: "<h1>Bad Gateway</h1>",
            });
          });
          await page.click("nav a[href='/console/stores']");
          await page.waitForSelector("[role=alert]");
          assert.match((await texts(page, "[role=alert]")).join(" "), /无法连接到服务/);
          assert.notEqual(await page.$("[role=alert] button"), null, "a retry is offered");
          answer = "proxy";
          await page.reload({ waitUntil: "networkidle0" });
          await page.waitForSelector("[role=alert]");
          const shown = (await texts(page, "[role=alert]")).join(" ");
          assert.match(shown, /服务返回 502，未附说明/);
          assert.doesNotMatch(shown, /Bad Gateway|connection failed/i);
          assert.ok(errors.every((e) => !/Bad Gateway/.test(e)), errors.join("\n"));
          await page.close();
        },
      );
    } finally {
      await run.stop();
      await Deno.remove(files, { recursive: true }).catch(() => {});
    }
  },
});
