// Read lanes: a read answered by its lane is the HttpApi's answer byte for byte (status, headers,
// body), and every request a lane does not take in its plain form, or would refuse, is answered
// by the HttpApi exactly as without lanes.
import assert from "node:assert/strict";
import { Chunk, Effect, Layer, Stream } from "effect";
import { makeHandler } from "../src/app.ts";
import { AppConfig } from "../src/config.ts";
import { addDays } from "../src/domain/range.ts";
import { Auth } from "../src/auth/auth_service.ts";
import { knownBody } from "../src/http/lanes.ts";
import { LIST_CLOSE, LIST_OPEN, LIST_SEPARATOR, listReply } from "../src/stores/store_lists.ts";
import { StoreRepo } from "../src/stores/store_repo.ts";
import { generateSnapshot } from "../src/seed/generate.ts";
import { loadSnapshot } from "../src/seed/load.ts";
import { BASE, makeTestApp, quietLog, setKeyExpiry } from "./helpers.ts";
import { commitDay, storesOf } from "./import_helpers.ts";

const snapshot = generateSnapshot({ stores: 3 });
const app = await makeTestApp((db) =>
  db.run(Effect.asVoid(loadSnapshot(snapshot, { reset: false })))
);
// The same database without lanes: every request through the HttpApi.
const plain = makeHandler(Layer.merge(app.db.layer, AppConfig.make({})), {
  log: quietLog,
  lanes: false,
});
const reader = await app.key(["read"], { member: "lane-reader" });
const stores = await storesOf(app, reader.key);
const [a, b] = stores;
const scoped = await app.key(["read"], { stores: [a.id], member: "lane-scoped" });
const expired = await app.key(["read"], { member: "lane-expired" });
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
  readonly byLane: boolean;
}

const see = async (
  handler: (r: Request) => Promise<Response>,
  path: string,
  headers: Record<string, string>,
): Promise<Seen> => {
  const response = await handler(new Request(BASE + path, { headers }));
  const byLane = knownBody(response) !== undefined;
  return {
    status: response.status,
    // The request id differs by construction.
    headers: [...response.headers].filter(([name]) => name !== "x-request-id"),
    body: await response.text(),
    byLane,
  };
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
  const lane = await see(app.handler, path, headers);
  const full = await see(plain.handler, path, headers);
  assert.deepEqual(
    { ...lane, byLane: undefined },
    { ...full, byLane: undefined },
    `${path} with ${Object.keys(headers).join(",")}: the same answer with and without lanes`,
  );
  assert.equal(full.byLane, false);
  return lane;
};

Deno.test("a plain energy read is answered by its lane, byte for byte the HttpApi's answer", async () => {
  const cases: Array<[string, Record<string, string>]> = [
    [energy(a, year), bearer(reader.key)],
    [energy(b, `start=${end}&end=${end}`), bearer(reader.key)],
    [energy(a, `start=${addDays(end, -40)}&end=${addDays(end, -10)}`), bearer(scoped.key)],
    [energy(b, year), { cookie }],
    // Days after the dataset's end have no data: still a plain read.
    [energy(a, `start=${addDays(end, -5)}&end=${addDays(end, 20)}`), bearer(reader.key)],
  ];
  for (const [path, headers] of cases) {
    const seen = await compare(path, headers);
    assert.equal(seen.status, 200, path);
    assert.ok(seen.byLane, `${path}: answered by the lane`);
    JSON.parse(seen.body);
  }
});

Deno.test("plain targets, metrics and periods reads are answered by their lanes, byte for byte", async () => {
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
  for (const [path, headers] of cases) {
    const seen = await compare(path, headers);
    assert.equal(seen.status, 200, path);
    assert.ok(seen.byLane, `${path}: answered by the lane`);
    JSON.parse(seen.body);
  }
});

Deno.test("conditional energy reads answer the same 304s and 200s with and without lanes", async () => {
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

Deno.test("every energy request a lane does not take, or would refuse, is answered as without lanes", async () => {
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
    assert.equal(seen.byLane, false, `${path}: left to the HttpApi`);
  }
});

Deno.test("conditional targets, metrics and periods reads answer as without lanes", async () => {
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

Deno.test("targets, metrics and periods requests a lane does not take, or would refuse, are answered as without lanes", async () => {
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
    assert.equal(seen.byLane, false, `${path}: left to the HttpApi`);
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
    for (let i = 0; i < 2; i++) assert.ok((await compare(path, bearer(reader.key))).byLane, path);
  }
  // A key that may not read the store, or no longer may: refused as without lanes.
  const outsider = await app.key(["read"], { stores: [b.id], member: "lane-outsider" });
  const leaving = await app.key(["read"], { member: "lane-leaving" });
  for (const path of paths) assert.ok((await compare(path, bearer(leaving.key))).byLane);
  await app.db.run(setKeyExpiry(leaving.id, -60));
  for (const path of paths) {
    for (const key of [outsider.key, leaving.key, expired.key]) {
      const seen = await compare(path, bearer(key));
      assert.equal(seen.byLane, false, path);
      assert.ok([401, 403, 404].includes(seen.status), `${path}: ${seen.status}`);
    }
  }
  // A commit that changes a day of the ranges: the next answers are the new data at once.
  const writer = await app.key(["read", "write", "raw"], { member: "lane-writer" });
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

Deno.test("store list and catalog: answered by their lanes byte for byte, kept per key scope until a profile edit", async () => {
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
        assert.ok(seen.byLane, `${path}: answered by the lane`);
        assert.deepEqual(
          JSON.parse(seen.body).stores.map((s: { id: number }) => s.id),
          [...new Set(ids)].sort((x, y) => x - y),
          path,
        );
      }
    }
    assert.ok((await compare(path, { cookie })).byLane, path);
    const etag = (await see(app.handler, path, bearer(reader.key))).headers
      .find(([name]) => name === "etag")![1];
    const notModified = await compare(path, { ...bearer(reader.key), "if-none-match": etag });
    assert.equal(notModified.status, 304);
    // Refusals and other forms are the HttpApi's.
    for (
      const [other, headers] of [
        [path, {}],
        [path, bearer(expired.key)],
        [`${path}?brand=x`, bearer(reader.key)],
      ] as const
    ) {
      const seen = await compare(other, headers);
      assert.equal(seen.byLane, false, other);
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
      body: JSON.stringify({ name: "Lane Renamed", address, expected_version: version }),
    }),
  );
  assert.equal(edited.status, 200, await edited.text());
  for (const path of lists) {
    for (const key of [reader.key, scoped.key]) {
      for (let i = 0; i < 2; i++) {
        const seen = await compare(path, bearer(key));
        assert.ok(seen.byLane, path);
        const store = JSON.parse(seen.body).stores.find((s: { id: number }) => s.id === a.id);
        assert.equal(store.name, "Lane Renamed", path);
      }
    }
  }
});

Deno.test("a list longer than the buffered size streams, to the same answer; a lane leaves it to the HttpApi", async () => {
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
    const reply = (options: { streams: boolean }) =>
      app.db.run(
        listReply(kind, caller, undefined, { ...options, bufferStores: stores.length - 1 }).pipe(
          Effect.provide(StoreRepo.Default),
        ),
      );
    assert.equal((await reply({ streams: false })).form, "long");
    const streamed = await reply({ streams: true });
    assert.equal(streamed.form, "stream");
    const rows = streamed.form === "stream"
      ? await app.db.run(Stream.runCollect(streamed.rows).pipe(Effect.map(Chunk.toReadonlyArray)))
      : [];
    assert.equal(LIST_OPEN + rows.join(LIST_SEPARATOR) + LIST_CLOSE, whole, path);
  }
});

Deno.test("close the test apps", async () => {
  await plain.dispose();
  await app.close();
});
