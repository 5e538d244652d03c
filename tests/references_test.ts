// The references of revisions and days (migration 0011), checked once per statement: a statement
// that writes a row whose referenced row is missing fails whole, with the foreign key's SQLSTATE
// and name, and the rows others refer to can be neither deleted nor re-keyed. A state kept with a
// revision (migration 0012) is whole.
import assert from "node:assert/strict";
import { Effect } from "effect";
import * as SqlClient from "@effect/sql/SqlClient";
import { sqlStateOf } from "../src/db/errors.ts";
import { generateSnapshot } from "../src/seed/generate.ts";
import { loadSnapshot } from "../src/seed/load.ts";
import { makeTestApp } from "./helpers.ts";
import { commitDay, sqlOf, storesOf } from "./import_helpers.ts";

const snapshot = generateSnapshot({ stores: 1 });
const app = await makeTestApp((db) =>
  db.run(Effect.asVoid(loadSnapshot(snapshot, { reset: false })))
);
const writer = await app.key(["read", "write", "raw"], { member: "references-writer" });
const [store] = await storesOf(app, writer.key);
// A commit by a member: its revision names the member and an import row of an upload.
await commitDay(app, writer.key, store, snapshot.dataset.end, "12.5");
const sql = sqlOf(app);

interface Failure {
  readonly state: string | undefined;
  readonly message: string;
  readonly constraint: string | undefined;
}

// Runs a statement; its failure (SQLSTATE, message and constraint name) or undefined.
const failureOf = (statement: string, params: ReadonlyArray<unknown> = []) =>
  app.db.run(
    Effect.flatMap(SqlClient.SqlClient, (s) => s.unsafe(statement, params)).pipe(
      Effect.match({
        onSuccess: () => undefined,
        onFailure: (error): Failure => {
          const cause = (error as { cause?: { message?: string; constraint?: string } }).cause;
          return {
            state: sqlStateOf(error),
            message: cause?.message ?? String(error),
            constraint: cause?.constraint,
          };
        },
      }),
    ),
  );

const one = async <A extends object>(statement: string) =>
  (await sql((s) => s.unsafe<A>(statement)))[0] as A;

const counts = () =>
  one<{ revisions: number; days: number }>(
    `SELECT (SELECT count(*) FROM energy_revisions)::int AS revisions,
            (SELECT count(*) FROM energy_days)::int AS days`,
  );

// The latest revision of a member's commit, and ids nothing has.
const known = await one<
  {
    energy_id: number;
    revision_no: number;
    import_row_id: number;
    member_id: number;
    free_day: number;
    free_row: number;
    free_member: number;
  }
>(
  `SELECT v.energy_id, v.revision_no, v.import_row_id, v.member_id,
     (SELECT max(id) + 1000 FROM energy_days)::int AS free_day,
     (SELECT max(id) + 1000 FROM import_rows)::int AS free_row,
     (SELECT max(id) + 1000 FROM members)::int AS free_member
   FROM energy_revisions v WHERE v.member_id IS NOT NULL ORDER BY v.id DESC LIMIT 1`,
);

// Inserts revisions for the known day from `rows` (energy_id, import_row_id, member_id), numbered
// after its last revision, in one statement.
const insertRevisions = (rows: ReadonlyArray<readonly [number, number, number | null]>) =>
  failureOf(
    `INSERT INTO energy_revisions (energy_id, revision_no, operation, before_kwh, after_kwh,
       before_is_void, after_is_void, change_reason, import_row_id, source_kind, source_label,
       quality_status, member_id)
     SELECT r.energy_id, 1000 + r.n, 'UPDATE', 1, 2, false, false, 'check', r.import_row_id,
       'MANUAL_UPLOAD', 'check', 'UNREVIEWED', r.member_id
     FROM json_to_recordset($1::json) AS r(n int, energy_id int, import_row_id int, member_id int)`,
    [JSON.stringify(rows.map(([energy_id, import_row_id, member_id], n) => ({
      n,
      energy_id,
      import_row_id,
      member_id,
    })))],
  );

const assertRefused = (failure: Failure | undefined, constraint: string) => {
  assert.ok(failure, `refused for ${constraint}`);
  assert.equal(failure.state, "23503", failure.message);
  assert.match(failure.message, new RegExp(`violates foreign key constraint "${constraint}"`));
  if (failure.constraint !== undefined) assert.equal(failure.constraint, constraint);
};

Deno.test("a statement writing one revision with a missing reference among many fails whole", async () => {
  const before = await counts();
  const good = [known.energy_id, known.import_row_id, known.member_id] as const;
  for (
    const [bad, constraint] of [
      [[known.free_day, known.import_row_id, known.member_id], "energy_revisions_energy_id_fkey"],
      [[known.energy_id, known.free_row, known.member_id], "energy_revisions_import_row_id_fkey"],
      [
        [known.energy_id, known.import_row_id, known.free_member],
        "energy_revisions_member_id_fkey",
      ],
    ] as const
  ) {
    const failure = await insertRevisions([good, good, bad, good]);
    assertRefused(failure, constraint);
    assert.deepEqual(await counts(), before, `nothing written for ${constraint}`);
  }
});

Deno.test("revisions whose references all exist are written, a null member referring to nothing", async () => {
  const before = await counts();
  const failure = await insertRevisions([
    [known.energy_id, known.import_row_id, known.member_id],
    [known.energy_id, known.import_row_id, null],
  ]);
  assert.equal(failure, undefined, failure?.message);
  assert.equal((await counts()).revisions, before.revisions + 2);
});

Deno.test("a state kept with a revision is whole: a cleaned value names its source, provisional needs its instant", async () => {
  const before = await counts();
  const kept = (cleaned: string | null, kind: string | null, provisional: number) =>
    failureOf(
      `INSERT INTO energy_revisions (energy_id, revision_no, operation, after_kwh, after_is_void,
         change_reason, import_row_id, source_kind, source_label, quality_status, legacy_kwh,
         cleaned_kwh, cleaned_source_kind, provisional, state_kept)
       VALUES ($1, (SELECT max(revision_no) + 1 FROM energy_revisions WHERE energy_id = $1),
         'UPDATE', 1, false, 'test', $2, 'CLEANED', 'test', 'REVIEWED', 1, $3::numeric, $4::text,
         $5::smallint, true)`,
      [known.energy_id, known.import_row_id, cleaned, kind, provisional],
    );
  for (const failure of [await kept("2", null, 0), await kept("2", "CLEANED", 1)]) {
    assert.ok(failure, "refused by the state's check");
    assert.equal(failure.state, "23514", failure.message);
    assert.match(failure.message, /energy_revisions_state_check/);
  }
  assert.deepEqual(await counts(), before);
  assert.equal(await kept("2", "CLEANED", 0), undefined);
  assert.equal((await counts()).revisions, before.revisions + 1);
});

Deno.test("a day's import row must exist, on insert and on update", async () => {
  const day = await one<{ id: number; import_row_id: number }>(
    `SELECT id, import_row_id FROM energy_days WHERE id = ${known.energy_id}`,
  );
  assertRefused(
    await failureOf(`UPDATE energy_days SET import_row_id = $1 WHERE id = $2`, [
      known.free_row,
      known.energy_id,
    ]),
    "energy_days_import_row_id_fkey",
  );
  const after = await one<{ import_row_id: number }>(
    `SELECT import_row_id FROM energy_days WHERE id = ${known.energy_id}`,
  );
  assert.equal(after.import_row_id, day.import_row_id);
  const before = await counts();
  assertRefused(
    await failureOf(
      `INSERT INTO energy_days (store_id, scope_id, business_date, legacy_kwh, is_void,
         provisional, revision_no, import_row_id)
       SELECT store_id, scope_id, business_date - 5000, 1, false, 0, 1, $1
       FROM energy_days WHERE id = $2`,
      [known.free_row, known.energy_id],
    ),
    "energy_days_import_row_id_fkey",
  );
  assert.deepEqual(await counts(), before);
});

Deno.test("an import row's batch and its store's scope must exist", async () => {
  // A copy of the commit's import row with the given columns changed, numbered after the batch's.
  const copy = (changes: Record<string, number>) =>
    failureOf(
      `INSERT INTO import_rows OVERRIDING SYSTEM VALUE
       SELECT (jsonb_populate_record(r, $2::jsonb || jsonb_build_object(
         'id', (SELECT max(id) + 1 FROM import_rows), 'row_number', r.row_number + 100000))).*
       FROM import_rows r WHERE r.id = $1`,
      [known.import_row_id, JSON.stringify(changes)],
    );
  const rows = () => one<{ n: number }>(`SELECT count(*)::int AS n FROM import_rows`);
  const before = await rows();
  const batch = await one<{ free: number }>(
    `SELECT (SELECT max(id) + 1000 FROM import_batches)::int AS free`,
  );
  assertRefused(await copy({ batch_id: batch.free }), "import_rows_batch_id_fkey");
  const scope = await one<{ free: number }>(
    `SELECT (SELECT max(id) + 1000 FROM scopes)::int AS free`,
  );
  assertRefused(await copy({ scope_id: scope.free }), "import_rows_store_scope_fkey");
  assert.deepEqual(await rows(), before);
  assert.equal(await copy({}), undefined);
  assert.equal((await rows()).n, before.n + 1);
});

Deno.test("rows others refer to are neither deleted nor re-keyed", async () => {
  const before = await counts();
  for (
    const statement of [
      `DELETE FROM import_rows WHERE id = ${known.import_row_id}`,
      `UPDATE import_rows SET id = DEFAULT WHERE id = ${known.import_row_id}`,
      `DELETE FROM energy_days WHERE id = ${known.energy_id}`,
      `DELETE FROM members WHERE id = ${known.member_id}`,
      `UPDATE members SET id = DEFAULT WHERE id = ${known.member_id}`,
      `DELETE FROM import_batches WHERE id = (SELECT batch_id FROM import_rows WHERE id = ${known.import_row_id})`,
      `DELETE FROM scopes`,
      `UPDATE scopes SET store_id = store_id + 1000`,
    ]
  ) {
    const failure = await failureOf(statement);
    assert.ok(failure, statement);
    assert.equal(failure.state, "23503", `${statement}: ${failure.message}`);
  }
  assert.deepEqual(await counts(), before);
  // Other columns change as before.
  assert.equal(
    await failureOf(`UPDATE members SET display_name = 'renamed' WHERE id = ${known.member_id}`),
    undefined,
  );
});

Deno.test({
  name: "close the test app",
  fn: () => app.close(),
  sanitizeOps: false,
  sanitizeResources: false,
});
