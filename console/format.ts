// How the console writes numbers and instants for people, as plain functions of the value, the
// language and the time zone (no page state, so they are tested without a browser): decimals
// grouped and rounded by the language, instants in the dataset's time zone, a unit or a zone added
// to a heading, and a wall time picked in a zone turned back into the instant it names.
import { type Wall, wallAt } from "../src/domain/wall_clock.ts";

// Decimals shown per kind of value: a day's kWh with the service's 4 (a correction that changes the
// third or fourth decimal must be seen), a sum over a range with 1, a percent with 2.
export const DIGITS = { kwh: 4, total: 1, percent: 2 } as const;

// The largest import file the service takes (the contract's cap, src/domain/imports.ts
// MAX_FILE_BYTES, which the tests compare): a larger one is refused here, not sent.
export const MAX_FILE_BYTES = 4 * 1024 * 1024;

const numberFormats = new Map<string, Intl.NumberFormat>();
const numberFormat = (lang: string, digits: number) => {
  const key = `${lang} ${digits}`;
  let format = numberFormats.get(key);
  if (format === undefined) {
    format = new Intl.NumberFormat(lang, {
      minimumFractionDigits: digits,
      maximumFractionDigits: digits,
    });
    numberFormats.set(key, format);
  }
  return format;
};

// A decimal string of the service, grouped and rounded. Intl is handed the string itself, which it
// rounds as a decimal (half away from zero), never through a binary float.
export const formatDecimal = (value: string, digits: number, lang: string) =>
  numberFormat(lang, digits).format(value as Intl.StringNumericLiteral);

export const formatCount = (value: number, lang: string) => numberFormat(lang, 0).format(value);

// A number already a float (a chart's tick), grouped, with the decimals it has (up to 3).
export const formatTick = (value: number, lang: string) =>
  new Intl.NumberFormat(lang, { maximumFractionDigits: 3 }).format(value);

// Whether a text is a decimal as the service writes them (an import row's raw cell may be not).
export const isDecimal = (text: string) => /^-?\d+(\.\d+)?$/.test(text);

// A summary whose savings are negative: the service gives them as null (NEGATIVE_SAVINGS, actual
// above the baseline over the matched days), where null savings with no matched day mean no data.
export const aboveBaseline = (
  s: { readonly aes_kwh: string | null; readonly matched_days: number },
) => s.aes_kwh === null && s.matched_days > 0;

// A column heading with its unit or a note: "Actual (kWh)", "实际（kWh）".
export const withNote = (label: string, note: string, lang: string) =>
  lang === "zh-CN" ? `${label}（${note}）` : `${label} (${note})`;

// A label before its value ("Dataset: ", "数据集："), and items of a list ("a, b", "a、b"; "a; b",
// "a；b" for items that may hold commas), with the language's own punctuation.
export const colonAfter = (label: string, lang: string) =>
  lang === "zh-CN" ? `${label}：` : `${label}: `;
export const listOf = (items: ReadonlyArray<string>, lang: string, long = false) =>
  items.join(lang === "zh-CN" ? (long ? "；" : "、") : (long ? "; " : ", "));

// --- Instants.

// An instant as the service writes it: an ISO 8601 date and time with Z or an offset. A time
// without a zone names no instant and is shown as it is.
const INSTANT = /^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})$/;

export const instantOf = (text: string): number | null => {
  if (!INSTANT.test(text)) return null;
  const ms = Date.parse(text.replace(" ", "T"));
  return Number.isNaN(ms) ? null : ms;
};

const pad = (n: number, width = 2) => String(n).padStart(width, "0");
const wallText = (w: Wall, seconds: boolean, separator: string) =>
  `${pad(w.year, 4)}-${pad(w.month)}-${pad(w.day)}${separator}${pad(w.hour)}:${pad(w.minute)}${
    seconds ? `:${pad(w.second)}` : ""
  }`;

// An instant of the service in a zone, "2026-11-18 14:03" (with seconds on request); a text that
// names no instant comes back as it is.
export const formatInstant = (text: string, zone: string, seconds = false) => {
  const ms = instantOf(text);
  return ms === null ? text : wallText(wallAt(ms, zone), seconds, " ");
};

// The same as a datetime-local input's value ("2026-11-18T14:03:05"), or "" for no instant.
export const wallInputOf = (text: string, zone: string) => {
  const ms = instantOf(text);
  return ms === null ? "" : wallText(wallAt(ms, zone), true, "T");
};

// How far a zone's wall clock is ahead of UTC at an instant, in milliseconds.
export const offsetAt = (ms: number, zone: string) => {
  const w = wallAt(ms, zone);
  const asUtc = Date.UTC(w.year, w.month - 1, w.day, w.hour, w.minute, w.second);
  return asUtc - (ms - (((ms % 1000) + 1000) % 1000));
};

// The instant a wall time of a zone names ("2026-11-18T14:03" or with seconds), in milliseconds;
// null when the text is no such time. The wall time is read as UTC, then moved back by the zone's
// offset. The offset is taken a day before and a day after (a zone changes it at most once within
// that span), and each candidate is kept when the zone's clock shows the picked time at it:
// - one candidate fits (most times): that one;
// - two fit (a clock set back repeats an hour, as Berlin's in October): the earlier;
// - none fits (a clock set forward skips an hour, as Berlin's in March): the time is read with the
//   offset before the change, which lands as far past the gap as the time was into it.
// These are the rules of Temporal's "compatible" disambiguation.
export const instantOfWall = (text: string, zone: string): number | null => {
  const m = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2}))?$/.exec(text);
  if (m === null) return null;
  const [year, month, day, hour, minute, second] = m.slice(1).map((s) => Number(s ?? 0));
  const asUtc = Date.UTC(year, month - 1, day, hour, minute, second);
  const check = new Date(asUtc);
  if (
    check.getUTCFullYear() !== year || check.getUTCMonth() !== month - 1 ||
    check.getUTCDate() !== day || hour > 23 || minute > 59 || second > 59
  ) return null;
  const DAY = 86_400_000;
  const before = asUtc - offsetAt(asUtc - DAY, zone);
  const after = asUtc - offsetAt(asUtc + DAY, zone);
  const fits = [before, after].filter((ms) => {
    const w = wallAt(ms, zone);
    return Date.UTC(w.year, w.month - 1, w.day, w.hour, w.minute, w.second) === asUtc;
  });
  return fits.length === 0 ? before : Math.min(...fits);
};

// --- Dates and weekdays in words.

// Weekdays as the legacy strategies number them, 1 (Monday) to 7 (Sunday), in the language's
// short names: "1,2,3,4,5" becomes "Mon, Tue, Wed, Thu, Fri"; anything else stays as it is.
export const weekdays = (text: string, lang: string) => {
  const days = text.split(",").map((s) => s.trim());
  if (!days.every((d) => /^[1-7]$/.test(d))) return text;
  const format = new Intl.DateTimeFormat(lang, { weekday: "short", timeZone: "UTC" });
  // 2024-01-01 was a Monday.
  return days.map((d) => format.format(Date.UTC(2024, 0, Number(d)))).join(
    lang === "zh-CN" ? "、" : ", ",
  );
};

// A chart's date tick: "Nov 18" / "11月18日", or "Jan 2026" / "2026年1月" on the first of a month
// when the ticks are months.
export const tickDate = (seconds: number, months: boolean, lang: string) =>
  new Intl.DateTimeFormat(
    lang,
    months
      ? { year: "numeric", month: "short", timeZone: "UTC" }
      : { month: "short", day: "numeric", timeZone: "UTC" },
  ).format(seconds * 1000);
