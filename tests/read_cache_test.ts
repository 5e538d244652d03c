// Kept answers (src/reads/read_cache.ts): a read answered from a kept answer is byte for byte the
// answer made anew (status, headers, body), it is given only while its data is unchanged and only
// to who may read it, and every other request is answered exactly as with nothing kept.
import assert from "node:assert/strict";
import { Chunk, Effect, Layer, Redacted, Stream } from "effect";
import { makeHandler } from "../src/app.ts";
import { AppConfig } from "../src/config.ts";
import { addDays } from "../src/domain/range.ts";
import { Auth } from "../src/auth/auth_service.ts";
import { AnswerStore, ASKED_KEYS, ENTRY_OVERHEAD, ReadCache } from "../src/reads/read_cache.ts";
import { LIST_CLOSE, LIST_OPEN, LIST_SEPARATOR, listReply } from "../src/stores/store_lists.ts";
import { StoreRepo } from "../src/stores/store_repo.ts";
import { generateSnapshot } from "../src/seed/generate.ts";
import { loadSnapshot } from "../src/seed/load.ts";
import { BASE, makeTestApp, quietLog, setKeyExpiry } from "./helpers.ts";
import { commitDay, storesOf } from "./import_helpers.ts";

const snapshot = generateSnapshot({ stores: 3 });
const TOKEN = "read-cache-metrics-token-0123456789";
const app = await makeTestApp(
  (db) => db.run(Effect.asVoid(loadSnapshot(snapshot, { reset: false }))),
  { metricsToken: Redacted.make(TOKEN) },
);
// The same database with nothing kept: every answer made anew.
const plain = makeHandler(Layer.merge(app.db.layer, AppConfig.make({ answerCacheMb: 0 })), {
  log: quietLog,
});
const reader = await app.key(["read"], { member: "kept-reader" });
const stores = await storesOf(app, reader.key);
const [a, b] = stores;
const scoped = await app.key(["read"], { stores: [a.id], member: "kept-scoped" });
const expired = await app.key(["read"], { member: "kept-expired" });
await app.db.run(setKeyExpiry(expired.id, -60));
const end = snapshot.dataset.end;
const origin = new URL(BASE).origin;

const cookie = await (async () => {
  const response = await app.handler(
    new Request(`${BASE}/auth/session`, {
      method: "POST",
      headers: { "content-type": "application/json", origin },
      body: JSON.stringify({ access_key: reader.key }),
    }),
  );
  assert.equal(response.status, 200);
  await response.body?.cancel();
  return response.headers.get("set-cookie")!.split(";")[0];
})();

interface Seen {
  readonly status: number;
  readonly headers: ReadonlyArray<readonly [string, string]>;
  readonly body: string;
  // Whether the answer was a kept one (the app's count of kept answers sent grew by one).
  readonly kept: boolean;
}

// Kept answers sent so far by `app` (its /metrics).
const keptSent = async () => {
  const response = await app.handler(
    new Request(`${BASE}/metrics`, {
      headers: { authorization: `Bearer ${TOKEN}` },
    }),
  );
  const text = await response.text();
  return Number(text.match(/^answer_cache_served_total (\d+)/m)?.[1] ?? 0);
};

const see = async (
  handler: (r: Request) => Promise<Response>,
  path: string,
  headers: Record<string, string>,
): Promise<Seen> => {
  const before = handler === app.handler ? await keptSent() : 0;
  const response = await handler(new Request(BASE + path, { headers }));
  const seen = {
    status: response.status,
    // The request id differs by construction.
    headers: [...response.headers].filter(([name]) => name !== "x-request-id"),
    body: await response.text(),
  };
  return { ...seen, kept: handler === app.handler && (await keptSent()) > before };
};

const energy = (store: { id: number | string; scope_id: number | string }, query: string) =>
  `/api/v1/stores/${store.id}/energy?scope_id=${store.scope_id}&${query}`;
const read = (
  kind: "targets" | "metrics",
  store: { id: number | string; scope_id: number | string },
  query: string,
) => `/api/v1/stores/${store.id}/${kind}?scope_id=${store.scope_id}&${query}`;
const periods = (store: { id: number | string; scope_id: number | string }, query: string) =>
  `/api/v1/stores/${store.id}/periods?scope_id=${store.scope_id}&${query}`;
const year = `start=${addDays(end, -365)}&end=${end}`;
const twoYears = `start=${addDays(end, -730)}&end=${end}`;
const bearer = (key: string) => ({ authorization: `Bearer ${key}` });

const compare = async (path: string, headers: Record<string, string>) => {
  const kept = await see(app.handler, path, headers);
  const made = await see(plain.handler, path, headers);
  assert.deepEqual(
    { ...kept, kept: undefined },
    { ...made, kept: undefined },
    `${path} with ${Object.keys(headers).join(",")}: the same answer kept or made anew`,
  );
  return kept;
};

// Each read three times: kept once asked twice, the third is the kept answer, the same bytes.
const askedThrice = async (cases: ReadonlyArray<[string, Record<string, string>]>) => {
  for (const [path, headers] of cases) {
    const first = await compare(path, headers);
    assert.equal(first.status, 200, path);
    await compare(path, headers);
    const again = await compare(path, headers);
    assert.ok(again.kept, `${path}: the kept answer`);
    assert.equal(again.body, first.body);
    JSON.parse(again.body);
  }
};

Deno.test("an energy read asked again is the kept answer, byte for byte the answer made anew", async () => {
  const cases: Array<[string, Record<string, string>]> = [
    [energy(a, year), bearer(reader.key)],
    [energy(b, `start=${end}&end=${end}`), bearer(reader.key)],
    [energy(a, `start=${addDays(end, -40)}&end=${addDays(end, -10)}`), bearer(scoped.key)],
    [energy(b, year), { cookie }],
    // Days after the dataset's end have no data: still a plain read.
    [energy(a, `start=${addDays(end, -5)}&end=${addDays(end, 20)}`), bearer(reader.key)],
  ];
  await askedThrice(cases);
});

Deno.test("targets, metrics and periods reads asked again are kept answers, byte for byte", async () => {
  const cases: Array<[string, Record<string, string>]> = [];
  for (const kind of ["targets", "metrics"] as const) {
    cases.push(
      [read(kind, a, year), bearer(reader.key)],
      [read(kind, b, twoYears), { cookie }],
      [read(kind, a, `start=${addDays(end, -40)}&end=${addDays(end, -10)}`), bearer(scoped.key)],
      [read(kind, b, `start=${end}&end=${end}`), bearer(reader.key)],
    );
  }
  cases.push(
    [periods(a, `as_of=${end}`), bearer(reader.key)],
    [periods(b, `as_of=${addDays(end, -100)}`), { cookie }],
    [periods(a, `as_of=${addDays(end, -1)}`), bearer(scoped.key)],
  );
  await askedThrice(cases);
});

Deno.test("conditional energy reads answer the same 304s and 200s kept or not", async () => {
  const path = energy(a, year);
  const etag = (await see(plain.handler, path, bearer(reader.key))).headers
    .find(([name]) => name === "etag")![1];
  for (const held of [etag, `W/${etag}`, `"other", ${etag}`, "*", '"e.0.0.0"', "garbage"]) {
    await compare(path, { ...bearer(reader.key), "if-none-match": held });
  }
  const notModified = await compare(path, { ...bearer(reader.key), "if-none-match": etag });
  assert.equal(notModified.status, 304);
  assert.equal(notModified.body, "");
});

Deno.test("energy refusals and reads as of an instant are never kept answers, and answer as with nothing kept", async () => {
  const cases: Array<[string, Record<string, string>]> = [
    // Credentials: none, unknown, expired, empty, a store outside the key's scope, a bad cookie.
    [energy(a, year), {}],
    [energy(a, year), bearer("esk_not_a_key")],
    [energy(a, year), bearer(expired.key)],
    [energy(a, year), { authorization: "Bearer " }],
    [energy(b, year), bearer(scoped.key)],
    [energy(a, year), { cookie: `${cookie}x` }],
    // Stores and scopes: unknown, another store's scope, not canonical.
    [energy({ id: 999999, scope_id: a.scope_id }, year), bearer(reader.key)],
    [energy({ id: a.id, scope_id: b.scope_id }, year), bearer(reader.key)],
    [energy({ id: `0${a.id}`, scope_id: a.scope_id }, year), bearer(reader.key)],
    [energy({ id: a.id, scope_id: `+${a.scope_id}` }, year), bearer(reader.key)],
    [energy({ id: "99999999999", scope_id: a.scope_id }, year), bearer(reader.key)],
    // Ranges: reversed, too long, impossible dates, other spellings.
    [energy(a, `start=${end}&end=${addDays(end, -1)}`), bearer(reader.key)],
    [energy(a, `start=${addDays(end, -366)}&end=${end}`), bearer(reader.key)],
    [energy(a, "start=2026-02-30&end=2026-03-02"), bearer(reader.key)],
    [energy(a, "start=2026-1-1&end=2026-01-02"), bearer(reader.key)],
    // Query parameters: missing, repeated, unknown, as of an instant.
    [`/api/v1/stores/${a.id}/energy?scope_id=${a.scope_id}&start=${end}`, bearer(reader.key)],
    [energy(a, `${year}&start=${end}`), bearer(reader.key)],
    [energy(a, `${year}&format=csv`), bearer(reader.key)],
    [energy(a, `${year}&known_at=2020-01-01T00:00:00Z`), bearer(reader.key)],
    [energy(a, `${year}&data_token=1.x`), bearer(reader.key)],
  ];
  for (const [path, headers] of cases) {
    const seen = await compare(path, headers);
    const asOf = path.includes("known_at=") || path.includes("data_token=");
    if (seen.status >= 400 || asOf) assert.equal(seen.kept, false, `${path}: not a kept answer`);
  }
});

Deno.test("conditional targets, metrics and periods reads answer as with nothing kept", async () => {
  for (
    const path of [read("targets", a, year), read("metrics", b, year), periods(a, `as_of=${end}`)]
  ) {
    const etag = (await see(plain.handler, path, bearer(reader.key))).headers
      .find(([name]) => name === "etag")![1];
    for (const held of [etag, `W/${etag}`, "*", '"m.0.0"', "garbage"]) {
      await compare(path, { ...bearer(reader.key), "if-none-match": held });
    }
    assert.equal(
      (await compare(path, { ...bearer(reader.key), "if-none-match": etag })).status,
      304,
    );
  }
});

Deno.test("targets, metrics and periods refusals and reads as of an instant are never kept answers", async () => {
  const cases: Array<[string, Record<string, string>]> = [];
  for (const kind of ["targets", "metrics"] as const) {
    cases.push(
      [read(kind, a, year), {}],
      [read(kind, a, year), bearer(expired.key)],
      [read(kind, b, year), bearer(scoped.key)],
      [read(kind, { id: a.id, scope_id: b.scope_id }, year), bearer(reader.key)],
      [read(kind, a, `start=${addDays(end, -731)}&end=${end}`), bearer(reader.key)],
      [read(kind, a, `start=${end}&end=${addDays(end, -3)}`), bearer(reader.key)],
      [read(kind, a, "start=2025-13-01&end=2026-01-01"), bearer(reader.key)],
      [read(kind, a, `${year}&known_at=2020-01-01T00:00:00Z`), bearer(reader.key)],
      [read(kind, a, `${year}&scope_id=${a.scope_id}`), bearer(reader.key)],
      [read(kind, { id: `0${a.id}`, scope_id: a.scope_id }, year), bearer(reader.key)],
    );
  }
  cases.push(
    [periods(a, `as_of=${end}`), {}],
    [periods(b, `as_of=${end}`), bearer(scoped.key)],
    [periods(a, "as_of=2026-02-29"), bearer(reader.key)],
    [periods(a, `as_of=${end}&start=${end}`), bearer(reader.key)],
    [periods(a, `as_of=${end}&data_token=1.x`), bearer(reader.key)],
    [`/api/v1/stores/${a.id}/periods?as_of=${end}`, bearer(reader.key)],
    [periods({ id: a.id, scope_id: "x" }, `as_of=${end}`), bearer(reader.key)],
  );
  for (const [path, headers] of cases) {
    const seen = await compare(path, headers);
    const asOf = path.includes("known_at=") || path.includes("data_token=");
    if (seen.status >= 400 || asOf) assert.equal(seen.kept, false, `${path}: not a kept answer`);
  }
});

Deno.test("a kept answer is given again only while its data is unchanged, and only to who may read it", async () => {
  const paths = [
    energy(a, year),
    read("metrics", a, year),
    read("targets", a, year),
    periods(a, `as_of=${end}`),
  ];
  // Asked twice: the second is the kept answer, the same bytes and headers.
  for (const path of paths) {
    await compare(path, bearer(reader.key));
    await compare(path, bearer(reader.key));
    assert.ok((await compare(path, bearer(reader.key))).kept, path);
  }
  // A key that may not read the store, or no longer may: refused as with nothing kept.
  const outsider = await app.key(["read"], { stores: [b.id], member: "kept-outsider" });
  const leaving = await app.key(["read"], { member: "kept-leaving" });
  for (const path of paths) assert.ok((await compare(path, bearer(leaving.key))).kept);
  await app.db.run(setKeyExpiry(leaving.id, -60));
  for (const path of paths) {
    for (const key of [outsider.key, leaving.key, expired.key]) {
      const seen = await compare(path, bearer(key));
      assert.equal(seen.kept, false, path);
      assert.ok([401, 403, 404].includes(seen.status), `${path}: ${seen.status}`);
    }
  }
  // A commit that changes a day of the ranges: the next answers are the new data at once.
  const writer = await app.key(["read", "write", "raw"], { member: "kept-writer" });
  const before = await Promise.all(paths.map((path) => see(app.handler, path, bearer(reader.key))));
  const day = addDays(end, -2);
  await commitDay(app, writer.key, a, day, "1234.5678");
  for (const [i, path] of paths.entries()) {
    const after = await compare(path, bearer(reader.key));
    assert.equal(after.status, 200, path);
    // Targets do not depend on the day's energy; the others show the committed value.
    if (!path.includes("/targets")) {
      assert.notEqual(after.body, before[i].body, `${path}: the commit's day is in its answer`);
    }
    // And kept again from there, still equal to the HttpApi's answer, for a session too.
    assert.equal((await compare(path, bearer(reader.key))).body, after.body);
    for (let n = 0; n < 2; n++) assert.equal((await compare(path, { cookie })).body, after.body);
  }
  const changed = JSON.parse((await see(app.handler, paths[0], bearer(reader.key))).body).days
    .find((d: { business_date: string }) => d.business_date === day);
  assert.equal(changed.energy_kwh, "1234.5678");
});

Deno.test("store list and catalog: kept per key scope until a profile edit, byte for byte", async () => {
  const lists = ["/api/v1/stores", "/api/v1/catalog"];
  const outsider = await app.key(["read"], { stores: [b.id], member: "list-outsider" });
  for (const path of lists) {
    // Twice each: the second is the kept answer. Keys limited to other stores see their own list.
    for (
      const [key, ids] of [[reader.key, stores.map((s) => s.id)], [scoped.key, [a.id]], [
        outsider.key,
        [b.id],
      ]] as const
    ) {
      for (let i = 0; i < 2; i++) {
        const seen = await compare(path, bearer(key));
        assert.equal(seen.status, 200, path);
        if (i === 1) assert.ok(seen.kept, `${path}: the kept answer`);
        assert.deepEqual(
          JSON.parse(seen.body).stores.map((s: { id: number }) => s.id),
          [...new Set(ids)].sort((x, y) => x - y),
          path,
        );
      }
    }
    assert.ok((await compare(path, { cookie })).kept, path);
    const etag = (await see(app.handler, path, bearer(reader.key))).headers
      .find(([name]) => name === "etag")![1];
    const notModified = await compare(path, { ...bearer(reader.key), "if-none-match": etag });
    assert.equal(notModified.status, 304);
    // Refusals are never kept answers.
    for (
      const [other, headers] of [
        [path, {}],
        [path, bearer(expired.key)],
        [`${path}?brand=x`, bearer(reader.key)],
      ] as const
    ) {
      const seen = await compare(other, headers);
      if (seen.status >= 400) assert.equal(seen.kept, false, other);
    }
  }
  // A profile edit renames a store: the next lists show the new name, and are kept from there.
  const editor = await app.key(["read", "write"], { member: "list-editor" });
  const { version, address } = JSON.parse(
    (await see(app.handler, `/api/v1/stores/${a.id}/reference`, bearer(editor.key))).body,
  ).profile;
  const edited = await app.handler(
    new Request(`${BASE}/api/v1/stores/${a.id}/profile`, {
      method: "PATCH",
      headers: { ...bearer(editor.key), "content-type": "application/json" },
      body: JSON.stringify({ name: "Kept Renamed", address, expected_version: version }),
    }),
  );
  assert.equal(edited.status, 200, await edited.text());
  for (const path of lists) {
    for (const key of [reader.key, scoped.key]) {
      for (let i = 0; i < 2; i++) {
        const seen = await compare(path, bearer(key));
        if (i === 1) assert.ok(seen.kept, path);
        const store = JSON.parse(seen.body).stores.find((s: { id: number }) => s.id === a.id);
        assert.equal(store.name, "Kept Renamed", path);
      }
    }
  }
});

Deno.test("a list longer than the buffered size streams, to the same answer", async () => {
  const caller = await app.db.run(
    Effect.flatMap(Auth, (auth) =>
      auth.authenticate({
        method: "GET",
        authorization: `Bearer ${reader.key}`,
        cookie: undefined,
        origin: undefined,
        expectedOrigin: undefined,
      })).pipe(Effect.provide(Auth.Default), Effect.provide(AppConfig.make({}))),
  );
  for (const [kind, path] of [["s", "/api/v1/stores"], ["c", "/api/v1/catalog"]] as const) {
    const whole = (await see(plain.handler, path, bearer(reader.key))).body;
    const streamed = await app.db.run(
      listReply(kind, caller, undefined, stores.length - 1).pipe(
        Effect.provide(Layer.merge(StoreRepo.Default, ReadCache.Default)),
        Effect.provide(AppConfig.make({})),
      ),
    );
    assert.equal(streamed.form, "stream");
    const rows = streamed.form === "stream"
      ? await app.db.run(Stream.runCollect(streamed.rows).pipe(Effect.map(Chunk.toReadonlyArray)))
      : [];
    assert.equal(LIST_OPEN + rows.join(LIST_SEPARATOR) + LIST_CLOSE, whole, path);
  }
});

Deno.test("the store keeps answers within its budget, least recently used out first", () => {
  const bytes = (n: number) => new Uint8Array(n);
  const cost = (key: string, n: number) => n + key.length * 2 + ENTRY_OVERHEAD;
  const keys = Array.from({ length: 10 }, (_, i) => `k${i}`);
  const store = new AnswerStore(cost("k0", 100) * 10);
  // Kept the second time a key is set (the first only remembers the key).
  store.set("k0", "1", bytes(100));
  assert.equal(store.get("k0"), undefined);
  for (const key of keys) store.set(key, "1", bytes(100));
  assert.equal(store.facts().entries, 1);
  for (const key of keys) store.set(key, "1", bytes(100));
  assert.equal(store.facts().entries, 10);
  // k0 is used: k1 is the least recently used and leaves for the next one.
  assert.equal(store.get("k0")?.version, "1");
  store.set("kx", "2", bytes(100));
  store.set("kx", "2", bytes(100));
  assert.equal(store.get("k1"), undefined);
  assert.equal(store.get("k0")?.version, "1");
  assert.equal(store.get("kx")?.version, "2");
  assert.equal(store.facts().entries, 10);
  assert.ok(store.facts().bytes <= store.maxBytes);
  // Replacing an entry counts its cost once.
  store.set("kx", "3", bytes(50));
  assert.equal(store.facts().bytes, cost("k0", 100) * 9 + cost("kx", 50));
  // An answer over an eighth of the budget is not kept; a budget of 0 keeps nothing.
  store.set("big", "1", bytes(store.maxBytes / 8 + 1));
  store.set("big", "1", bytes(store.maxBytes / 8 + 1));
  assert.equal(store.get("big"), undefined);
  const none = new AnswerStore(0);
  none.set("a", "1", bytes(1));
  none.set("a", "1", bytes(1));
  assert.equal(none.get("a"), undefined);
  assert.equal(none.facts().entries, 0);
});

Deno.test("keys asked for once are remembered up to a bound, oldest forgotten first", () => {
  const store = new AnswerStore(1024 * 1024);
  const bytes = new Uint8Array(10);
  for (let i = 0; i <= ASKED_KEYS; i++) store.set(`k${i}`, "1", bytes);
  assert.equal(store.facts().entries, 0);
  // k1 is still remembered: asked again, it is kept; k0 was forgotten (one key too many): asked
  // again, it is only remembered.
  store.set("k1", "1", bytes);
  store.set("k0", "1", bytes);
  assert.equal(store.get("k0"), undefined);
  assert.equal(store.get("k1")?.version, "1");
});

Deno.test("close the test apps", async () => {
  await plain.dispose();
  await app.close();
});
