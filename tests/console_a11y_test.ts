// Every console page checked by axe-core (WCAG 2 A and AA rules) in English and Chinese, on a
// desktop and a phone width: no serious or critical violation. axe-core's script comes from its npm
// package and is injected into each page after it has rendered.
import assert from "node:assert/strict";
import {
  api,
  journey,
  openPage,
  type Page,
  runsJourneys,
  settle,
  shoot,
  signIn,
  start,
} from "./console_harness.ts";

const AXE_SOURCE = await Deno.readTextFile(
  new URL(import.meta.resolve("axe-core")).pathname.replace(/axe\.js$/, "axe.min.js"),
);

interface Violation {
  readonly id: string;
  readonly impact: string | null;
  readonly help: string;
  readonly nodes: ReadonlyArray<{ readonly target: ReadonlyArray<string> }>;
}

// The serious and critical violations on the page as it is now, one line each.
const violations = async (page: Page): Promise<Array<string>> => {
  const injected = await page.evaluate("typeof globalThis.axe");
  if (injected !== "object") await page.evaluate(AXE_SOURCE);
  const found = await page.evaluate(async () => {
    // deno-lint-ignore no-explicit-any
    const axe = (globalThis as any).axe;
    // deno-lint-ignore no-explicit-any
    const result = await axe.run((globalThis as any).document, {
      runOnly: { type: "tag", values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"] },
    });
    return result.violations;
  }) as ReadonlyArray<Violation>;
  return found
    .filter((v) => v.impact === "serious" || v.impact === "critical")
    .map((v) =>
      `${v.impact} ${v.id} (${v.help}): ${
        v.nodes.slice(0, 3).map((n) => n.target.join(" ")).join("; ")
      }${v.nodes.length > 3 ? ` and ${v.nodes.length - 3} more` : ""}`
    );
};

const setLanguage = async (page: Page, language: "en" | "zh-CN") => {
  await page.select("header .language select", language);
  await page.waitForFunction(`document.documentElement.lang === '${language}'`);
};

Deno.test({
  name: "console pages pass axe-core's WCAG A and AA rules in both languages",
  ignore: !runsJourneys("a11y"),
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async (t) => {
    const run = await start();
    try {
      for (const width of [1280, 390]) {
        await journey(t, `every page at ${width} px, English and Chinese`, async () => {
          const { page, errors } = await openPage(run, width);
          const found: Array<string> = [];
          const check = async (name: string) => {
            for (const line of await violations(page)) found.push(`${name}: ${line}`);
          };

          await page.goto(`${run.base}/`, { waitUntil: "networkidle0" });
          await settle(page, "#access_key");
          await check("sign-in");

          await signIn(run, page, "demo-analyst");
          const stores = await api<{ stores: Array<{ id: number }> }>(page, "/api/v1/stores");
          const storeId = stores.body.stores[0].id;
          const energy = await api<{ days: Array<{ business_date: string; kwh: string | null }> }>(
            page,
            `/api/v1/stores/${storeId}/energy?start=2026-10-01&end=2026-10-31`,
          );
          const day = energy.body.days?.find((d) => d.kwh !== null)?.business_date ?? "2026-10-15";
          const pages: ReadonlyArray<readonly [string, string, string]> = [
            ["portfolio", "/console/portfolio", "[data-testid=portfolio-row]"],
            ["stores", "/console/stores", "[data-testid=store-row]"],
            ["store", `/console/stores/${storeId}`, "main h1"],
            ["day", `/console/stores/${storeId}/days/${day}`, "main h1"],
            ["changes", "/console/changes", "main h1"],
            ["imports", "/console/imports", "main h1"],
            ["unknown page", "/console/nope", "main h1"],
            ["missing store", "/console/stores/999999", "[data-testid=store-missing]"],
          ];
          for (const language of ["en", "zh-CN"] as const) {
            for (const [name, path, ready] of pages) {
              await page.goto(`${run.base}${path}`, { waitUntil: "networkidle0" });
              await settle(page, ready);
              if (language !== "en" && name === pages[0][0]) await setLanguage(page, language);
              await check(`${name} (${language}, ${width} px)`);
            }
            await setLanguage(page, "en").catch(() => {});
          }
          // On a phone the header leaves the page most of the screen.
          const headerHeight = await page.evaluate(() =>
            // deno-lint-ignore no-explicit-any
            (globalThis as any).document.querySelector("header.top").getBoundingClientRect().height
          );
          if (width < 600) assert.ok(headerHeight <= 160, `header ${headerHeight} px high`);
          await shoot(page, `a11y-${width}`);
          assert.deepEqual(found, [], `axe-core found:\n${found.join("\n")}`);
          assert.deepEqual(errors, []);
        });
      }
    } finally {
      await run.stop();
    }
  },
});
