// The V8 flags' cost (BENCH_ONLY=flags): the service's reads at c=32 in three processes, one with
// the start task's flags and environment and two with neither (the second a control of the
// method), with V8's trace of their collections.
import {
  cpuMs,
  delay,
  failures,
  freePort,
  type Goal,
  log,
  type Measurement,
  mib,
  OUT_DIR,
  pathFor,
  runWrk,
  type Server,
  SetupError,
  startServer,
  statFields,
  stopChild,
  type Target,
} from "./harness.ts";
import {
  FIXED_WINDOW,
  SERVICE_READS,
  serviceArgs,
  serviceEnv,
  startSettingsText,
  V8_FLAGS,
  writeLines,
  writeTargets,
} from "./setup.ts";
import { median } from "./stats.ts";
import { textTable } from "./text_table.ts";

export interface FlagsSettings {
  readonly databaseUrl: URL;
  readonly pool: number;
  readonly seconds: number;
  readonly warmup: number;
  readonly rounds: number;
  readonly flagsLoad: "alone" | "together";
}

const RSS_LIMIT_BYTES = 256 * 1024 * 1024;

// The service's reads as the flags' cost loads them: the fixed window, every store.
const SERVICE_TARGETS = SERVICE_READS.map((r) => ({
  key: `service.${r.read}`,
  label: `service ${r.read}`,
  path: r.path,
}));

// CPU time of the process's V8 worker threads (named "V8 DefaultWorker"; V8's parallel and
// concurrent collector work, and background compiling, run there), in milliseconds. Not in the
// collector's main-thread time that --trace-gc reports.
const v8WorkersCpuMs = (pid: number) => {
  let total = 0;
  try {
    for (const task of Deno.readDirSync(`/proc/${pid}/task`)) {
      try {
        const stat = Deno.readTextFileSync(`/proc/${pid}/task/${task.name}/stat`);
        const name = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
        if (!name.startsWith("V8 ")) continue;
        const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
        total += (Number(fields[11]) + Number(fields[12])) * 10;
      } catch {
        // the thread ended meanwhile
      }
    }
  } catch {
    return 0;
  }
  return total;
};

// How long the process has run, in milliseconds: now (/proc/uptime) less its start (field 22, in
// ticks after boot). V8's trace stamps its lines with the time since its isolate started, a few
// tens of milliseconds after the process.
const uptimeMs = (pid: number) => {
  const fields = statFields(pid);
  if (fields === undefined) return 0;
  const uptime = Number(Deno.readTextFileSync("/proc/uptime").split(" ")[0]);
  return uptime * 1000 - Number(fields[19]) * 10;
};

// One collection as V8's --trace-gc reports it: when (ms since the isolate started), whether it
// was a young-generation one (Scavenge) or a full one, and the main thread's time in it: the
// pause, plus for an incremental full collection the marking steps taken before it.
interface GcEvent {
  readonly at: number;
  readonly young: boolean;
  readonly mainMs: number;
}

const GC_LINE =
  /\]\s+([\d.]+) ms: ([A-Za-z() -]+?) [\d.]+ \([\d.]+\) -> [\d.]+ \([\d.]+\) MB, (?:pooled: [\d.]+ MB, )?([\d.]+) \/ [\d.]+ ms(?: \(\+ ([\d.]+) ms in)?/;

const gcEvents = (log: string): Array<GcEvent> =>
  log.split("\n").flatMap((line) => {
    const m = GC_LINE.exec(line);
    return m === null ? [] : [{
      at: Number(m[1]),
      young: m[2].includes("Scavenge"),
      mainMs: Number(m[3]) + Number(m[4] ?? 0),
    }];
  });

interface FlagsRow {
  readonly target: string;
  readonly label: string;
  // Requests a second at c=32 and the server's CPU milliseconds per request, one per round, for
  // each process.
  readonly rate: Readonly<Record<FlagsSetting, ReadonlyArray<number>>>;
  readonly cpu: Readonly<Record<FlagsSetting, ReadonlyArray<number>>>;
  // Over the read's whole window (its rounds and the pauses in them, where the idle collections
  // run), for each process: the server's CPU time, the requests, and its collections as V8 traces
  // them.
  readonly window: Readonly<Record<FlagsSetting, WindowGc>>;
  // Failed requests (non-2xx answers and socket errors) over its rounds.
  readonly failed: number;
}

interface Mark {
  readonly uptime: number;
  readonly cpu: number;
  readonly workers: number;
}

interface WindowMark {
  readonly start: Mark;
  readonly end: Mark;
  readonly requests: number;
}

interface WindowGc {
  readonly cpuMs: number;
  // Of it, V8's worker threads' (parallel and concurrent collection, background compiling).
  readonly workersMs: number;
  readonly requests: number;
  readonly gcMs: number;
  readonly young: number;
  readonly full: number;
  // Of gcMs, the young collections'.
  readonly youngMs: number;
}

const FLAGS_COST_LIMIT = 0.05;

// One request of each read for every store/scope pair, four at a time, so that the measured load
// finds every answer kept (a fresh process computes each on its first request: a year of metrics
// takes tens of milliseconds), as a service that has been running does.
const primeAnswers = async (port: number, key: string, pairs: ReadonlyArray<string>) => {
  const paths = SERVICE_TARGETS.flatMap((t) =>
    t.path.includes("{store}") ? pairs.map((pair) => pathFor(t.path, pair, FIXED_WINDOW)) : [t.path]
  );
  let next = 0;
  const worker = async () => {
    while (next < paths.length) {
      const path = paths[next++];
      const response = await fetch(`http://127.0.0.1:${port}${path}`, {
        headers: { authorization: `Bearer ${key}` },
      });
      await response.body?.cancel();
      if (response.status !== 200) {
        throw new SetupError(`priming: GET ${path} answered ${response.status}`);
      }
    }
  };
  await Promise.all([worker(), worker(), worker(), worker()]);
};

// The flags' cost: three processes of the service, one with V8_FLAGS ("flagged") and two with none
// ("plain" and "control"), the control the measure of the method itself: two processes that differ
// in nothing differ by what the run cannot resolve. A read is measured in rounds; each round loads
// every process at c=32 for BENCH_SECONDS, and the costs are medians over the rounds of each round's
// ratio, flagged to plain and control to plain. Two ways to load (BENCH_FLAGS_LOAD):
// - "alone" (default): one process after another, in an order rotated each round, so that no
//   process always follows the same one; each has the machine to itself while it is measured, and
//   the machine's drift over minutes falls on all three alike.
// - "together": the three by their own wrk in the same seconds. On few cores the scheduler's share
//   of each process moves from one turn to the next, and with it both processes' figures.
// A third measure does not depend on the machine's speed: the collector's share of each process's
// own CPU time, from V8's trace of its collections (main-thread time), over each read's window
// (its rounds and the pauses in them, where the idle collections run). After every second round
// all three sit idle for 8 s more (V8 reduces its heap after 8 s idle).
export const flagsRun = async (settings: FlagsSettings, stamp: string, key: string) => {
  const ports: Array<number> = [];
  const start = async (setting: FlagsSetting, flags: string) => {
    const port = freePort(18080 + 3 * ports.length, ports);
    ports.push(port);
    return await startServer(
      `service-${setting}`,
      // All three trace their collections (--trace-gc: a line a collection on the process's
      // output, read back once it has stopped).
      serviceArgs([flags.trim(), "--trace-gc"].filter((f) => f !== "").join(","), port),
      serviceEnv(settings.databaseUrl, settings.pool, port, setting !== "flagged"),
      port,
      "/health/ready",
      stamp,
    );
  };
  const servers: Record<FlagsSetting, Server> = {
    flagged: await start("flagged", V8_FLAGS),
    plain: await start("plain", ""),
    control: await start("control", ""),
  };
  const pairsFile = `${OUT_DIR}/${stamp}-pairs-all.txt`;
  const pairs = await writeTargets(servers.flagged.port, key, pairsFile);
  const windows = await writeLines(`${OUT_DIR}/${stamp}-windows-fixed.txt`, [FIXED_WINDOW]);
  for (const setting of FLAGS_SETTINGS) await primeAnswers(servers[setting].port, key, pairs);
  const mark = (setting: FlagsSetting): Mark => ({
    uptime: uptimeMs(servers[setting].pid),
    cpu: cpuMs(servers[setting].pid),
    workers: v8WorkersCpuMs(servers[setting].pid),
  });
  const peaks = { flagged: 0, plain: 0, control: 0 };
  const load = (target: Target, seconds: number) => runWrk(target, 32, seconds, key);
  const measured: Array<Omit<FlagsRow, "window"> & { marks: Record<FlagsSetting, WindowMark> }> =
    [];
  for (const t of SERVICE_TARGETS) {
    const targets = Object.fromEntries(
      FLAGS_SETTINGS.map((s) => [
        s,
        { ...t, server: servers[s], auth: true, pairs: pairsFile, windows },
      ]),
    ) as Record<FlagsSetting, Target>;
    // Each process of `order` loaded for `seconds`: at once, or one after another.
    const loadAll = async (order: ReadonlyArray<FlagsSetting>, seconds: number) => {
      if (settings.flagsLoad === "together") {
        return await Promise.all(order.map((s) => load(targets[s], seconds)));
      }
      const results: Array<Measurement> = [];
      for (const s of order) results.push(await load(targets[s], seconds));
      return results;
    };
    if (settings.warmup > 0) {
      await loadAll(FLAGS_SETTINGS, Math.min(settings.warmup, settings.seconds));
    }
    const turns = { flagged: [], plain: [], control: [] } as Record<FlagsSetting, Measurement[]>;
    const begin = Object.fromEntries(FLAGS_SETTINGS.map((s) => [s, mark(s)])) as Record<
      FlagsSetting,
      Mark
    >;
    for (let round = 1; round <= settings.rounds; round++) {
      const order = FLAGS_SETTINGS.map((_, i) => FLAGS_SETTINGS[(round + i) % 3]);
      const results = await loadAll(order, settings.seconds);
      order.forEach((s, i) => {
        turns[s].push(results[i]);
        peaks[s] = Math.max(peaks[s], results[i].peak_rss_bytes);
      });
      if (round % 2 === 0) await delay(8_000);
    }
    const requests = (s: FlagsSetting) => turns[s].reduce((n, m) => n + m.requests, 0);
    const marks = Object.fromEntries(FLAGS_SETTINGS.map((s) => {
      const end = mark(s);
      return [s, { start: begin[s], end, requests: requests(s) }];
    })) as Record<FlagsSetting, WindowMark>;
    const row = {
      target: t.key,
      label: t.label,
      rate: mapSettings((s) => turns[s].map((m) => m.requests_per_second)),
      cpu: mapSettings((s) => turns[s].map((m) => m.cpu_ms_per_request)),
      failed: FLAGS_SETTINGS.reduce((n, s) => n + turns[s].reduce((k, m) => k + failures(m), 0), 0),
      marks,
    };
    measured.push(row);
    log(
      `  ${t.label}: req/s ${
        FLAGS_SETTINGS.map((s) => row.rate[s].map((v) => v.toFixed(0)).join(" ")).join(" / ")
      }; CPU ms a request ${
        FLAGS_SETTINGS.map((s) => row.cpu[s].map((v) => v.toFixed(3)).join(" ")).join(" / ")
      } (flagged / plain / control); peak RSS so far ${
        FLAGS_SETTINGS.map((s) => mib(peaks[s])).join(" / ")
      }`,
    );
  }
  for (const setting of FLAGS_SETTINGS) await stopChild(servers[setting].child);
  // V8 writes its trace through a buffer that the process's exit flushes: read it now.
  const events = Object.fromEntries(
    await Promise.all(
      FLAGS_SETTINGS.map(async (s) => [s, gcEvents(await Deno.readTextFile(servers[s].logFile))]),
    ),
  ) as Record<FlagsSetting, Array<GcEvent>>;
  const windowGc = (setting: FlagsSetting, w: WindowMark): WindowGc => {
    const inside = events[setting].filter((e) => e.at >= w.start.uptime && e.at < w.end.uptime);
    return {
      cpuMs: w.end.cpu - w.start.cpu,
      workersMs: w.end.workers - w.start.workers,
      requests: w.requests,
      gcMs: inside.reduce((sum, e) => sum + e.mainMs, 0),
      young: inside.filter((e) => e.young).length,
      full: inside.filter((e) => !e.young).length,
      youngMs: inside.reduce((sum, e) => sum + (e.young ? e.mainMs : 0), 0),
    };
  };
  const rows: Array<FlagsRow> = measured.map(({ marks, ...row }) => ({
    ...row,
    window: mapSettings((s) => windowGc(s, marks[s])),
  }));
  const traced = rows.reduce((n, r) => n + r.window.flagged.young + r.window.plain.young, 0);
  if (traced === 0) throw new SetupError("the services' logs hold no --trace-gc line");
  const failed = rows.reduce((sum, r) => sum + r.failed, 0);
  const costs = rows.map((r) => flagsCost(r, "flagged"));
  const controls = rows.map((r) => flagsCost(r, "control"));
  const worst = Math.max(...costs.map((c) => Math.max(c.rate, c.cpu, c.gc)));
  const resolution = Math.max(
    ...controls.map((c) => Math.max(Math.abs(c.rate), Math.abs(c.cpu), Math.abs(c.gc))),
  );
  const figures = (list: ReadonlyArray<ReturnType<typeof flagsCost>>) =>
    rows.map((r, i) =>
      `${r.target.replace("service.", "")} ${(list[i].rate * 100).toFixed(1)} % / ${
        (list[i].cpu * 100).toFixed(1)
      } % / ${(list[i].gc * 100).toFixed(1)} pt`
    ).join(", ");
  const goals: Array<Goal> = [{
    goal: `the start task's settings (${startSettingsText()}) cost <= ${
      FLAGS_COST_LIMIT * 100
    } % on every read at c=32, in requests a second and in CPU time a request (medians of ${settings.rounds} rounds' ratios, loaded ${settings.flagsLoad}), and in the collector's share of CPU time (points, over the read's window)`,
    measured: figures(costs),
    pass: failed === 0 && worst <= FLAGS_COST_LIMIT,
    note: failed > 0
      ? "invalid: failed requests during the load"
      : `the control, a second process without flags: ${figures(controls)}${
        resolution > FLAGS_COST_LIMIT
          ? `; it differs by up to ${(resolution * 100).toFixed(1)}: this run does not resolve ${
            FLAGS_COST_LIMIT * 100
          } %`
          : ""
      }`,
  }, {
    goal: "service peak RSS with the flags <= 256 MiB",
    measured: `${mib(peaks.flagged)} (${mib(peaks.plain)} and ${mib(peaks.control)} without)`,
    pass: failed === 0 && peaks.flagged <= RSS_LIMIT_BYTES,
    note: failed > 0 ? "invalid: failed requests during the load" : undefined,
  }];
  return { rows, peaks, goals };
};

const FLAGS_SETTINGS = ["flagged", "plain", "control"] as const;
type FlagsSetting = (typeof FLAGS_SETTINGS)[number];

const mapSettings = <A>(f: (setting: FlagsSetting) => A): Record<FlagsSetting, A> => ({
  flagged: f("flagged"),
  plain: f("plain"),
  control: f("control"),
});

// The cost of `setting` against the plain process on one read: requests a second lost, and CPU
// time a request added (the server's, all its threads), each the median over the rounds of that
// round's ratio; over the whole window (idle collections included) the CPU time a request, and
// the collector's share of the process's CPU time (its main thread's part, as V8 counts it) less
// the plain process's.
const flagsCost = (r: FlagsRow, setting: "flagged" | "control") => ({
  rate: 1 - median(r.rate[setting].map((v, i) => v / r.rate.plain[i])),
  cpu: median(r.cpu[setting].map((v, i) => v / r.cpu.plain[i])) - 1,
  windowCpu: perRequest(r.window[setting]) / perRequest(r.window.plain) - 1,
  gc: gcShare(r.window[setting]) - gcShare(r.window.plain),
});

const perRequest = (w: WindowGc) => w.requests > 0 ? w.cpuMs / w.requests : 0;
const gcShare = (w: WindowGc) => w.cpuMs > 0 ? w.gcMs / w.cpuMs : 0;

// Each read's whole window (rounds and pauses): CPU time a request, and the collections V8 traced
// (main-thread milliseconds, young and full collections), flagged / plain / control.
export const flagsGcTable = (rows: ReadonlyArray<FlagsRow>) => {
  const header = [
    "endpoint (c=32)",
    "CPU ms a request",
    "cost",
    "GC ms / 1,000 requests (young + full)",
    "GC share of CPU",
    "cost",
    "V8 workers ms / 1,000 requests",
    "young GCs",
    "full GCs",
  ];
  const all = (r: FlagsRow, f: (w: WindowGc) => string) =>
    FLAGS_SETTINGS.map((s) => f(r.window[s])).join(" / ");
  const both = (r: FlagsRow, f: (c: ReturnType<typeof flagsCost>) => number, unit: string) =>
    `${(f(flagsCost(r, "flagged")) * 100).toFixed(1)} ${unit} (${
      (f(flagsCost(r, "control")) * 100).toFixed(1)
    })`;
  const body = rows.map((r) => [
    r.label,
    all(r, (w) => perRequest(w).toFixed(3)),
    both(r, (c) => c.windowCpu, "%"),
    all(r, (w) => {
      const per = (ms: number) => (w.requests > 0 ? (ms / w.requests) * 1000 : 0).toFixed(0);
      return `${per(w.gcMs)} (${per(w.youngMs)} + ${per(w.gcMs - w.youngMs)})`;
    }),
    all(r, (w) => `${(gcShare(w) * 100).toFixed(1)} %`),
    both(r, (c) => c.gc, "pt"),
    all(r, (w) => (w.requests > 0 ? (w.workersMs / w.requests) * 1000 : 0).toFixed(0)),
    all(r, (w) => String(w.young)),
    all(r, (w) => String(w.full)),
  ]);
  return [
    "over each read's window (rounds and pauses), flagged / plain / control; costs against the " +
    "plain process, the control's in parentheses:",
    textTable(header, body),
  ].join("\n");
};

export const flagsTable = (rows: ReadonlyArray<FlagsRow>) => {
  const header = [
    "endpoint (c=32)",
    "req/s (flagged / plain / control)",
    "cost (control)",
    "CPU ms a request",
    "cost (control)",
    "failed",
  ];
  const medians = (values: Readonly<Record<FlagsSetting, ReadonlyArray<number>>>, digits: number) =>
    FLAGS_SETTINGS.map((s) => median(values[s]).toFixed(digits)).join(" / ");
  const cost = (r: FlagsRow, f: (c: ReturnType<typeof flagsCost>) => number) =>
    `${(f(flagsCost(r, "flagged")) * 100).toFixed(1)} % (${
      (f(flagsCost(r, "control")) * 100).toFixed(1)
    } %)`;
  const body = rows.map((r) => [
    r.label,
    medians(r.rate, 0),
    cost(r, (c) => c.rate),
    medians(r.cpu, 3),
    cost(r, (c) => c.cpu),
    r.failed > 0 ? `${r.failed} !` : "0",
  ]);
  return [
    "medians of the rounds; a cost is the median of the rounds' ratios to the plain process:",
    textTable(header, body),
  ].join("\n");
};
