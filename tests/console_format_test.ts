// The console's formatting helpers (console/format.ts): decimals grouped and rounded by language
// without a float, instants in a zone, and a wall time picked in a zone back to its instant, in a
// zone without daylight saving (Asia/Shanghai), across the date line, and in one with it
// (Europe/Berlin: a skipped and a repeated hour).
import assert from "node:assert/strict";
import { MAX_FILE_BYTES } from "../src/domain/imports.ts";
import { FLAG_KINDS } from "../src/domain/quality.ts";
import { REASON_CODES } from "../src/metrics/engine.ts";
import {
  aboveBaseline,
  DIGITS,
  formatCount,
  formatDecimal,
  formatInstant,
  instantOf,
  instantOfWall,
  isDecimal,
  MAX_FILE_BYTES as CONSOLE_MAX_FILE_BYTES,
  offsetAt,
  tickDate,
  wallInputOf,
  weekdays,
  withNote,
} from "../console/format.ts";

const iso = (ms: number | null) => ms === null ? null : new Date(ms).toISOString();

Deno.test("decimals: grouped and rounded by language, as decimals", () => {
  assert.equal(formatDecimal("15061.8378", DIGITS.kwh, "en"), "15,061.8378");
  assert.equal(formatDecimal("32.6295", DIGITS.kwh, "en"), "32.6295");
  assert.equal(formatDecimal("15061.8378", DIGITS.total, "zh-CN"), "15,061.8");
  assert.equal(formatDecimal("4321.1250", 2, "en"), "4,321.13");
  assert.equal(formatDecimal("0.0000", 2, "en"), "0.00");
  // A float would round 1.005 down (it is 1.00499999…); the string rounds as written.
  assert.equal(formatDecimal("1.005", 2, "en"), "1.01");
  assert.equal(formatDecimal("1234567890123.4567", 2, "en"), "1,234,567,890,123.46");
  assert.equal(formatDecimal("18.2137", DIGITS.percent, "zh-CN"), "18.21");
  assert.equal(formatCount(39675, "en"), "39,675");
  assert.ok(isDecimal("33.8026") && isDecimal("0") && !isDecimal("abc") && !isDecimal("1e3"));
  assert.equal(withNote("Actual", "kWh", "en"), "Actual (kWh)");
  assert.equal(withNote("实际", "kWh", "zh-CN"), "实际（kWh）");
});

Deno.test("instants: shown in the zone, a time without a zone left as it is", () => {
  const at = "2026-11-29T03:30:41.701000Z";
  assert.equal(instantOf(at), Date.UTC(2026, 10, 29, 3, 30, 41, 701));
  assert.equal(formatInstant(at, "Asia/Shanghai"), "2026-11-29 11:30");
  assert.equal(formatInstant(at, "Asia/Shanghai", true), "2026-11-29 11:30:41");
  assert.equal(formatInstant(at, "UTC"), "2026-11-29 03:30");
  // The UTC evening is the next morning in Beijing: the date moves too.
  assert.equal(formatInstant("2026-10-22T20:05:00Z", "Asia/Shanghai"), "2026-10-23 04:05");
  assert.equal(formatInstant("2026-10-22T20:05:00+02:00", "Asia/Shanghai"), "2026-10-23 02:05");
  assert.equal(formatInstant("2026-07-01T00:00:00Z", "Europe/Berlin"), "2026-07-01 02:00");
  assert.equal(formatInstant("2026-01-01T00:00:00Z", "Europe/Berlin"), "2026-01-01 01:00");
  assert.equal(formatInstant("2026-06-03 14:00", "Asia/Shanghai"), "2026-06-03 14:00");
  assert.equal(formatInstant("not a time", "Asia/Shanghai"), "not a time");
  assert.equal(wallInputOf("2026-11-18T06:03:05Z", "Asia/Shanghai"), "2026-11-18T14:03:05");
  assert.equal(wallInputOf("", "Asia/Shanghai"), "");
  assert.equal(offsetAt(Date.UTC(2026, 6, 1), "Asia/Shanghai"), 8 * 3_600_000);
  assert.equal(offsetAt(Date.UTC(2026, 6, 1), "Europe/Berlin"), 2 * 3_600_000);
  assert.equal(offsetAt(Date.UTC(2026, 0, 1), "Europe/Berlin"), 3_600_000);
});

Deno.test("as known at: a wall time in Asia/Shanghai (no daylight saving) to its instant", () => {
  assert.equal(iso(instantOfWall("2026-11-18T14:03", "Asia/Shanghai")), "2026-11-18T06:03:00.000Z");
  // Before 08:00 in Beijing it is still the day before in UTC.
  assert.equal(
    iso(instantOfWall("2026-11-19T03:00:30", "Asia/Shanghai")),
    "2026-11-18T19:00:30.000Z",
  );
  assert.equal(
    iso(instantOfWall("2027-01-01T00:00:00", "Asia/Shanghai")),
    "2026-12-31T16:00:00.000Z",
  );
  // Round trip: every hour of a year shows again as picked.
  for (let h = 0; h < 365 * 24; h += 7) {
    const ms = Date.UTC(2026, 0, 1) + h * 3_600_000;
    const wall = wallInputOf(new Date(ms).toISOString(), "Asia/Shanghai");
    assert.equal(instantOfWall(wall, "Asia/Shanghai"), ms, wall);
  }
});

Deno.test("as known at: across the international date line", () => {
  // Kiritimati is 14 hours ahead of UTC, Pago Pago 11 hours behind: the same instant is the 19th
  // on one side of the line and the 18th, 25 hours earlier by the clock, on the other.
  const kiritimati = instantOfWall("2026-11-19T09:00", "Pacific/Kiritimati");
  const pagoPago = instantOfWall("2026-11-18T08:00", "Pacific/Pago_Pago");
  assert.equal(iso(kiritimati), "2026-11-18T19:00:00.000Z");
  assert.equal(kiritimati, pagoPago);
  assert.equal(formatInstant(iso(kiritimati)!, "Asia/Shanghai"), "2026-11-19 03:00");
  // Samoa skipped 2011-12-30 when it moved across the line: a time of that day lands a day on.
  assert.equal(
    iso(instantOfWall("2011-12-30T12:00", "Pacific/Apia")),
    "2011-12-30T22:00:00.000Z",
  );
  assert.equal(formatInstant("2011-12-30T22:00:00Z", "Pacific/Apia"), "2011-12-31 12:00");
});

Deno.test("as known at: Europe/Berlin, with its skipped and its repeated hour", () => {
  assert.equal(iso(instantOfWall("2026-07-01T12:00", "Europe/Berlin")), "2026-07-01T10:00:00.000Z");
  assert.equal(iso(instantOfWall("2026-01-15T12:00", "Europe/Berlin")), "2026-01-15T11:00:00.000Z");
  // Just before and after the clocks go forward (2026-03-29, 02:00 CET becomes 03:00 CEST).
  assert.equal(iso(instantOfWall("2026-03-29T01:59", "Europe/Berlin")), "2026-03-29T00:59:00.000Z");
  assert.equal(iso(instantOfWall("2026-03-29T03:00", "Europe/Berlin")), "2026-03-29T01:00:00.000Z");
  // 02:30 does not exist that day: it is read as CET, 03:30 CEST.
  const skipped = instantOfWall("2026-03-29T02:30", "Europe/Berlin");
  assert.equal(iso(skipped), "2026-03-29T01:30:00.000Z");
  assert.equal(formatInstant(iso(skipped)!, "Europe/Berlin"), "2026-03-29 03:30");
  // 02:30 happens twice on 2026-10-25 (CEST, then CET): the earlier one.
  assert.equal(iso(instantOfWall("2026-10-25T02:30", "Europe/Berlin")), "2026-10-25T00:30:00.000Z");
  assert.equal(iso(instantOfWall("2026-10-25T03:30", "Europe/Berlin")), "2026-10-25T02:30:00.000Z");
  assert.equal(iso(instantOfWall("2026-10-25T01:59", "Europe/Berlin")), "2026-10-24T23:59:00.000Z");
  // Round trip over a year, every hour that is not the repeated one.
  for (let h = 0; h < 365 * 24; h += 1) {
    const ms = Date.UTC(2026, 0, 1) + h * 3_600_000;
    const wall = wallInputOf(new Date(ms).toISOString(), "Europe/Berlin");
    if (wall.startsWith("2026-10-25T02:")) continue;
    assert.equal(instantOfWall(wall, "Europe/Berlin"), ms, wall);
  }
});

Deno.test("as known at: what is no wall time is refused", () => {
  for (const text of ["", "2026-02-30T10:00", "2026-11-18T24:00", "2026-11-18 14:03", "now"]) {
    assert.equal(instantOfWall(text, "Asia/Shanghai"), null, text);
  }
});

Deno.test("weekdays and chart ticks in words", () => {
  assert.equal(weekdays("1,2,3,4,5", "en"), "Mon, Tue, Wed, Thu, Fri");
  assert.equal(weekdays("6,7", "zh-CN"), "周六、周日");
  assert.equal(weekdays("weekends", "en"), "weekends");
  const nov18 = Date.UTC(2026, 10, 18) / 1000;
  assert.equal(tickDate(nov18, false, "en"), "Nov 18");
  assert.equal(tickDate(nov18, false, "zh-CN"), "11月18日");
  assert.equal(tickDate(Date.UTC(2026, 0, 1) / 1000, true, "zh-CN"), "2026年1月");
});

Deno.test("savings above the baseline are told apart from missing savings; the file cap is the service's", () => {
  // Null savings over matched days: actual above the baseline (NEGATIVE_SAVINGS).
  assert.equal(aboveBaseline({ aes_kwh: null, matched_days: 3 }), true);
  // No matched day: no savings to speak of.
  assert.equal(aboveBaseline({ aes_kwh: null, matched_days: 0 }), false);
  assert.equal(aboveBaseline({ aes_kwh: "0.0000", matched_days: 3 }), false);
  assert.equal(CONSOLE_MAX_FILE_BYTES, MAX_FILE_BYTES);
});

// The console's modules that are written for a browser (they reference the DOM's types, which
// would change the types of every test checked with this file), loaded untyped, with a page for
// them to set the language on.
type Texts = {
  setLanguage: (lang: "en" | "zh-CN") => void;
  words: (code: string) => string;
};
type Ui = {
  errorText: (error: unknown) => string;
  setTimeZone: (zone: string) => void;
};
type Api = {
  ApiError: new (status: number, code: string, message: string) => unknown;
};
const browserModule = <T>(path: string): Promise<T> => {
  const page = globalThis as unknown as { document?: unknown };
  page.document ??= { documentElement: {} };
  return import(new URL(path, import.meta.url).href);
};

Deno.test("every reason the metrics and every flag the device-report check give is told in words, in both languages", async () => {
  const { setLanguage, words } = await browserModule<Texts>("../console/i18n.ts");
  const codes = [...REASON_CODES, ...FLAG_KINDS];
  for (const lang of ["en", "zh-CN"] as const) {
    setLanguage(lang);
    for (const code of codes) assert.notEqual(words(code), code, `${lang}: ${code}`);
  }
});

Deno.test("a refusal's message names the service's instants in the dataset's zone, its code with the language's colon", async () => {
  const { setLanguage } = await browserModule<Texts>("../console/i18n.ts");
  const { errorText, setTimeZone } = await browserModule<Ui>("../console/ui.ts");
  const { ApiError } = await browserModule<Api>("../console/api.ts");
  setTimeZone("Asia/Shanghai");
  const kept = (message: string) => new ApiError(409, "HISTORY_NOT_KEPT", message);
  setLanguage("en");
  assert.equal(
    errorText(kept("history from 2026-12-01T14:43:37.559000Z; ask later")),
    "The history of the data does not reach back that far: history from 2026-12-01 22:43:37 " +
      "(Asia/Shanghai); ask later",
  );
  setLanguage("zh-CN");
  assert.equal(
    errorText(kept("历史始于 2026-12-01T14:43:37Z")),
    "数据历史未保留到那么早：历史始于 2026-12-01 22:43:37 (Asia/Shanghai)",
  );
  setLanguage("en");
});
