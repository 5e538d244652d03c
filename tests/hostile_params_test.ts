// Hostile parameters: every date, instant and id a request may carry is either accepted and read
// by the database as written, or refused with 400 before it reaches the database; none is a 500.
// Instants valid and nearly valid (days that do not exist, years 0000 and 10000, offsets beyond
// ±14:00, hour 24, a leap second, seven fraction digits, lower-case t and z, no offset) go as
// known_at to energy, targets, metrics and periods; dates as start, end, as_of and a path date;
// ids beyond PostgreSQL's integer as path and query ids.
import assert from "node:assert/strict";
import { Effect, FastCheck as fc } from "effect";
import { isCalendarDate } from "../src/domain/common.ts";
import { isInstant } from "../src/domain/as_of.ts";
import { addDays } from "../src/domain/range.ts";
import { generateSnapshot } from "../src/seed/generate.ts";
import { loadSnapshot } from "../src/seed/load.ts";
import { type Answer, assertErrorBody, makeTestApp } from "./helpers.ts";
import { storesOf } from "./import_helpers.ts";

const snapshot = generateSnapshot({ stores: 2 });
const end = snapshot.dataset.end;
const app = await makeTestApp((db) =>
  db.run(Effect.asVoid(loadSnapshot(snapshot, { reset: false })))
);
const key = await app.key(["read", "write", "raw"], { member: "hostile" });
const [store] = await storesOf(app, key.key);
const start = addDays(end, -6);
const range = `scope_id=${store.scope_id}&start=${start}&end=${end}`;
const reads = [
  `/api/v1/stores/${store.id}/energy?${range}`,
  `/api/v1/stores/${store.id}/targets?${range}`,
  `/api/v1/stores/${store.id}/metrics?${range}`,
  `/api/v1/stores/${store.id}/periods?scope_id=${store.scope_id}&as_of=${end}`,
];

const get = (path: string) => app.call("GET", path, { key: key.key });

// A refusal: 400 INVALID_REQUEST, its message short and free of the value sent.
const assertRefused = (answer: Answer, value: string, what: string) => {
  assertErrorBody(answer, 400, "INVALID_REQUEST");
  assert.ok(answer.body.error.message.length < 400, what);
  if (value.length > 12) {
    assert.ok(!answer.body.error.message.includes(value), `${what}: the value is not echoed`);
  }
};

const pad = (n: number, width: number) => String(n).padStart(width, "0");

// --- Instants.

interface Instant {
  readonly text: string;
  // Whether it is a real instant this service takes (checked independently of the validator).
  readonly valid: boolean;
}

const isLeap = (y: number) => y % 4 === 0 && (y % 100 !== 0 || y % 400 === 0);
const daysIn = (y: number, m: number) =>
  [31, isLeap(y) ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][m - 1];

const instant = fc.record({
  year: fc.oneof(
    fc.integer({ min: 2020, max: 2030 }),
    fc.constantFrom(0, 1, 1900, 2000, 2100, 2400, 9999, 10000),
  ),
  month: fc.oneof(fc.integer({ min: 1, max: 12 }), fc.constantFrom(0, 13)),
  // Past a month's end by up to three days, or its last days, or Feb 29.
  day: fc.oneof(fc.integer({ min: 0, max: 34 }), fc.constant(29)),
  hour: fc.oneof(fc.integer({ min: 0, max: 23 }), fc.constant(24)),
  minute: fc.oneof(fc.integer({ min: 0, max: 59 }), fc.constant(60)),
  second: fc.oneof(fc.integer({ min: 0, max: 59 }), fc.constant(60)),
  fraction: fc.integer({ min: 0, max: 7 }),
  zone: fc.oneof(
    fc.constantFrom("Z", "z", ""),
    fc.record({
      sign: fc.constantFrom("+", "-"),
      hours: fc.oneof(fc.integer({ min: 0, max: 14 }), fc.integer({ min: 14, max: 23 })),
      minutes: fc.oneof(fc.constantFrom(0, 30, 45, 59), fc.constant(60)),
    }),
  ),
  separator: fc.constantFrom("T", "T", "t"),
}).map((p): Instant => {
  const zone = typeof p.zone === "string"
    ? p.zone
    : `${p.zone.sign}${pad(p.zone.hours, 2)}:${pad(p.zone.minutes, 2)}`;
  const fraction = p.fraction === 0 ? "" : `.${"1234567".slice(0, p.fraction)}`;
  const text = `${pad(p.year, 4)}-${pad(p.month, 2)}-${pad(p.day, 2)}${p.separator}` +
    `${pad(p.hour, 2)}:${pad(p.minute, 2)}:${pad(p.second, 2)}${fraction}${zone}`;
  const offsetOk = typeof p.zone === "string"
    ? p.zone !== ""
    : p.zone.minutes <= 59 && p.zone.hours * 60 + p.zone.minutes <= 14 * 60;
  const valid = p.year >= 1 && p.year <= 9999 && p.month >= 1 && p.month <= 12 &&
    p.day >= 1 && p.day <= daysIn(p.year, p.month) && p.hour <= 23 && p.minute <= 59 &&
    p.second <= 59 && p.fraction <= 6 && offsetOk;
  return { text, valid };
});

// What a valid instant may answer: 200, or before the first commit (409 HISTORY_NOT_KEPT), or
// still to come (400 INVALID_REQUEST).
const assertInstantAnswer = (answer: Answer, sent: Instant, path: string) => {
  const what = `${path} known_at=${sent.text}: ${JSON.stringify(answer.body).slice(0, 200)}`;
  assert.ok(answer.status < 500, what);
  if (!sent.valid) return assertRefused(answer, sent.text, what);
  const code = answer.body?.error?.code;
  const ms = Date.parse(sent.text.toUpperCase());
  if (answer.status === 409) assert.equal(code, "HISTORY_NOT_KEPT", what);
  else if (answer.status === 400) {
    assert.equal(code, "INVALID_REQUEST", what);
    assert.ok(!(ms <= Date.now()), `${what}: only an instant to come is refused`);
  } else assert.equal(answer.status, 200, what);
};

Deno.test("the validator's instants are exactly the real ones", () => {
  fc.assert(
    fc.property(instant, (sent) => assert.equal(isInstant(sent.text), sent.valid, sent.text)),
    { numRuns: 2000 },
  );
  for (
    const [text, valid] of [
      ["2026-02-29T00:00:00Z", false],
      ["2028-02-29T00:00:00Z", true],
      ["2100-02-29T00:00:00Z", false],
      ["2000-02-29T00:00:00Z", true],
      ["2026-04-31T08:00:00+08:00", false],
      ["0000-01-01T00:00:00Z", false],
      ["2026-01-01T20:00:00-16:00", false],
      ["2026-01-01T20:00:00+14:00", true],
      ["2026-01-01T20:00:00+14:01", false],
      ["2026-01-01T24:00:00Z", false],
      ["2026-12-31T23:59:60Z", false],
      ["2026-01-01T00:00:00.123456Z", true],
      ["2026-01-01T00:00:00.1234567Z", false],
      ["2026-01-01t00:00:00z", true],
      ["2026-01-01 00:00:00Z", true],
      ["2026-01-01T00:00:00", false],
    ] as const
  ) assert.equal(isInstant(text), valid, text);
});

Deno.test("property: known_at of any shape is answered (valid) or refused with 400 (invalid), never 500", async () => {
  // Instants of the data's own days too, where reads are 200.
  const near = fc.record({
    days: fc.integer({ min: -3, max: 2 }),
    zone: fc.constantFrom("Z", "+08:00", "-14:00", "+14:00", "+05:45"),
  }).map(({ days, zone }): Instant => ({
    text: `${new Date(Date.now() + days * 86_400_000).toISOString().slice(0, 19)}${zone}`,
    valid: true,
  }));
  await fc.assert(
    fc.asyncProperty(fc.oneof(instant, near), fc.constantFrom(...reads), async (sent, path) => {
      const answer = await get(`${path}&known_at=${encodeURIComponent(sent.text)}`);
      assertInstantAnswer(answer, sent, path);
    }),
    { numRuns: 120 },
  );
});

Deno.test("the instants named in the issue: each read answers 400, none 500", async () => {
  for (
    const text of [
      "2026-02-29T00:00:00Z",
      "2026-04-31T08:00:00+08:00",
      "0000-06-01T00:00:00Z",
      "2026-01-01T20:00:00-16:00",
      "2026-01-01T20:00:00+15:59",
      "2026-01-01T23:59:60Z",
      "x".repeat(500),
    ]
  ) {
    for (const path of reads) {
      const answer = await get(`${path}&known_at=${encodeURIComponent(text)}`);
      assertRefused(answer, text, `${path} known_at=${text.slice(0, 40)}`);
    }
  }
  // The far ends of what is taken: before the first commit, still to come.
  for (const path of reads) {
    assertErrorBody(
      await get(`${path}&known_at=0001-01-01T00:00:00%2B14:00`),
      409,
      "HISTORY_NOT_KEPT",
    );
    assertErrorBody(
      await get(`${path}&known_at=9999-12-31T23:59:59-14:00`),
      400,
      "INVALID_REQUEST",
    );
  }
});

// --- Dates.

const date = fc.record({
  year: fc.oneof(
    fc.integer({ min: 2020, max: 2030 }),
    fc.constantFrom(0, 1, 99, 100, 1900, 2000, 2100, 9999),
  ),
  month: fc.integer({ min: 0, max: 13 }),
  day: fc.integer({ min: 0, max: 32 }),
}).map(({ year, month, day }) => ({
  text: `${pad(year, 4)}-${pad(month, 2)}-${pad(day, 2)}`,
  valid: year >= 1 && month >= 1 && month <= 12 && day >= 1 && day <= daysIn(year, month),
}));

Deno.test("the validator's dates are exactly the real ones", () => {
  fc.assert(
    fc.property(date, (d) => assert.equal(isCalendarDate(d.text), d.valid, d.text)),
    { numRuns: 2000 },
  );
  for (const text of ["10000-01-01", "2026-2-01", "+02026-01-01", "2026-01-01T00:00:00Z"]) {
    assert.equal(isCalendarDate(text), false, text);
  }
});

Deno.test("property: dates of any shape as start, end, as_of and a path date are answered or refused with 400, never 500", async () => {
  const scope = `scope_id=${store.scope_id}`;
  const uses = [
    (d: string) => `/api/v1/stores/${store.id}/energy?${scope}&start=${d}&end=${d}`,
    (d: string) => `/api/v1/stores/${store.id}/energy?${scope}&start=${start}&end=${d}`,
    (d: string) => `/api/v1/stores/${store.id}/targets?${scope}&start=${d}&end=${d}`,
    (d: string) => `/api/v1/stores/${store.id}/metrics?${scope}&start=${d}&end=${d}`,
    (d: string) => `/api/v1/stores/${store.id}/periods?${scope}&as_of=${d}`,
    (d: string) => `/api/v1/stores/${store.id}/quality?${scope}&start=${d}&end=${d}`,
    (d: string) => `/api/v1/stores/${store.id}/energy/${d}/versions`,
    (d: string) => `/api/v1/imports/template?start=${d}&end=${d}`,
  ];
  await fc.assert(
    fc.asyncProperty(date, fc.integer({ min: 0, max: uses.length - 1 }), async (d, use) => {
      const path = uses[use](d.text);
      const answer = await get(path);
      const what = `${path}: ${JSON.stringify(answer.body).slice(0, 200)}`;
      assert.ok(answer.status < 500, what);
      if (!d.valid) assertRefused(answer, d.text, what);
      else if (answer.status !== 200) assert.equal(answer.status, 400, what);
    }),
    { numRuns: 120 },
  );
  // The far ends: the first and last days of the years taken, and the days the issue names.
  for (const d of ["0001-01-01", "9999-12-31", "2026-02-29", "0000-01-01"]) {
    for (const use of uses) {
      const answer = await get(use(d));
      assert.ok(answer.status < 500, `${use(d)}: ${JSON.stringify(answer.body).slice(0, 200)}`);
    }
  }
});

// --- Ids.

const fromSeq = (n: string) => `/api/v1/changes?from_seq=${n}`;

Deno.test("property: ids beyond PostgreSQL's integer are 400 or 404, never 500", async () => {
  const id = fc.oneof(
    fc.constantFrom(
      "2147483647",
      "2147483648",
      "4294967296",
      "9223372036854775807",
      "9223372036854775808",
      "99999999999999999999",
      "0",
      "-1",
      "01",
      "1e3",
    ),
    fc.bigInt({ min: 1n, max: 10n ** 25n }).map(String),
  );
  const uses = [
    (n: string) => `/api/v1/stores/${n}/reference`,
    (n: string) => `/api/v1/stores/${n}/energy?scope_id=${store.scope_id}&start=${end}&end=${end}`,
    (n: string) => `/api/v1/stores/${store.id}/energy?scope_id=${n}&start=${end}&end=${end}`,
    (n: string) => `/api/v1/stores/${store.id}/periods?scope_id=${n}&as_of=${end}`,
    (n: string) => `/api/v1/stores/${n}/audit`,
    (n: string) => `/api/v1/energy/${n}/history`,
    (n: string) => `/api/v1/imports/${n}`,
    (n: string) => `/api/v1/imports/1?row_limit=${n}&row_offset=${n}`,
    (n: string) => `/api/v1/import-rows/${n}/lineage`,
    (n: string) => `/api/v1/imports?after=${n}`,
    (n: string) => `/api/v1/stores/${store.id}/audit?after=${n}`,
    fromSeq,
  ];
  await fc.assert(
    fc.asyncProperty(id, fc.integer({ min: 0, max: uses.length - 1 }), async (n, use) => {
      const path = uses[use](n);
      const answer = await get(path);
      const what = `${path}: ${JSON.stringify(answer.body).slice(0, 200)}`;
      assert.ok(answer.status < 500, what);
      // from_seq is a commit number: 0 (the first commit on) is one.
      const least = uses[use] === fromSeq ? /^(0|[1-9]\d{0,9})$/ : /^[1-9]\d{0,9}$/;
      const accepted = least.test(n) && Number(n) <= 2147483647;
      // A path's integer past every id names no object: 404, as an unknown one (contract §4).
      const inPath = path.split("?")[0].split("/").includes(n);
      if (!accepted && inPath && /^[1-9]\d*$/.test(n)) {
        assertErrorBody(answer, 404, "NOT_FOUND");
        assert.ok(!answer.body.error.message.includes(n), `${what}: the value is not echoed`);
      } else if (!accepted) assertRefused(answer, n, what);
      else assert.ok([200, 400, 403, 404].includes(answer.status), what);
    }),
    { numRuns: 120 },
  );
});

Deno.test("a refused optional parameter is named once, without the schema's union noise", async () => {
  for (
    const [path, field] of [
      ["/api/v1/changes?limit=abc", "limit"],
      ["/api/v1/imports?limit=0", "limit"],
      [`/api/v1/stores/${store.id}/energy?${range}&known_at=yesterday`, "known_at"],
    ]
  ) {
    const answer = await get(path);
    assertErrorBody(answer, 400, "INVALID_REQUEST");
    const text: string = answer.body.error.message;
    assert.ok(text.startsWith(`${field}: `), text);
    assert.ok(!/Expected undefined/.test(text), text);
  }
});

Deno.test("the quality check refuses a read as of an earlier instant instead of answering today's data", async () => {
  for (const param of ["known_at=2026-01-01T00:00:00Z", "data_token=abc", "known_at=garbage"]) {
    const answer = await get(`/api/v1/stores/${store.id}/quality?${range}&${param}`);
    assertErrorBody(answer, 400, "INVALID_REQUEST");
    assert.match(answer.body.error.message, /reads the current data only/, param);
  }
  assert.equal((await get(`/api/v1/stores/${store.id}/quality?${range}`)).status, 200);
  // Refused in the energy read's order: the credential and the store first.
  const asOf = `${range}&known_at=2026-01-01T00:00:00Z`;
  assertErrorBody(
    await app.call("GET", `/api/v1/stores/${store.id}/quality?${asOf}`),
    401,
    "MISSING_CREDENTIAL",
  );
  const other = await app.key(["read"], { stores: [snapshot.stores[1].id] });
  assertErrorBody(
    await app.call("GET", `/api/v1/stores/${store.id}/quality?${asOf}`, { key: other.key }),
    403,
    "STORE_FORBIDDEN",
  );
  assertErrorBody(await get(`/api/v1/stores/999999/quality?${asOf}`), 404);
});

Deno.test("a store outside the key, or unknown, is refused for that before a malformed parameter", async () => {
  const [, other] = await storesOf(app, key.key);
  const scoped = await app.key(["read"], { stores: [other.id] });
  const malformed = (id: number) => [
    `/api/v1/stores/${id}/energy?scope_id=x&start=${start}&end=${end}`,
    `/api/v1/stores/${id}/targets?scope_id=${store.scope_id}&start=2026-02-30&end=${end}`,
    `/api/v1/stores/${id}/metrics?scope_id=${store.scope_id}&start=${start}`,
    `/api/v1/stores/${id}/periods?scope_id=${store.scope_id}&as_of=soon`,
    `/api/v1/stores/${id}/months?scope_id=${store.scope_id}&start=${start}&end=2026-13-01`,
    `/api/v1/stores/${id}/quality?start=${start}&end=${end}&known_at=x`,
  ];
  for (const path of malformed(store.id)) {
    assertErrorBody(await app.call("GET", path, { key: scoped.key }), 403, "STORE_FORBIDDEN");
    // The key's own store, and a key of every store: the parameter's refusal.
    assertErrorBody(await get(path), 400, "INVALID_REQUEST");
  }
  for (const path of malformed(999_999)) assertErrorBody(await get(path), 404);
  // The store's id percent-encoded, as the router decodes it: the same refusals, from the path
  // alone for a day's versions too.
  const encoded = [...String(store.id)].map((c) => `%${c.charCodeAt(0).toString(16)}`).join("");
  const raw = await app.key(["read", "raw"], { stores: [other.id] });
  for (
    const path of [
      `/api/v1/stores/${encoded}/energy?scope_id=x&start=${start}&end=${end}`,
      `/api/v1/stores/${encoded}/energy/not-a-date/versions`,
    ]
  ) {
    assertErrorBody(await app.call("GET", path, { key: raw.key }), 403, "STORE_FORBIDDEN");
  }
  // Without a credential, or with a bad one, 401 as before.
  assertErrorBody(await app.call("GET", malformed(store.id)[0]), 401);
  assertErrorBody(await app.call("GET", malformed(store.id)[0], { key: "esk_bad" }), 401);
});

Deno.test({
  name: "close the test app",
  fn: () => app.close(),
  sanitizeOps: false,
  sanitizeResources: false,
});
