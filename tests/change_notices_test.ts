// The notices of changes (migration 0018, src/db/change_notices.ts): every table a read or an access
// decision depends on sends one with each commit; once a barrier answers, the notices of every
// commit before it are counted; and an energy read whose caller holds the current version is
// confirmed without a statement of its own only while no change has come since, so that a key
// revoked, expired or changed by another connection is refused from its next request on.
import assert from "node:assert/strict";
import * as SqlClient from "@effect/sql/SqlClient";
import { Context, Effect, Layer, Option, Redacted } from "effect";
import { AppConfig } from "../src/config.ts";
import { revokeKey } from "../src/auth/keys.ts";
import { ChangeNotices, type ChangeNoticesShape, listenChanges } from "../src/db/change_notices.ts";
import { connectionOf, DatabaseLive } from "../src/db/database.ts";
import { addDays } from "../src/domain/range.ts";
import { generateSnapshot } from "../src/seed/generate.ts";
import { loadSnapshot } from "../src/seed/load.ts";
import { testDatabaseUrl } from "./db.ts";
import { assertErrorBody, makeTestApp, setKeyExpiry } from "./helpers.ts";
import { commitDay, storesOf } from "./import_helpers.ts";
import { countingStatements } from "./statements.ts";

// Tables whose changes no read shows: the audit log and the replay records of idempotent requests.
const SILENT = ["audit_log", "idempotency_records"];

const statements: Array<string> = [];
const snapshot = generateSnapshot({ stores: 2 });
const end = snapshot.dataset.end;
const app = await makeTestApp(
  (db) => db.run(Effect.asVoid(loadSnapshot(snapshot, { reset: false }))),
  { wrapDatabase: countingStatements(statements) },
);
const writer = await app.key(["read", "write"]);
const [store, other] = await storesOf(app, writer.key);
const path = `/api/v1/stores/${store.id}/energy?scope_id=${store.scope_id}&start=${
  addDays(end, -365)
}&end=${end}`;
const energyReads = () => statements.filter((s) => /\benergy_read\(/.test(s)).length;

Deno.test("every table a read or an access decision depends on sends a notice", async () => {
  const rows = await app.db.run(Effect.flatMap(
    SqlClient.SqlClient,
    (sql) =>
      sql<{ table: string; notices: boolean }>`
        SELECT c.relname AS table, EXISTS (
          SELECT 1 FROM pg_trigger t JOIN pg_proc p ON p.oid = t.tgfoid
          WHERE t.tgrelid = c.oid AND p.proname = 'notify_data_change') AS notices
        FROM pg_class c
        WHERE c.relkind IN ('r', 'p') AND c.relnamespace = current_schema()::regnamespace
        ORDER BY c.relname`,
  ));
  assert.ok(rows.some((r) => r.table === "access_keys"));
  for (const row of rows) {
    assert.equal(row.notices, !SILENT.includes(row.table), row.table);
  }
});

// A listener of the test database, until `body` ends.
const listening = async (body: (notices: ChangeNoticesShape) => Promise<void>) => {
  const scoped = Effect.scoped(Effect.flatMap(
    listenChanges(connectionOf(app.db.url!)),
    (notices) => Effect.promise(() => body(notices)),
  ));
  await Effect.runPromise(scoped);
};

// Asks barriers until one answers (the connection is made after the listener starts).
const heard = async (notices: ChangeNoticesShape) => {
  for (let i = 0; i < 300; i++) {
    const now = await Effect.runPromise(notices.barrier);
    if (now !== undefined) return now;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error("the listener never listened");
};

const touch = (sql = "UPDATE stores SET name = name WHERE false") =>
  app.db.run(Effect.flatMap(SqlClient.SqlClient, (client) => client.unsafe(sql)));

Deno.test({
  name: "a barrier answers after the notices of every commit made before it",
  ignore: !testDatabaseUrl,
  fn: () =>
    listening(async (notices) => {
      await heard(notices);
      for (let i = 0; i < 40; i++) {
        const before = notices.generation();
        // A statement that changes no row still sends its notice.
        await touch();
        const now = await Effect.runPromise(notices.barrier);
        assert.ok(now !== undefined);
        assert.ok(notices.generation() > before, `round ${i}`);
      }
      // A transaction that only reads sends none.
      const before = notices.generation();
      await touch("SELECT count(*) FROM stores");
      await Effect.runPromise(notices.barrier);
      assert.equal(notices.generation(), before);
    }),
});

Deno.test({
  name: "a lost listening connection counts as a change and is made again",
  ignore: !testDatabaseUrl,
  fn: () =>
    listening(async (notices) => {
      await heard(notices);
      const before = notices.generation();
      await touch(
        `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
         WHERE application_name = 'energy-saving-service notices' AND datname = current_database()
           AND pid <> pg_backend_pid()`,
      );
      await heard(notices);
      assert.ok(notices.generation() > before);
    }),
});

// Reads the window until a read runs no energy_read statement: its answer is kept and a statement
// has confirmed the key and the version since the last change noticed (the notices of the key's
// own making may come a little after it). That read's answer is the one a statement gave.
const confirmedRead = async (key: string) => {
  const first = await app.call("GET", path, { key });
  assert.equal(first.status, 200, JSON.stringify(first.body));
  for (let i = 0; i < 20; i++) {
    statements.length = 0;
    const answer = await app.call("GET", path, { key });
    assert.equal(answer.status, 200, JSON.stringify(answer.body));
    if (energyReads() === 0) {
      for (const header of ["etag", "data-token", "content-length"]) {
        assert.equal(answer.headers.get(header), first.headers.get(header), header);
      }
      assert.deepEqual(answer.body, first.body);
      return answer;
    }
  }
  throw new Error("no read was confirmed without its statement");
};

Deno.test({
  name: "a revoked, expired or narrowed key is refused on its next request, kept answer or not",
  ignore: !testDatabaseUrl,
  fn: async () => {
    const first = await app.call("GET", path, { key: writer.key });
    for (let round = 0; round < 5; round++) {
      const reader = await app.key(["read"]);
      const answer = await confirmedRead(reader.key);
      assert.equal(answer.headers.get("etag"), first.headers.get("etag"));
      await app.db.run(revokeKey(reader.id));
      assertErrorBody(await app.call("GET", path, { key: reader.key }), 401, "INVALID_CREDENTIAL");
    }

    // Another store only: 403 from the next request on.
    const narrowed = await app.key(["read"]);
    await confirmedRead(narrowed.key);
    await touch(
      `UPDATE access_keys SET store_ids = ARRAY[${store.id + 1}] WHERE id = ${narrowed.id}`,
    );
    assertErrorBody(await app.call("GET", path, { key: narrowed.key }), 403, "STORE_FORBIDDEN");

    // An expiry that passes with no change at all: judged by the database's clock.
    const expiring = await app.key(["read"]);
    await app.db.run(setKeyExpiry(expiring.id, 2));
    await confirmedRead(expiring.key);
    for (;;) {
      const [row] = await app.db.run(Effect.flatMap(
        SqlClient.SqlClient,
        (sql) =>
          sql<{ passed: boolean }>`
            SELECT expires_at < now() AS passed FROM access_keys WHERE id = ${expiring.id}`,
      ));
      if (row.passed) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    assertErrorBody(
      await app.call("GET", path, { key: expiring.key }),
      401,
      "INVALID_CREDENTIAL",
    );
  },
});

Deno.test({
  name: "a commit is shown from the next request on, and then confirmed again without a statement",
  ignore: !testDatabaseUrl,
  fn: async () => {
    const reader = await app.key(["read"]);
    const before = await confirmedRead(reader.key);
    await commitDay(app, writer.key, store, addDays(end, -2), "77.25");
    statements.length = 0;
    const after = await app.call("GET", path, { key: reader.key });
    assert.equal(after.status, 200);
    assert.notEqual(after.headers.get("etag"), before.headers.get("etag"));
    assert.ok(energyReads() > 0);
    const day = (after.body as { days: Array<{ business_date: string; energy_kwh: string }> })
      .days.find((d) => d.business_date === addDays(end, -2));
    assert.equal(day?.energy_kwh, "77.2500");
    const again = await confirmedRead(reader.key);
    assert.equal(again.headers.get("etag"), after.headers.get("etag"));
    assert.deepEqual(again.body, after.body);
  },
});

Deno.test({
  name: "what one key confirmed is no answer for a key of other stores, nor another key's token",
  ignore: !testDatabaseUrl,
  fn: async () => {
    await confirmedRead(writer.key);
    const elsewhere = await app.key(["read"], { stores: [other.id] });
    assertErrorBody(await app.call("GET", path, { key: elsewhere.key }), 403, "STORE_FORBIDDEN");
    const unread = await app.key(["raw"]);
    assertErrorBody(await app.call("GET", path, { key: unread.key }), 403, "PERMISSION_MISSING");
    // A key of this store only: the data token of its own stores (confirmedRead compares it with
    // the one its statement gave).
    const own = await app.key(["read"], { stores: [store.id] });
    await confirmedRead(own.key);
    await confirmedRead(writer.key);
  },
});

Deno.test({
  name: "a store list is confirmed without a statement; a change or a revocation shows next",
  ignore: !testDatabaseUrl,
  fn: async () => {
    const reader = await app.key(["read"]);
    const list = () => app.call("GET", "/api/v1/stores", { key: reader.key });
    const first = await list();
    assert.equal(first.status, 200);
    let confirmed = false;
    for (let i = 0; i < 20 && !confirmed; i++) {
      statements.length = 0;
      const again = await list();
      assert.equal(again.status, 200);
      assert.equal(again.headers.get("etag"), first.headers.get("etag"));
      assert.deepEqual(again.body, first.body);
      confirmed = statements.length === 0;
    }
    assert.ok(confirmed, "no read was confirmed without a statement");
    await touch(`UPDATE stores SET version = version + 1 WHERE id = ${store.id}`);
    const changed = await list();
    assert.equal(changed.status, 200);
    assert.notEqual(changed.headers.get("etag"), first.headers.get("etag"));
    await app.db.run(revokeKey(reader.id));
    assertErrorBody(await list(), 401, "INVALID_CREDENTIAL");
  },
});

Deno.test({
  name: "CHANGE_NOTICES=false: the service's database listens for no notice",
  ignore: !testDatabaseUrl,
  fn: async () => {
    const notices = (changeNotices: boolean) =>
      Effect.runPromise(Effect.scoped(Effect.flatMap(
        Layer.build(Layer.provide(
          DatabaseLive,
          AppConfig.make({
            databaseUrl: Option.some(Redacted.make(app.db.url!)),
            changeNotices,
          }),
        )),
        (context) => Effect.succeed(Context.getOption(context, ChangeNotices)),
      )));
    assert.ok(Option.isSome(await notices(true)));
    assert.ok(Option.isNone(await notices(false)));
  },
});

Deno.test("close the test app", () => app.close());
