// Reads as of an earlier instant: every read of energy, targets, metrics and periods names its data
// (Data-Token), and the same read with that token, or with an instant after a commit, answers
// what the service answered then, byte for byte, whatever was committed since.
import assert from "node:assert/strict";
import { Effect, FastCheck as fc, Layer } from "effect";
import { makeHandler } from "../src/app.ts";
import { sealKeysOf, type SealPurpose, sealWith } from "../src/auth/data_seal.ts";
import { AppConfig } from "../src/config.ts";
import { dataHeaders } from "../src/api/json_response.ts";
import { addDays } from "../src/domain/range.ts";
import { generateSnapshot } from "../src/seed/generate.ts";
import { loadSnapshot } from "../src/seed/load.ts";
import { assertErrorBody, makeTestApp, quietLog, type TestApp } from "./helpers.ts";
import { b64, sqlOf, type StoreInfo, storesOf } from "./import_helpers.ts";

const snapshot = generateSnapshot({ stores: 4 });
const end = snapshot.dataset.end;
const load = (reset: boolean) => (db: TestApp["db"]) =>
  // A reload replaces the commits the tests made too.
  db.run(Effect.asVoid(loadSnapshot(snapshot, { reset, discardUploads: true })));

const app = await makeTestApp(load(false));
const writer = await app.key(["read", "write", "raw"], { member: "as-of-writer" });
const stores = await storesOf(app, writer.key);
const sql = sqlOf(app);

let idem = 0;
const csv = (rows: ReadonlyArray<ReadonlyArray<string>>) =>
  [["品牌", "门店", "日期", "日能耗"], ...rows].map((r) => r.join(",")).join("\r\n") + "\r\n";

// Previews and commits a CSV of (store, date, value) cells; returns the batch id.
const importCells = async (
  cells: ReadonlyArray<{ store: StoreInfo; date: string; value: string }>,
) => {
  const previewed = await app.call("POST", "/api/v1/imports/preview", {
    key: writer.key,
    headers: { "idempotency-key": `as-of-${++idem}` },
    body: {
      filename: "as-of.csv",
      content_base64: b64(
        csv(cells.map((c) => [c.store.brand_name, c.store.name, c.date, c.value])),
      ),
      reason: "as-of test",
    },
  });
  assert.equal(previewed.status, 200, JSON.stringify(previewed.body).slice(0, 400));
  const committed = await app.call("POST", `/api/v1/imports/${previewed.body.id}/commit`, {
    key: writer.key,
    headers: { "idempotency-key": `as-of-${++idem}` },
    body: {},
  });
  assert.equal(committed.status, 200, JSON.stringify(committed.body).slice(0, 400));
  lastCommit = { key: `as-of-${idem}`, batchId: previewed.body.id, headers: committed.headers };
  return previewed.body.id as number;
};
let lastCommit: { key: string; batchId: number; headers: Headers } | undefined;

const windowStart = addDays(end, -40);
// The reads recorded after each commit: energy, targets and metrics of a range that the commits
// write into, and the period overview ending at the dataset's end.
const readsOf = (store: StoreInfo) => {
  const range = `scope_id=${store.scope_id}&start=${windowStart}&end=${end}`;
  return [
    `/api/v1/stores/${store.id}/energy?${range}`,
    `/api/v1/stores/${store.id}/targets?${range}`,
    `/api/v1/stores/${store.id}/metrics?${range}`,
    `/api/v1/stores/${store.id}/periods?scope_id=${store.scope_id}&as_of=${end}`,
  ];
};

// The body of an answer as the client receives it (bytes), and its data headers.
const raw = async (path: string, headers: Record<string, string> = {}) => {
  const response = await app.handler(
    new Request(`http://service.test${path}`, {
      headers: { authorization: `Bearer ${writer.key}`, ...headers },
    }),
  );
  return {
    status: response.status,
    token: response.headers.get("data-token"),
    knownAt: response.headers.get("data-known-at"),
    etag: response.headers.get("etag"),
    cache: response.headers.get("cache-control"),
    body: await response.text(),
  };
};

// Text sealed as the service seals it (with its secret, or another): tokens of commits no answer
// named, and tokens a client could not have been given.
const sealed = async (
  text: string,
  secret?: string,
  purpose: SealPurpose = "data-token",
) => {
  const [{ value }] = await sql((s) =>
    s<{ value: string }>`SELECT value FROM app_settings WHERE key = 'session_secret'`
  );
  return sealWith(sealKeysOf(secret ?? value), purpose, text);
};

const generation = async () =>
  (await sql((s) => s<{ g: string }>`SELECT left(generation, 16) AS g FROM dataset`))[0].g;

const withParam = (path: string, name: string, value: string) =>
  `${path}&${name}=${encodeURIComponent(value)}`;

interface Recorded {
  readonly path: string;
  readonly token: string;
  readonly at: string;
  readonly body: string;
}

const record = async (paths: ReadonlyArray<string>) => {
  const at = new Date().toISOString();
  const out: Array<Recorded> = [];
  for (const path of paths) {
    const answer = await raw(path);
    assert.equal(answer.status, 200, answer.body.slice(0, 300));
    assert.ok(answer.token !== null, `${path} names its data`);
    assert.equal(answer.knownAt, null, "a current answer is not a read as of an instant");
    out.push({ path, token: answer.token, at, body: answer.body });
  }
  return out;
};

// Waits until the clock has moved past `instant` (so that "after this commit" is an instant of
// its own, not shared with the next commit).
const tick = () => new Promise((resolve) => setTimeout(resolve, 5));

Deno.test("every read names its data; a 304 names it too", async () => {
  for (const path of readsOf(stores[0])) {
    const first = await raw(path);
    assert.equal(first.status, 200);
    // Opaque: sealed, no commit number or generation to read in it.
    assert.match(first.token ?? "", /^[A-Za-z0-9_-]{40,160}$/);
    assert.doesNotMatch(first.token!, /^[1-9]\d*\.[0-9a-f]{16}$/);
    const again = await raw(path, { "if-none-match": first.etag! });
    assert.equal(again.status, 304);
    assert.equal(again.token, first.token);
  }
});

Deno.test("If-None-Match: * matches an answer as of an earlier instant too: 304 with its data headers, no body", async () => {
  for (const path of readsOf(stores[0])) {
    const current = await raw(path);
    const asOf = withParam(path, "data_token", current.token!);
    const full = await raw(asOf);
    assert.equal(full.status, 200, full.body.slice(0, 300));
    assert.equal(full.etag, null);
    for (const header of ["*", " * "]) {
      const held = await raw(asOf, { "if-none-match": header });
      assert.equal(held.status, 304, `${asOf} with If-None-Match: ${header}`);
      assert.equal(held.body, "");
      assert.deepEqual(
        [held.token, held.knownAt, held.cache],
        [full.token, full.knownAt, full.cache],
      );
    }
    // A tag names no answer without one: the body is sent.
    const tagged = await raw(asOf, { "if-none-match": current.etag! });
    assert.equal(tagged.status, 200);
    assert.equal(tagged.body, full.body);
  }
});

Deno.test("property: after any sequence of commits, each earlier answer is read again byte for byte, by its token and by an instant after its commit", async () => {
  const store = stores[1];
  const other = stores[2];
  const dates = Array.from({ length: 41 }, (_, i) => addDays(windowStart, i));
  const cell = fc.record({
    which: fc.constantFrom(0, 1),
    day: fc.integer({ min: 0, max: dates.length - 1 }),
    value: fc.oneof(
      fc.integer({ min: 0, max: 99999 }).map((n) => (n / 100).toFixed(2)),
      fc.constant("作废"),
    ),
  });
  await fc.assert(
    fc.asyncProperty(
      fc.array(fc.array(cell, { minLength: 1, maxLength: 6 }), { minLength: 1, maxLength: 3 }),
      async (commits) => {
        const recorded: Array<Recorded> = [
          ...(await record([...readsOf(store), ...readsOf(other)])),
        ];
        for (const cells of commits) {
          // One value per store-day in a file.
          const unique = new Map(
            cells.map((c) => [`${c.which}|${c.day}`, {
              store: c.which === 0 ? store : other,
              date: dates[c.day],
              value: c.value,
            }]),
          );
          await tick();
          await importCells([...unique.values()]);
          await tick();
          recorded.push(...(await record([...readsOf(store), ...readsOf(other)])));
        }
        for (const r of recorded) {
          const byToken = await raw(withParam(r.path, "data_token", r.token));
          assert.equal(byToken.status, 200, byToken.body.slice(0, 300));
          assert.equal(byToken.body, r.body, `${r.path} as of ${r.token}`);
          assert.equal(byToken.token, r.token);
          assert.equal(byToken.etag, null, "an answer as of an earlier instant has no ETag");
          const byInstant = await raw(withParam(r.path, "known_at", r.at));
          assert.equal(byInstant.status, 200, byInstant.body.slice(0, 300));
          assert.equal(byInstant.body, r.body, `${r.path} known at ${r.at}`);
          assert.equal(byInstant.token, r.token);
          assert.equal(Date.parse(byInstant.knownAt!), Date.parse(r.at));
        }
      },
    ),
    { numRuns: 4 },
  );
});

Deno.test("a commit's answer names its data: read by its Data-Token, the day shows the commit's value whatever came after; a retry's token is at least as new", async () => {
  // A day no other test writes.
  const store = stores[3];
  const day = addDays(end, -5);
  const energy =
    `/api/v1/stores/${store.id}/energy?scope_id=${store.scope_id}&start=${day}&end=${day}`;
  const valueAt = async (token: string) => {
    const r = await raw(withParam(energy, "data_token", token));
    assert.equal(r.status, 200, r.body.slice(0, 300));
    return JSON.parse(r.body).days[0].energy_kwh as string | null;
  };
  await importCells([{ store, date: day, value: "321.5" }]);
  const first = lastCommit!;
  const token = first.headers.get("data-token");
  assert.ok(token !== null, "the commit's answer has a Data-Token");
  // The same token a read right after the commit names.
  assert.equal((await raw(energy)).token, token);
  await importCells([{ store, date: day, value: "作废" }]);
  assert.notEqual(lastCommit!.headers.get("data-token"), token);
  assert.equal(await valueAt(token), "321.5000");
  assert.equal(await valueAt(lastCommit!.headers.get("data-token")!), null);
  // A retry of the first commit: its answer again, with a token of data at least as new.
  const retry = await app.call("POST", `/api/v1/imports/${first.batchId}/commit`, {
    key: writer.key,
    headers: { "idempotency-key": first.key },
    body: {},
  });
  assert.equal(retry.status, 200, JSON.stringify(retry.body).slice(0, 300));
  assert.equal(await valueAt(retry.headers.get("data-token")!), null);
  // The header is declared in the contract.
  const doc = await app.call("GET", "/openapi.json");
  const ok = (doc.body as {
    paths: Record<string, Record<string, { responses: Record<string, { headers?: object }> }>>;
  }).paths["/api/v1/imports/{batch_id}/commit"].post.responses["200"];
  assert.ok("Data-Token" in (ok.headers ?? {}));
});

Deno.test("a commit's data and the day's versions agree: as of each revision's commit, the day shows that revision", async () => {
  const store = stores[3];
  const date = addDays(end, -3);
  const path =
    `/api/v1/stores/${store.id}/energy?scope_id=${store.scope_id}&start=${date}&end=${date}`;
  const tokens: Array<string> = [(await raw(path)).token!];
  for (const value of ["11.1", "作废", "33.3"]) {
    await importCells([{ store, date, value }]);
    tokens.push((await raw(path)).token!);
  }
  const versions = await app.call(
    "GET",
    `/api/v1/stores/${store.id}/energy/${date}/versions`,
    { key: writer.key },
  );
  const seen = [];
  for (const token of tokens) {
    const day = JSON.parse((await raw(withParam(path, "data_token", token))).body).days[0];
    seen.push([day.revision_no, day.energy_kwh, day.status]);
  }
  const last = versions.body.versions.slice(-3);
  assert.deepEqual(seen.slice(1), [
    [last[0].revision_no, "11.1000", "AVAILABLE"],
    [last[1].revision_no, null, "VOID"],
    [last[2].revision_no, "33.3000", "AVAILABLE"],
  ]);
});

Deno.test("as of the snapshot's legacy batch, a day cleaned or voided by its cleaned batch shows its legacy revision", async () => {
  // Days before the window the other tests write into: only the snapshot's two batches made them.
  const from = addDays(windowStart, -120);
  const to = addDays(windowStart, -1);
  const legacyBatch = await sealed(`1.${await generation()}`);
  let checked = 0;
  for (const store of stores) {
    const path =
      `/api/v1/stores/${store.id}/energy?scope_id=${store.scope_id}&start=${from}&end=${to}`;
    const now = JSON.parse((await raw(path)).body).days as Array<Record<string, unknown>>;
    const then = JSON.parse((await raw(withParam(path, "data_token", legacyBatch))).body)
      .days as Array<Record<string, unknown>>;
    for (const [i, day] of now.entries()) {
      if (day.revision_no !== 2) continue;
      const versions = await app.call(
        "GET",
        `/api/v1/stores/${store.id}/energy/${day.business_date}/versions`,
        { key: writer.key },
      );
      const [legacy, cleaned] = versions.body.versions;
      assert.equal(cleaned.source_kind, "CLEANED");
      const seen = then[i];
      assert.deepEqual(
        [seen.revision_no, seen.energy_kwh, seen.status, seen.source_kind, seen.quality_status],
        [
          1,
          legacy.after_kwh === null ? null : Number(legacy.after_kwh).toFixed(4),
          "AVAILABLE",
          "LEGACY_DIRECT",
          legacy.quality_status,
        ],
        `${store.id} ${day.business_date} as of the legacy batch`,
      );
      checked++;
    }
  }
  assert.ok(checked >= 5, `only ${checked} days cleaned or voided after a legacy value`);
});

Deno.test("refusals: both parameters, a malformed instant or token, an instant to come, before the first commit, an unknown commit", async () => {
  const [path] = readsOf(stores[0]);
  const current = await raw(path);
  const call = (query: string) => app.call("GET", `${path}&${query}`, { key: writer.key });
  assertErrorBody(
    await call(`known_at=2026-01-01T00:00:00Z&data_token=${current.token}`),
    400,
    "INVALID_REQUEST",
  );
  for (const bad of ["2026-01-01", "yesterday", "2026-13-01T00:00:00Z", "x".repeat(500)]) {
    const answer = await call(`known_at=${encodeURIComponent(bad)}`);
    assertErrorBody(answer, 400, "INVALID_REQUEST");
    assert.ok(!JSON.stringify(answer.body).includes("x".repeat(100)), "no long value echoed");
  }
  for (const bad of ["1", "0.0123456789abcdef", "1.XYZ", `${current.token}0`]) {
    assertErrorBody(await call(`data_token=${encodeURIComponent(bad)}`), 400, "INVALID_REQUEST");
  }
  const future = new Date(Date.now() + 3_600_000).toISOString();
  assertErrorBody(await call(`known_at=${future}`), 400, "INVALID_REQUEST");
  const notKept = await call("known_at=2000-01-01T00:00:00Z");
  assertErrorBody(notKept, 409, "HISTORY_NOT_KEPT");
  assertErrorBody(
    await call(`data_token=${await sealed(`999999.${await generation()}`)}`),
    400,
    "INVALID_REQUEST",
  );
});

Deno.test("a data token is sealed: a scoped key cannot read commit numbers from it, nor forge or alter one", async () => {
  const scoped = await app.key(["read"], { stores: [stores[0].id] });
  const [path] = readsOf(stores[0]);
  const read = () => app.call("GET", path, { key: scoped.key });
  const first = (await read()).headers.get("data-token")!;
  const [{ seq }] = await sql((s) => s<{ seq: string }>`SELECT seq::text FROM commit_clock`);
  assert.doesNotMatch(first, new RegExp(`^${seq}\\.`), "no commit number in clear");
  assert.match(first, /^[A-Za-z0-9_-]{40,160}$/);
  const tampered = first.slice(0, 20) + (first[20] === "A" ? "B" : "A") + first.slice(21);
  const foreign = await sealed(`${seq}.${await generation()}`, "another secret");
  const cursor = await sealed(`${seq}.0.${await generation()}`, undefined, "change-cursor");
  for (const bad of [tampered, foreign, cursor, `${seq}.${await generation()}`]) {
    const answer = await app.call("GET", withParam(path, "data_token", bad), { key: scoped.key });
    assertErrorBody(answer, 400, "INVALID_REQUEST");
    assert.ok(!JSON.stringify(answer.body).includes(bad), "the token is not echoed");
  }
  const again = await app.call("GET", withParam(path, "data_token", first), { key: scoped.key });
  assert.equal(again.status, 200);
  // Its read names no commit instant (the commit may be another store's); a key of every store's
  // read does.
  assert.equal(again.headers.get("data-known-at"), null);
  const whole = await app.call("GET", withParam(path, "data_token", first), { key: writer.key });
  assert.match(whole.headers.get("data-known-at") ?? "", /^\d{4}-\d{2}-\d{2}T/);
});

Deno.test("a scoped key's tokens change only with its own stores' data: it can neither count nor date other stores' commits", async () => {
  const [mine, other] = stores;
  const scoped = await app.key(["read"], { stores: [mine.id] });
  const paths = [
    ...readsOf(mine),
    `/api/v1/stores/${mine.id}/months?scope_id=${mine.scope_id}&start=${windowStart}&end=${end}`,
    `/api/v1/portfolio?start=${windowStart}&end=${end}`,
  ];
  // The token (and the portfolio's ETag) each read gives the scoped key now.
  const look = async (extra = "") => {
    const seen: Array<string | null> = [];
    for (const path of paths) {
      const answer = await app.call("GET", path + extra, { key: scoped.key });
      assert.equal(answer.status, 200, path);
      seen.push(answer.headers.get("data-token"), answer.headers.get("etag"));
    }
    return seen;
  };
  const before = await look();
  await tick();
  const between = new Date().toISOString();
  await tick();
  // The other store's change, beside a row of this store that changes nothing (a blank cell).
  await importCells([
    { store: other, date: addDays(end, -5), value: "77.25" },
    { store: mine, date: addDays(end, -5), value: "" },
  ]);
  await tick();
  const after = new Date().toISOString();
  // Current reads, and reads as of instants either side of the other store's commit, look alike.
  assert.deepEqual(await look(), before);
  const asOf = (at: string) => look(`&known_at=${encodeURIComponent(at)}`);
  assert.deepEqual(
    (await asOf(between)).filter((_, i) => i % 2 === 0),
    (await asOf(after)).filter((_, i) => i % 2 === 0),
  );
  // The scoped token reads the store's data as it is now, byte for byte.
  const [energy] = paths;
  const now = await app.call("GET", energy, { key: scoped.key });
  const byToken = await app.handler(
    new Request(
      `http://service.test${withParam(energy, "data_token", now.headers.get("data-token")!)}`,
      { headers: { authorization: `Bearer ${scoped.key}` } },
    ),
  );
  assert.equal(byToken.status, 200);
  assert.deepEqual(JSON.parse(await byToken.text()), now.body);
  // A key of every store sees the commit; a commit of its own store moves the scoped key's.
  const whole = await app.call("GET", energy, { key: writer.key });
  assert.notEqual(whole.headers.get("data-token"), before[0]);
  await importCells([{ store: mine, date: addDays(end, -5), value: "78.25" }]);
  const moved = await look();
  for (let i = 0; i < paths.length; i++) assert.notEqual(moved[2 * i], before[2 * i], paths[i]);
});

Deno.test("a scoped writer's commit and its retry name its own stores' data, whatever other stores commit between", async () => {
  const [mine, other] = stores;
  const scopedWriter = await app.key(["read", "write"], { stores: [mine.id] });
  const previewed = await app.call("POST", "/api/v1/imports/preview", {
    key: scopedWriter.key,
    headers: { "idempotency-key": `as-of-${++idem}` },
    body: {
      filename: "mine.csv",
      content_base64: b64(csv([[mine.brand_name, mine.name, addDays(end, -4), "66.5"]])),
      reason: "scoped commit",
    },
  });
  assert.equal(previewed.status, 200, JSON.stringify(previewed.body).slice(0, 300));
  const key = `as-of-${++idem}`;
  const commit = () =>
    app.call("POST", `/api/v1/imports/${previewed.body.id}/commit`, {
      key: scopedWriter.key,
      headers: { "idempotency-key": key },
      body: {},
    });
  const first = await commit();
  assert.equal(first.status, 200);
  await importCells([{ store: other, date: addDays(end, -4), value: "67.5" }]);
  const retried = await commit();
  assert.equal(retried.status, 200);
  assert.equal(retried.headers.get("data-token"), first.headers.get("data-token"));
});

Deno.test("a data token still reads its data after a restart (the secret is kept in the database)", async () => {
  const [path] = readsOf(stores[0]);
  const before = await raw(path);
  const restarted = makeHandler(Layer.merge(app.db.layer, AppConfig.make({})), { log: quietLog });
  try {
    const response = await restarted.handler(
      new Request(`http://service.test${withParam(path, "data_token", before.token!)}`, {
        headers: { authorization: `Bearer ${writer.key}` },
      }),
    );
    assert.equal(response.status, 200);
    assert.equal(await response.text(), before.body);
    assert.equal(response.headers.get("data-token"), before.token);
  } finally {
    await restarted.dispose();
  }
});

Deno.test("the store scope is checked before the instant: a key outside the store is 403 whatever it asks", async () => {
  const scoped = await app.key(["read"], { stores: [stores[0].id] });
  const store = stores[1];
  const answer = await app.call(
    "GET",
    `/api/v1/stores/${store.id}/energy?scope_id=${store.scope_id}&start=${end}&end=${end}` +
      "&known_at=2000-01-01T00:00:00Z",
    { key: scoped.key },
  );
  assertErrorBody(answer, 403, "STORE_FORBIDDEN");
  const metrics = await app.call(
    "GET",
    `/api/v1/stores/${store.id}/metrics?scope_id=${store.scope_id}&start=${end}&end=${end}` +
      "&known_at=2000-01-01T00:00:00Z",
    { key: scoped.key },
  );
  assertErrorBody(metrics, 403, "STORE_FORBIDDEN");
});

Deno.test("history kept from an upgrade on: reads as of earlier commits are refused, later ones answered", async () => {
  const [path] = readsOf(stores[0]);
  const before = await raw(path);
  // As a database upgraded to commit numbering would be: the states replaced before the last
  // commit then were not kept.
  const [{ seq }] = await sql((s) => s<{ seq: string }>`SELECT seq::text FROM commit_clock`);
  await sql((s) => s`UPDATE commit_clock SET history_from = seq`);
  try {
    const earliest = await sql((s) =>
      s<{ seq: string }>`SELECT min(seq)::text AS seq FROM commits`
    );
    if (earliest[0].seq !== seq) {
      const token = await sealed(`${earliest[0].seq}.${await generation()}`);
      const old = await app.call("GET", withParam(path, "data_token", token), {
        key: writer.key,
      });
      assertErrorBody(old, 409, "HISTORY_NOT_KEPT");
      assert.match(old.body.error.message, /keeps the history of its data from \d{4}-/);
    }
    const same = await raw(withParam(path, "data_token", before.token!));
    assert.equal(same.body, before.body);
  } finally {
    await sql((s) => s`UPDATE commit_clock SET history_from = 0`);
  }
});

Deno.test({
  name: "close the test app",
  fn: () => app.close(),
  sanitizeOps: false,
  sanitizeResources: false,
});

Deno.test("a token of a replaced snapshot is 409 DATA_REPLACED", async () => {
  const other = await makeTestApp(load(false));
  try {
    const key = await other.key(["read"]);
    const [store] = await storesOf(other, key.key);
    const path =
      `/api/v1/stores/${store.id}/energy?scope_id=${store.scope_id}&start=${end}&end=${end}`;
    const first = await other.call("GET", path, { key: key.key });
    const token = first.headers.get("data-token")!;
    await load(true)(other.db);
    const again = await other.call("GET", `${path}&data_token=${token}`, { key: key.key });
    assertErrorBody(again, 409, "DATA_REPLACED");
  } finally {
    await other.close();
  }
});

Deno.test("an answer as of an instant is never kept by a client: it is asked of the service each time", () => {
  const at = (iso: string) => ({ knownAt: iso, committedAt: iso });
  // However old its instant: a revoked key, or a browser signed out and used by another member,
  // must not read it from a kept copy without the credential being decided again.
  for (const asOf of [at("2020-01-01T00:00:00Z"), at(new Date().toISOString())]) {
    assert.equal(dataHeaders("1.x", asOf)["cache-control"], "private, no-store");
  }
  // A scoped key's token read (no instant named) alike.
  const unnamed = dataHeaders("1.x", { knownAt: undefined, committedAt: "2020-01-01T00:00:00Z" });
  assert.equal(unnamed["data-known-at"], undefined);
  assert.equal(unnamed["cache-control"], "private, no-store");
  // A current answer says nothing of caching here (its ETag does).
  assert.equal(dataHeaders("1.x", undefined)["cache-control"], undefined);
});
