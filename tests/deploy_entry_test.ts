// The Deno Deploy entry (src/deploy.ts) under `deno serve` with Deploy's permissions only (net, env,
// read, sys: no write, no FFI, no child process) and no runtime flag, against PostgreSQL: it refuses to
// start without DATABASE_URL, and refuses the demo on an empty database (it cannot keep its keys);
// with data loaded and a key issued the way docs/deploy.md says (deno task seed, deno task keys),
// it answers the contract through the front door and stops cleanly on SIGTERM.
import assert from "node:assert/strict";
import pg from "pg";
import { buildConsole } from "../src/console/build.ts";
import { testDatabaseUrl } from "./db.ts";
import { assertErrorBody, readAnswer } from "./helpers.ts";
import { baseEnv, spawnService } from "./service_process.ts";

const ROOT = new URL("..", import.meta.url);
// The system's facts too: a module exceljs loads reads the process's umask, which Deno counts as
// one (Deploy grants every permission; the point is no write, no FFI, no child process).
const DEPLOY_PERMISSIONS = ["--allow-net", "--allow-env", "--allow-read", "--allow-sys"];
const LISTENING = /Listening on http:\/\/127\.0\.0\.1:(\d+)\//;
const READY = /"msg":"ready for deno serve/;

const serveDeploy = (env: Record<string, string>) =>
  spawnService(Deno.execPath(), [
    "serve",
    "--frozen",
    "--cached-only",
    ...DEPLOY_PERMISSIONS,
    "--host",
    "127.0.0.1",
    "--port",
    "0",
    "src/deploy.ts",
  ], { cwd: ROOT, env: { ...baseEnv(), LOG_FORMAT: "json", ...env } });

// An admin command of the project (scripts/), as run from a workstation against the database.
const admin = async (script: string, args: ReadonlyArray<string>, databaseUrl: string) => {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--frozen", "--cached-only", script, ...args],
    cwd: ROOT,
    env: { ...baseEnv(), DATABASE_URL: databaseUrl },
    clearEnv: true,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const stdout = new TextDecoder().decode(out.stdout);
  assert.equal(out.code, 0, `${script}: ${stdout}\n${new TextDecoder().decode(out.stderr)}`);
  return stdout;
};

const adminQuery = async <T>(url: string, text: string): Promise<Array<T>> => {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query(text)).rows;
  } finally {
    await client.end();
  }
};

const noWarnings = (lines: ReadonlyArray<string>) =>
  assert.ok(
    !lines.some((l) =>
      l.includes('"level":"warn"') || l.includes('"level":"error"') ||
      /NotCapable|PermissionDenied|Requires \w+ access/.test(l)
    ),
    lines.join("\n"),
  );

Deno.test({
  name: "Deno Deploy entry: refuses to start without DATABASE_URL (no disk for an embedded one)",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const service = serveDeploy({ DATABASE_URL: "" });
    try {
      await service.waitFor(/start-up failed: DATABASE_URL is not set/, 60_000);
      // It ends by itself (a signal sent meanwhile would race its exit).
      assert.equal(await service.exited(30_000), 1);
    } finally {
      await service.kill();
    }
  },
});

Deno.test({
  name: testDatabaseUrl
    ? "Deno Deploy entry: deno serve with Deploy's permissions answers the contract on PostgreSQL"
    : "Deno Deploy entry: deno serve on PostgreSQL (skipped: TEST_DATABASE_URL is unset; " +
      "the entry serves PostgreSQL only)",
  ignore: !testDatabaseUrl,
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const name = `deploy_${crypto.randomUUID().replaceAll("-", "").slice(0, 16)}`;
    await adminQuery(testDatabaseUrl!, `CREATE DATABASE ${name}`);
    const url = new URL(testDatabaseUrl!);
    url.pathname = `/${name}`;
    const databaseUrl = url.toString();
    try {
      // An empty database with SEED_DEMO left on: migrated, then refused; nothing loaded.
      const refused = serveDeploy({ DATABASE_URL: databaseUrl });
      try {
        await refused.waitFor(/"msg":"start-up failed".*SEED_DEMO=false/, 90_000);
        assert.equal(await refused.exited(30_000), 1);
      } finally {
        await refused.kill();
      }
      const [{ stores: none }] = await adminQuery<{ stores: number }>(
        databaseUrl,
        "SELECT count(*)::int AS stores FROM stores",
      );
      assert.equal(none, 0);

      await admin("scripts/seed.ts", [], databaseUrl);
      const issued = await admin(
        "scripts/keys.ts",
        ["issue", "--member", "deploy-check", "--permissions", "read,write"],
        databaseUrl,
      );
      const key = issued.trim().split("\n").at(-1)!;
      assert.match(key, /^\S{20,}$/);

      // Deploy's build step: the console's bundle is part of what is deployed.
      await buildConsole();
      const service = serveDeploy({ DATABASE_URL: databaseUrl, SEED_DEMO: "false" });
      try {
        const port = Number((await service.waitFor(LISTENING, 90_000))[1]);
        await service.waitFor(READY, 90_000);
        const base = `http://127.0.0.1:${port}`;
        const auth = { authorization: `Bearer ${key}` };

        const ready = await fetch(`${base}/health/ready`);
        assert.deepEqual([ready.status, await ready.json()], [200, { status: "ready" }]);
        assert.ok(ready.headers.get("x-request-id"), "every answer has an X-Request-ID");

        const dataset = await fetch(`${base}/api/v1/dataset`, { headers: auth });
        assert.equal(dataset.status, 200);
        assert.equal((await dataset.json()).unit, "kWh");
        const energy = await fetch(
          `${base}/api/v1/stores/1/energy?scope_id=10001&start=2026-07-01&end=2026-07-31`,
          { headers: auth },
        );
        assert.equal(energy.status, 200);
        const days = (await energy.json()).days;
        assert.equal(days.length, 31);
        assert.match(days[0].energy_kwh, /^\d+\.\d+$/);
        assert.ok(energy.headers.get("etag"));
        const stores = await fetch(`${base}/api/v1/stores`, { headers: auth });
        assert.equal((await stores.json()).stores.length, 60);
        // A browser's sign-in from the address the entry was reached at (the port is deno
        // serve's: PORT, unset here, is not what it listens on).
        const session = await fetch(`${base}/auth/session`, {
          method: "POST",
          headers: { "content-type": "application/json", origin: base },
          body: JSON.stringify({ access_key: key }),
        });
        assert.equal(session.status, 200, await session.clone().text());
        assert.match(session.headers.get("set-cookie") ?? "", /HttpOnly/i);
        await session.body?.cancel();
        // The template is written by exceljs, which the entry loads on the first request for it.
        const template = await fetch(`${base}/api/v1/imports/template`, { headers: auth });
        assert.equal(template.status, 200);
        assert.match((await template.json()).filename, /\.xlsx$/);

        // Error bodies, from the HttpApi and from the front door.
        assertErrorBody(
          await readAnswer(await fetch(`${base}/api/v1/stores`)),
          401,
          "MISSING_CREDENTIAL",
        );
        assertErrorBody(
          await readAnswer(
            await fetch(`${base}/api/v1/stores`, { headers: { authorization: "Bearer nope" } }),
          ),
          401,
          "INVALID_CREDENTIAL",
        );
        assertErrorBody(
          await readAnswer(
            await fetch(
              `${base}/api/v1/stores/1/energy?scope_id=10001&start=2026-07-31&end=2026-07-01`,
              {
                headers: auth,
              },
            ),
          ),
          400,
          "INVALID_RANGE",
        );
        assertErrorBody(await readAnswer(await fetch(`${base}/no/such/path`)), 404, "NOT_FOUND");
        assertErrorBody(
          await readAnswer(await fetch(`${base}/api/v1/stores`, { method: "DELETE" })),
          405,
          "METHOD_NOT_ALLOWED",
        );
        assertErrorBody(
          await readAnswer(
            await fetch(`${base}/api/v1/dataset`, { method: "POST", headers: auth, body: "{}" }),
          ),
          405,
          "METHOD_NOT_ALLOWED",
        );
        assertErrorBody(
          await readAnswer(
            await fetch(`${base}/auth/session`, {
              method: "POST",
              headers: { "content-type": "text/plain" },
              body: "hello",
            }),
          ),
          415,
          "UNSUPPORTED_MEDIA_TYPE",
        );
        assertErrorBody(
          await readAnswer(
            await fetch(`${base}/auth/session`, {
              method: "POST",
              headers: { "content-type": "application/json" },
              body: "[".repeat(200) + "]".repeat(200),
            }),
          ),
          400,
          "INVALID_JSON",
        );

        const page = await fetch(`${base}/`);
        assert.equal(page.status, 200);
        assert.match(await page.text(), /\/console\/assets\/app\.[0-9a-f]+\.js/);
        const contract = await fetch(`${base}/openapi.json`);
        assert.equal(contract.status, 200);
        assert.match((await contract.json()).openapi, /^3\./);

        // A stop while an export is being sent (it reads its pages as it goes) lets it finish.
        const exportPath =
          `${base}/api/v1/stores/export?start=2025-11-21&end=2026-11-20&format=csv`;
        const whole = new Uint8Array(
          await (await fetch(exportPath, { headers: auth })).arrayBuffer(),
        );
        const slow = await fetch(exportPath, { headers: auth });
        assert.equal(slow.status, 200);
        const reader = slow.body!.getReader();
        const first = await reader.read();
        let received = first.value!.byteLength;
        const stopped = service.stop("SIGTERM");
        await new Promise((resolve) => setTimeout(resolve, 300));
        while (true) {
          const next = await reader.read();
          if (next.done) break;
          received += next.value.byteLength;
        }
        assert.equal(received, whole.byteLength, "the export was sent whole");
        assert.equal(await stopped, 0, service.lines.join("\n"));
        assert.ok(
          service.lines.some((l) => l.includes("SIGTERM: finishing requests in flight")),
          service.lines.join("\n"),
        );
        noWarnings(service.lines);
      } finally {
        await service.kill();
      }
    } finally {
      await adminQuery(testDatabaseUrl!, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    }
  },
});
