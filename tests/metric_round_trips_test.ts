// Targets, metrics and periods check the credential in the statement that reads their data: a
// kept answer costs one statement (the credential and the inputs' version), or none on PostgreSQL
// once one has confirmed them and nothing has changed since (src/reads/confirmed_reads.ts), a
// built one starts with the statement of the credential and the inputs, and a key revoked or
// expired, or a session ended, is refused on the next request even when the answer is kept. The
// statements are counted by a client that passes each one to the test database's.
import assert from "node:assert/strict";
import * as SqlClient from "@effect/sql/SqlClient";
import { Effect } from "effect";
import { revokeKey } from "../src/auth/keys.ts";
import { addDays } from "../src/domain/range.ts";
import { generateSnapshot } from "../src/seed/generate.ts";
import { loadSnapshot } from "../src/seed/load.ts";
import { assertErrorBody, BASE, makeTestApp, setKeyExpiry } from "./helpers.ts";
import { countingStatements } from "./statements.ts";
import { databaseKind } from "./db.ts";

// The text of every statement the service ran, in order (the tests ask one request at a time).
const statements: Array<string> = [];

const snapshot = generateSnapshot({ stores: 2 });
const end = snapshot.dataset.end;
const app = await makeTestApp(
  (db) => db.run(Effect.asVoid(loadSnapshot(snapshot, { reset: false }))),
  { wrapDatabase: countingStatements(statements) },
);
const admin = await app.key(["read"]);
const [store] = (await app.call("GET", "/api/v1/stores", { key: admin.key })).body.stores as {
  id: number;
  scope_id: number;
}[];

const reads = (days: number) => ({
  metrics: `/api/v1/stores/${store.id}/metrics?scope_id=${store.scope_id}&start=${
    addDays(end, -days)
  }&end=${end}`,
  targets: `/api/v1/stores/${store.id}/targets?scope_id=${store.scope_id}&start=${
    addDays(end, -days)
  }&end=${end}`,
  periods: `/api/v1/stores/${store.id}/periods?scope_id=${store.scope_id}&as_of=${
    addDays(end, -days)
  }`,
});

// A request and the statements it ran.
const counted = async (path: string, options: Parameters<typeof app.call>[2]) => {
  statements.length = 0;
  const answer = await app.call("GET", path, options);
  return { answer, statements: [...statements] };
};

// Where the service hears the notices: the request asked until it runs no statement (at most 20
// times); elsewhere, once.
const settled = async (path: string, options: Parameters<typeof app.call>[2]) => {
  let last = await counted(path, options);
  for (let i = 0; confirming && last.statements.length > 0 && i < 20; i++) {
    last = await counted(path, options);
  }
  return last;
};

const credentialAndData = (text: string) => /\bmetric_read\(/.test(text);

// On PostgreSQL the service hears the notices of changes (src/db/change_notices.ts).
const confirming = databaseKind === "postgres";

// The store's scopes and the service's secret are read once, not per request: a first read of
// another window leaves only the reads' own statements to count.
for (const path of Object.values(reads(90))) {
  assert.equal((await app.call("GET", path, { key: admin.key })).status, 200);
}

for (const [name, path] of Object.entries(reads(40))) {
  Deno.test(`${name}: one statement for a kept answer, the credential in the first of a built one`, async () => {
    const reader = await app.key(["read"]);
    // Asked twice, the answer is kept; each time it is built.
    for (let i = 0; i < 2; i++) {
      const built = await counted(path, { key: reader.key });
      assert.equal(built.answer.status, 200, JSON.stringify(built.answer.body));
      assert.ok(credentialAndData(built.statements[0]), built.statements[0]);
      // Metrics read the days' device evidence after their inputs (src/quality/).
      assert.equal(
        built.statements.length,
        name === "metrics" ? 2 : 1,
        built.statements.join("\n"),
      );
    }
    const kept = await counted(path, { key: reader.key });
    assert.equal(kept.answer.status, 200);
    assert.equal(kept.statements.length, 1, kept.statements.join("\n"));
    assert.ok(credentialAndData(kept.statements[0]));

    // A client holding the version: 304 in one statement, or none once a check confirmed that
    // version and nothing has changed since (the notices of the key's own making may come after
    // the first check: then the next one confirms).
    const held = await settled(path, {
      key: reader.key,
      headers: { "if-none-match": kept.answer.headers.get("etag")! },
    });
    assert.equal(held.answer.status, 304);
    assert.equal(held.statements.length, confirming ? 0 : 1, held.statements.join("\n"));

    // Revoked: 401 on the next request, in one statement, not the kept answer.
    await app.db.run(revokeKey(reader.id));
    const revoked = await counted(path, { key: reader.key });
    assertErrorBody(revoked.answer, 401, "INVALID_CREDENTIAL");
    assert.equal(revoked.statements.length, 1, revoked.statements.join("\n"));

    // Expired: likewise.
    const expiring = await app.key(["read"]);
    for (let i = 0; i < 3; i++) {
      assert.equal((await app.call("GET", path, { key: expiring.key })).status, 200);
    }
    await app.db.run(setKeyExpiry(expiring.id, -1));
    assertErrorBody(await app.call("GET", path, { key: expiring.key }), 401, "INVALID_CREDENTIAL");
  });
}

Deno.test("a session reads a kept answer in at most one statement and is refused once it ends", async () => {
  const reader = await app.key(["read"]);
  const made = await app.handler(
    new Request(`${BASE}/auth/session`, {
      method: "POST",
      headers: { "content-type": "application/json", origin: new URL(BASE).origin },
      body: JSON.stringify({ access_key: reader.key }),
    }),
  );
  assert.equal(made.status, 200);
  await made.body?.cancel();
  const cookie = made.headers.get("set-cookie")!.split(";")[0];
  const path = reads(40).metrics;
  await app.call("GET", path, { headers: { cookie } });
  // The answer was kept before: a read checks the session in one statement, which confirms the
  // next ones where the service hears the notices of changes.
  const kept = await settled(path, { headers: { cookie } });
  assert.equal(kept.answer.status, 200);
  assert.equal(kept.statements.length, confirming ? 0 : 1, kept.statements.join("\n"));
  if (!confirming) assert.ok(credentialAndData(kept.statements[0]));

  await app.db.run(
    Effect.flatMap(
      SqlClient.SqlClient,
      (sql) => sql`UPDATE sessions SET ended_at = now() WHERE key_id = ${reader.id}`,
    ),
  );
  assertErrorBody(await app.call("GET", path, { headers: { cookie } }), 401, "INVALID_CREDENTIAL");
});

Deno.test("a refused parameter is refused for a bad credential first", async () => {
  const revoked = await app.key(["read"]);
  await app.db.run(revokeKey(revoked.id));
  const bad = [
    `/api/v1/stores/${store.id}/metrics?scope_id=${store.scope_id}&start=2026-13-40&end=${end}`,
    `/api/v1/stores/${store.id}/targets?scope_id=${store.scope_id}&start=${end}&end=${end}` +
    `&data_token=not-a-token`,
    `/api/v1/stores/${store.id}/periods?scope_id=x&as_of=${end}`,
  ];
  for (const path of bad) {
    assertErrorBody(await app.call("GET", path, { key: revoked.key }), 401, "INVALID_CREDENTIAL");
    assertErrorBody(await app.call("GET", path, { key: admin.key }), 400);
  }
});

// The first read of a store costs no lookup of its scopes (which would cost one round trip per
// store a process has not read yet, so more the more stores there are): energy_read and
// metric_read find the scope of the store and give its time zone and unit with the data. A key
// outside the store is still refused, as before.
Deno.test("a store's first energy and metrics reads run only their own statements", async () => {
  const [, other] = (await app.call("GET", "/api/v1/stores", { key: admin.key })).body
    .stores as { id: number; scope_id: number }[];
  const window = `scope_id=${other.scope_id}&start=${addDays(end, -30)}&end=${end}`;
  const energy = await counted(`/api/v1/stores/${other.id}/energy?${window}`, { key: admin.key });
  assert.equal(energy.answer.status, 200, JSON.stringify(energy.answer.body));
  assert.equal(energy.answer.body.timezone, "Asia/Shanghai");
  assert.deepEqual(energy.statements.map((s) => /\benergy_read\(/.test(s)), [true]);
  const metrics = await counted(`/api/v1/stores/${other.id}/metrics?${window}`, {
    key: admin.key,
  });
  assert.equal(metrics.answer.status, 200, JSON.stringify(metrics.answer.body));
  assert.equal(metrics.answer.body.timezone, "Asia/Shanghai");
  // The inputs with the credential, then the days' device evidence.
  assert.equal(metrics.statements.length, 2, metrics.statements.join("\n"));
  assert.ok(credentialAndData(metrics.statements[0]));

  const outside = await app.key(["read"], { stores: [store.id] });
  for (const read of ["energy", "metrics"]) {
    assertErrorBody(
      await app.call("GET", `/api/v1/stores/${other.id}/${read}?${window}`, { key: outside.key }),
      403,
      "STORE_FORBIDDEN",
    );
  }
});

Deno.test("close the test app", () => app.close());
