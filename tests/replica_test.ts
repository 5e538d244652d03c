// A read replica for real: a PostgreSQL primary and a streaming standby on loopback ports in a temp
// folder, the service reading the standby (DATABASE_READ_URL) and a second instance on the primary
// alone. Commits go to the primary; with the standby's replay paused, current reads answer the
// replica's older data while a read with the newer data_token (or a known_at after the commit)
// answers the new data, the same bytes as the primary; resumed, the replica serves the new data;
// stopped, reads fall back to the primary and /health/ready says so. Skipped, with a message, only
// where PostgreSQL's server binaries are not installed.
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { Context, Effect, Layer, Logger, Option, Redacted } from "effect";
import pg from "pg";
import { AppConfig } from "../src/config.ts";
import { DatabaseLive } from "../src/db/database.ts";
import { ReadReplica } from "../src/db/read_replica.ts";
import { embeddedRunOnly } from "./db.ts";
import { type ServiceProcess, spawnMain } from "./service_process.ts";

// The server binaries: PG_BIN, else the newest /usr/lib/postgresql/<version>/bin that has them.
const findBin = () => {
  const needed = ["initdb", "pg_ctl", "pg_basebackup", "postgres"];
  const has = (dir: string) =>
    needed.every((name) => {
      try {
        return Deno.statSync(`${dir}/${name}`).isFile;
      } catch {
        return false;
      }
    });
  const given = Deno.env.get("PG_BIN");
  if (given !== undefined) return has(given) ? given : undefined;
  try {
    const versions = [...Deno.readDirSync("/usr/lib/postgresql")]
      .map((e) => e.name).filter((n) => /^\d+$/.test(n)).sort((a, b) => Number(b) - Number(a));
    return versions.map((v) => `/usr/lib/postgresql/${v}/bin`).find(has);
  } catch {
    return undefined;
  }
};

const BIN = findBin();
if (BIN === undefined) {
  console.log(
    "replica_test skipped: PostgreSQL's server binaries (initdb, pg_ctl, pg_basebackup) were not " +
      "found in /usr/lib/postgresql/<version>/bin; set PG_BIN to their folder",
  );
}

// initdb refuses root: as root, the servers run as the postgres user.
const asRoot = Deno.uid() === 0;

const run = async (command: string, args: ReadonlyArray<string>) => {
  const [cmd, all] = asRoot
    ? ["runuser", ["-u", "postgres", "--", command, ...args]]
    : [command, [...args]];
  const out = await new Deno.Command(cmd, { args: all, stdout: "piped", stderr: "piped" })
    .output();
  if (!out.success) {
    throw new Error(
      `${command} ${args.join(" ")} failed:\n${new TextDecoder().decode(out.stderr)}`,
    );
  }
};

const freePort = () => {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  return port;
};

const query = async <T>(port: number, text: string): Promise<T[]> => {
  const client = new pg.Client({ host: "127.0.0.1", port, user: "postgres", database: "postgres" });
  await client.connect();
  try {
    return (await client.query(text)).rows as T[];
  } finally {
    await client.end();
  }
};

interface Reply {
  readonly status: number;
  readonly headers: Headers;
  readonly text: string;
  readonly ms: number;
}

// Long enough that a read which waited is told from one that did not on a busy machine.
const WAIT_MS = 1_500;

const SECRET = "replica-test-session-secret-0123456789";

const replicaRun = embeddedRunOnly(
  "read replica: current reads on the standby, newer tokens on the primary, fallback",
);

Deno.test({
  name: replicaRun.name,
  ignore: BIN === undefined || replicaRun.ignore,
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const bin = BIN!;
    const started = performance.now();
    const dir = await Deno.makeTempDir({ prefix: "replica_test_" });
    if (asRoot) {
      const uid = Number(
        new TextDecoder().decode(
          (await new Deno.Command("id", { args: ["-u", "postgres"], stdout: "piped" }).output())
            .stdout,
        ).trim(),
      );
      await Deno.chown(dir, uid, null);
    }
    const primaryPort = freePort();
    const standbyPort = freePort();
    const running: Array<string> = [];
    const services: Array<ServiceProcess> = [];
    const pgCtl = (data: string, ...args: Array<string>) =>
      run(`${bin}/pg_ctl`, ["-D", data, "-l", `${data}.log`, ...args]);
    try {
      // The primary, then a standby made from it with pg_basebackup -R (streaming replication).
      await run(`${bin}/initdb`, [
        "-D",
        `${dir}/primary`,
        "-U",
        "postgres",
        "-A",
        "trust",
        "-E",
        "UTF8",
        "--no-sync",
      ]);
      await Deno.writeTextFile(
        `${dir}/primary/postgresql.conf`,
        [
          `port = ${primaryPort}`,
          "listen_addresses = '127.0.0.1'",
          `unix_socket_directories = '${dir}'`,
          "wal_level = replica",
          "max_wal_senders = 4",
          "fsync = off",
          "",
        ].join("\n"),
        { append: true },
      );
      await Deno.writeTextFile(
        `${dir}/primary/pg_hba.conf`,
        "host replication postgres 127.0.0.1/32 trust\n",
        { append: true },
      );
      await pgCtl(`${dir}/primary`, "-w", "start");
      running.push(`${dir}/primary`);
      await run(`${bin}/pg_basebackup`, [
        "-h",
        "127.0.0.1",
        "-p",
        String(primaryPort),
        "-U",
        "postgres",
        "-D",
        `${dir}/standby`,
        "-R",
        "-X",
        "stream",
      ]);
      await Deno.writeTextFile(`${dir}/standby/postgresql.conf`, `port = ${standbyPort}\n`, {
        append: true,
      });
      await pgCtl(`${dir}/standby`, "-w", "start");
      running.push(`${dir}/standby`);
      const [{ recovery }] = await query<{ recovery: boolean }>(
        standbyPort,
        "SELECT pg_is_in_recovery() AS recovery",
      );
      assert.equal(recovery, true, "the standby replays the primary");

      const url = (port: number) => `postgres://postgres@127.0.0.1:${port}/postgres`;
      const start = (name: string, env: Record<string, string>) => {
        const service = spawnMain({
          DATA_DIR: `${dir}/${name}`,
          DATABASE_URL: url(primaryPort),
          SESSION_SECRET: SECRET,
          BUILD_CONSOLE: "false",
          LOG_LEVEL: "info",
          ...env,
        });
        services.push(service);
        return service;
      };
      const portOf = async (service: ServiceProcess) =>
        Number((await service.waitFor(/ready on http:\/\/127\.0\.0\.1:(\d+) /, 60_000))[1]);

      // The service reading the standby (it loads the demo through the primary), then one on the
      // primary alone: what the newest data is.
      const replicaService = start("with-replica", {
        DATABASE_READ_URL: url(standbyPort),
        DATABASE_READ_WAIT_MS: String(WAIT_MS),
        DATABASE_READ_MAX_LAG_MS: "60000",
      });
      const withReplica = `http://127.0.0.1:${await portOf(replicaService)}`;
      const primaryOnly = `http://127.0.0.1:${await portOf(start("primary-only", {}))}`;
      assert.match(replicaService.lines.join("\n"), /reads on a replica/);

      const keys = JSON.parse(
        await Deno.readTextFile(`${dir}/with-replica/demo-keys.json`),
      ) as Array<{ member: string; permissions: string[]; stores: number[] | null; key: string }>;
      const writer = keys.find((k) => k.permissions.includes("write") && k.stores === null)!.key;

      const call = async (
        base: string,
        method: string,
        path: string,
        body?: unknown,
        headers: Record<string, string> = {},
      ): Promise<Reply> => {
        const t = performance.now();
        const response = await fetch(`${base}${path}`, {
          method,
          headers: {
            authorization: `Bearer ${writer}`,
            ...(body === undefined ? {} : { "content-type": "application/json" }),
            ...headers,
          },
          body: body === undefined ? undefined : JSON.stringify(body),
        });
        const text = await response.text();
        return {
          status: response.status,
          headers: response.headers,
          text,
          ms: performance.now() - t,
        };
      };
      const ok = async (reply: Promise<Reply>) => {
        const r = await reply;
        assert.equal(r.status, 200, r.text.slice(0, 500));
        return r;
      };

      const ready = async () => {
        const r = await ok(call(withReplica, "GET", "/health/ready"));
        assert.deepEqual(JSON.parse(r.text), { status: "ready" });
        return r.headers.get("reads-from");
      };
      assert.equal(await ready(), "replica");

      // A store, its scope, and days of the dataset without a cleaned value (an import sets them).
      const store = JSON.parse((await ok(call(withReplica, "GET", "/api/v1/stores"))).text)
        .stores[0] as { id: number; scope_id: number; name: string; brand_name: string };
      const dataset = JSON.parse((await ok(call(withReplica, "GET", "/api/v1/dataset"))).text) as {
        end: string;
      };
      const endDay = new Date(`${dataset.end}T00:00:00Z`);
      const startDay = new Date(endDay.getTime() - 59 * 86_400_000).toISOString().slice(0, 10);
      const range = `scope_id=${store.scope_id}&start=${startDay}&end=${dataset.end}`;
      const energyPath = `/api/v1/stores/${store.id}/energy?${range}`;
      const daysOf = (text: string) =>
        new Map(
          (JSON.parse(text).days as Array<{ business_date: string; energy_kwh: string | null }>)
            .map((d) => [d.business_date, d.energy_kwh]),
        );
      const settable = [
        ...(JSON.parse((await ok(call(withReplica, "GET", energyPath))).text).days as Array<
          { business_date: string; source_kind: string | null; status: string }
        >),
      ].filter((d) => d.status === "NO_DATA" || d.source_kind === "LEGACY_DIRECT")
        .map((d) => d.business_date);
      assert.ok(settable.length >= 3, "three days an import changes");
      const [day1, day2, day3] = settable;

      const commitDay = async (day: string, kwh: string) => {
        const file = `品牌,门店,日期,日能耗\r\n${store.brand_name},${store.name},${day},${kwh}\r\n`;
        const preview = await ok(call(withReplica, "POST", "/api/v1/imports/preview", {
          filename: "day.csv",
          content_base64: Buffer.from(file, "utf8").toString("base64"),
          reason: "replica test",
        }, { "idempotency-key": crypto.randomUUID() }));
        const id = JSON.parse(preview.text).id;
        await ok(call(withReplica, "POST", `/api/v1/imports/${id}/commit`, {}, {
          "idempotency-key": crypto.randomUUID(),
        }));
      };
      // Current reads until `day` shows `kwh` (the replica replaying), within `ms`.
      const until = async (base: string, day: string, kwh: string, ms: number) => {
        const deadline = performance.now() + ms;
        while (true) {
          const r = await ok(call(base, "GET", energyPath));
          if (daysOf(r.text).get(day) === kwh) return r;
          assert.ok(performance.now() < deadline, `${day} did not become ${kwh} within ${ms} ms`);
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
      };

      // A session made before the commit below: the replica has it once it has the commit.
      const signInAt = async () => {
        const r = await fetch(`${withReplica}/auth/session`, {
          method: "POST",
          headers: { origin: withReplica, "content-type": "application/json" },
          body: JSON.stringify({ access_key: writer }),
        });
        await r.body?.cancel();
        assert.equal(r.status, 200);
        return (r.headers.get("set-cookie") ?? "").split(";")[0];
      };
      const endedLater = await signInAt();

      // 1. A commit reaches the replica, which serves it.
      await commitDay(day1, "111.1000");
      const replayStarted = performance.now();
      await until(withReplica, day1, "111.1000", 5_000);
      const replayMs = performance.now() - replayStarted;

      // 2. Replay paused: the next commit is on the primary only.
      await query(standbyPort, "SELECT pg_wal_replay_pause()");
      await commitDay(day2, "222.2000");
      const afterCommit = new Date().toISOString();
      const stale = await ok(call(withReplica, "GET", energyPath));
      assert.notEqual(daysOf(stale.text).get(day2), "222.2000", "current reads are the replica's");
      assert.equal(daysOf(stale.text).get(day1), "111.1000");
      const oldToken = stale.headers.get("data-token")!;
      const newest = await ok(call(primaryOnly, "GET", energyPath));
      assert.equal(daysOf(newest.text).get(day2), "222.2000");
      const newToken = newest.headers.get("data-token")!;
      assert.notEqual(newToken, oldToken);

      // The newer token: the new data, byte for byte the primary's, after the bounded wait.
      const asOfNew = await ok(
        call(withReplica, "GET", `${energyPath}&data_token=${encodeURIComponent(newToken)}`),
      );
      assert.equal(asOfNew.text, newest.text);
      assert.equal(asOfNew.headers.get("data-token"), newToken);
      assert.ok(asOfNew.ms >= WAIT_MS, `waited for the replica first (${asOfNew.ms} ms)`);
      const metricsPath = `/api/v1/stores/${store.id}/metrics?${range}`;
      const metricsNew = await ok(
        call(withReplica, "GET", `${metricsPath}&data_token=${encodeURIComponent(newToken)}`),
      );
      const metricsPrimary = await ok(
        call(primaryOnly, "GET", `${metricsPath}&data_token=${encodeURIComponent(newToken)}`),
      );
      assert.equal(metricsNew.text, metricsPrimary.text);
      // An instant after the commit: the new data too.
      const known = await ok(
        call(withReplica, "GET", `${energyPath}&known_at=${encodeURIComponent(afterCommit)}`),
      );
      assert.equal(daysOf(known.text).get(day2), "222.2000");
      assert.equal(known.headers.get("data-token"), newToken);
      // The replica's own token: answered from the replica without waiting.
      const asOfOld = await ok(
        call(withReplica, "GET", `${energyPath}&data_token=${encodeURIComponent(oldToken)}`),
      );
      assert.equal(asOfOld.text, stale.text);
      assert.ok(asOfOld.ms < WAIT_MS, `no wait for a replayed commit (${asOfOld.ms} ms)`);
      assert.equal(await ready(), "replica", "a paused replica inside the lag limit is still read");
      // A session ended on the primary is refused at the next read, although the paused replica
      // still holds it live.
      const storesBy = async (cookie: string) => {
        const r = await fetch(`${withReplica}/api/v1/stores`, { headers: { cookie } });
        await r.body?.cancel();
        return r.status;
      };
      assert.equal(await storesBy(endedLater), 200);
      const logout = await fetch(`${withReplica}/auth/logout`, {
        method: "POST",
        headers: { origin: withReplica, cookie: endedLater },
      });
      await logout.body?.cancel();
      assert.equal(logout.status, 200);
      const [live] = await query(
        standbyPort,
        "SELECT count(*)::int AS n FROM sessions WHERE ended_at IS NULL",
      );
      assert.ok((live as { n: number }).n >= 1, "the replica has not replayed the logout");
      assert.equal(await storesBy(endedLater), 401, "a session ended on the primary");
      // A session made now is on the primary only: a read with its cookie is not refused.
      const cookie = await signInAt();
      const bySession = await fetch(`${withReplica}/api/v1/stores`, { headers: { cookie } });
      await bySession.body?.cancel();
      assert.equal(bySession.status, 200, "a session the replica has not replayed");
      // So is a preview: reading it back at once finds it.
      const preview = JSON.parse(
        (await ok(call(withReplica, "POST", "/api/v1/imports/preview", {
          filename: "day.csv",
          content_base64: Buffer.from(
            `品牌,门店,日期,日能耗\r\n${store.brand_name},${store.name},${day3},1.0000\r\n`,
            "utf8",
          ).toString("base64"),
          reason: "replica test",
        }, { "idempotency-key": crypto.randomUUID() }))).text,
      ) as { id: number };
      await ok(call(withReplica, "GET", `/api/v1/imports/${preview.id}`));

      // 3. Replay resumed: the replica serves the new data.
      await query(standbyPort, "SELECT pg_wal_replay_resume()");
      const resumed = await until(withReplica, day2, "222.2000", 5_000);
      assert.equal(resumed.headers.get("data-token"), newToken);
      const quick = await ok(
        call(withReplica, "GET", `${energyPath}&data_token=${encodeURIComponent(newToken)}`),
      );
      assert.equal(quick.text, newest.text);
      assert.ok(quick.ms < WAIT_MS, `a replayed token is not waited for (${quick.ms} ms)`);

      // 4. The standby frozen (its processes stopped by SIGSTOP, its connections left open): a
      // read sent to it at once is answered by the primary once a probe finds it silent, not
      // held until the request's time limit (REQUEST_TIMEOUT_MS, 30 s); thawed, it is read again.
      const standbyPids = async () => {
        const postmaster = Number(
          (await Deno.readTextFile(`${dir}/standby/postmaster.pid`)).split("\n")[0],
        );
        const children = [...Deno.readDirSync("/proc")]
          .filter((e) => /^\d+$/.test(e.name))
          .filter((e) => {
            try {
              const stat = Deno.readTextFileSync(`/proc/${e.name}/stat`);
              return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]) === postmaster;
            } catch {
              return false;
            }
          })
          .map((e) => Number(e.name));
        return [postmaster, ...children];
      };
      const frozen = await standbyPids();
      for (const pid of frozen) Deno.kill(pid, "SIGSTOP");
      let thawed = false;
      const thaw = () => {
        if (thawed) return;
        thawed = true;
        for (const pid of frozen) Deno.kill(pid, "SIGCONT");
      };
      let frozenRead: Reply;
      try {
        frozenRead = await call(withReplica, "GET", energyPath);
        assert.equal(frozenRead.status, 200, frozenRead.text.slice(0, 500));
        assert.equal(daysOf(frozenRead.text).get(day2), "222.2000");
        assert.equal(await ready(), "primary; replica unreachable");
      } finally {
        thaw();
      }
      const thawedAt = performance.now();
      while ((await ready()) !== "replica") {
        assert.ok(performance.now() - thawedAt < 10_000, "the thawed replica is read again");
        await new Promise((resolve) => setTimeout(resolve, 50));
      }

      // 5. The standby stopped: reads fall back to the primary, and the ready answer says so.
      await pgCtl(`${dir}/standby`, "-m", "fast", "-w", "stop");
      running.splice(running.indexOf(`${dir}/standby`), 1);
      // A read that was handed a connection the standby had just closed may fail (503); the
      // next ones read the primary.
      const stoppedAt = performance.now();
      let fallback: Reply;
      let failedReads = 0;
      while (true) {
        fallback = await call(withReplica, "GET", energyPath);
        if (fallback.status === 200) break;
        assert.equal(fallback.status, 503, fallback.text);
        assert.ok(++failedReads <= 3, "reads fall back to the primary");
      }
      const fallbackMs = performance.now() - stoppedAt;
      assert.equal(daysOf(fallback.text).get(day2), "222.2000");
      assert.equal(await ready(), "primary; replica unreachable");
      await commitDay(day3, "333.3000");
      await until(withReplica, day3, "333.3000", 5_000);
      assert.match(replicaService.lines.join("\n"), /reads go to the primary: replica unreachable/);

      console.log(
        `replica_test: replay of a commit seen in ${replayMs.toFixed(0)} ms; a newer token ` +
          `answered in ${
            asOfNew.ms.toFixed(0)
          } ms (${WAIT_MS} ms wait, then the primary); a replayed ` +
          `token in ${quick.ms.toFixed(0)} ms; a read sent to the frozen standby answered in ${
            frozenRead.ms.toFixed(0)
          } ms; first read after the standby stopped in ` +
          `${fallbackMs.toFixed(0)} ms (${failedReads} failed before it); whole test ${
            ((performance.now() - started) / 1000).toFixed(1)
          } s`,
      );
    } finally {
      for (const service of services) await service.kill();
      for (const data of running.reverse()) {
        await pgCtl(data, "-m", "immediate", "-w", "stop").catch(() => {});
      }
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    }
  },
});

Deno.test({
  ...embeddedRunOnly("embedded database: DATABASE_READ_URL is ignored, with a log line"),
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const dir = await Deno.makeTempDir({ prefix: "replica_embedded_" });
    const messages: Array<string> = [];
    const logger = Logger.make(({ message }) => messages.push(JSON.stringify(message)));
    try {
      const configured = await Effect.runPromise(
        Effect.scoped(Effect.map(Layer.build(DatabaseLive), (c) => Context.get(c, ReadReplica)))
          .pipe(
            Effect.map((replica) => replica.configured),
            Effect.provide(AppConfig.make({
              databaseUrl: Option.none(),
              databaseReadUrl: Option.some(Redacted.make("postgres://reader@127.0.0.1:1/none")),
              dataDir: dir,
            })),
            Effect.provide(Logger.replace(Logger.defaultLogger, logger)),
          ),
      );
      assert.equal(configured, false);
      assert.ok(
        messages.some((m) => m.includes("DATABASE_READ_URL is ignored")),
        messages.join("\n"),
      );
    } finally {
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    }
  },
});
