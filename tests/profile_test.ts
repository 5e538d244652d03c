// Profile edits through HTTP (contract parts 3, 4 rule 7, 7 and 8; rules.md §9): trimming, the
// version guard, UNCHANGED, audit entries, refusals and concurrent edits.
import { strict as assert } from "node:assert";
import { SqlClient } from "@effect/sql";
import { Effect } from "effect";
import { ProfileResult, StoreReference } from "../src/domain/stores.ts";
import { generateSnapshot } from "../src/seed/generate.ts";
import { loadSnapshot } from "../src/seed/load.ts";
import type { SnapshotStore } from "../src/seed/snapshot.ts";
import { type Answer, assertErrorBody, assertSchema, BASE, makeTestApp } from "./helpers.ts";

const snapshot = generateSnapshot({ stores: 30 });
const app = await makeTestApp((db) =>
  db.run(Effect.asVoid(loadSnapshot(snapshot, { reset: false })))
);
const sql = <A>(f: (sql: SqlClient.SqlClient) => Effect.Effect<A, unknown>) =>
  app.db.run(Effect.flatMap(SqlClient.SqlClient, f));

const writer = await app.key(["read", "write"], { member: "profile-editor" });

// Each test edits its own stores, so the tests stay independent within the one database.
const free = [...snapshot.stores];
const take = (accept: (s: SnapshotStore) => boolean = () => true): SnapshotStore => {
  const at = free.findIndex((s) => s.profile_editable && s.address !== null && accept(s));
  assert.ok(at >= 0, "the snapshot has an editable store left for this test");
  return free.splice(at, 1)[0];
};

const path = (storeId: number) => `/api/v1/stores/${storeId}/profile`;
const patch = (storeId: number, body: unknown, key: string = writer.key) =>
  app.call("PATCH", path(storeId), { key, body });

// A 200 answer, decoded strictly as ProfileResult.
const result = (answer: Answer) => {
  assert.equal(answer.status, 200, JSON.stringify(answer.body));
  return assertSchema(ProfileResult, answer.body);
};

const reference = async (storeId: number, key: string = writer.key) => {
  const answer = await app.call("GET", `/api/v1/stores/${storeId}/reference`, { key });
  assert.equal(answer.status, 200, JSON.stringify(answer.body));
  return assertSchema(StoreReference, answer.body);
};

interface StoredProfile {
  readonly name: string;
  readonly address: string | null;
  readonly version: number;
  readonly profile_editable: boolean;
}

const stored = async (storeId: number): Promise<StoredProfile> => {
  const rows = await sql((s) =>
    s<StoredProfile>`
      SELECT name, address, version::int AS version, profile_editable
      FROM stores WHERE id = ${storeId}`
  );
  assert.equal(rows.length, 1);
  return rows[0];
};

interface AuditRow {
  readonly member_id: number | null;
  readonly action: string;
  readonly entity_type: string;
  readonly entity_id: number;
  readonly before: unknown;
  readonly after: unknown;
}

const auditOf = async (storeId: number): Promise<AuditRow[]> => {
  const rows = await sql((s) =>
    s<{ [K in keyof AuditRow]: K extends "before" | "after" ? string | null : AuditRow[K] }>`
      SELECT member_id::int AS member_id, action, entity_type, entity_id::int AS entity_id,
        before::text AS before, after::text AS after
      FROM audit_log WHERE entity_type = 'store' AND entity_id = ${storeId} ORDER BY id`
  );
  return rows.map((r) => ({
    ...r,
    before: r.before === null ? null : JSON.parse(r.before),
    after: r.after === null ? null : JSON.parse(r.after),
  }));
};

const auditCount = async () =>
  (await sql((s) => s<{ n: number }>`SELECT count(*)::int AS n FROM audit_log`))[0].n;

const memberOfKey = async (keyId: number) =>
  (await sql((s) =>
    s<{
      member_id: number;
    }>`SELECT member_id::int AS member_id FROM access_keys WHERE id = ${keyId}`
  ))[0].member_id;

// Every refusal leaves the profile as it was and writes no audit entry.
const assertUntouched = async (store: SnapshotStore, version = 1) => {
  const now = await stored(store.id);
  assert.equal(now.name, store.name);
  assert.equal(now.address, store.address);
  assert.equal(now.version, version);
  if (version === 1) assert.deepEqual(await auditOf(store.id), []);
};

Deno.test("UPDATED: values are trimmed, the version moves by one, the reference shows it, one audit entry", async () => {
  const store = take();
  const before = await reference(store.id);
  assert.equal(before.profile.version, 1);
  assert.equal(before.can_edit_profile, true);
  assert.deepEqual([...before.editable_fields].sort(), ["address", "name"]);
  const auditsBefore = await auditCount();

  const answer = await patch(store.id, {
    name: "  新天地旗舰店  ",
    address: " \t上海市黄浦区马当路 245 号 1F-01\n ",
    expected_version: 1,
  });
  assert.deepEqual(result(answer), {
    status: "UPDATED",
    profile: {
      id: store.id,
      name: "新天地旗舰店",
      address: "上海市黄浦区马当路 245 号 1F-01",
      version: 2,
    },
  });

  const after = await reference(store.id);
  assert.equal(after.profile.name, "新天地旗舰店");
  assert.equal(after.profile.address, "上海市黄浦区马当路 245 号 1F-01");
  assert.equal(after.profile.version, 2);
  // Nothing else of the profile moves.
  const { name: _n1, address: _a1, version: _v1, ...restBefore } = before.profile;
  const { name: _n2, address: _a2, version: _v2, ...restAfter } = after.profile;
  assert.deepEqual(restAfter, restBefore);
  assert.equal(after.can_edit_profile, true);

  const audit = await auditOf(store.id);
  assert.equal(audit.length, 1);
  assert.equal(await auditCount(), auditsBefore + 1);
  assert.deepEqual(audit[0], {
    member_id: await memberOfKey(writer.id),
    action: "PROFILE_UPDATED",
    entity_type: "store",
    entity_id: store.id,
    before: { name: store.name, address: store.address, version: 1 },
    after: { name: "新天地旗舰店", address: "上海市黄浦区马当路 245 号 1F-01", version: 2 },
  });

  // An address-only change against the new version is a second update with its own entry.
  const second = result(
    await patch(store.id, {
      name: "新天地旗舰店",
      address: "上海市黄浦区马当路 247 号",
      expected_version: 2,
    }),
  );
  assert.deepEqual(second, {
    status: "UPDATED",
    profile: {
      id: store.id,
      name: "新天地旗舰店",
      address: "上海市黄浦区马当路 247 号",
      version: 3,
    },
  });
  const audit2 = await auditOf(store.id);
  assert.equal(audit2.length, 2);
  assert.deepEqual(audit2[1].before, {
    name: "新天地旗舰店",
    address: "上海市黄浦区马当路 245 号 1F-01",
    version: 2,
  });
  assert.deepEqual(audit2[1].after, {
    name: "新天地旗舰店",
    address: "上海市黄浦区马当路 247 号",
    version: 3,
  });
  assert.equal((await reference(store.id)).profile.version, 3);
});

Deno.test("a store without an address gets one; the audit entry records the null before", async () => {
  const store = take();
  await sql((s) => s`UPDATE stores SET address = NULL WHERE id = ${store.id}`);
  assert.equal((await reference(store.id)).profile.address, null);
  const answer = result(
    await patch(store.id, {
      name: store.name,
      address: "北京市朝阳区建国路 1 号",
      expected_version: 1,
    }),
  );
  assert.deepEqual(answer, {
    status: "UPDATED",
    profile: { id: store.id, name: store.name, address: "北京市朝阳区建国路 1 号", version: 2 },
  });
  const audit = await auditOf(store.id);
  assert.equal(audit.length, 1);
  assert.deepEqual(audit[0].before, { name: store.name, address: null, version: 1 });
  assert.deepEqual(audit[0].after, {
    name: store.name,
    address: "北京市朝阳区建国路 1 号",
    version: 2,
  });
});

Deno.test("UNCHANGED: the same values, also after trimming, keep the version and write no audit entry", async () => {
  const store = take();
  const auditsBefore = await auditCount();
  const unchanged = {
    status: "UNCHANGED",
    profile: { id: store.id, name: store.name, address: store.address, version: 1 },
  };
  assert.deepEqual(
    result(
      await patch(store.id, { name: store.name, address: store.address, expected_version: 1 }),
    ),
    unchanged,
  );
  assert.deepEqual(
    result(
      await patch(store.id, {
        name: `  ${store.name}\t`,
        address: `\n${store.address}   `,
        expected_version: 1,
      }),
    ),
    unchanged,
  );
  await assertUntouched(store);
  assert.equal(await auditCount(), auditsBefore);
  assert.equal((await reference(store.id)).profile.version, 1);
});

Deno.test("409 STALE_VERSION when expected_version differs, also for equal values; nothing changes", async () => {
  const store = take();
  const renamed = { name: "过期版本店", address: "某市某区某路 1 号" };
  for (const expected_version of [2, 3, 2147483647]) {
    assertErrorBody(
      await patch(store.id, { ...renamed, expected_version }),
      409,
      "STALE_VERSION",
    );
    assertErrorBody(
      await patch(store.id, { name: store.name, address: store.address, expected_version }),
      409,
      "STALE_VERSION",
    );
  }
  await assertUntouched(store);

  // After an accepted edit the old version is stale in its turn.
  result(await patch(store.id, { ...renamed, expected_version: 1 }));
  for (
    const body of [{ ...renamed, expected_version: 1 }, {
      name: "又改",
      address: "x",
      expected_version: 1,
    }]
  ) {
    assertErrorBody(await patch(store.id, body), 409, "STALE_VERSION");
  }
  const now = await stored(store.id);
  assert.equal(now.name, renamed.name);
  assert.equal(now.version, 2);
  assert.equal((await auditOf(store.id)).length, 1);
});

Deno.test("400 for invalid bodies (empty, blank, too long, missing or extra fields, bad version, not JSON)", async () => {
  const store = take();
  const ok = { name: "合法名称", address: "合法地址", expected_version: 1 };
  const bodies: unknown[] = [
    { ...ok, name: "" },
    { ...ok, name: "   " },
    { ...ok, name: "\t\n \r" },
    { ...ok, name: "\u3000\u00a0" },
    { ...ok, address: "" },
    { ...ok, address: "    " },
    { ...ok, name: "a".repeat(81) },
    { ...ok, name: "名".repeat(81) },
    { ...ok, name: `  ${"a".repeat(81)}  ` },
    { ...ok, address: "b".repeat(201) },
    { ...ok, address: ` ${"址".repeat(201)} ` },
    { ...ok, name: null },
    { ...ok, address: null },
    { ...ok, name: 42 },
    { ...ok, name: ["a"] },
    { name: ok.name, address: ok.address },
    { name: ok.name, expected_version: 1 },
    { address: ok.address, expected_version: 1 },
    {},
    { ...ok, extra: true },
    { ...ok, version: 1 },
    { ...ok, expected_version: 0 },
    { ...ok, expected_version: -1 },
    { ...ok, expected_version: 1.5 },
    { ...ok, expected_version: "1" },
    { ...ok, expected_version: null },
    { ...ok, expected_version: true },
    [ok],
    "null",
    "42",
    "{not json",
    `{"name": "a", "address": "b", "expected_version": 1`,
    "",
  ];
  for (const body of bodies) {
    const answer = await patch(store.id, body);
    try {
      assertErrorBody(answer, 400);
    } catch (error) {
      throw new Error(`body ${JSON.stringify(body)}: ${(error as Error).message}`);
    }
  }
  // No body at all.
  assertErrorBody(await app.call("PATCH", path(store.id), { key: writer.key }), 400);
  // A path id that is not an integer >= 1.
  for (const id of ["0", "-1", "abc", "1.5"]) {
    assertErrorBody(
      await app.call("PATCH", `/api/v1/stores/${id}/profile`, { key: writer.key, body: ok }),
      400,
    );
  }
  await assertUntouched(store);
});

Deno.test("limits apply after trimming: 80 and 200 characters with surrounding spaces are accepted", async () => {
  const store = take();
  const name = "名".repeat(80);
  const address = "址".repeat(200);
  const answer = result(
    await patch(store.id, { name: `   ${name}  `, address: `\t${address} `, expected_version: 1 }),
  );
  assert.deepEqual(answer, {
    status: "UPDATED",
    profile: { id: store.id, name, address, version: 2 },
  });
  const now = await stored(store.id);
  assert.equal(now.name, name);
  assert.equal(now.address, address);
  // The smallest values: one character each.
  assert.deepEqual(
    result(await patch(store.id, { name: " a ", address: "b", expected_version: 2 })).profile,
    { id: store.id, name: "a", address: "b", version: 3 },
  );
});

Deno.test("401 without or with a bad key; 403 without write, for a read-only member, outside the key's stores; 404 unknown store", async () => {
  const store = take();
  const other = take();
  const body = { name: "越权修改", address: "越权地址", expected_version: 1 };

  assertErrorBody(await app.call("PATCH", path(store.id), { body }), 401, "MISSING_CREDENTIAL");
  assertErrorBody(await app.call("PATCH", path(999_999), { body }), 401);
  assertErrorBody(await app.call("PATCH", path(store.id), { body: "{not json" }), 401);
  assertErrorBody(await patch(store.id, body, "esk_not-a-real-key"), 401, "INVALID_CREDENTIAL");
  const expired = await app.key(["read", "write"], { seconds: -1 });
  assertErrorBody(await patch(store.id, body, expired.key), 401);

  for (const permissions of [["read"], ["raw"], ["read", "raw"]] as const) {
    const { key } = await app.key(permissions);
    assertErrorBody(await patch(store.id, body, key), 403, "PERMISSION_MISSING");
    // The permission is refused before the store is looked up.
    assertErrorBody(await patch(999_999, body, key), 403, "PERMISSION_MISSING");
  }

  // Write permission, but the member's database role only allows reads.
  const readOnly = await app.key(["read", "write"], { member: "profile-read-only-member" });
  await sql((s) =>
    s`UPDATE members SET db_role = 'READER' WHERE login_name = 'profile-read-only-member'`
  );
  assertErrorBody(await patch(store.id, body, readOnly.key), 403, "ROLE_READ_ONLY");
  assert.equal((await reference(store.id, readOnly.key)).can_edit_profile, false);
  assert.equal((await reference(store.id, (await app.key(["read"])).key)).can_edit_profile, false);

  assertErrorBody(await patch(999_999, body), 404);
  assertErrorBody(await patch(2147483647, body), 404);

  const limited = await app.key(["read", "write"], { stores: [other.id] });
  assertErrorBody(await patch(store.id, body, limited.key), 403, "STORE_FORBIDDEN");
  assertErrorBody(await patch(999_999, body, limited.key), 404);
  // The store and the key's scope are decided before the body: what it holds, or its media type,
  // changes nothing for a store the key may not edit.
  for (const sent of ["{not json", { extra: true }]) {
    assertErrorBody(await patch(store.id, sent, limited.key), 403, "STORE_FORBIDDEN");
    assertErrorBody(await patch(999_999, sent, limited.key), 404);
  }
  const asText = await app.handler(
    new Request(BASE + path(store.id), {
      method: "PATCH",
      headers: { authorization: `Bearer ${limited.key}`, "content-type": "text/plain" },
      body: "x",
    }),
  );
  assert.equal(asText.status, 403);
  assert.equal((await asText.json()).error.code, "STORE_FORBIDDEN");

  await assertUntouched(store);

  // The same limited key edits the store it is limited to.
  const inside = result(
    await patch(
      other.id,
      { name: other.name, address: "范围内新地址", expected_version: 1 },
      limited.key,
    ),
  );
  assert.equal(inside.status, "UPDATED");
  const audit = await auditOf(other.id);
  assert.equal(audit.length, 1);
  assert.equal(audit[0].member_id, await memberOfKey(limited.id));
});

Deno.test("403 PROFILE_NOT_EDITABLE when the profile is locked; the reference then says can_edit_profile false", async () => {
  const store = take();
  assert.equal((await reference(store.id)).can_edit_profile, true);
  await sql((s) => s`UPDATE stores SET profile_editable = false WHERE id = ${store.id}`);

  const bodies = [
    { name: "锁定后改名", address: "锁定后地址", expected_version: 1 },
    { name: store.name, address: store.address, expected_version: 1 },
    { name: "锁定后改名", address: "锁定后地址", expected_version: 7 },
  ];
  for (const body of bodies) {
    assertErrorBody(await patch(store.id, body), 403, "PROFILE_NOT_EDITABLE");
  }
  const ref = await reference(store.id);
  assert.equal(ref.can_edit_profile, false);
  assert.equal(ref.profile.version, 1);
  assert.equal(ref.profile.name, store.name);
  assert.equal((await stored(store.id)).profile_editable, false);
  await assertUntouched(store);
});

Deno.test("409 NAME_TAKEN for another store's name of the same brand; the same name in another brand is allowed", async () => {
  const a = take();
  const b = take((s) => s.brand_id === a.brand_id);
  const c = take((s) => s.brand_id !== a.brand_id);

  for (const name of [b.name, `  ${b.name} `]) {
    assertErrorBody(
      await patch(a.id, { name, address: a.address, expected_version: 1 }),
      409,
      "NAME_TAKEN",
    );
  }
  await assertUntouched(a);
  await assertUntouched(b);

  // Another brand's name is free for this brand.
  const toC = result(await patch(a.id, { name: c.name, address: a.address, expected_version: 1 }));
  assert.deepEqual(toC.profile, { id: a.id, name: c.name, address: a.address, version: 2 });
  assert.equal((await reference(a.id)).profile.name, c.name);
  assert.equal((await reference(c.id)).profile.name, c.name);

  // a's old name is now free for b; b keeping its own name while changing its address is fine.
  const bAddress = result(
    await patch(b.id, { name: b.name, address: "新址 8 号", expected_version: 1 }),
  );
  assert.equal(bAddress.status, "UPDATED");
  const bRenamed = result(
    await patch(b.id, { name: a.name, address: "新址 8 号", expected_version: 2 }),
  );
  assert.deepEqual(bRenamed.profile, { id: b.id, name: a.name, address: "新址 8 号", version: 3 });
  // And a cannot take it back.
  assertErrorBody(
    await patch(a.id, { name: a.name, address: a.address, expected_version: 2 }),
    409,
    "NAME_TAKEN",
  );
  assert.equal((await stored(a.id)).version, 2);
  assert.equal((await auditOf(a.id)).length, 1);
  assert.equal((await auditOf(b.id)).length, 2);
});

Deno.test("409 NAME_TAKEN quotes a long name only by its start", async () => {
  const a = take();
  const b = take((s) => s.brand_id === a.brand_id);
  const long = `长名门店${"甲".repeat(56)}`;
  result(await patch(b.id, { name: long, address: b.address, expected_version: 1 }));
  const taken = await patch(a.id, { name: long, address: a.address, expected_version: 1 });
  assertErrorBody(taken, 409, "NAME_TAKEN");
  const message = String(taken.body.error.message);
  assert.ok(!message.includes(long), message);
  assert.ok(message.includes(`${[...long].slice(0, 20).join("")}…`), message);
});

Deno.test("20 concurrent edits against one version: exactly one UPDATED, 19 STALE_VERSION, one audit entry", async () => {
  const store = take();
  const auditsBefore = await auditCount();
  const names = Array.from({ length: 20 }, (_, i) => `并发改名-${i + 1}`);
  const answers = await Promise.all(
    names.map((name) =>
      patch(store.id, { name, address: `并发地址 ${name}`, expected_version: 1 })
    ),
  );
  const winners = answers.filter((a) => a.status === 200).map(result);
  const losers = answers.filter((a) => a.status !== 200);
  assert.equal(winners.length, 1, JSON.stringify(answers.map((a) => a.status)));
  assert.equal(losers.length, 19);
  for (const loser of losers) assertErrorBody(loser, 409, "STALE_VERSION");
  const [won] = winners;
  assert.equal(won.status, "UPDATED");
  assert.equal(won.profile.version, 2);
  assert.ok(names.includes(won.profile.name));

  const now = await stored(store.id);
  assert.equal(now.version, 2);
  assert.equal(now.name, won.profile.name);
  assert.equal(now.address, `并发地址 ${won.profile.name}`);
  const audit = await auditOf(store.id);
  assert.equal(audit.length, 1);
  assert.deepEqual(audit[0].after, { name: won.profile.name, address: now.address, version: 2 });
  assert.equal(await auditCount(), auditsBefore + 1);
  const ref = await reference(store.id);
  assert.equal(ref.profile.name, won.profile.name);
  assert.equal(ref.profile.version, 2);

  // Mixed round on version 2: repeats of the current values and real edits. Exactly one edit wins;
  // a repeat is UNCHANGED if it runs before that edit and STALE_VERSION after it.
  const mixed = await Promise.all(
    Array.from(
      { length: 20 },
      (_, i) =>
        i % 2 === 0
          ? patch(store.id, { name: now.name, address: now.address, expected_version: 2 })
          : patch(store.id, { name: `第二轮-${i}`, address: "第二轮地址", expected_version: 2 }),
    ),
  );
  const statuses = mixed.map((a) => a.status === 200 ? result(a).status : a.status);
  assert.equal(statuses.filter((s) => s === "UPDATED").length, 1, JSON.stringify(statuses));
  for (const a of mixed) {
    if (a.status !== 200) assertErrorBody(a, 409, "STALE_VERSION");
  }
  assert.equal((await stored(store.id)).version, 3);
  assert.equal((await auditOf(store.id)).length, 2);
});

Deno.test("concurrent renames of two stores of one brand to the same name: one UPDATED, one NAME_TAKEN", async () => {
  const a = take();
  const b = take((s) => s.brand_id === a.brand_id);
  for (let round = 1; round <= 5; round++) {
    const name = `同名竞争-${round}`;
    const answers = await Promise.all([
      patch(a.id, { name, address: a.address, expected_version: round }),
      patch(b.id, { name, address: b.address, expected_version: round }),
    ]);
    const statuses = answers.map((x) => x.status).sort();
    assert.deepEqual(statuses, [200, 409], JSON.stringify(answers.map((x) => x.body)));
    const winner = answers.findIndex((x) => x.status === 200);
    assert.equal(result(answers[winner]).status, "UPDATED");
    assertErrorBody(answers[1 - winner], 409, "NAME_TAKEN");
    const holders = await sql((s) =>
      s<{
        id: number;
      }>`SELECT id::int AS id FROM stores WHERE brand_id = ${a.brand_id} AND name = ${name}`
    );
    assert.deepEqual(holders.map((h) => h.id), [[a.id, b.id][winner]]);
    // Bring the loser to the same version for the next round (address-only edit).
    const loser = [a, b][1 - winner];
    const current = await stored(loser.id);
    result(
      await patch(loser.id, {
        name: current.name,
        address: `${loser.address}#${round}`,
        expected_version: round,
      }),
    );
    // The winner already is at version round + 1.
    const winnerStore = [a, b][winner];
    assert.equal((await stored(winnerStore.id)).version, round + 1);
  }
});

// Defects found while writing these tests: a body that is valid JSON with valid lengths still
// reaches the database with text PostgreSQL cannot store, and lengths count UTF-16 units instead
// of characters (the database CHECK and the published JSON Schema count code points).
Deno.test("a name or address with a NUL character or a lone surrogate is 400, not 500", async () => {
  const store = take();
  const bodies = [
    { name: "含\u0000空字符", address: "x", expected_version: 1 },
    { name: "正常", address: "地址\u0000", expected_version: 1 },
    { name: "孤立代理\ud800", address: "x", expected_version: 1 },
    { name: "正常", address: "\udfff地址", expected_version: 1 },
  ];
  const statuses = [];
  for (const body of bodies) statuses.push((await patch(store.id, body)).status);
  assert.deepEqual(statuses, [400, 400, 400, 400]);
  await assertUntouched(store);
});

Deno.test("a name or address is one line: a line break or control character inside is 400 (files could not give it back)", async () => {
  const store = take();
  const bodies = [
    { name: "店A\r\n店B", address: "x", expected_version: 1 },
    { name: "店\u000b名", address: "x", expected_version: 1 },
    { name: "正常", address: "路\n1 号", expected_version: 1 },
    { name: "正常", address: "路\u2028号", expected_version: 1 },
    { name: "店\u0085名", address: "x", expected_version: 1 },
    // Invisible format characters: a name shown reversed, or like another store's.
    { name: "a\u202eb", address: "x", expected_version: 1 },
    { name: "店\u200b名", address: "x", expected_version: 1 },
    { name: "正常", address: "路\u2066号", expected_version: 1 },
    { name: "店\ufeff名", address: "x", expected_version: 1 },
  ];
  for (const body of bodies) {
    const answer = await patch(store.id, body);
    assertErrorBody(answer, 400, "INVALID_REQUEST");
    assert.match(answer.body.error.message, /one line of text/, JSON.stringify(body));
  }
  const zh = await app.call("PATCH", path(store.id), {
    key: writer.key,
    headers: { "accept-language": "zh-CN" },
    body: bodies[0],
  });
  assert.match(zh.body.error.message, /应为一行文本/);
  await assertUntouched(store);
  // Spaces inside stay, surrounding whitespace (line breaks too) is trimmed.
  const answer = await patch(store.id, {
    name: "\n 店 名 \t",
    address: "路 1 号",
    expected_version: 1,
  });
  assert.equal(answer.status, 200, JSON.stringify(answer.body));
  assert.equal(result(answer).profile.name, "店 名");
});

Deno.test("the 80 and 200 character limits count characters, not UTF-16 code units", async () => {
  const store = take();
  // U+20BB7 (𠮷, CJK Extension B, used in real shop names) is one character, two UTF-16 units.
  const name = "𠮷".repeat(80);
  const address = "𠮷".repeat(200);
  const answer = await patch(store.id, { name, address, expected_version: 1 });
  assert.equal(answer.status, 200, JSON.stringify(answer.body).slice(0, 200));
  assert.deepEqual(result(answer).profile, { id: store.id, name, address, version: 2 });
  assertErrorBody(
    await patch(store.id, { name: "𠮷".repeat(81), address, expected_version: 2 }),
    400,
  );
});

Deno.test({
  name: "close the test app",
  fn: () => app.close(),
  sanitizeOps: false,
  sanitizeResources: false,
});
