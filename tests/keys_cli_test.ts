// The keys command refuses a malformed command line with its usage and exit code 2, before it opens
// any database: no stack trace, no number read loosely.
import assert from "node:assert/strict";
import { SqlClient } from "@effect/sql";
import { Effect } from "effect";
import { makeTestDatabase, testDatabaseUrl } from "./db.ts";

const keys = async (...args: Array<string>) => {
  const dataDir = await Deno.makeTempDir({ prefix: "keys_cli_" });
  try {
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", "scripts/keys.ts", ...args],
      env: { DATA_DIR: dataDir, DATABASE_URL: "" },
      stdout: "piped",
      stderr: "piped",
    }).output();
    return { code: out.code, stderr: new TextDecoder().decode(out.stderr) };
  } finally {
    await Deno.remove(dataDir, { recursive: true });
  }
};

Deno.test("keys: a malformed command line is a usage error, not a crash", async () => {
  for (
    const [args, says] of [
      [["issue", "--member", "x", "--permissions", "read", "--expires-in", "-5m"], "--expires-in"],
      [["issue", "--member", "x", "--permissions", "read", "--stores", "1e0"], "--stores: 1e0"],
      [["issue", "--member", "x", "--permissions", "read", "--stores", "0x2"], "--stores: 0x2"],
      [["issue", "--member", "x", "--permissions", "read", "--colour"], "--colour"],
      [["revoke", "1e0"], "revoke takes a KEY_ID"],
      // A key the service would refuse every answer (403 PERMISSION_MISSING).
      [["issue", "--member", "x", "--permissions", "write"], "build on read"],
      [["issue", "--member", "x", "--permissions", "raw,write"], "build on read"],
    ] as const
  ) {
    const { code, stderr } = await keys(...args);
    assert.equal(code, 2, `${args.join(" ")}: ${stderr}`);
    assert.ok(stderr.startsWith("error: ") && stderr.includes(says), stderr);
    assert.ok(!/\n\s+at /.test(stderr), `no stack trace: ${stderr}`);
  }
});

Deno.test("keys and verify in a folder that holds no database say so and make none there", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "keys_cli_empty_" });
  try {
    for (
      const args of [
        ["scripts/keys.ts", "list"],
        ["scripts/keys.ts", "issue", "--member", "x", "--permissions", "read"],
        ["scripts/verify.ts"],
      ]
    ) {
      const out = await new Deno.Command(Deno.execPath(), {
        args: ["run", "-A", ...args],
        env: { DATA_DIR: dataDir, DATABASE_URL: "" },
        stdout: "piped",
        stderr: "piped",
      }).output();
      const stderr = new TextDecoder().decode(out.stderr);
      assert.notEqual(out.code, 0, args.join(" "));
      assert.match(stderr, /holds no database/, args.join(" "));
      assert.deepEqual([...Deno.readDirSync(dataDir)], [], `${args.join(" ")}: nothing made`);
    }
  } finally {
    await Deno.remove(dataDir, { recursive: true });
  }
});

Deno.test({
  name: "keys on a PostgreSQL database the service never migrated say so and make nothing there",
  ignore: !testDatabaseUrl,
  fn: async () => {
    const db = await makeTestDatabase({ migrate: false });
    try {
      for (const args of [["list"], ["issue", "--member", "x", "--permissions", "read"]]) {
        const out = await new Deno.Command(Deno.execPath(), {
          args: ["run", "-A", "scripts/keys.ts", ...args],
          env: { DATABASE_URL: db.url! },
          stdout: "piped",
          stderr: "piped",
        }).output();
        const stderr = new TextDecoder().decode(out.stderr);
        assert.equal(out.code, 1, `${args.join(" ")}: ${stderr}`);
        assert.match(stderr, /names a database the service has not migrated/);
      }
      const tables = await db.run(Effect.flatMap(
        SqlClient.SqlClient,
        (sql) =>
          sql<{ n: number }>`SELECT count(*)::int AS n FROM pg_tables WHERE schemaname = 'public'`,
      ));
      assert.equal(tables[0].n, 0, "no table was made");
    } finally {
      await db.close();
    }
  },
});
