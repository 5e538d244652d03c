// Concurrent previews and commits over HTTP (rules.md §8, contract parts 3, 4 and 7): one commit
// of a batch wins, an Idempotency-Key settles races, a stale or racing batch commits nothing, and
// commits of disjoint days never block each other into a false 409. On PGlite the requests are
// serialised (one connection), so every expectation holds there too; on PostgreSQL they race.
import assert from "node:assert/strict";
import { Effect } from "effect";
import { addDays } from "../src/domain/range.ts";
import { EnergyResponse } from "../src/domain/energy.ts";
import { Import } from "../src/domain/imports.ts";
import { generateSnapshot } from "../src/seed/generate.ts";
import { loadSnapshot } from "../src/seed/load.ts";
import { checkReads, checkStoredDays } from "../src/energy/day_check.ts";
import { type Answer, assertErrorBody, assertSchema, makeTestApp } from "./helpers.ts";
import { b64, countsOf, sqlOf, type StoreInfo, storesOf } from "./import_helpers.ts";

type ImportBody = typeof Import.Type;

const PARALLEL = 20;

const snapshot = generateSnapshot({ stores: 6 });
// Races of the database, not the admission limits: every request of a race is let in at once.
const app = await makeTestApp(
  (db) => db.run(Effect.asVoid(loadSnapshot(snapshot, { reset: false }))),
  {
    admission: {
      bodyBytes: 256 * 1024 * 1024,
      bodyBytesPerKey: 256 * 1024 * 1024,
      heavy: 4 * PARALLEL,
      heavyPerKey: 4 * PARALLEL,
    },
  },
);
const writer = await app.key(["read", "write", "raw"], { member: "race-cleaner-1" });
const end = snapshot.dataset.end;

const sql = sqlOf(app);
const counts = countsOf(app);
const stores = await storesOf(app, writer.key);
const datasetStart = (await app.call("GET", "/api/v1/dataset", { key: writer.key })).body
  .start as string;

interface Day {
  business_date: string;
  energy_id: number | null;
  energy_kwh: string | null;
  status: string;
  source_kind: string | null;
  revision_no: number | null;
}
interface Target {
  store: StoreInfo;
  day: Day;
}

const energyOf = async (store: StoreInfo, start: string, last: string): Promise<Day[]> => {
  const answer = await app.call(
    "GET",
    `/api/v1/stores/${store.id}/energy?scope_id=${store.scope_id}&start=${start}&end=${last}`,
    { key: writer.key },
  );
  assert.equal(answer.status, 200);
  return assertSchema(EnergyResponse, answer.body).days as unknown as Day[];
};
const dayOf = async (t: Target): Promise<Day> =>
  (await energyOf(t.store, t.day.business_date, t.day.business_date))[0];

// The stored fact row of a store-day (none, or the only one) and its number of revisions.
interface Stored {
  energy_id: number;
  revision_no: number;
  revisions: number;
  max_revision_no: number | null;
}
const storedOf = (t: Target): Promise<ReadonlyArray<Stored>> =>
  sql((s) =>
    s<Stored>`
      SELECT e.id AS energy_id, e.revision_no,
        (SELECT count(*) FROM energy_revisions r WHERE r.energy_id = e.id)::int AS revisions,
        (SELECT max(r.revision_no) FROM energy_revisions r WHERE r.energy_id = e.id)::int
          AS max_revision_no
      FROM energy_days e
      WHERE e.scope_id = ${t.store.scope_id} AND e.business_date = ${t.day.business_date}::date`
  );
const revisionsOf = async (t: Target) => {
  const rows = await storedOf(t);
  return rows.length === 0 ? 0 : rows[0].revisions;
};

// Revisions written by one batch's import rows.
const batchRevisions = (batchId: number): Promise<number> =>
  sql((s) =>
    s<{ n: number }>`
      SELECT count(*)::int AS n FROM energy_revisions v
      JOIN import_rows r ON r.id = v.import_row_id
      WHERE r.batch_id = ${batchId}`
  ).then((rows) => rows[0].n);

// Pools of untouched days within the dataset: legacy values (UPDATE) and empty days (INSERT).
const pools: { legacy: Target[]; empty: Target[] } = { legacy: [], empty: [] };
{
  const first = addDays(end, -365) > datasetStart ? addDays(end, -365) : datasetStart;
  for (const store of stores) {
    for (const day of await energyOf(store, first, addDays(end, -1))) {
      if (day.status === "NO_DATA") pools.empty.push({ store, day });
      else if (day.status === "AVAILABLE" && day.source_kind === "LEGACY_DIRECT") {
        pools.legacy.push({ store, day });
      }
    }
  }
}
const take = (kind: "legacy" | "empty"): Target => {
  const found = pools[kind].shift();
  assert.ok(found, `the snapshot has one more ${kind} day`);
  return found;
};

const csvFile = (rows: ReadonlyArray<readonly [Target, string]>) =>
  [
    "品牌,门店,日期,日能耗",
    ...rows.map(([t, value]) =>
      [t.store.brand_name, t.store.name, t.day.business_date, value].join(",")
    ),
  ].join("\r\n") + "\r\n";

let keys = 0;
const newKey = () => `race-key-${++keys}-${crypto.randomUUID()}`;

const preview = (content: string, options: { idem?: string; reason?: string } = {}) =>
  app.call("POST", "/api/v1/imports/preview", {
    key: writer.key,
    headers: { "idempotency-key": options.idem ?? newKey() },
    body: {
      filename: "race.csv",
      content_base64: b64(content),
      reason: options.reason ?? "concurrent cleaning",
    },
  });

const previewed = async (rows: ReadonlyArray<readonly [Target, string]>): Promise<ImportBody> => {
  const answer = await preview(csvFile(rows));
  assert.equal(answer.status, 200, JSON.stringify(answer.body));
  const batch = assertSchema(Import, answer.body);
  assert.equal(batch.status, "PREVIEWED");
  return batch;
};

const commit = (batchId: number, idem: string = newKey()) =>
  app.call("POST", `/api/v1/imports/${batchId}/commit`, {
    key: writer.key,
    headers: { "idempotency-key": idem },
    body: {},
  });

const parallel = (n: number, f: (i: number) => Promise<Answer>) =>
  Promise.all(Array.from({ length: n }, (_, i) => f(i)));

const statusesOf = (answers: ReadonlyArray<Answer>) => {
  const tally: Record<number, number> = {};
  for (const a of answers) tally[a.status] = (tally[a.status] ?? 0) + 1;
  return tally;
};
const codeOf = (answer: Answer): string => (answer.body as { error: { code: string } }).error.code;

const CHANGING = new Set(["INSERT", "UPDATE", "RELINK", "RESTORE", "VOID"]);
const changingRows = (batch: ImportBody) => batch.rows.filter((r) => CHANGING.has(r.action)).length;

const batchStatus = async (batchId: number): Promise<string> => {
  const answer = await app.call("GET", `/api/v1/imports/${batchId}`, { key: writer.key });
  assert.equal(answer.status, 200);
  return assertSchema(Import, answer.body).status;
};

Deno.test("20 parallel commits, different keys: one 200, no doubled revision", async () => {
  const legacy = [take("legacy"), take("legacy"), take("legacy")];
  const empty = take("empty");
  const batch = await previewed([
    [legacy[0], "111.1"],
    [legacy[1], "222.2"],
    [legacy[2], "333.3"],
    [empty, "4.5"],
  ]);
  assert.deepEqual(batch.rows.map((r) => r.action), ["UPDATE", "UPDATE", "UPDATE", "INSERT"]);
  const changing = changingRows(batch);
  const before = await counts();
  const revisionsBefore = await Promise.all(legacy.map(revisionsOf));

  const answers = await parallel(PARALLEL, () => commit(batch.id));
  assert.deepEqual(statusesOf(answers), { 200: 1, 409: PARALLEL - 1 }, JSON.stringify(answers));
  for (const answer of answers.filter((a) => a.status !== 200)) {
    assertErrorBody(answer, 409);
    assert.ok(
      ["ALREADY_COMMITTED", "STALE_PREVIEW"].includes(codeOf(answer)),
      `unexpected code ${codeOf(answer)}`,
    );
  }
  const winner = assertSchema(Import, answers.find((a) => a.status === 200)!.body);
  assert.equal(winner.status, "COMMITTED");
  assert.ok(winner.committed_at);

  const after = await counts();
  assert.equal(after.revisions, before.revisions + changing, "one revision per changing row");
  assert.equal(after.days, before.days + 1, "the empty day got one row");
  assert.equal(after.batches, before.batches);
  assert.equal(await batchRevisions(batch.id), changing);
  for (const [i, t] of legacy.entries()) {
    const day = await dayOf(t);
    assert.equal(day.energy_kwh, ["111.1000", "222.2000", "333.3000"][i]);
    assert.equal(day.revision_no, t.day.revision_no! + 1, "revision_no grew by exactly 1");
    const [stored] = await storedOf(t);
    assert.equal(stored.revisions, revisionsBefore[i] + 1);
    assert.equal(stored.max_revision_no, stored.revision_no);
  }
  const inserted = await storedOf(empty);
  assert.equal(inserted.length, 1);
  assert.equal(inserted[0].revision_no, 1);
  assert.equal(inserted[0].revisions, 1);
  assert.equal((await dayOf(empty)).energy_kwh, "4.5000");
  assert.equal(await batchStatus(batch.id), "COMMITTED");
});

Deno.test("20 parallel commits, same key: all 200, identical, applied once", async () => {
  const legacy = [take("legacy"), take("legacy")];
  const batch = await previewed([[legacy[0], "12.5"], [legacy[1], "13.5"]]);
  const changing = changingRows(batch);
  assert.equal(changing, 2);
  const before = await counts();
  const revisionsBefore = await Promise.all(legacy.map(revisionsOf));

  const idem = newKey();
  const answers = await parallel(PARALLEL, () => commit(batch.id, idem));
  assert.deepEqual(statusesOf(answers), { 200: PARALLEL }, JSON.stringify(answers));
  const first = assertSchema(Import, answers[0].body);
  assert.equal(first.status, "COMMITTED");
  for (const answer of answers) assert.deepEqual(answer.body, answers[0].body, "the same result");

  const after = await counts();
  assert.equal(after.revisions, before.revisions + changing, "the revisions were added once");
  assert.equal(await batchRevisions(batch.id), changing);
  for (const [i, t] of legacy.entries()) {
    const [stored] = await storedOf(t);
    assert.equal(stored.revision_no, t.day.revision_no! + 1);
    assert.equal(stored.revisions, revisionsBefore[i] + 1);
  }
  const records = await sql((s) =>
    s<{ n: number }>`SELECT count(*)::int AS n FROM idempotency_records WHERE idem_key = ${idem}`
  );
  assert.equal(records[0].n, 1, "one idempotency record for the key");
  // A replay afterwards is still the first result; another key finds the batch committed.
  assert.deepEqual((await commit(batch.id, idem)).body, answers[0].body);
  assertErrorBody(await commit(batch.id), 409, "ALREADY_COMMITTED");
});

Deno.test("20 parallel previews, one key: one batch; different bodies: one 200", async () => {
  const t = take("legacy");
  const file = csvFile([[t, "77.7"]]);

  const before = await counts();
  const idem = newKey();
  const same = await parallel(PARALLEL, () => preview(file, { idem }));
  assert.deepEqual(statusesOf(same), { 200: PARALLEL }, JSON.stringify(same));
  const ids = new Set(same.map((a) => assertSchema(Import, a.body).id));
  assert.equal(ids.size, 1, "every answer names the same batch");
  for (const answer of same) assert.deepEqual(answer.body, same[0].body);
  const afterSame = await counts();
  assert.equal(afterSame.batches, before.batches + 1, "exactly one new import batch");
  assert.equal(afterSame.files, before.files + 1, "exactly one stored source file");
  assert.equal(afterSame.rows, before.rows + 1);
  assert.equal(afterSame.revisions, before.revisions, "a preview writes no revision");

  const other = newKey();
  const differing = await parallel(
    PARALLEL,
    (i) => preview(file, { idem: other, reason: `concurrent cleaning, reason ${i}` }),
  );
  const ok = differing.filter((a) => a.status === 200);
  assert.ok(ok.length >= 1, JSON.stringify(statusesOf(differing)));
  assert.equal(new Set(ok.map((a) => assertSchema(Import, a.body).id)).size, 1);
  assert.equal(ok.length, 1, "every request differs, so only the first one succeeds");
  for (const answer of differing.filter((a) => a.status !== 200)) {
    assertErrorBody(answer, 409, "IDEMPOTENCY_KEY_REUSED");
  }
  const afterDiffering = await counts();
  assert.equal(afterDiffering.batches, afterSame.batches + 1, "exactly one new import batch");
  assert.equal(afterDiffering.files, afterSame.files + 1);
  assert.equal(afterDiffering.rows, afterSame.rows + 1);
  assert.equal((await dayOf(t)).energy_kwh, t.day.energy_kwh, "previews change no energy");
});

Deno.test("two batches racing on one day: one wins whole, the other writes nothing", async () => {
  const shared = take("legacy");
  const onlyA = take("empty");
  const onlyB = take("legacy");
  const a = await previewed([[shared, "10"], [onlyA, "7"]]);
  const b = await previewed([[onlyB, "30"], [shared, "20"]]);
  assert.deepEqual(a.rows.map((r) => r.action), ["UPDATE", "INSERT"]);
  assert.deepEqual(b.rows.map((r) => r.action), ["UPDATE", "UPDATE"]);
  const before = await counts();
  const sharedRevisions = await revisionsOf(shared);
  const onlyBRevisions = await revisionsOf(onlyB);

  const [ca, cb] = await Promise.all([commit(a.id), commit(b.id)]);
  assert.deepEqual(
    [ca.status, cb.status].sort(),
    [200, 409],
    JSON.stringify([ca.body, cb.body]),
  );
  const aWon = ca.status === 200;
  assertErrorBody(aWon ? cb : ca, 409, "STALE_PREVIEW");

  const day = await dayOf(shared);
  assert.equal(day.energy_kwh, aWon ? "10.0000" : "20.0000", "the winner's value, no lost update");
  assert.equal(day.revision_no, shared.day.revision_no! + 1);
  const [stored] = await storedOf(shared);
  assert.equal(stored.revisions, sharedRevisions + 1, "one new revision of the shared day");
  assert.equal(stored.max_revision_no, stored.revision_no);

  // The loser's other day is untouched; the winner's other day is applied.
  const a2 = await storedOf(onlyA);
  const b2 = await dayOf(onlyB);
  if (aWon) {
    assert.equal(a2.length, 1);
    assert.equal(a2[0].revision_no, 1);
    assert.equal((await dayOf(onlyA)).energy_kwh, "7.0000");
    assert.deepEqual(b2, onlyB.day, "the loser's second day is not written");
    assert.equal(await revisionsOf(onlyB), onlyBRevisions);
  } else {
    assert.equal(a2.length, 0, "the loser's new day is not inserted");
    assert.equal((await dayOf(onlyA)).status, "NO_DATA");
    assert.equal(b2.energy_kwh, "30.0000");
    assert.equal(b2.revision_no, onlyB.day.revision_no! + 1);
  }
  const after = await counts();
  assert.equal(after.revisions, before.revisions + 2, "only the winner's two revisions");
  assert.equal(after.days, before.days + (aWon ? 1 : 0));
  assert.equal(await batchRevisions(aWon ? b.id : a.id), 0);
  assert.equal(await batchStatus(aWon ? a.id : b.id), "COMMITTED");
  assert.equal(await batchStatus(aWon ? b.id : a.id), "PREVIEWED");
});

Deno.test("two batches inserting one empty day concurrently: one row, revision 1", async () => {
  const empty = take("empty");
  const onlyA = take("legacy");
  const onlyB = take("legacy");
  const a = await previewed([[empty, "1.25"], [onlyA, "41"]]);
  const b = await previewed([[onlyB, "42"], [empty, "2.5"]]);
  assert.equal(a.rows[0].action, "INSERT");
  assert.equal(b.rows[1].action, "INSERT");
  const before = await counts();
  const revisionsA = await revisionsOf(onlyA);
  const revisionsB = await revisionsOf(onlyB);

  const [ca, cb] = await Promise.all([commit(a.id), commit(b.id)]);
  assert.deepEqual(
    [ca.status, cb.status].sort(),
    [200, 409],
    JSON.stringify([ca.body, cb.body]),
  );
  const aWon = ca.status === 200;
  assertErrorBody(aWon ? cb : ca, 409, "STALE_PREVIEW");

  const stored = await storedOf(empty);
  assert.equal(stored.length, 1, "exactly one row for the day");
  assert.equal(stored[0].revision_no, 1);
  assert.equal(stored[0].revisions, 1);
  assert.equal((await dayOf(empty)).energy_kwh, aWon ? "1.2500" : "2.5000");
  const loser = aWon ? onlyB : onlyA;
  const winner = aWon ? onlyA : onlyB;
  assert.deepEqual(await dayOf(loser), loser.day, "the loser's second day is not written");
  assert.equal(await revisionsOf(loser), aWon ? revisionsB : revisionsA);
  assert.equal((await dayOf(winner)).revision_no, winner.day.revision_no! + 1);
  const after = await counts();
  assert.equal(after.revisions, before.revisions + 2);
  assert.equal(after.days, before.days + 1);
  assert.equal(await batchStatus(aWon ? b.id : a.id), "PREVIEWED");
});

Deno.test("two batches sharing two days in opposite orders: one wins, no deadlock", async () => {
  const x = take("legacy");
  const y = take("legacy");
  const a = await previewed([[x, "501"], [y, "502"]]);
  const b = await previewed([[y, "602"], [x, "601"]]);
  const before = await counts();

  const [ca, cb] = await Promise.all([commit(a.id), commit(b.id)]);
  assert.deepEqual(
    [ca.status, cb.status].sort(),
    [200, 409],
    JSON.stringify([ca.body, cb.body]),
  );
  const aWon = ca.status === 200;
  assertErrorBody(aWon ? cb : ca, 409, "STALE_PREVIEW");
  assert.equal((await dayOf(x)).energy_kwh, aWon ? "501.0000" : "601.0000");
  assert.equal((await dayOf(y)).energy_kwh, aWon ? "502.0000" : "602.0000");
  assert.equal((await dayOf(x)).revision_no, x.day.revision_no! + 1);
  assert.equal((await dayOf(y)).revision_no, y.day.revision_no! + 1);
  assert.equal((await counts()).revisions, before.revisions + 2);
});

Deno.test("two batches inserting two empty days in opposite orders: one wins", async () => {
  const x = take("empty");
  const y = take("empty");
  const a = await previewed([[x, "5.5"], [y, "6.5"]]);
  const b = await previewed([[y, "8.5"], [x, "7.5"]]);
  assert.ok([...a.rows, ...b.rows].every((r) => r.action === "INSERT"));
  const before = await counts();

  const [ca, cb] = await Promise.all([commit(a.id), commit(b.id)]);
  assert.deepEqual(
    [ca.status, cb.status].sort(),
    [200, 409],
    JSON.stringify([ca.body, cb.body]),
  );
  const aWon = ca.status === 200;
  assertErrorBody(aWon ? cb : ca, 409, "STALE_PREVIEW");
  assert.equal((await dayOf(x)).energy_kwh, aWon ? "5.5000" : "7.5000");
  assert.equal((await dayOf(y)).energy_kwh, aWon ? "6.5000" : "8.5000");
  for (const t of [x, y]) {
    const stored = await storedOf(t);
    assert.equal(stored.length, 1);
    assert.equal(stored[0].revision_no, 1);
    assert.equal(stored[0].revisions, 1);
  }
  const after = await counts();
  assert.equal(after.revisions, before.revisions + 2);
  assert.equal(after.days, before.days + 2);
});

Deno.test("10 concurrent commits of batches on disjoint days all succeed", async () => {
  const n = 10;
  const plans = Array.from({ length: n }, (_, i) => ({
    legacy: take("legacy"),
    empty: take("empty"),
    legacyValue: `${900 + i}.5`,
    emptyValue: `${i}.75`,
  }));
  const batches: ImportBody[] = [];
  for (const p of plans) {
    batches.push(await previewed([[p.legacy, p.legacyValue], [p.empty, p.emptyValue]]));
  }
  const before = await counts();

  const answers = await parallel(n, (i) => commit(batches[i].id));
  assert.deepEqual(statusesOf(answers), { 200: n }, JSON.stringify(answers.map((a) => a.body)));
  for (const answer of answers) assert.equal(assertSchema(Import, answer.body).status, "COMMITTED");

  const after = await counts();
  assert.equal(after.revisions, before.revisions + 2 * n);
  assert.equal(after.days, before.days + n);
  for (const p of plans) {
    const legacy = await dayOf(p.legacy);
    assert.equal(legacy.energy_kwh, `${p.legacyValue}000`);
    assert.equal(legacy.revision_no, p.legacy.day.revision_no! + 1);
    const inserted = await dayOf(p.empty);
    assert.equal(inserted.energy_kwh, `${p.emptyValue}00`);
    assert.equal(inserted.revision_no, 1);
  }
  // Commits of different days of one month rebuild its stored chunk one after the other: what is
  // stored equals what the days compute, every day included.
  assert.ok(
    new Set(plans.map((p) => `${p.legacy.store.id} ${p.legacy.day.business_date.slice(0, 7)}`))
      .size < n,
    "some commits share a store's month",
  );
  const check = await app.db.run(checkStoredDays());
  assert.deepEqual([check.mismatches, check.months], [[], []]);
  const ranges = plans.flatMap((p) =>
    [p.legacy, p.empty].map((t) => ({
      scopeId: t.store.scope_id,
      start: `${t.day.business_date.slice(0, 7)}-01`,
      end: t.day.business_date,
    }))
  );
  assert.deepEqual(await app.db.run(checkReads(ranges)), []);
});

Deno.test({
  name: "close the test app",
  fn: () => app.close(),
  sanitizeOps: false,
  sanitizeResources: false,
});
