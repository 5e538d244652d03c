// The language of the texts for people: Accept-Language negotiation; every refusal, import problem,
// warning, label and note has a Chinese form (property-style, over the catalogs, with random
// arguments); the HTTP answers in zh-CN and en; kept answers and ETags by language.
import assert from "node:assert/strict";
import { Effect } from "effect";
import { ERROR_CODES } from "../src/domain/error_codes.ts";
import { negotiateLanguage, type Text } from "../src/domain/language.ts";
import { Messages } from "../src/domain/messages.ts";
import { Problems } from "../src/imports/problem_texts.ts";
import { warningText } from "../src/imports/plausibility.ts";
import { readTexts } from "../src/reads/read_texts.ts";
import { describeQuality, flagMessage, type QualityResult } from "../src/quality/quality_rules.ts";
import { generateSnapshot } from "../src/seed/generate.ts";
import { loadSnapshot } from "../src/seed/load.ts";
import { assertErrorBody, makeTestApp } from "./helpers.ts";

const CJK = /[\u4e00-\u9fff]/;

// Words a Chinese text may hold: names of protocol parts, headers, formats and commands, which are
// identifiers, not English prose.
const IDENTIFIERS = new Set([
  "Authorization",
  "Bearer",
  "Origin",
  "Content",
  "Length",
  "Encoding",
  "Host",
  "Cookie",
  "Idempotency",
  "Key",
  "Data",
  "Token",
  "application",
  "json",
  "base",
  "deno",
  "task",
  "console",
  "build",
  "read",
  "write",
  "raw",
  "after",
  "start",
  "end",
  "api",
  "stores",
  "metrics",
  "store",
  "kWh",
  "MiB",
  "Excel",
  // Field names of the answers, named in the notes.
  "provisional",
  "reasons",
  "availability",
  // A JSON value.
  "null",
]);

// The English words of a text, once codes (CAPITALS), snake_case identifiers, placeholders and the
// given data values are taken out.
const englishWords = (text: string, data: ReadonlyArray<string>) => {
  let rest = text;
  for (const value of data) rest = rest.split(value).join(" ");
  rest = rest
    .replace(/<[^>]*>/g, " ")
    .replace(/\.[a-z]+\b/g, " ")
    .replace(/\b[A-Za-z0-9]+(?:_[A-Za-z0-9]+)+\b/g, " ")
    .replace(/\{[a-z_]+\}/g, " ");
  return (rest.match(/[A-Za-z]{3,}/g) ?? []).filter((w) =>
    w !== w.toUpperCase() && !IDENTIFIERS.has(w)
  );
};

const assertChinese = (text: string, data: ReadonlyArray<string>, what: string) => {
  assert.ok(CJK.test(text), `${what}: no Chinese in ${JSON.stringify(text)}`);
  const words = englishWords(text, data);
  assert.deepEqual(words, [], `${what}: English words ${words} in ${JSON.stringify(text)}`);
};

// A random argument that reads as a number, a string and a Text alike (the catalogs' functions
// take ids, counts, names and texts of places).
const randomArgument = () => {
  const n = 1 + Math.floor(Math.random() * 100_000);
  return Object.assign(new String(String(n)), { en: `row ${n}`, zh: `第 ${n} 行` });
};

// deno-lint-ignore no-explicit-any
type AnyFunction = (...args: Array<any>) => Text & { code?: string };

// Entries that carry texts made elsewhere (decoding problems, a file's problems, places) are
// checked where those are made.
const CARRIERS = new Set(["decodeFailed", "fileRefused", "rows"]);

const exercise = (catalog: Record<string, AnyFunction>, runs: number) => {
  const codes = new Set<string>(["INVALID_REQUEST", "INVALID_FILE"]);
  for (const [name, make] of Object.entries(catalog)) {
    if (CARRIERS.has(name)) continue;
    for (let run = 0; run < runs; run++) {
      const args = Array.from({ length: Math.max(make.length, 4) }, randomArgument);
      const made = make(...args);
      if (made.code !== undefined) codes.add(made.code);
      const data = args.flatMap((a) => [String(a), a.zh]);
      assertChinese(made.zh, data, name);
      assert.ok(
        made.en.length > 0 && !CJK.test(made.en.replace(/[品牌门店日期能耗备注名称作废月日]/g, "")),
      );
    }
  }
  return codes;
};

Deno.test("Accept-Language: q-values between en and zh-CN, English by default", () => {
  const cases: Array<[string | null, string]> = [
    [null, "en"],
    ["", "en"],
    ["zh-CN", "zh-CN"],
    ["zh", "zh-CN"],
    ["zh-Hans", "zh-CN"],
    ["zh-Hans-CN", "zh-CN"],
    ["ZH-cn", "zh-CN"],
    ["zh-CN;q=0.8, en;q=0.9", "en"],
    ["en;q=0.5, zh-CN;q=0.9", "zh-CN"],
    ["en, zh-CN", "en"],
    ["zh-CN, en", "zh-CN"],
    ["fr, zh;q=0.3", "zh-CN"],
    ["zh-TW", "en"],
    ["zh-CN;q=0", "en"],
    ["*", "en"],
    ["zh-CN;q=0.1, *;q=0.5", "en"],
    ["de, *;q=0.1, en;q=0", "zh-CN"],
    ["zh-CN;q=bogus, en;q=0.2", "en"],
    ["en-GB;q=0.7, zh-SG;q=0.8", "zh-CN"],
  ];
  for (const [header, want] of cases) assert.equal(negotiateLanguage(header), want, String(header));
});

Deno.test("every error code has Chinese messages, without English words, for random arguments", () => {
  const codes = exercise(Messages as unknown as Record<string, AnyFunction>, 25);
  const missing = ERROR_CODES.map((e) => e.code).filter((c) => !codes.has(c));
  assert.deepEqual(missing, [], "codes without a message in the catalog");
  for (const code of codes) {
    assert.ok(ERROR_CODES.some((e) => e.code === code), `${code} is not in ERROR_CODES`);
  }
});

Deno.test("import problems, plausibility warnings, labels and notes have Chinese forms", () => {
  exercise(Problems as unknown as Record<string, AnyFunction>, 25);
  for (const code of ["DROP_TO_ZERO", "FAR_ABOVE_RECENT", "FAR_BELOW_RECENT"] as const) {
    for (const before of ["12.5000", null]) {
      const w = warningText({
        code,
        value_kwh: "99999.9000",
        before_kwh: before,
        recent_mean_kwh: "30.1234",
        recent_days: 21,
      }, "2026-07-09");
      assertChinese(w.zh, ["99999.9000", "12.5000", "30.1234", "2026-07-09"], code);
    }
  }
  for (const t of readTexts()) assertChinese(t.zh, [], t.en);
});

Deno.test("data quality notes and flag messages have Chinese forms, in the language asked", () => {
  const flag = (date: string, kind: QualityResult["flags"][number]["kind"]) => ({
    business_date: date,
    kind,
    energy_status: "AVAILABLE" as const,
    energy_kwh: "12.5000",
    message: "",
    device_count: 1,
    devices: [],
  });
  const dates = Array.from({ length: 7 }, (_, i) => `2026-07-0${i + 1}`);
  const kinds = [
    "NO_DATA_WHILE_ONLINE",
    "ZERO_WHILE_ONLINE",
    "POSITIVE_WHILE_ALL_OFFLINE",
  ] as const;
  const result: QualityResult = {
    summary: {
      requested_days: 30,
      device_count: 2,
      checked_days: 17,
      agreeing_days: 10,
      flagged_days: 7,
      flagged_by_kind: {
        NO_DATA_WHILE_ONLINE: 3,
        ZERO_WHILE_ONLINE: 2,
        POSITIVE_WHILE_ALL_OFFLINE: 2,
      },
      no_evidence_days: 5,
      partial_evidence_days: 4,
      void_days: 4,
    },
    flags: dates.map((d, i) => flag(d, kinds[i % 3])),
    verdicts: [],
  };
  const noDevices: QualityResult = {
    ...result,
    summary: { ...result.summary, device_count: 0, flagged_days: 0, checked_days: 0 },
    flags: [],
  };
  const agreeing: QualityResult = {
    ...result,
    summary: { ...result.summary, flagged_days: 0 },
    flags: [],
  };
  for (const r of [result, noDevices, agreeing]) {
    const en = describeQuality(r);
    const cn = describeQuality(r, "zh-CN");
    assert.equal(cn.length, en.length);
    for (const n of en) assert.ok(!CJK.test(n), n);
    for (const n of cn) assertChinese(n, [...dates, "kWh"], n);
  }
  assert.match(describeQuality(result)[0], /2026-07-05 and 2 more/);
  for (const kind of kinds) {
    for (const total of [1, 3]) {
      const m = flagMessage(kind, kind === "NO_DATA_WHILE_ONLINE" ? null : "12.5000", 1, total);
      assert.ok(!CJK.test(m.en), m.en);
      assertChinese(m.zh, ["12.5000"], kind);
    }
  }
});

// --- Over HTTP

const app = await makeTestApp(
  (db) => db.run(Effect.asVoid(loadSnapshot(generateSnapshot({ stores: 3 }), { reset: false }))),
);
const reader = await app.key(["read"]);
const writer = await app.key(["read", "write", "raw"]);
const narrow = await app.key(["read"], { stores: [1] });
const zh = { "accept-language": "zh-CN" };
const stores = (await app.call("GET", "/api/v1/stores", { key: reader.key })).body as {
  stores: Array<{ id: number; scope_id: number }>;
};
const store = stores.stores[0];
const dataset = (await app.call("GET", "/api/v1/dataset", { key: reader.key })).body as {
  start: string;
  end: string;
};

const refusals: Array<[string, string, Record<string, unknown>, number, string]> = [
  ["GET", "/api/v1/stores", {}, 401, "MISSING_CREDENTIAL"],
  ["GET", "/api/v1/stores", { key: "esk_not_a_key" }, 401, "INVALID_CREDENTIAL"],
  ["GET", "/api/v1/nowhere", { key: reader.key }, 404, "NOT_FOUND"],
  ["DELETE", "/api/v1/stores", { key: reader.key }, 405, "METHOD_NOT_ALLOWED"],
  ["GET", `/api/v1/stores/999/reference`, { key: reader.key }, 404, "NOT_FOUND"],
  [
    "GET",
    `/api/v1/stores/${store.id}/energy?scope_id=${store.scope_id}&start=2026-13-01&end=2026-01-02`,
    {
      key: reader.key,
    },
    400,
    "INVALID_REQUEST",
  ],
  [
    "GET",
    `/api/v1/stores/${store.id}/energy?scope_id=${store.scope_id}&start=2026-02-01&end=2026-01-02`,
    {
      key: reader.key,
    },
    400,
    "INVALID_RANGE",
  ],
  [
    "GET",
    `/api/v1/stores/${store.id}/energy?scope_id=${store.scope_id}&start=2024-01-01&end=2026-01-02`,
    {
      key: reader.key,
    },
    400,
    "RANGE_TOO_LONG",
  ],
  [
    "GET",
    `/api/v1/stores/${store.id}/energy?scope_id=1&start=2026-01-01&end=2026-01-02`,
    {
      key: reader.key,
    },
    400,
    "INVALID_SCOPE",
  ],
  [
    "GET",
    `/api/v1/stores/${stores.stores[1].id}/reference`,
    { key: narrow.key },
    403,
    "STORE_FORBIDDEN",
  ],
  [
    "POST",
    "/api/v1/imports/preview",
    {
      key: reader.key,
      headers: { "idempotency-key": "k1" },
      body: { filename: "a.csv", content_base64: "", reason: "r" },
    },
    403,
    "PERMISSION_MISSING",
  ],
  [
    "POST",
    "/api/v1/imports/preview",
    {
      key: writer.key,
      headers: { "idempotency-key": "k2" },
      body: "{not json",
    },
    400,
    "INVALID_JSON",
  ],
  [
    "POST",
    "/api/v1/imports/preview",
    {
      key: writer.key,
      headers: { "idempotency-key": "k3" },
      body: { filename: "a.csv", content_base64: "@@@@", reason: "r" },
    },
    400,
    "INVALID_BASE64",
  ],
  [
    "POST",
    "/api/v1/imports/preview",
    {
      key: writer.key,
      headers: { "idempotency-key": "k4" },
      body: {
        filename: "a.csv",
        content_base64: btoa(
          String.fromCharCode(
            ...new TextEncoder().encode("品牌,门店,日期,日能耗\n无此品牌,某店,2026-13-40,-1\n"),
          ),
        ),
        reason: "r",
      },
    },
    400,
    "INVALID_FILE",
  ],
  [
    "POST",
    "/api/v1/imports/preview",
    {
      key: writer.key,
      headers: { "idempotency-key": "k5" },
      body: { filename: "a.csv", reason: "r", extra: 1 },
    },
    400,
    "INVALID_REQUEST",
  ],
];

Deno.test("refusals: Chinese messages with zh-CN, English without, the same code", async () => {
  for (const [method, path, options, status, code] of refusals) {
    const en = await app.call(method, path, options);
    assertErrorBody(en, status, code);
    const message = (en.body as { error: { message: string } }).error.message;
    assert.ok(!CJK.test(message.slice(0, 12)), `${code} en: ${message}`);
    const headers = { ...(options.headers as Record<string, string> ?? {}), ...zh };
    const cn = await app.call(method, path, { ...options, headers });
    assertErrorBody(cn, status, code);
    const text = (cn.body as { error: { message: string } }).error.message;
    // Data in the message (ids, dates, the file's own cells) is not English prose.
    assertChinese(
      text.replace(/"[^"]*"|“[^”]*”/g, " "),
      [path, "extra"],
      `${method} ${path} ${code}`,
    );
    assert.match(cn.headers.get("vary") ?? "", /accept-language/i);
  }
});

type Metrics = {
  availability: Array<{ metric: string; label: string }>;
  notes: Array<string>;
};
const metricsPath = `/api/v1/stores/${store.id}/metrics?scope_id=${store.scope_id}&start=${
  dataset.end.slice(0, 8)
}01&end=${dataset.end}`;

Deno.test("read answers: labels and notes in Chinese with zh-CN, English by default", async () => {
  const en = await app.call("GET", metricsPath, { key: reader.key });
  assert.equal(en.status, 200);
  const cn = await app.call("GET", metricsPath, { key: reader.key, headers: zh });
  assert.equal(cn.status, 200);
  const e = en.body as Metrics, c = cn.body as Metrics;
  for (const a of e.availability) assert.ok(!CJK.test(a.label), a.label);
  for (const a of c.availability) assertChinese(a.label, [], a.metric);
  for (const n of e.notes.filter((n) => !n.startsWith("Data quality"))) assert.ok(!CJK.test(n), n);
  for (const n of c.notes.filter((n) => !n.startsWith("Data quality"))) assertChinese(n, [], n);
  assert.match(cn.headers.get("vary") ?? "", /accept-language/i);

  const periods = await app.call(
    "GET",
    `/api/v1/stores/${store.id}/periods?scope_id=${store.scope_id}&as_of=${dataset.end}`,
    { key: reader.key, headers: zh },
  );
  for (const p of (periods.body as { periods: Array<{ label: string }> }).periods) {
    assertChinese(p.label, [], "period");
  }
  const targets = await app.call(
    "GET",
    `/api/v1/stores/${store.id}/targets?scope_id=${store.scope_id}&start=${dataset.end}&end=${dataset.end}`,
    { key: reader.key, headers: zh },
  );
  assertChinese((targets.body as { note: string }).note, [], "targets note");
  const months = await app.call(
    "GET",
    `/api/v1/stores/${store.id}/months?scope_id=${store.scope_id}&start=${dataset.end}&end=${dataset.end}`,
    { key: reader.key, headers: zh },
  );
  for (const n of (months.body as { notes: Array<string> }).notes) assertChinese(n, [], "months");
  const template = await app.call("GET", "/api/v1/imports/template", {
    key: writer.key,
    headers: zh,
  });
  for (
    const text of Object.values((template.body as { columns: Record<string, string> }).columns)
  ) {
    assertChinese(text, ["YYYY-MM-DD", "VOID"], "template columns");
  }
  const portfolio = await app.call(
    "GET",
    `/api/v1/portfolio?start=${dataset.end}&end=${dataset.end}`,
    { key: reader.key, headers: zh },
  );
  for (const n of (portfolio.body as { notes: Array<string> }).notes) {
    assertChinese(n, [], "portfolio");
  }
});

Deno.test("energy days, a day's versions, data quality and metrics days: the service's words in Chinese with zh-CN", async () => {
  const range = `scope_id=${store.scope_id}&start=${
    dataset.end.slice(0, 5)
  }01-01&end=${dataset.end}`;
  type Day = { business_date: string; source_label: string };
  const energyPath = `/api/v1/stores/${store.id}/energy?${range}`;
  const en = await app.call("GET", energyPath, { key: reader.key });
  const cn = await app.call("GET", energyPath, { key: reader.key, headers: zh });
  assert.equal(cn.status, 200);
  const enDays = (en.body as { days: Array<Day> }).days;
  const cnDays = (cn.body as { days: Array<Day> }).days;
  assert.equal(cnDays.length, enDays.length);
  assert.ok(new Set(cnDays.map((d) => d.source_label)).size >= 2, "several kinds of day");
  for (const d of enDays) assert.ok(!CJK.test(d.source_label), d.source_label);
  for (const d of cnDays) assertChinese(d.source_label, [], d.business_date);
  assert.notEqual(cn.headers.get("etag"), en.headers.get("etag"));
  const asOf = await app.call("GET", `${energyPath}&known_at=${new Date().toISOString()}`, {
    key: reader.key,
    headers: zh,
  });
  assert.deepEqual((asOf.body as { days: Array<Day> }).days, cnDays);

  const day = enDays.find((d) => d.source_label !== "No data")!.business_date;
  const versions = await app.call(
    "GET",
    `/api/v1/stores/${store.id}/energy/${day}/versions`,
    { key: writer.key, headers: zh },
  );
  assert.equal(versions.status, 200);
  const v = versions.body as {
    current: { source_label: string };
    versions: Array<{ source_label: string; actor: { member_id: number | null; label: string } }>;
  };
  assertChinese(v.current.source_label, [], "current");
  for (const r of v.versions) {
    assertChinese(r.source_label, [], "version");
    if (r.actor.member_id === null) assertChinese(r.actor.label, [], "platform");
  }

  const quality = await app.call("GET", `/api/v1/stores/${store.id}/quality?${range}`, {
    key: reader.key,
    headers: zh,
  });
  assert.equal(quality.status, 200);
  const q = quality.body as {
    rule: string;
    notes: Array<string>;
    flags: Array<{ message: string; business_date: string; energy_kwh: string | null }>;
  };
  assert.ok(q.notes.length > 0);
  assertChinese(q.rule, [], "quality rule");
  for (const n of q.notes) assertChinese(n, [], "quality note");
  for (const f of q.flags) assertChinese(f.message, [f.energy_kwh ?? "", "kWh"], f.business_date);

  const summer = `scope_id=${store.scope_id}&start=${dataset.end.slice(0, 4)}-06-01&end=${
    dataset.end.slice(0, 4)
  }-09-30`;
  const metrics = await app.call("GET", `/api/v1/stores/${store.id}/metrics?${summer}`, {
    key: reader.key,
    headers: zh,
  });
  assert.equal(metrics.status, 200);
  const m = metrics.body as { days: Array<{ baseline_reference: string | null }> };
  const references = m.days.map((d) => d.baseline_reference).filter((r) => r !== null);
  assert.ok(references.length > 0, "summer days have a baseline");
  for (const r of references) {
    assertChinese(r!, ["BASELINE", /\d{4}-\d{2}/.exec(r!)![0]], "baseline");
  }
});

Deno.test("kept answers do not cross languages: en kept, then zh-CN is Chinese with its own ETag", async () => {
  const path = metricsPath.replace(/start=[^&]+/, `start=${dataset.end.slice(0, 5)}01-01`);
  // Asked twice, the English answer is kept (read_cache.ts keeps an answer on its second ask).
  const first = await app.call("GET", path, { key: reader.key });
  const second = await app.call("GET", path, { key: reader.key });
  assert.equal(first.headers.get("etag"), second.headers.get("etag"));
  const cn = await app.call("GET", path, { key: reader.key, headers: zh });
  assert.equal(cn.status, 200);
  assert.ok(CJK.test((cn.body as Metrics).availability[0].label));
  assert.notEqual(cn.headers.get("etag"), second.headers.get("etag"));
  // The English ETag does not validate the Chinese answer, nor the other way round.
  const cross = await app.call("GET", path, {
    key: reader.key,
    headers: { ...zh, "if-none-match": second.headers.get("etag")! },
  });
  assert.equal(cross.status, 200);
  const again = await app.call("GET", path, {
    key: reader.key,
    headers: { ...zh, "if-none-match": cn.headers.get("etag")! },
  });
  assert.equal(again.status, 304);
  const back = await app.call("GET", path, { key: reader.key });
  assert.ok(!CJK.test((back.body as Metrics).availability[0].label));
});

Deno.test("close the test app", async () => {
  await app.close();
});
