// The scale run: the service's reads over 60, 500 and 2,000 stores, each size in a database of its
// own seeded once and reused, with no answers kept, so that it compares the statement path at each
// size.
import {
  failures,
  freePort,
  type Goal,
  log,
  type Measurement,
  OUT_DIR,
  runWrk,
  type Server,
  startServer,
  stopChild,
} from "./harness.ts";
import {
  type DatabaseSettings,
  FIXED_WINDOW,
  issueKey,
  prepareDatabase,
  SERVICE_READS,
  serviceArgsOn,
  serviceEnv,
  writeLines,
  writeTargets,
} from "./setup.ts";
import { median } from "./stats.ts";
import { textTable } from "./text_table.ts";

export interface ScaleSettings extends DatabaseSettings {
  readonly pool: number;
  // Turns of one second per size, read and concurrency.
  readonly scaleSeconds: number;
}

// The reads measured at each size, as [name, path template].
const SCALE_ENDPOINTS = SERVICE_READS.slice(0, 3).map((r) => [r.read, r.path] as const);
const SCALE_SIZES = [60, 500, 2000] as const;
const SEED_TIMES = `${OUT_DIR}/seed-times.json`;
const SEED_GOAL_SECONDS = 60;
const FLAT_RATIO = 1.2;

interface ScaleRow {
  readonly stores: number;
  readonly endpoint: string;
  readonly p50_c1_ms: number;
  readonly rps_c32: number;
  readonly failed: number;
}

const readSeedTimes = (): Record<string, { seconds: number; at: string }> => {
  try {
    return JSON.parse(Deno.readTextFileSync(SEED_TIMES));
  } catch {
    return {};
  }
};

// Keeps how long a size's database took to seed (the seed goal reads it in a later run too).
export const recordSeedTime = async (size: number, seconds: number) => {
  const times = readSeedTimes();
  times[String(size)] = { seconds, at: new Date().toISOString() };
  await Deno.writeTextFile(SEED_TIMES, JSON.stringify(times, null, 2) + "\n");
  return times;
};

// The sizes' services run side by side and are measured in turns: one second of each size in
// rotation, BENCH_SCALE_SECONDS turns at each concurrency, so that the machine's drift over the
// run falls on every size alike (sizes measured minutes apart were dominated by that drift). A
// size's p50 is the median of its turns' p50s; its requests a second, all its turns' requests over
// their seconds.
export const scaleRun = async (settings: ScaleSettings, stamp: string) => {
  const seedTimes = readSeedTimes();
  const rows: Array<ScaleRow> = [];
  const services: Array<{ size: number; server: Server; key: string; targets: string }> = [];
  const ports: Array<number> = [];
  const windows = await writeLines(`${OUT_DIR}/${stamp}-windows-fixed.txt`, [FIXED_WINDOW]);
  try {
    for (const size of SCALE_SIZES) {
      const url = new URL(settings.databaseUrl);
      url.pathname = `/bench_scale_${size}`;
      const scaleSettings = { ...settings, databaseUrl: url, database: `bench_scale_${size}` };
      const before = performance.now();
      const prepared = await prepareDatabase({ ...scaleSettings, reseed: false }, size);
      if (prepared.seededSeconds !== undefined) {
        Object.assign(seedTimes, await recordSeedTime(size, prepared.seededSeconds));
      }
      log(`scale ${size}: database ready in ${((performance.now() - before) / 1000).toFixed(1)} s`);
      const key = await issueKey(scaleSettings, `bench-scale-${size}`, "Scale benchmark");
      const port = freePort(18083 + ports.length, ports);
      ports.push(port);
      const server = await startServer(
        `service-${size}`,
        serviceArgsOn(port),
        {
          ...serviceEnv(url, settings.pool, port),
          // The statement path's cost per request at each size: with answers kept, every year of
          // the 60 stores would be served from memory and only the larger sizes from PostgreSQL.
          ANSWER_CACHE_MB: "0",
        },
        port,
        "/health/ready",
        stamp,
      );
      const targets = `${OUT_DIR}/${stamp}-targets-${size}.txt`;
      await writeTargets(port, key, targets);
      services.push({ size, server, key, targets });
    }
    for (const [endpoint, path] of SCALE_ENDPOINTS) {
      const turns = new Map(
        services.map((s) => [s.size, { c1: [] as Measurement[], c32: [] as Measurement[] }]),
      );
      const measure = (s: (typeof services)[number], connections: 1 | 32, seconds: number) =>
        runWrk(
          {
            key: endpoint,
            label: endpoint,
            server: s.server,
            path,
            auth: true,
            pairs: s.targets,
            windows,
          },
          connections,
          seconds,
          s.key,
        );
      for (const s of services) await measure(s, 32, 1);
      for (const connections of [1, 32] as const) {
        for (let turn = 0; turn < settings.scaleSeconds; turn++) {
          // Each turn starts with the next size, so that no size always follows the same one.
          for (let i = 0; i < services.length; i++) {
            const s = services[(turn + i) % services.length];
            const m = await measure(s, connections, 1);
            turns.get(s.size)![connections === 1 ? "c1" : "c32"].push(m);
          }
        }
      }
      for (const s of services) {
        const { c1, c32 } = turns.get(s.size)!;
        const row = {
          stores: s.size,
          endpoint,
          p50_c1_ms: median(c1.map((m) => m.p50_ms)),
          rps_c32: c32.reduce((n, m) => n + m.requests, 0) /
            c32.reduce((n, m) => n + m.seconds, 0),
          failed: [...c1, ...c32].reduce((n, m) => n + failures(m), 0),
        };
        rows.push(row);
        log(
          `  ${String(s.size).padStart(4)} stores ${endpoint.padEnd(8)} p50 c=1 ${
            row.p50_c1_ms.toFixed(2)
          } ms (turns ${c1.map((m) => m.p50_ms.toFixed(2)).join(" ")}), c=32 ${
            row.rps_c32.toFixed(1)
          } req/s${row.failed > 0 ? `  ! ${row.failed} failed` : ""}`,
        );
      }
    }
  } finally {
    for (const s of services) await stopChild(s.server.child);
  }
  const goals: Array<Goal> = [];
  for (const [endpoint] of SCALE_ENDPOINTS) {
    const small = rows.find((r) => r.stores === SCALE_SIZES[0] && r.endpoint === endpoint);
    const large = rows.find((r) => r.stores === SCALE_SIZES.at(-1) && r.endpoint === endpoint);
    const goal = `${endpoint} p50 at c=1, ${SCALE_SIZES.at(-1)} stores <= ${FLAT_RATIO}x ${
      SCALE_SIZES[0]
    } stores`;
    if (!small || !large) {
      goals.push({ goal, measured: "not measured", pass: false });
      continue;
    }
    const ratio = large.p50_c1_ms / small.p50_c1_ms;
    goals.push({
      goal,
      measured: `${ratio.toFixed(2)}x (${large.p50_c1_ms.toFixed(2)} vs ${
        small.p50_c1_ms.toFixed(2)
      } ms)`,
      pass: small.failed + large.failed === 0 && ratio <= FLAT_RATIO,
      note: small.failed + large.failed > 0 ? "invalid: failed requests" : undefined,
    });
  }
  const seed = seedTimes[String(SCALE_SIZES.at(-1))];
  goals.push({
    goal: `seed of ${SCALE_SIZES.at(-1)} stores <= ${SEED_GOAL_SECONDS} s`,
    measured: seed === undefined ? "not measured" : `${seed.seconds.toFixed(1)} s (${seed.at})`,
    pass: seed !== undefined && seed.seconds <= SEED_GOAL_SECONDS,
  });
  return { rows, goals, seedTimes };
};

export const scaleTable = (rows: ReadonlyArray<ScaleRow>) =>
  textTable(
    ["stores", "endpoint", "p50 c=1 ms", "req/s c=32", "failed"],
    rows.map((r) => [
      String(r.stores),
      r.endpoint,
      r.p50_c1_ms.toFixed(2),
      r.rps_c32.toFixed(1),
      String(r.failed),
    ]),
    [1],
  );
