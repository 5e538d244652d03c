// The language of the text the service writes for people: English or Simplified Chinese, chosen
// from a request's Accept-Language once (the front door, or the HttpApi's contract middleware for a
// request that did not pass it) and held in a FiberRef for the request's fiber, so that business code
// picks a text's form without a language parameter.
import { Effect, FiberRef } from "effect";

export const LANGUAGES = ["en", "zh-CN"] as const;
export type Language = (typeof LANGUAGES)[number];
export const DEFAULT_LANGUAGE: Language = "en";

// A text for people in both languages.
export interface Text {
  readonly en: string;
  readonly zh: string;
}

export const text = (en: string, zh: string): Text => ({ en, zh });

export const pick = (t: Text, language: Language): string => language === "zh-CN" ? t.zh : t.en;

export const CurrentLanguage: FiberRef.FiberRef<Language> = FiberRef.unsafeMake<Language>(
  DEFAULT_LANGUAGE,
);

export const currentLanguage: Effect.Effect<Language> = FiberRef.get(CurrentLanguage);

// An effect run with the given language as the request's.
export const withLanguage =
  (language: Language) => <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    Effect.locally(effect, CurrentLanguage, language);

// Which supported language a language range names: zh, zh-CN, zh-Hans (and its regions) and zh-SG
// are Simplified Chinese; en and en-* English; zh-TW, zh-HK and zh-Hant name a script this
// service does not write, so none.
const languageOfRange = (range: string): Language | "*" | undefined => {
  const r = range.toLowerCase();
  if (r === "*") return "*";
  if (r === "en" || r.startsWith("en-")) return "en";
  if (r === "zh" || r === "zh-cn" || r === "zh-sg" || r === "zh-hans" || r.startsWith("zh-hans-")) {
    return "zh-CN";
  }
  return undefined;
};

const MAX_HEADER_CHARS = 512;
const Q_VALUE = /^q=(0(\.\d{0,3})?|1(\.0{0,3})?)$/i;

/**
 * The language an Accept-Language header chooses (RFC 9110 §12.5.4): each supported language gets
 * the highest q of the ranges that name it ("*" names any language not named otherwise), the
 * highest q wins, a tie goes to the range listed first, q=0 excludes; none named, or no header:
 * English.
 */
export const negotiateLanguage = (header: string | null | undefined): Language => {
  if (header === null || header === undefined || header === "") return DEFAULT_LANGUAGE;
  const named = new Map<Language | "*", { q: number; at: number }>();
  header.slice(0, MAX_HEADER_CHARS).split(",").forEach((part, at) => {
    const [range, ...params] = part.split(";").map((s) => s.trim());
    const language = languageOfRange(range);
    if (language === undefined) return;
    let q = 1;
    for (const p of params) {
      if (Q_VALUE.test(p)) q = Number(p.slice(2));
      else if (/^q=/i.test(p)) q = 0;
    }
    const before = named.get(language);
    if (before === undefined || q > before.q) named.set(language, { q, at: before?.at ?? at });
  });
  const any = named.get("*");
  let best: { language: Language; q: number; at: number } | undefined;
  for (const language of LANGUAGES) {
    const found = named.get(language) ?? any;
    if (found === undefined || found.q <= 0) continue;
    if (best === undefined || found.q > best.q || (found.q === best.q && found.at < best.at)) {
      best = { language, q: found.q, at: found.at };
    }
  }
  return best?.language ?? DEFAULT_LANGUAGE;
};
