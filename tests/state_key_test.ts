// Migrations 0010 (kept states refer to their revision) and 0012 (a revision keeps its state): a
// database upgraded from the schema before them answers every read as of an earlier commit byte for
// byte as before, an upgrade over a kept state whose import row is not its revision's stops with
// nothing changed, and the states loads kept for their legacy revisions read as the legacy batch
// left the days.
import assert from "node:assert/strict";
import { Cause, Effect, Exit } from "effect";
import { sealKeysOf, sealWith } from "../src/auth/data_seal.ts";
import { migrate } from "../src/db/migrator.ts";
import { addDays } from "../src/domain/range.ts";
import { generateSnapshot } from "../src/seed/generate.ts";
import { loadSnapshot } from "../src/seed/load.ts";
import { makeTestApp } from "./helpers.ts";
import { commitDay, sqlOf, storesOf } from "./import_helpers.ts";
import {
  undo0011,
  undo0012,
  undo0013,
  undo0014,
  undo0015,
  undo0016,
  undo0017,
  undo0018,
} from "./schema_history.ts";

const snapshot = generateSnapshot({ stores: 2 });
const end = snapshot.dataset.end;
const app = await makeTestApp((db) =>
  db.run(Effect.asVoid(loadSnapshot(snapshot, { reset: false })))
);
const writer = await app.key(["read", "write", "raw"], { member: "state-key-writer" });
const [store] = await storesOf(app, writer.key);
const sql = sqlOf(app);

const read = async (path: string) => {
  const answer = await app.handler(
    new Request(`http://service.test${path}`, {
      headers: { authorization: `Bearer ${writer.key}` },
    }),
  );
  return { token: answer.headers.get("data-token")!, body: await answer.text() };
};

// The schema as migration 0009 left it, with each kept state's import row copied from its revision
// (as the day writer wrote them), and 0010 (nor the migrations after it) not yet recorded.
const asBefore0010 = async () => {
  await sql((s) => s.unsafe(undo0018));
  await sql((s) => s.unsafe(undo0017));
  await sql((s) => s.unsafe(undo0016));
  await sql((s) => s.unsafe(undo0015));
  await sql((s) => s.unsafe(undo0014));
  await sql((s) => s.unsafe(undo0013));
  await sql((s) => s.unsafe(undo0012));
  await sql((s) => s.unsafe(undo0011));
  await sql((s) =>
    s.unsafe(`
      ALTER TABLE energy_day_states DROP CONSTRAINT energy_day_states_revision_fkey;
      ALTER TABLE energy_day_states ADD COLUMN import_row_id integer;
      ALTER TABLE energy_day_states DISABLE TRIGGER energy_day_states_immutable;
      UPDATE energy_day_states s SET import_row_id = r.import_row_id
      FROM energy_revisions r WHERE r.energy_id = s.energy_id AND r.revision_no = s.revision_no;
      ALTER TABLE energy_day_states ENABLE TRIGGER energy_day_states_immutable;
      ALTER TABLE energy_day_states ALTER COLUMN import_row_id SET NOT NULL;
      ALTER TABLE energy_day_states ADD CONSTRAINT energy_day_states_import_row_id_fkey
        FOREIGN KEY (import_row_id) REFERENCES import_rows (id);
      ALTER TABLE energy_day_states ADD CONSTRAINT energy_day_states_energy_id_fkey
        FOREIGN KEY (energy_id) REFERENCES energy_days (id);
      DELETE FROM schema_migrations WHERE migration_id = 10;`)
  );
};

const statesTableGone = async () =>
  (await sql((s) => s<{ gone: boolean }>`SELECT to_regclass('energy_day_states') IS NULL AS gone`))[
    0
  ]
    .gone;

const stateColumns = () =>
  sql((s) =>
    s<{ name: string }>`
      SELECT attname::text AS name FROM pg_attribute
      WHERE attrelid = 'energy_day_states'::regclass AND attnum > 0 AND NOT attisdropped
      ORDER BY attnum`
  ).then((rows) => rows.map((r) => r.name));

Deno.test("an upgrade to migration 0010 keeps every read as of an earlier commit, byte for byte", async () => {
  const range = `scope_id=${store.scope_id}&start=${addDays(end, -40)}&end=${end}`;
  const energy = `/api/v1/stores/${store.id}/energy?${range}`;
  const paths = [energy, energy.replace("/energy?", "/metrics?")];
  // Days that hold only their legacy value: an upload writes over them and keeps their state.
  const legacy = (JSON.parse((await read(energy)).body).days as Array<
    { business_date: string; source_kind: string | null; energy_kwh: string | null }
  >).filter((d) => d.source_kind === "LEGACY_DIRECT");
  assert.ok(legacy.length >= 4, "the snapshot has recent legacy days");
  // States kept with a revision that is no longer its day's current one.
  const kept = async () =>
    (await sql((s) =>
      s<{ n: number }>`
        SELECT count(*)::int AS n FROM energy_revisions r JOIN energy_days e ON e.id = r.energy_id
        WHERE r.state_kept AND r.revision_no <> e.revision_no`
    ))[0].n;
  const keptBefore = await kept();
  const tokens: Array<string> = [(await read(energy)).token];
  for (const [i, kwh] of ["11.1", "22.2", "33.3"].entries()) {
    await commitDay(app, writer.key, store, legacy[i].business_date, kwh);
    tokens.push((await read(energy)).token);
  }
  const asOf = async () => {
    const out: Array<string> = [];
    for (const token of tokens) {
      for (const path of paths) out.push((await read(`${path}&data_token=${token}`)).body);
    }
    return out;
  };
  const before = await asOf();
  // The first read shows the legacy values the later commits replaced (their kept states).
  const first = JSON.parse(before[0]).days as typeof legacy;
  for (const day of legacy.slice(0, 3)) {
    assert.equal(
      first.find((d) => d.business_date === day.business_date)!.energy_kwh,
      day.energy_kwh,
    );
  }
  assert.equal(await kept(), keptBefore + 3);

  await asBefore0010();
  assert.ok((await stateColumns()).includes("import_row_id"));
  // 0010, then 0011 (references checked per statement), 0012 to 0016 over the upgraded schema.
  assert.deepEqual(
    await app.db.run(migrate).then((applied) => applied.map(([id]) => id)),
    [10, 11, 12, 13, 14, 15, 16, 17, 18],
  );
  assert.ok(await statesTableGone());
  assert.deepEqual(await asOf(), before);

  // The writer goes on from there: a fourth day's legacy state is kept and answered as of before.
  await commitDay(app, writer.key, store, legacy[3].business_date, "44.4");
  const then = JSON.parse((await read(`${energy}&data_token=${tokens[3]}`)).body)
    .days as typeof legacy;
  assert.equal(
    then.find((d) => d.business_date === legacy[3].business_date)!.energy_kwh,
    legacy[3].energy_kwh,
  );
});

Deno.test("an upgrade over a kept state that names another import row stops, changing nothing", async () => {
  await asBefore0010();
  try {
    await sql((s) =>
      s.unsafe(`
        ALTER TABLE energy_day_states DISABLE TRIGGER energy_day_states_immutable;
        UPDATE energy_day_states SET import_row_id = (SELECT min(id) FROM import_rows)
        WHERE (energy_id, revision_no) = (
          SELECT energy_id, revision_no FROM energy_day_states ORDER BY 1, 2 LIMIT 1);
        ALTER TABLE energy_day_states ENABLE TRIGGER energy_day_states_immutable;`)
    );
    // A failed migration is a defect of the migrator, whose cause is the database's refusal.
    const failed = await app.db.run(Effect.exit(migrate));
    assert.ok(Exit.isFailure(failed));
    const error = Cause.squash(failed.cause) as { cause?: { cause?: unknown } };
    assert.match(String(error.cause?.cause ?? error.cause), /another import row than its revision/);
    assert.ok((await stateColumns()).includes("import_row_id"), "the column is still there");
    assert.ok(!(await statesTableGone()));
  } finally {
    // Back to agreeing rows, then the upgrade completes.
    await sql((s) =>
      s.unsafe(`
        ALTER TABLE energy_day_states DISABLE TRIGGER energy_day_states_immutable;
        UPDATE energy_day_states s SET import_row_id = r.import_row_id
        FROM energy_revisions r WHERE r.energy_id = s.energy_id AND r.revision_no = s.revision_no;
        ALTER TABLE energy_day_states ENABLE TRIGGER energy_day_states_immutable;`)
    );
    await app.db.run(migrate);
  }
  assert.ok(await statesTableGone());
});

Deno.test("an upgrade to migration 0012 keeps every read as of an earlier commit, and a snapshot's legacy revisions read as the legacy batch left their days", async () => {
  // Days before the ones the tests above wrote: only the snapshot's two batches made them.
  const range = `scope_id=${store.scope_id}&start=${addDays(end, -160)}&end=${addDays(end, -41)}`;
  const paths = [`/api/v1/stores/${store.id}/energy?${range}`].flatMap((p) => [
    p,
    p.replace("/energy?", "/metrics?"),
  ]);
  // Tokens of the snapshot's two commits, sealed as the service seals them (no answer named them).
  const [{ secret, generation }] = await sql((s) =>
    s<{ secret: string; generation: string }>`
      SELECT (SELECT value FROM app_settings WHERE key = 'session_secret') AS secret,
        (SELECT left(generation, 16) FROM dataset) AS generation`
  );
  const keys = sealKeysOf(secret);
  const asOf = async () => {
    const out: Array<string> = [];
    for (const seq of [1, 2]) {
      const token = sealWith(keys, "data-token", `${seq}.${generation}`);
      for (const path of paths) out.push((await read(`${path}&data_token=${token}`)).body);
    }
    return out;
  };
  const before = await asOf();
  // As of the legacy batch (commit 1) no day has a cleaned value or a void mark yet.
  const atLegacy = JSON.parse(before[0]).days as Array<
    { source_kind: string | null; status: string }
  >;
  assert.ok(atLegacy.every((d) => d.source_kind !== "CLEANED" && d.status !== "VOID"));
  const atCleaned = JSON.parse(before[2]).days as typeof atLegacy;
  assert.ok(atCleaned.some((d) => d.source_kind === "CLEANED"), "the range has cleaned days");

  // The schema before 0012, with the states loads kept for their legacy revisions: the day as the
  // cleaned batch after it left it.
  await sql((s) =>
    s.unsafe(`${undo0018}${undo0017}${undo0016}${undo0015}${undo0014}${undo0013}${undo0012}
      ALTER TABLE energy_day_states DISABLE TRIGGER energy_day_states_immutable;
      UPDATE energy_day_states s SET cleaned_kwh = e.cleaned_kwh,
        cleaned_source_kind = e.cleaned_source_kind, is_void = e.is_void,
        quality_status = e.quality_status, quality_note = e.quality_note
      FROM energy_revisions r, energy_days e
      WHERE r.energy_id = s.energy_id AND r.revision_no = s.revision_no
        AND r.source_kind = 'LEGACY_DIRECT' AND e.id = s.energy_id;
      ALTER TABLE energy_day_states ENABLE TRIGGER energy_day_states_immutable;`)
  );
  assert.deepEqual(
    await app.db.run(migrate).then((applied) => applied.map(([id]) => id)),
    [12, 13, 14, 15, 16, 17, 18],
  );
  assert.ok(await statesTableGone());
  assert.deepEqual(await asOf(), before);
});

Deno.test({
  name: "close the test app",
  fn: () => app.close(),
  sanitizeOps: false,
  sanitizeResources: false,
});
