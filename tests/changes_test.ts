// The change feed: a client that follows the cursors from the start rebuilds every store-day's
// current value exactly, before and after imports, within its key's stores; the batch list and
// the profile audit log; refusals.
import assert from "node:assert/strict";
import { Effect } from "effect";
import { addDays } from "../src/domain/range.ts";
import { generateSnapshot } from "../src/seed/generate.ts";
import { loadSnapshot } from "../src/seed/load.ts";
import { ChangesPage } from "../src/domain/changes.ts";
import { assertErrorBody, assertSchema, makeTestApp, type TestApp } from "./helpers.ts";
import { b64, sqlOf, type StoreInfo, storesOf } from "./import_helpers.ts";

const snapshot = generateSnapshot({ stores: 3 });
const end = snapshot.dataset.end;
const load = (reset: boolean) => (db: TestApp["db"]) =>
  db.run(Effect.asVoid(loadSnapshot(snapshot, { reset })));

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

Deno.test("followed from the start, the feed rebuilds every store-day of the snapshot", async () => {
  const { cursor, seen } = await follow(raw.key, days, undefined, 997);
  assert.ok(seen > days.size, "legacy and cleaned revisions both");
  await assertSameDays(days);
  saved = cursor;
  // Up to date: the same cursor gives nothing new, and says so.
  const again = await app.call("GET", `/api/v1/changes?after=${cursor}`, { key: raw.key });
  assert.deepEqual([again.body.changes.length, again.body.has_more], [0, false]);
  assert.equal(again.body.next_cursor, cursor);
  assert.equal(Number(cursor.split(".")[0]), again.body.head_seq, "the cursor is at the head");
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
  // Started at the last commit (<n>.0.<generation>): only its changes.
  const head = await app.call("GET", "/api/v1/changes?limit=1", { key: raw.key });
  const generation = head.body.next_cursor.split(".")[2];
  const last = await app.call(
    "GET",
    `/api/v1/changes?after=${head.body.head_seq}.0.${generation}`,
    { key: raw.key },
  );
  assert.deepEqual(
    last.body.changes.map((c: { business_date: string; operation: string }) => [
      c.business_date,
      c.operation,
    ]).sort(),
    [[d1, "RESTORE"], [d2, "VOID"]].sort(),
  );
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
  for (const q of ["after=1.2", "after=x", "after=1.1.ABCDEF0123456789", "limit=0", "limit=1001"]) {
    const answer = await app.call("GET", `/api/v1/changes?${q}`, { key: raw.key });
    assertErrorBody(answer, 400, "INVALID_REQUEST");
    assert.ok(!answer.body.error.message.includes("ABCDEF"), "the value is not echoed");
  }
  // A cursor far ahead is no error: nothing comes after it.
  const ahead = saved.replace(/^\d+/, "999999");
  const page = await app.call("GET", `/api/v1/changes?after=${ahead}`, { key: raw.key });
  assert.deepEqual([page.status, page.body.changes.length, page.body.has_more], [200, 0, false]);
  const wrong = saved.replace(/\.[0-9a-f]{16}$/, ".0123456789abcdef");
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
