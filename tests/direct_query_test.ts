// The lanes' plain queries (src/db/database.ts): each text is prepared under its own name, the same
// name every time, so PostgreSQL parses and plans it once per connection; past the names' bound a
// text runs unnamed.
import assert from "node:assert/strict";
import pg from "pg";
import { directQuery } from "../src/db/database.ts";
import { testDatabaseUrl } from "./db.ts";

// A pool stand-in that records what each query asked for.
const recording = () => {
  const asked: Array<{ name?: string; text: string; values: Array<unknown> }> = [];
  const pool = {
    query: (config: { name?: string; text: string; values: Array<unknown> }) => {
      asked.push(config);
      return Promise.resolve({ rows: [{ n: asked.length }] });
    },
  } as unknown as pg.Pool;
  return { asked, query: directQuery(pool) };
};

Deno.test("a text keeps one name of its own; past 64 texts, new ones run unnamed", async () => {
  const { asked, query } = recording();
  await query("SELECT 1", []);
  await query("SELECT $1::int", [2]);
  await query("SELECT 1", []);
  assert.deepEqual(asked.map((a) => a.name), ["lane_1", "lane_2", "lane_1"]);
  assert.deepEqual(asked[1].values, [2]);
  for (let i = 3; i <= 64; i++) await query(`SELECT ${i}`, []);
  assert.equal(asked.at(-1)?.name, "lane_64");
  await query("SELECT 65", []);
  assert.equal(asked.at(-1)?.name, undefined);
  // The named ones keep their names.
  await query("SELECT $1::int", [3]);
  assert.equal(asked.at(-1)?.name, "lane_2");
  const names = new Set(asked.map((a) => a.name).filter((n) => n !== undefined));
  assert.equal(names.size, 64);
});

Deno.test({
  name: "on PostgreSQL a lane's statement is prepared once per connection and answers each time",
  ignore: !testDatabaseUrl,
  fn: async () => {
    const pool = new pg.Pool({ connectionString: testDatabaseUrl, max: 1 });
    try {
      const query = directQuery(pool);
      const text = "SELECT $1::int * 2 AS doubled";
      for (const n of [1, 2, 3]) {
        assert.deepEqual(await query<{ doubled: number }>(text, [n]), [{ doubled: n * 2 }]);
      }
      const prepared = await query<{ name: string; statement: string }>(
        "SELECT name, statement FROM pg_prepared_statements ORDER BY name",
        [],
      );
      assert.deepEqual(prepared.map((p) => p.name), ["lane_1", "lane_2"]);
      assert.equal(prepared[0].statement, text);
    } finally {
      await pool.end();
    }
  },
});
