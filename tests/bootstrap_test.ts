// The first start on an empty database: the demo and its keys are loaded once, also when two
// instances start on it at the same moment (the second goes on with the first's demo).
import assert from "node:assert/strict";
import { SqlClient } from "@effect/sql";
import { Effect } from "effect";
import { bootstrap } from "../src/bootstrap.ts";
import { AppConfig } from "../src/config.ts";
import { makeTestDatabase } from "./db.ts";

Deno.test({
  name: "two starts on one empty database load the demo once, and both go on",
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    const db = await makeTestDatabase({ migrate: false });
    try {
      const start = () =>
        db.run(Effect.provide(bootstrap(() => Effect.void), AppConfig.make({ seedDemo: true })));
      // Both are awaited whatever happens, so that the database is dropped with neither using it.
      const [first, second] = (await Promise.allSettled([start(), start()])).map((result) => {
        if (result.status === "rejected") throw result.reason;
        return result.value;
      });
      const issued = [first.keys.length, second.keys.length].sort((a, b) => a - b);
      assert.equal(issued[0], 0, "one start loaded nothing");
      assert.ok(issued[1] > 0, "the other loaded the demo and issued its keys");
      const [{ stores, keys }] = await db.run(
        Effect.flatMap(SqlClient.SqlClient, (sql) =>
          sql<{ stores: number; keys: number }>`
          SELECT (SELECT count(*) FROM stores)::int AS stores,
                 (SELECT count(*) FROM access_keys)::int AS keys`),
      );
      assert.equal(stores, 60);
      assert.equal(keys, issued[1]);
    } finally {
      await db.close();
    }
  },
});
