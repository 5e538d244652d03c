// Reads that check the credential in the statement that reads their data (energy, metrics, targets,
// periods), asked for at once, share a statement (src/db/batched.ts): each request still gets the
// answer it gets alone, decided for its own credential and store (status, body, ETag, Data-Token),
// whether the answer is built or kept.
import assert from "node:assert/strict";
import { Effect } from "effect";
import { revokeKey } from "../src/auth/keys.ts";
import { addDays } from "../src/domain/range.ts";
import { generateSnapshot } from "../src/seed/generate.ts";
import { loadSnapshot } from "../src/seed/load.ts";
import { type Answer, makeTestApp, setKeyExpiry } from "./helpers.ts";
import { storesOf } from "./import_helpers.ts";
import { countingStatements } from "./statements.ts";

const statements: Array<string> = [];
const snapshot = generateSnapshot({ stores: 3 });
const end = snapshot.dataset.end;
const app = await makeTestApp(
  (db) => db.run(Effect.asVoid(loadSnapshot(snapshot, { reset: false }))),
  { wrapDatabase: countingStatements(statements) },
);

const summary = (answer: Answer) => ({
  status: answer.status,
  body: answer.body,
  etag: answer.headers.get("etag"),
  token: answer.headers.get("data-token"),
});

Deno.test("reads asked at once by different keys share statements and each gets its own answer", async () => {
  const admin = await app.key(["read"]);
  const stores = await storesOf(app, admin.key);
  assert.equal(stores.length, 3);
  const firstOnly = await app.key(["read"], { stores: [stores[0].id] });
  const rawOnly = await app.key(["raw"]);
  const expired = await app.key(["read"]);
  await app.db.run(setKeyExpiry(expired.id, -1));
  const revoked = await app.key(["read"]);
  await app.db.run(Effect.asVoid(revokeKey(revoked.id)));
  const keys = [admin.key, firstOnly.key, rawOnly.key, expired.key, revoked.key, "esk_unknown"];
  const paths = stores.flatMap((store) =>
    [30, 200].flatMap((days) => {
      const range = `scope_id=${store.scope_id}&start=${addDays(end, -days)}&end=${end}`;
      return [
        `/api/v1/stores/${store.id}/energy?${range}`,
        `/api/v1/stores/${store.id}/metrics?${range}`,
        `/api/v1/stores/${store.id}/targets?${range}`,
        `/api/v1/stores/${store.id}/periods?scope_id=${store.scope_id}&as_of=${
          addDays(end, -days)
        }`,
      ];
    })
  );
  const requests = keys.flatMap((key) => paths.map((path) => ({ key, path })));
  const calls = (name: string) => statements.filter((sql) => sql.includes(`${name}(`)).length;
  const atOnce = async () => {
    statements.length = 0;
    const answers = await Promise.all(
      requests.map(({ key, path }) => app.call("GET", path, { key })),
    );
    return {
      answers: answers.map(summary),
      energy: calls("energy_read"),
      metric: calls("metric_read"),
    };
  };

  // Nothing kept yet: each read builds its days.
  const built = await atOnce();
  const alone = [];
  for (const { key, path } of requests) alone.push(summary(await app.call("GET", path, { key })));
  // Kept now: each read asks only whether its days are still at the kept version.
  const kept = await atOnce();

  assert.deepEqual(built.answers, alone);
  assert.deepEqual(kept.answers, alone);
  // Every answer a key may read is a 200; every other one its refusal.
  const statuses = new Set(alone.map((a) => a.status));
  assert.deepEqual([...statuses].sort(), [200, 401, 403]);
  assert.equal(alone.filter((a) => a.status === 200).length, paths.length + paths.length / 3);
  // Fewer statements than reads: energy reads asked for at once went together, built or kept;
  // the other reads' checks of their kept answers too (a read that builds its inputs goes alone).
  const energyReads = requests.length / 4;
  assert.ok(built.energy < energyReads / 2, `${built.energy} statements for ${energyReads}`);
  assert.ok(kept.energy < energyReads / 2, `${kept.energy} statements for ${energyReads}`);
  const otherReads = requests.length - energyReads;
  assert.ok(kept.metric < otherReads / 2, `${kept.metric} statements for ${otherReads}`);
});

Deno.test("close the test app", () => app.close());
