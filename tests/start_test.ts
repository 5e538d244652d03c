// The service's first start as a process: on an empty database (PostgreSQL when the suite runs on
// it, else the embedded one) it loads the demo, writes the demo keys into a data folder it creates,
// logs every start-up message through the one logger (JSON here), and stops cleanly on SIGTERM.
import assert from "node:assert/strict";
import pg from "pg";
import { testDatabaseUrl } from "./db.ts";
import { Effect } from "effect";
import { holdDataDir } from "../src/db/database.ts";
import { READY_LINE, spawnMain } from "./service_process.ts";

const adminQuery = async (text: string) => {
  const client = new pg.Client({ connectionString: testDatabaseUrl });
  await client.connect();
  try {
    await client.query(text);
  } finally {
    await client.end();
  }
};

Deno.test({
  name: "first start: demo keys written to a new data folder, JSON start-up log, clean stop",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const dir = await Deno.makeTempDir();
    const dataDir = `${dir}/not/yet/there`;
    let databaseUrl = "";
    let dropDatabase = async () => {};
    if (testDatabaseUrl) {
      const name = `start_${crypto.randomUUID().replaceAll("-", "").slice(0, 16)}`;
      await adminQuery(`CREATE DATABASE ${name}`);
      const url = new URL(testDatabaseUrl);
      url.pathname = `/${name}`;
      databaseUrl = url.toString();
      dropDatabase = () => adminQuery(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    }
    const service = spawnMain({
      DATA_DIR: dataDir,
      DATABASE_URL: databaseUrl,
      LOG_FORMAT: "json",
      LOG_LEVEL: "info",
    });
    const lines = service.lines;
    try {
      const port = Number((await service.waitFor(READY_LINE, 90_000))[1]);

      const keys = JSON.parse(await Deno.readTextFile(`${dataDir}/demo-keys.json`));
      assert.equal(keys.length, 4);
      const mode = (await Deno.stat(`${dataDir}/demo-keys.json`)).mode;
      assert.equal((mode ?? 0) & 0o077, 0, "the keys file is private to its owner");
      const stores = await fetch(`http://127.0.0.1:${port}/api/v1/stores`, {
        headers: { authorization: `Bearer ${keys[0].key}` },
      });
      assert.equal(stores.status, 200);
      assert.equal((await stores.json()).stores.length, 60);

      assert.equal(await service.stop("SIGTERM"), 0);
      for (const line of lines) {
        const parsed = JSON.parse(line);
        assert.equal(typeof parsed.time, "string", line);
        assert.equal(typeof parsed.level, "string", line);
      }
      const text = lines.join("\n");
      for (const k of keys) assert.ok(!text.includes(k.key), "no key is logged");
      assert.ok(lines.some((l) => JSON.parse(l).msg === "request"), "the access log is on");
    } finally {
      await service.kill();
      await dropDatabase();
      await Deno.remove(dir, { recursive: true });
    }
  },
});

// The service started on the embedded database in `dataDir`.
const startOnEmbedded = (dataDir: string) =>
  spawnMain({ DATA_DIR: dataDir, DATABASE_URL: "", BUILD_CONSOLE: "false", LOG_FORMAT: "json" });

// It ends at once with 1, saying who holds the folder.
const assertRefused = async (service: ReturnType<typeof spawnMain>, holder: string) => {
  assert.equal(await service.exited(90_000), 1);
  assert.ok(service.lines.some((line) => line.includes(holder)), service.lines.join("\n"));
};

Deno.test({
  name: "a stop signal during the first start's demo load ends it cleanly; the next start loads it",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const dir = await Deno.makeTempDir();
    const dataDir = `${dir}/data`;
    const first = startOnEmbedded(dataDir);
    let second: ReturnType<typeof spawnMain> | undefined;
    try {
      await first.waitFor(/loading the demo snapshot/, 90_000);
      assert.equal(await first.stop("SIGTERM"), 0);
      assert.ok(
        first.lines.some((line) => line.includes("SIGTERM during start-up: stopping")),
        first.lines.join("\n"),
      );
      await assert.rejects(() => Deno.stat(`${dataDir}/service.pid`), "the folder is let go");
      second = startOnEmbedded(dataDir);
      const port = Number((await second.waitFor(READY_LINE, 90_000))[1]);
      const keys = JSON.parse(await Deno.readTextFile(`${dataDir}/demo-keys.json`));
      const stores = await fetch(`http://127.0.0.1:${port}/api/v1/stores`, {
        headers: { authorization: `Bearer ${keys[0].key}` },
      });
      assert.equal((await stores.json()).stores.length, 60);
      assert.equal(await second.stop("SIGTERM"), 0);
    } finally {
      await first.kill();
      await second?.kill();
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test({
  name: "a start on a folder another service holds is refused before the database is opened",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const dir = await Deno.makeTempDir();
    const dataDir = `${dir}/data`;
    try {
      // This test process stands in for the service that holds the folder.
      await Effect.runPromise(Effect.scoped(Effect.gen(function* () {
        yield* holdDataDir(dataDir);
        const service = startOnEmbedded(dataDir);
        try {
          yield* Effect.promise(() =>
            assertRefused(service, `the service (pid ${Deno.pid}) is using`)
          );
        } finally {
          yield* Effect.promise(() => service.kill());
        }
        assert.deepEqual([...Deno.readDirSync(dataDir)].map((e) => e.name), ["service.pid"]);
        assert.equal(Deno.readTextFileSync(`${dataDir}/service.pid`), `${Deno.pid} service\n`);
      })));
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test({
  name: "an admin command holds the folder too: a service started meanwhile is refused",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const dir = await Deno.makeTempDir();
    const dataDir = `${dir}/data`;
    try {
      // This test process stands in for the admin command, while it holds the folder.
      await Effect.runPromise(Effect.scoped(Effect.gen(function* () {
        yield* holdDataDir(dataDir, "admin command");
        assert.equal(
          Deno.readTextFileSync(`${dataDir}/service.pid`),
          `${Deno.pid} admin command\n`,
        );
        const service = startOnEmbedded(dataDir);
        try {
          yield* Effect.promise(() =>
            assertRefused(service, `the admin command (pid ${Deno.pid}) is using`)
          );
        } finally {
          yield* Effect.promise(() => service.kill());
        }
      })));
      // Given back when it ends.
      assert.deepEqual([...Deno.readDirSync(dataDir)], []);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test("a folder held by a process of another program (the single binary, say) is refused, whatever its pid names", async () => {
  const dir = await Deno.makeTempDir();
  const path = `${dir}/service.pid`;
  // flock(1) holds the lock and a shell writes its own pid, as a holder does.
  const holder = new Deno.Command("flock", {
    args: ["-x", path, "sh", "-c", `echo "$$ service" > "${path}"; sleep 30`],
  }).spawn();
  try {
    let text = "";
    for (let i = 0; i < 100 && !text.endsWith("service\n"); i++) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      text = await Deno.readTextFile(path).catch(() => "");
    }
    const exit = await Effect.runPromiseExit(Effect.scoped(holdDataDir(dir, "admin command")));
    assert.equal(exit._tag, "Failure");
    assert.match(String(exit), new RegExp(`the service \\(pid ${text.split(" ")[0]}\\) is using`));
    assert.equal(await Deno.readTextFile(path), text, "the holder's file is left as it is");
  } finally {
    holder.kill();
    await holder.status;
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a folder left held by a process that is gone, or by another program with its number, is taken over", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const gone = new Deno.Command("true").spawn();
    const { pid: gonePid } = gone;
    await gone.status;
    // A program that is not this one, given a number the holder once had (after a reboot).
    const other = new Deno.Command("sleep", { args: ["30"] }).spawn();
    try {
      for (const pid of [gonePid, other.pid]) {
        await Deno.writeTextFile(`${dir}/service.pid`, `${pid} service\n`);
        await Effect.runPromise(Effect.scoped(Effect.gen(function* () {
          yield* holdDataDir(dir);
          assert.equal(Deno.readTextFileSync(`${dir}/service.pid`), `${Deno.pid} service\n`);
        })));
      }
    } finally {
      other.kill();
      await other.status;
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

// A TCP relay to PostgreSQL that can stop passing bytes on: a database that no longer answers.
const freezableRelay = (target: URL) => {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  let frozen = false;
  const conns: Array<Deno.Conn> = [];
  const pipe = async (from: Deno.Conn, to: Deno.Conn) => {
    const buffer = new Uint8Array(64 * 1024);
    try {
      for (;;) {
        const n = await from.read(buffer);
        if (n === null) break;
        while (frozen) await new Promise((resolve) => setTimeout(resolve, 50));
        let at = 0;
        while (at < n) at += await to.write(buffer.subarray(at, n));
      }
    } catch {
      // either side closed
    }
  };
  (async () => {
    for await (const client of listener) {
      const server = await Deno.connect({
        hostname: target.hostname,
        port: Number(target.port || 5432),
      });
      conns.push(client, server);
      pipe(client, server);
      pipe(server, client);
    }
  })().catch(() => {});
  const url = new URL(target);
  url.hostname = "127.0.0.1";
  url.port = String((listener.addr as Deno.NetAddr).port);
  return {
    url,
    freeze: () => (frozen = true),
    close: () => {
      listener.close();
      for (const c of conns) {
        try {
          c.close();
        } catch {
          // closed already
        }
      }
    },
  };
};

Deno.test({
  name: "a stop ends the process when the database no longer answers, after its requests' time",
  ignore: !testDatabaseUrl,
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const name = `stop_${crypto.randomUUID().replaceAll("-", "").slice(0, 16)}`;
    await adminQuery(`CREATE DATABASE ${name}`);
    const url = new URL(testDatabaseUrl!);
    url.pathname = `/${name}`;
    const relay = freezableRelay(url);
    const dataDir = await Deno.makeTempDir();
    const service = spawnMain({
      DATA_DIR: dataDir,
      DATABASE_URL: relay.url.toString(),
      LOG_FORMAT: "json",
      SEED_DEMO: "false",
      REQUEST_TIMEOUT_MS: "2000",
    });
    try {
      const port = Number((await service.waitFor(READY_LINE, 90_000))[1]);
      relay.freeze();
      // A statement is under way on a connection that will never answer again.
      const stuck = await fetch(`http://127.0.0.1:${port}/health/ready`);
      await stuck.body?.cancel();
      service.stop("SIGTERM");
      // The request's time (2 s), the wait for work and for the connections (at most 15 s), with
      // room to spare.
      assert.equal(await service.exited(40_000), 0);
      assert.ok(service.lines.some((l) => l.includes("did not close")), service.lines.join("\n"));
    } finally {
      await service.kill();
      relay.close();
      await adminQuery(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await Deno.remove(dataDir, { recursive: true });
    }
  },
});
