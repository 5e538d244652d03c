// The service's own connections: planner settings for key lookups, and a URL's own options kept.
import assert from "node:assert/strict";
import { SqlClient } from "@effect/sql";
import { Effect } from "effect";
import { makeTestDatabase, testDatabaseUrl } from "./db.ts";
import { SESSION_SETTINGS } from "../src/db/database.ts";

const settingsOf = (db: Awaited<ReturnType<typeof makeTestDatabase>>) =>
  db.run(
    Effect.flatMap(SqlClient.SqlClient, (sql) =>
      sql<{ jit: string; rpc: string; work_mem: string }>`
      SELECT current_setting('jit') AS jit, current_setting('random_page_cost') AS rpc,
        current_setting('work_mem') AS work_mem`),
  );

Deno.test("every connection costs random reads as sequential ones and compiles nothing", async () => {
  const db = await makeTestDatabase({ migrate: false });
  try {
    // Several at once: the settings hold on each of the pool's connections, not only the first.
    const rows = await Promise.all(Array.from({ length: 4 }, () => settingsOf(db)));
    for (const [row] of rows) {
      assert.equal(row.rpc, SESSION_SETTINGS.random_page_cost);
      if (testDatabaseUrl) assert.equal(row.jit, SESSION_SETTINGS.jit);
    }
  } finally {
    await db.close();
  }
});

Deno.test({
  name: "options given in DATABASE_URL are kept, and win over the service's own",
  ignore: !testDatabaseUrl,
  fn: async () => {
    const db = await makeTestDatabase({
      migrate: false,
      urlOptions: "-c work_mem=7MB -c random_page_cost=2",
    });
    try {
      const [row] = await settingsOf(db);
      assert.equal(row.work_mem, "7MB");
      assert.equal(row.jit, SESSION_SETTINGS.jit);
      // The operator's own come last, so they win where both set one.
      assert.equal(row.rpc, "2");
    } finally {
      await db.close();
    }
  },
});
