// A read of two versions of the service, side by side: `deno task bench:reads-ab REF [READ] [MODE]
// [TURNS]` starts REF's service and this checkout's (ab_sides.ts) and loads READ (energy, metrics,
// periods, stores or catalog; default energy) in MODE (random: a random store and 366-day window
// per request, the default; repeated: the fixed window of the first 16 stores) with wrk at c=32,
// BENCH_SECONDS (default 8) a load, in TURNS alternated turns (default 5: REF, this, this, REF, ...).
//
// Prints each turn's requests a second, the service's and PostgreSQL's CPU time a request and the
// service's peak RSS, then both sides' totals over the turns. PostgreSQL's CPU is that of every
// postgres process on the machine during the load: run nothing else against it meanwhile. Each side
// reads a database seeded by its own code; BENCH_AB_SHARED=1 makes both read BENCH_DATABASE_URL's
// (ab_sides.ts), when the two versions have the same schema and routines.
import { startSides } from "./ab_sides.ts";
import {
  cpuMs,
  mib,
  OUT_DIR,
  RssWatch,
  runWrk,
  type Server,
  stopChildrenOnSignal,
} from "./harness.ts";
import { dataWindows, FIXED_WINDOW, SERVICE_READS, writeLines, writeTargets } from "./setup.ts";

const [ref, read = "energy", mode = "random", turnsArg = "5"] = Deno.args;
const turns = Number(turnsArg);
const seconds = Number(Deno.env.get("BENCH_SECONDS") ?? "8");
const path = SERVICE_READS.find((r) => r.read === read)?.path;
if (
  ref === undefined || path === undefined || (mode !== "random" && mode !== "repeated") ||
  !Number.isInteger(turns) || turns < 1 || !(seconds > 0) || Deno.args.length > 4
) {
  console.error(
    "usage: deno task bench:reads-ab REF [energy|metrics|periods|stores|catalog] " +
      "[random|repeated] [TURNS]",
  );
  Deno.exit(2);
}

// The CPU time of each postgres process, in milliseconds, by PID.
const postgresCpu = () => {
  const byPid = new Map<number, number>();
  for (const entry of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    try {
      const stat = Deno.readTextFileSync(`/proc/${entry.name}/stat`);
      if (stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")")) === "postgres") {
        byPid.set(Number(entry.name), cpuMs(Number(entry.name)));
      }
    } catch {
      // the process ended meanwhile
    }
  }
  return byPid;
};

// PostgreSQL's CPU time since `before`: of the processes running now (a backend that ended
// meanwhile is not counted; the pools keep theirs while they are loaded).
const postgresCpuSince = (before: Map<number, number>) => {
  let total = 0;
  for (const [pid, ms] of postgresCpu()) total += ms - (before.get(pid) ?? 0);
  return total;
};

stopChildrenOnSignal();
await Deno.mkdir(OUT_DIR, { recursive: true });
const { commit, sides, stop } = await startSides(ref, "read");
try {
  const stamp = `ab-${Date.now()}`;
  const loads = await Promise.all(sides.map(async (side) => {
    const pairs = await writeTargets(side.port, side.key, `${OUT_DIR}/${stamp}-${side.name}.txt`);
    if (mode === "repeated") {
      await writeLines(`${OUT_DIR}/${stamp}-${side.name}.txt`, pairs.slice(0, 16));
    }
    const windows = await writeLines(
      `${OUT_DIR}/${stamp}-${side.name}-windows.txt`,
      mode === "repeated" ? [FIXED_WINDOW] : await dataWindows(side.db),
    );
    let exited: Deno.CommandStatus | undefined;
    side.child.status.then((status) => exited = status);
    const server: Server = {
      name: side.name,
      child: side.child,
      pid: side.child.pid,
      port: side.port,
      logFile: "(not kept)",
      rss: new RssWatch(side.child.pid),
      exited: () => exited,
    };
    return {
      side,
      server,
      target: {
        key: `${side.name}.${read}`,
        label: `${side.name} ${read} ${mode}`,
        server,
        path,
        auth: true,
        pairs: `${OUT_DIR}/${stamp}-${side.name}.txt`,
        windows: path.includes("{start}") || path.includes("{end}") ? windows : undefined,
      },
      requests: 0,
      seconds: 0,
      serviceMs: 0,
      postgresMs: 0,
      peak: 0,
    };
  }));
  // A first load of each, not counted: V8 optimises the code it runs most.
  for (const load of loads) await runWrk(load.target, 32, 2, load.side.key);
  for (let turn = 0; turn < turns; turn++) {
    const order = turn % 2 === 0 ? loads : [...loads].reverse();
    for (const load of order) {
      const postgresBefore = postgresCpu();
      const m = await runWrk(load.target, 32, seconds, load.side.key);
      const postgresMs = postgresCpuSince(postgresBefore);
      if (m.non_2xx > 0) throw new Error(`${load.target.label}: ${m.non_2xx} answers not 2xx`);
      load.requests += m.requests;
      load.seconds += m.seconds;
      load.serviceMs += m.cpu_ms_per_request * m.requests;
      load.postgresMs += postgresMs;
      load.peak = Math.max(load.peak, m.peak_rss_bytes);
      console.log(
        `${load.side.name.padEnd(4)} ${m.requests_per_second.toFixed(0).padStart(5)} req/s  ` +
          `service ${m.cpu_ms_per_request.toFixed(3)} ms, PostgreSQL ${
            (postgresMs / m.requests).toFixed(3)
          } ms a request  p99 ${m.p99_ms.toFixed(1)} ms  peak RSS ${mib(m.peak_rss_bytes)}`,
      );
    }
  }
  for (const load of loads) {
    load.server.rss.stop();
    console.log(
      `${load.side.name} (${load.side.name === "ref" ? commit.slice(0, 12) : "this checkout"}): ` +
        `${(load.requests / load.seconds).toFixed(0)} req/s over ${turns} turns, service ${
          (load.serviceMs / load.requests).toFixed(3)
        } ms and PostgreSQL ${(load.postgresMs / load.requests).toFixed(3)} ms of CPU a request, ` +
        `peak RSS ${mib(load.peak)}`,
    );
  }
} finally {
  stop();
}
