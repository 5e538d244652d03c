// The change feed: a client that follows the cursors from the start rebuilds every store-day's
// current value exactly, before and after imports, within its key's stores; the batch list and
// the profile audit log; refusals.
import assert from "node:assert/strict";
import { Effect } from "effect";
import { addDays } from "../src/domain/range.ts";
import { generateSnapshot } from "../src/seed/generate.ts";
import { loadSnapshot } from "../src/seed/load.ts";
import { ChangesPage } from "../src/domain/changes.ts";
import { EnergyVersions, HistoryResponse } from "../src/domain/energy.ts";
import { sealKeysOf, type SealPurpose, sealWith } from "../src/auth/data_seal.ts";
import { assertErrorBody, assertSchema, makeTestApp, type TestApp } from "./helpers.ts";
import { b64, sqlOf, type StoreInfo, storesOf } from "./import_helpers.ts";

const snapshot = generateSnapshot({ stores: 3 });
const end = snapshot.dataset.end;
const load = (reset: boolean) => (db: TestApp["db"]) =>
  // A reload replaces the commits the tests made too.
  db.run(Effect.asVoid(loadSnapshot(snapshot, { reset, discardUploads: true })));

const app = await makeTestApp(load(false));
const raw = await app.key(["read", "write", "raw"], { member: "feed-reader" });
const stores = await storesOf(app, raw.key);
const scoped = await app.key(["read", "raw"], { stores: [stores[1].id], member: "feed-scoped" });
const run = sqlOf(app);
const sql = <A extends object>(text: string, params: ReadonlyArray<unknown>) =>
  run((client) => client.unsafe<A>(text, params as Array<never>)) as Promise<ReadonlyArray<A>>;

interface Day {
  readonly energy_kwh: string | null;
  readonly status: string;
  readonly source_kind: string | null;
  readonly revision_no: number;
}

// The client: follows the cursors, applies each change to its copy of the days.
const follow = async (
  key: string,
  days: Map<string, Day>,
  after: string | undefined,
  limit: number,
) => {
  let cursor = after;
  let pages = 0;
  let seen = 0;
  const order: Array<[number, number]> = [];
  for (;;) {
    const query = new URLSearchParams({ limit: String(limit) });
    if (cursor !== undefined) query.set("after", cursor);
    const page = await app.call("GET", `/api/v1/changes?${query}`, { key });
    assert.equal(page.status, 200, JSON.stringify(page.body).slice(0, 300));
    // The page is assembled from PostgreSQL's JSON: it must be exactly the declared shape.
    assertSchema(ChangesPage, page.body);
    pages++;
    assert.ok(page.body.changes.length <= limit);
    for (const c of page.body.changes) {
      order.push([c.commit_seq, c.row_number]);
      seen++;
      assert.equal(c.state_kept, true);
      const id = `${c.scope_id}|${c.business_date}`;
      const before = days.get(id);
      // A change starts where the previous one of the same day left it.
      assert.equal(c.revision_no, (before?.revision_no ?? 0) + 1, id);
      assert.equal(c.before_energy_kwh, before?.energy_kwh ?? null, id);
      assert.equal(c.before_status, before?.status ?? "NO_DATA", id);
      days.set(id, {
        energy_kwh: c.energy_kwh,
        status: c.status,
        source_kind: c.source_kind,
        revision_no: c.revision_no,
      });
    }
    cursor = page.body.next_cursor;
    if (!page.body.has_more) break;
    assert.ok(pages < 10_000);
  }
  // Commit order, then file order.
  for (let i = 1; i < order.length; i++) {
    const [a, b] = [order[i - 1], order[i]];
    assert.ok(a[0] < b[0] || (a[0] === b[0] && a[1] < b[1]), `order at ${i}`);
  }
  return { cursor: cursor!, seen };
};

// The stored facts, as the energy read serves them.
const current = async (storeIds?: ReadonlyArray<number>) => {
  const rows = await sql<
    { id: string; energy_kwh: string | null; status: string; source_kind: string | null }
  >(
    `SELECT scope_id || '|' || business_date::text AS id, round(served_kwh, 4)::text AS energy_kwh,
       status, source_kind, revision_no
     FROM energy_days WHERE $1::int[] IS NULL OR store_id = ANY ($1::int[])`,
    [storeIds === undefined ? null : [...storeIds]],
  );
  return new Map(rows.map((r) => [r.id, r]));
};

const assertSameDays = async (days: Map<string, Day>, storeIds?: ReadonlyArray<number>) => {
  const facts = await current(storeIds);
  assert.equal(days.size, facts.size);
  for (const [id, fact] of facts) {
    const day = days.get(id);
    assert.ok(day !== undefined, id);
    assert.deepEqual(
      { energy_kwh: day.energy_kwh, status: day.status, source_kind: day.source_kind },
      { energy_kwh: fact.energy_kwh, status: fact.status, source_kind: fact.source_kind },
      id,
    );
  }
};

let idem = 0;
const importCsv = async (rows: ReadonlyArray<[StoreInfo, string, string]>, commit = true) => {
  const text = [
    ["品牌", "门店", "日期", "日能耗"],
    ...rows.map(([s, d, v]) => [
      s.brand_name,
      s.name,
      d,
      v,
    ]),
  ].map((r) => r.join(",")).join("\r\n") + "\r\n";
  const previewed = await app.call("POST", "/api/v1/imports/preview", {
    key: raw.key,
    headers: { "idempotency-key": `feed-${++idem}` },
    body: { filename: "feed.csv", content_base64: b64(text), reason: "feed test" },
  });
  assert.equal(previewed.status, 200, JSON.stringify(previewed.body).slice(0, 300));
  if (commit) {
    const committed = await app.call("POST", `/api/v1/imports/${previewed.body.id}/commit`, {
      key: raw.key,
      headers: { "idempotency-key": `feed-${++idem}` },
      body: {},
    });
    assert.equal(committed.status, 200, JSON.stringify(committed.body).slice(0, 300));
  }
  return previewed.body.id as number;
};

const days = new Map<string, Day>();
let saved = "";

// Text sealed as the service seals it (with its secret, or another), for cursors and tokens a
// client could not have been given.
const sealed = async (purpose: SealPurpose, text: string, secret?: string) => {
  const [{ value }] = await sql<{ value: string }>(
    "SELECT value FROM app_settings WHERE key = 'session_secret'",
    [],
  );
  return sealWith(sealKeysOf(secret ?? value), purpose, text);
};

const generation = async () =>
  (await sql<{ g: string }>("SELECT left(generation, 16) AS g FROM dataset", []))[0].g;

Deno.test("followed from the start, the feed rebuilds every store-day of the snapshot", async () => {
  const { cursor, seen } = await follow(raw.key, days, undefined, 997);
  assert.ok(seen > days.size, "legacy and cleaned revisions both");
  await assertSameDays(days);
  saved = cursor;
  // Up to date: the same cursor gives nothing new, and says so.
  const again = await app.call("GET", `/api/v1/changes?after=${cursor}`, { key: raw.key });
  assert.deepEqual([again.body.changes.length, again.body.has_more], [0, false]);
  assert.equal(again.body.next_cursor, cursor);
  // A key of every store learns the head's number; the cursor itself says nothing.
  const [{ seq }] = await sql<{ seq: number }>("SELECT seq::int FROM commit_clock", []);
  assert.equal(again.body.head_seq, seq);
  assert.doesNotMatch(cursor, /^\d+\.\d+\./);
  assert.ok(!cursor.includes(String(seq)) || cursor.length > 40);
});

Deno.test("after imports, the client catches up from its cursor: new values, voids, restores", async () => {
  const [a, b] = stores;
  const d1 = addDays(end, -3);
  const d2 = addDays(end, -2);
  await importCsv([[a, d1, "VOID"], [a, d2, "12.3456"], [b, d1, "0"]]);
  await importCsv([[a, d1, "7.5"], [b, d2, "VOID"]]);
  // A preview that is not committed changes nothing.
  await importCsv([[a, addDays(end, -5), "99"]], false);
  const { seen } = await follow(raw.key, days, saved, 2);
  assert.ok(seen >= 3 && seen <= 5, `changes seen: ${seen}`);
  // Started at the last commit (head_cursor, or from_seq=head_seq): only its changes.
  const head = await app.call("GET", "/api/v1/changes?limit=1", { key: raw.key });
  for (
    const query of [`after=${head.body.head_cursor}`, `from_seq=${head.body.head_seq}`]
  ) {
    const last = await app.call("GET", `/api/v1/changes?${query}`, { key: raw.key });
    assert.equal(last.status, 200, JSON.stringify(last.body));
    assert.deepEqual(
      last.body.changes.map((c: { business_date: string; operation: string }) => [
        c.business_date,
        c.operation,
      ]).sort(),
      [[d1, "RESTORE"], [d2, "VOID"]].sort(),
    );
  }
  await assertSameDays(days);
  const day = days.get(`${a.scope_id}|${d1}`)!;
  assert.deepEqual([day.energy_kwh, day.status], ["7.5000", "AVAILABLE"]);
  // The feed agrees with the energy read the users see.
  const energy = await app.call(
    "GET",
    `/api/v1/stores/${a.id}/energy?scope_id=${a.scope_id}&start=${addDays(end, -10)}&end=${end}`,
    { key: raw.key },
  );
  for (const row of energy.body.days) {
    const fed = days.get(`${a.scope_id}|${row.business_date}`);
    assert.equal(fed?.energy_kwh ?? null, row.energy_kwh, row.business_date);
    assert.equal(fed?.status ?? "NO_DATA", row.status, row.business_date);
  }
});

Deno.test("a key limited to some stores follows only their changes, and rebuilds them", async () => {
  const mine = new Map<string, Day>();
  await follow(scoped.key, mine, undefined, 1000);
  await assertSameDays(mine, [stores[1].id]);
  const page = await app.call("GET", "/api/v1/changes?limit=1000", { key: scoped.key });
  for (const c of page.body.changes) assert.equal(c.store_id, stores[1].id);
  assert.ok(page.body.scanned_rows >= page.body.changes.length);
});

Deno.test("a key limited to some stores learns no count of other stores' commits or rows", async () => {
  const page = await app.call("GET", "/api/v1/changes?limit=1000", { key: scoped.key });
  assert.equal(page.status, 200);
  assertSchema(ChangesPage, page.body);
  // No head number, and rows looked at are counted within its stores only.
  assert.equal(page.body.head_seq, null);
  const [{ mine, all }] = await sql<{ mine: number; all: number }>(
    `SELECT count(*) FILTER (WHERE resolved_store_id = $1)::int AS mine, count(*)::int AS all
     FROM import_rows r JOIN commits c ON c.batch_id = r.batch_id`,
    [stores[1].id],
  );
  assert.ok(all > mine);
  assert.ok(page.body.scanned_rows <= mine, `${page.body.scanned_rows} rows of ${mine}`);
  // Opaque cursors: no commit or row number in them, none made up or altered is taken.
  for (const cursor of [page.body.next_cursor, page.body.head_cursor]) {
    assert.doesNotMatch(cursor, /^\d+\.\d+\.[0-9a-f]{16}$/);
    assert.match(cursor, /^[A-Za-z0-9_-]{40,160}$/);
  }
  const tampered = page.body.next_cursor.slice(0, -2) +
    (page.body.next_cursor.endsWith("AA") ? "AB" : "AA");
  const forged = await sealed("change-cursor", "0.0.0123456789abcdef", "another secret");
  const token = await sealed("data-token", `1.${await generation()}`);
  for (const bad of [tampered, forged, token]) {
    assertErrorBody(
      await app.call("GET", `/api/v1/changes?after=${bad}`, { key: scoped.key }),
      400,
      "INVALID_REQUEST",
    );
  }
  // Starting at a commit by its number is for keys of every store.
  assertErrorBody(
    await app.call("GET", "/api/v1/changes?from_seq=1", { key: scoped.key }),
    403,
    "STORE_FORBIDDEN",
  );
});

Deno.test("each change names its batch, actor and commit", async () => {
  const page = await app.call("GET", `/api/v1/changes?after=${saved}&limit=1`, { key: raw.key });
  const [c] = page.body.changes;
  assert.equal(c.batch_kind, "UPLOAD");
  assert.equal(c.change_reason, "feed test");
  assert.equal(c.actor.login_name, "feed-reader");
  assert.match(c.committed_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
  const lineage = await app.call("GET", `/api/v1/import-rows/${c.import_row_id}/lineage`, {
    key: raw.key,
  });
  assert.equal(lineage.status, 200);
  const first = await app.call("GET", "/api/v1/changes?limit=1", { key: raw.key });
  assert.equal(first.body.changes[0].batch_kind, "PLATFORM_LEGACY");
  assert.equal(first.body.changes[0].actor, null);
});

Deno.test("refusals: permission, cursor, limit", async () => {
  const reader = await app.key(["read"], { member: "feed-plain" });
  const writer = await app.key(["read", "write"], { member: "feed-writer" });
  for (const key of [reader.key, writer.key]) {
    assertErrorBody(await app.call("GET", "/api/v1/changes", { key }), 403, "PERMISSION_MISSING");
    assertErrorBody(await app.call("GET", "/api/v1/imports", { key }), 403, "PERMISSION_MISSING");
  }
  assertErrorBody(await app.call("GET", "/api/v1/changes"), 401);
  for (
    const q of [
      "after=1.2",
      "after=x",
      "after=1.1.ABCDEF0123456789",
      "limit=0",
      "limit=1001",
      `after=${saved}&from_seq=1`,
      "from_seq=99999999999",
    ]
  ) {
    const answer = await app.call("GET", `/api/v1/changes?${q}`, { key: raw.key });
    assertErrorBody(answer, 400, "INVALID_REQUEST");
    assert.ok(!answer.body.error.message.includes("ABCDEF"), "the value is not echoed");
  }
  // A commit far ahead is no error: nothing comes after it.
  for (
    const q of [
      `after=${await sealed("change-cursor", `999999.0.${await generation()}`)}`,
      "from_seq=999999",
    ]
  ) {
    const page = await app.call("GET", `/api/v1/changes?${q}`, { key: raw.key });
    assert.deepEqual([page.status, page.body.changes.length, page.body.has_more], [200, 0, false]);
  }
  // A cursor with a row beyond an integer is refused, not sent to the database.
  assertErrorBody(
    await app.call(
      "GET",
      `/api/v1/changes?after=${await sealed(
        "change-cursor",
        `1.9999999999.${await generation()}`,
      )}`,
      { key: raw.key },
    ),
    400,
    "INVALID_REQUEST",
  );
  const wrong = await sealed("change-cursor", "1.0.0123456789abcdef");
  assertErrorBody(
    await app.call("GET", `/api/v1/changes?after=${wrong}`, { key: raw.key }),
    409,
    "DATA_REPLACED",
  );
});

Deno.test("batches: in id order with status, commit number and uploader; filtered and paged", async () => {
  const all = await app.call("GET", "/api/v1/imports?limit=200", { key: raw.key });
  assert.equal(all.status, 200);
  const batches = all.body.batches;
  assert.deepEqual(batches.map((b: { batch_kind: string }) => b.batch_kind).slice(0, 2), [
    "PLATFORM_LEGACY",
    "PLATFORM_CLEANED",
  ]);
  const uploads = batches.filter((b: { batch_kind: string }) => b.batch_kind === "UPLOAD");
  assert.deepEqual(uploads.map((b: { status: string }) => b.status), [
    "COMMITTED",
    "COMMITTED",
    "PREVIEWED",
  ]);
  assert.equal(uploads[0].uploaded_by.login_name, "feed-reader");
  assert.equal(uploads[2].commit_seq, null);
  assert.ok(uploads[0].commit_seq < uploads[1].commit_seq);
  assert.equal(uploads[0].action_counts.VOID, 1);
  assert.equal(all.body.next_after, null);

  const previewed = await app.call("GET", "/api/v1/imports?status=PREVIEWED", { key: raw.key });
  assert.deepEqual(previewed.body.batches.map((b: { id: number }) => b.id), [uploads[2].id]);

  const paged: number[] = [];
  let after = "";
  for (;;) {
    const page = await app.call("GET", `/api/v1/imports?limit=2${after}`, { key: raw.key });
    assert.equal(page.status, 200);
    paged.push(...page.body.batches.map((b: { id: number }) => b.id));
    if (page.body.next_after === null) break;
    after = `&after=${page.body.next_after}`;
  }
  assert.deepEqual(paged, batches.map((b: { id: number }) => b.id));

  // The scoped key: only batches all of whose rows are of its store (none of the uploads above
  // touch store 2 alone; the platform batches hold every store).
  const mine = await app.call("GET", "/api/v1/imports", { key: scoped.key });
  assert.equal(mine.status, 200, JSON.stringify(mine.body));
  assert.deepEqual(mine.body.batches, []);
  assertErrorBody(
    await app.call("GET", "/api/v1/imports?status=DONE", { key: raw.key }),
    400,
    "INVALID_REQUEST",
  );
});

Deno.test("a batch's reason and actor go only to keys that may read all of it", async () => {
  const [a, b] = stores;
  const start = await app.call("GET", "/api/v1/changes?limit=1", { key: scoped.key });
  const from = start.body.head_cursor;
  await importCsv([[a, addDays(end, -6), "1.5"], [b, addDays(end, -6), "2.5"]]);
  const mixed = await importCsv([[a, addDays(end, -7), "3.5"], [b, addDays(end, -7), "4.5"]]);
  const alone = await importCsv([[b, addDays(end, -8), "5.5"]]);
  assertErrorBody(
    await app.call("GET", `/api/v1/imports/${mixed}`, { key: scoped.key }),
    403,
    "STORE_FORBIDDEN",
  );
  const seen = await app.call("GET", `/api/v1/changes?after=${from}&limit=1000`, {
    key: scoped.key,
  });
  assert.equal(seen.status, 200);
  assertSchema(ChangesPage, seen.body);
  const byBatch = new Map<number, { change_reason: string | null; actor: unknown }>(
    seen.body.changes.map((c: { batch_id: number; change_reason: string; actor: unknown }) => [
      c.batch_id,
      { change_reason: c.change_reason, actor: c.actor },
    ]),
  );
  assert.deepEqual(byBatch.get(mixed), { change_reason: null, actor: null });
  const own = byBatch.get(alone)!;
  assert.equal(own.change_reason, "feed test");
  assert.deepEqual(own.actor, {
    member_id: (own.actor as { member_id: number }).member_id,
    login_name: "feed-reader",
    display_name: null,
  });
  // A key of every store sees both.
  const all = await app.call("GET", `/api/v1/changes?after=${from}&limit=1000`, { key: raw.key });
  for (const c of all.body.changes) {
    assert.equal(c.change_reason, "feed test");
    assert.equal(c.actor.login_name, "feed-reader");
  }
  // A store outside the key is refused from the path, before a malformed date is.
  for (const day of [addDays(end, -7), "not-a-date"]) {
    assertErrorBody(
      await app.call("GET", `/api/v1/stores/${a.id}/energy/${day}/versions`, { key: scoped.key }),
      403,
      "STORE_FORBIDDEN",
    );
  }
  // The day's versions and the fact's history decide alike.
  const lastVersion = async (key: string, day: string) => {
    const found = await app.call("GET", `/api/v1/stores/${b.id}/energy/${day}/versions`, { key });
    assert.equal(found.status, 200);
    assertSchema(EnergyVersions, found.body);
    const history = await app.call(
      "GET",
      `/api/v1/energy/${found.body.current.energy_id}/history`,
      {
        key,
      },
    );
    assert.equal(history.status, 200);
    assertSchema(HistoryResponse, history.body);
    return { version: found.body.versions.at(-1), revision: history.body.revisions.at(-1) };
  };
  const hidden = await lastVersion(scoped.key, addDays(end, -7));
  assert.equal(hidden.version.batch.id, mixed);
  assert.equal(hidden.version.change_reason, null);
  assert.deepEqual(hidden.version.actor, { member_id: null, name: null, label: null });
  assert.deepEqual(
    [hidden.version.batch.change_reason, hidden.version.batch.filename, hidden.version.batch.note],
    [null, null, ""],
  );
  assert.match(hidden.revision.change_reason, /^Withheld/);
  // The snapshot's batches (every store's) say what the platform wrote, to any key.
  const loaded = await app.call(
    "GET",
    `/api/v1/stores/${b.id}/energy/${addDays(end, -7)}/versions`,
    { key: scoped.key },
  );
  assert.equal(loaded.body.versions[0].actor.label, "Platform snapshot load");
  assert.notEqual(loaded.body.versions[0].change_reason, null);
  // The upload's record names the file and counts its rows.
  const lineage = (key: string) =>
    app.call("GET", `/api/v1/import-rows/${hidden.version.import_row_id}/lineage`, { key });
  const [withheld] = (await lineage(scoped.key)).body.sources;
  assert.deepEqual([withheld.explanation, withheld.record], [null, { withheld: true }]);
  const [whole] = (await lineage(raw.key)).body.sources;
  assert.equal(whole.explanation, "CSV file feed.csv");
  assert.equal(whole.record.values, 2);
  for (const [key, day] of [[scoped.key, addDays(end, -8)], [raw.key, addDays(end, -7)]]) {
    const { version, revision } = await lastVersion(key, day);
    assert.equal(version.change_reason, "feed test");
    assert.equal(version.actor.name, "feed-reader");
    assert.deepEqual([version.batch.change_reason, version.batch.filename], [
      "feed test",
      "feed.csv",
    ]);
    assert.equal(revision.change_reason, "feed test");
  }
});

Deno.test("a scoped key's cursors move only with its own stores' changes", async () => {
  const [other, mine] = stores;
  const poll = async (after?: string) => {
    const page = await app.call(
      "GET",
      `/api/v1/changes?limit=1000${after === undefined ? "" : `&after=${after}`}`,
      { key: scoped.key },
    );
    assert.equal(page.status, 200);
    return page.body as {
      changes: Array<{ store_id: number }>;
      next_cursor: string;
      head_cursor: string;
    };
  };
  let page = await poll();
  while (page.changes.length > 0) page = await poll(page.next_cursor);
  const quiet = await poll(page.next_cursor);
  assert.deepEqual(quiet.changes, []);
  // Another store's change, beside a row of the key's store that changes nothing (a blank cell).
  await importCsv([[other, addDays(end, -9), "9.5"], [mine, addDays(end, -9), ""]]);
  const still = await poll(page.next_cursor);
  assert.deepEqual(
    [still.changes, still.next_cursor, still.head_cursor],
    [[], quiet.next_cursor, quiet.head_cursor],
  );
  await importCsv([[mine, addDays(end, -9), "10.5"]]);
  const moved = await poll(page.next_cursor);
  assert.deepEqual(moved.changes.map((c) => c.store_id), [mine.id]);
  assert.notEqual(moved.next_cursor, quiet.next_cursor);
  assert.notEqual(moved.head_cursor, quiet.head_cursor);
  // From its new head on, the key is given its store's last commit again.
  assert.deepEqual((await poll(moved.head_cursor)).changes.map((c) => c.store_id), [mine.id]);
});

Deno.test("audit: a profile edit is listed with its before and after, for raw keys", async () => {
  const [editable] = await sql<{ id: number; name: string }>(
    "SELECT id, name FROM stores WHERE profile_editable AND id = ANY ($1::int[]) ORDER BY id LIMIT 1",
    [stores.map((s) => s.id)],
  );
  assert.ok(editable !== undefined, "an editable store");
  const edited = await app.call("PATCH", `/api/v1/stores/${editable.id}/profile`, {
    key: raw.key,
    body: { name: "审计测试店", address: "上海市 1 号", expected_version: 1 },
  });
  assert.equal(edited.status, 200, JSON.stringify(edited.body));
  const log = await app.call("GET", `/api/v1/stores/${editable.id}/audit`, { key: raw.key });
  assert.equal(log.status, 200);
  assert.equal(log.body.entries.length, 1);
  const [entry] = log.body.entries;
  assert.equal(entry.action, "PROFILE_UPDATED");
  assert.equal(entry.actor.login_name, "feed-reader");
  assert.deepEqual(entry.before.name, editable.name);
  assert.deepEqual(entry.after, { name: "审计测试店", address: "上海市 1 号", version: 2 });
  assert.equal(log.body.next_after, null);

  const reader = await app.key(["read"], { member: "audit-plain" });
  assertErrorBody(
    await app.call("GET", `/api/v1/stores/${editable.id}/audit`, { key: reader.key }),
    403,
    "PERMISSION_MISSING",
  );
  assertErrorBody(
    await app.call("GET", "/api/v1/stores/999999/audit", { key: raw.key }),
    404,
    "NOT_FOUND",
  );
  const other = stores.find((s) => s.id !== stores[1].id)!;
  assertErrorBody(
    await app.call("GET", `/api/v1/stores/${other.id}/audit`, { key: scoped.key }),
    403,
    "STORE_FORBIDDEN",
  );
});

Deno.test("a start past the head waits for the next commit: none made meanwhile is skipped", async () => {
  const head = (await app.call("GET", "/api/v1/changes?limit=1", { key: raw.key })).body.head_seq;
  const ahead = await app.call("GET", `/api/v1/changes?from_seq=${head + 3}`, { key: raw.key });
  assert.deepEqual([ahead.status, ahead.body.changes.length], [200, 0]);
  // As the store is named now (a test before renames it).
  const [a] = (await app.call("GET", "/api/v1/stores", { key: raw.key })).body
    .stores as Array<StoreInfo>;
  // A day voided, then given a value again.
  await importCsv([[a, addDays(end, -3), "VOID"]]);
  await importCsv([[a, addDays(end, -3), "21.5"]]);
  const next = await app.call("GET", `/api/v1/changes?after=${ahead.body.next_cursor}`, {
    key: raw.key,
  });
  assert.equal(next.status, 200, JSON.stringify(next.body));
  assert.deepEqual(
    next.body.changes.map((c: { commit_seq: number }) => c.commit_seq),
    [head + 1, head + 2],
  );
});

Deno.test("a cursor of a replaced snapshot is 409 DATA_REPLACED", async () => {
  await load(true)(app.db);
  assertErrorBody(
    await app.call("GET", `/api/v1/changes?after=${saved}`, { key: raw.key }),
    409,
    "DATA_REPLACED",
  );
  const fresh = new Map<string, Day>();
  await follow(raw.key, fresh, undefined, 1000);
  await assertSameDays(fresh);
  await app.close();
});
