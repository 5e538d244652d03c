// The benchmark's machinery: child processes that never outlive it, servers started and watched
// (their RSS sampled every RSS_EVERY_MS while they run), wrk loads through random_store.lua, and
// the machine's facts. bench.ts says what to run and what the figures mean.
import { median } from "./stats.ts";

export const ROOT = decodeURIComponent(new URL("../../", import.meta.url).pathname).replace(
  /\/$/,
  "",
);
export const OUT_DIR = `${ROOT}/.data/bench`;
export const DENO = Deno.execPath();
const LUA = `${ROOT}/scripts/bench/random_store.lua`;
const RSS_EVERY_MS = 50;
// wrk drops its connections with requests in flight; the server is left this long to finish or
// cancel them, so that their tail (and any query cancel still on its way) does not land in the
// next run.
const SETTLE_MS = 500;

export class SetupError extends Error {}

export const decoder = new TextDecoder();
export const delay = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export const addDays = (date: string, days: number) =>
  new Date(Date.parse(`${date}T00:00:00Z`) + days * 86_400_000).toISOString().slice(0, 10);
export const log = (line: string) => console.log(line);

// --- Child processes: every one is stopped when the benchmark ends, fails or is interrupted.

const children = new Set<Deno.ChildProcess>();

export const spawn = (command: string, args: Array<string>, options: Deno.CommandOptions = {}) => {
  const child = new Deno.Command(command, { args, cwd: ROOT, stdin: "null", ...options }).spawn();
  children.add(child);
  child.status.then(() => children.delete(child));
  return child;
};

export const capture = async (
  command: string,
  args: Array<string>,
  env?: Record<string, string>,
) => {
  const child = spawn(command, args, { env, stdout: "piped", stderr: "piped" });
  const out = await child.output();
  return { code: out.code, stdout: decoder.decode(out.stdout), stderr: decoder.decode(out.stderr) };
};

export const stopChild = async (child: Deno.ChildProcess) => {
  try {
    child.kill("SIGTERM");
  } catch {
    return; // already gone
  }
  const stopped = await Promise.race([
    child.status.then(() => true),
    delay(10_000).then(() => false),
  ]);
  if (!stopped) {
    try {
      child.kill("SIGKILL");
    } catch { /* gone meanwhile */ }
    await child.status;
  }
};

// Stops every child still running; calls while a stop is under way share it.
let cleaning: Promise<void> | undefined;
export const stopAll = () =>
  cleaning ??= Promise.all([...children].map(stopChild)).then(() => {
    cleaning = undefined;
  });

let interrupted = false;
export const wasInterrupted = () => interrupted;

// On SIGINT or SIGTERM every child is stopped and the process exits with 130; on any exit, the
// children still running are killed.
export const stopChildrenOnSignal = () => {
  // deno task forwards the signal it got, so one Ctrl-C can arrive twice.
  const onSignal = (signal: Deno.Signal) => () => {
    if (interrupted) return;
    interrupted = true;
    console.error(`\n${signal}: stopping the servers`);
    stopAll().finally(() => Deno.exit(130));
  };
  Deno.addSignalListener("SIGINT", onSignal("SIGINT"));
  Deno.addSignalListener("SIGTERM", onSignal("SIGTERM"));
  // Last resort when something calls Deno.exit before the async stop ran.
  globalThis.addEventListener("unload", () => {
    for (const child of children) {
      try {
        child.kill("SIGKILL");
      } catch { /* gone */ }
    }
  });
};

// --- Processes as /proc shows them.

export const freePort = (preferred: number, taken: ReadonlyArray<number> = []) => {
  for (const port of [preferred, 0]) {
    if (taken.includes(port)) continue;
    try {
      const listener = Deno.listen({ hostname: "127.0.0.1", port });
      const chosen = (listener.addr as Deno.NetAddr).port;
      listener.close();
      if (!taken.includes(chosen)) return chosen;
    } catch (error) {
      if (!(error instanceof Deno.errors.AddrInUse)) throw error;
    }
  }
  throw new SetupError(`no free port near ${preferred}`);
};

// The PID whose memory counts is the deno binary itself, not a shell or npm shim around it.
const denoPid = (pid: number) => {
  const binary = Deno.realPathSync(DENO);
  const queue = [pid];
  while (queue.length > 0) {
    const current = queue.shift()!;
    try {
      if (Deno.readLinkSync(`/proc/${current}/exe`) === binary) return current;
      for (const task of Deno.readDirSync(`/proc/${current}/task`)) {
        const kids = Deno.readTextFileSync(`/proc/${current}/task/${task.name}/children`);
        queue.push(...kids.split(" ").filter((s) => s !== "").map(Number));
      }
    } catch { /* the process left meanwhile */ }
  }
  throw new SetupError(`no deno process found under PID ${pid}`);
};

// A "Vm...: N kB" line of /proc/PID/status in bytes (VmRSS: resident now; VmHWM: the highest
// resident size the kernel saw), 0 once the process is gone.
const statusBytes = (pid: number, field: "VmRSS" | "VmHWM") => {
  try {
    const status = Deno.readTextFileSync(`/proc/${pid}/status`);
    const match = status.match(new RegExp(`^${field}:\\s+(\\d+)\\s+kB`, "m"));
    return match ? Number(match[1]) * 1024 : 0;
  } catch {
    return 0;
  }
};

// The fields of /proc/PID/stat after the command name (field 3 first), or undefined once the
// process is gone. Times in it are in clock ticks of 10 ms.
export const statFields = (pid: number) => {
  try {
    const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  } catch {
    return undefined;
  }
};

export const rssBytes = (pid: number) => statusBytes(pid, "VmRSS");

// CPU time the process has used, all its threads (user and system), in milliseconds: fields 14
// and 15.
export const cpuMs = (pid: number) => {
  const fields = statFields(pid);
  return fields === undefined ? 0 : (Number(fields[11]) + Number(fields[12])) * 10;
};

// A process's VmRSS, sampled every RSS_EVERY_MS from its start until it ends: the peak over its
// whole life, and over a window (one load) opened with `openWindow`.
export class RssWatch {
  #peak = 0;
  #windowPeak = 0;
  #samples = 0;
  readonly #timer: ReturnType<typeof setInterval>;

  constructor(public pid: number) {
    this.sample();
    this.#timer = setInterval(() => this.sample(), RSS_EVERY_MS);
  }

  sample() {
    const rss = rssBytes(this.pid);
    if (rss === 0) return;
    this.#samples++;
    if (rss > this.#peak) this.#peak = rss;
    if (rss > this.#windowPeak) this.#windowPeak = rss;
  }

  openWindow() {
    this.#windowPeak = 0;
    this.sample();
  }

  // The peak since openWindow.
  closeWindow() {
    this.sample();
    return this.#windowPeak;
  }

  // The sampled peak so far, the kernel's own high-water mark (0 once the process is gone), and
  // how many samples were taken.
  facts() {
    this.sample();
    return { peak: this.#peak, hwm: statusBytes(this.pid, "VmHWM"), samples: this.#samples };
  }

  stop() {
    clearInterval(this.#timer);
  }
}

export const tail = (file: string, lines = 30) => {
  try {
    return Deno.readTextFileSync(file).trimEnd().split("\n").slice(-lines).join("\n");
  } catch {
    return "(no log)";
  }
};

export interface Server {
  readonly name: string;
  readonly child: Deno.ChildProcess;
  readonly pid: number;
  readonly port: number;
  readonly logFile: string;
  readonly rss: RssWatch;
  // How it ended, once it has.
  readonly exited: () => Deno.CommandStatus | undefined;
  // The bytes V8 has allocated in its main heap since the start, read from the service's
  // GET /metrics (absent: the server has none, or was started without its token).
  readonly heapAllocated?: () => Promise<number | undefined>;
}

// The service's deno_heap_allocated_bytes_total, by GET /metrics with `token`.
const heapAllocatedOf = (port: number, token: string) => async () => {
  try {
    const response = await fetch(`http://127.0.0.1:${port}/metrics`, {
      headers: { authorization: `Bearer ${token}` },
      signal: AbortSignal.timeout(5000),
    });
    const text = await response.text();
    const found = /^deno_heap_allocated_bytes_total (\d+)/m.exec(text);
    return response.ok && found !== null ? Number(found[1]) : undefined;
  } catch {
    return undefined;
  }
};

// Starts `deno <args>` with its output in OUT_DIR/<stamp>-<name>.log and waits until `readyPath`
// answers 200 (at most 120 s). Its RSS is watched from the start; with `metricsToken` (the
// METRICS_TOKEN of `env`), its heap allocation is read from its GET /metrics.
export const startServer = async (
  name: string,
  args: Array<string>,
  env: Record<string, string>,
  port: number,
  readyPath: string,
  stamp: string,
  metricsToken?: string,
): Promise<Server> => {
  const logFile = `${OUT_DIR}/${stamp}-${name}.log`;
  const child = spawn(DENO, args, { env, stdout: "piped", stderr: "piped" });
  const rss = new RssWatch(child.pid);
  child.status.then(() => rss.stop());
  for (const stream of [child.stdout, child.stderr]) {
    const file = await Deno.open(logFile, { create: true, append: true });
    stream.pipeTo(file.writable).catch(() => {});
  }
  let exited: Deno.CommandStatus | undefined;
  child.status.then((status) => exited = status);
  const deadline = Date.now() + 120_000;
  while (Date.now() < deadline) {
    if (exited !== undefined) {
      throw new SetupError(
        `${name} exited with code ${exited.code} before it was ready; its log:\n${tail(logFile)}`,
      );
    }
    try {
      const response = await fetch(`http://127.0.0.1:${port}${readyPath}`, {
        signal: AbortSignal.timeout(2000),
      });
      await response.body?.cancel();
      if (response.status === 200) {
        rss.pid = denoPid(child.pid);
        const heapAllocated = metricsToken === undefined
          ? undefined
          : heapAllocatedOf(port, metricsToken);
        return {
          name,
          child,
          pid: rss.pid,
          port,
          logFile,
          rss,
          exited: () => exited,
          heapAllocated,
        };
      }
    } catch { /* not listening yet */ }
    await delay(200);
  }
  throw new SetupError(`${name} was not ready within 120 s; its log:\n${tail(logFile)}`);
};

// --- Loads.

// What wrk loads: a server, a path template ({store} and {scope} from a line of the pairs file,
// {start} and {end} from a line of the windows file, each drawn at random per request).
export interface Target {
  readonly key: string;
  readonly label: string;
  readonly server: Server;
  readonly path: string;
  readonly auth: boolean;
  // A file of "store_id scope_id" lines.
  readonly pairs: string;
  // A file of "start end" lines (dates); absent when the path names no window.
  readonly windows?: string;
}

export interface Measurement {
  readonly target: string;
  readonly label: string;
  readonly connections: number;
  readonly threads: number;
  readonly seconds: number;
  readonly requests: number;
  readonly requests_per_second: number;
  readonly p50_ms: number;
  readonly p90_ms: number;
  readonly p99_ms: number;
  readonly max_ms: number;
  readonly non_2xx: number;
  readonly socket_errors: { connect: number; read: number; write: number; timeout: number };
  readonly peak_rss_bytes: number;
  readonly bytes_per_response: number;
  // The server's CPU time during the load (from wrk's start to its end), per request.
  readonly cpu_ms_per_request: number;
  // What V8 allocated in the server's main heap during the load, per request, in KiB (null: not
  // read); garbage included: what its collector has to clear.
  readonly heap_kib_per_request: number | null;
}

export interface Probe {
  readonly status: number;
  readonly code?: string;
  readonly message?: string;
}

// A target's path for one "store scope" pair and one "start end" window.
export const pathFor = (path: string, pair: string, window = "") => {
  const [store, scope] = pair.split(" ");
  const [start, end] = window.split(" ");
  return path.replaceAll("{store}", store).replaceAll("{scope}", scope)
    .replaceAll("{start}", start).replaceAll("{end}", end);
};

const firstLine = (file: string | undefined) =>
  file === undefined ? "" : Deno.readTextFileSync(file).split("\n")[0];

// One request of the target (its first pair and window), to show what its load will be answered.
export const probe = async (target: Target, key: string): Promise<Probe> => {
  const path = pathFor(target.path, firstLine(target.pairs), firstLine(target.windows));
  const response = await fetch(`http://127.0.0.1:${target.server.port}${path}`, {
    headers: target.auth ? { authorization: `Bearer ${key}` } : {},
  });
  const text = await response.text();
  if (response.ok) return { status: response.status };
  try {
    const error = JSON.parse(text).error;
    return { status: response.status, code: error?.code, message: error?.message };
  } catch {
    return { status: response.status, message: text.slice(0, 200) };
  }
};

export const runWrk = async (
  target: Target,
  connections: number,
  seconds: number,
  key: string,
): Promise<Measurement> => {
  const threads = connections === 1 ? 1 : 2;
  const child = spawn("wrk", [
    "-t",
    String(threads),
    "-c",
    String(connections),
    "-d",
    `${seconds}s`,
    "--timeout",
    "10s",
    "-s",
    LUA,
    `http://127.0.0.1:${target.server.port}`,
    "--",
    target.pairs,
    target.path,
    target.auth ? key : "",
    target.windows ?? "",
  ], { stdout: "piped", stderr: "piped" });
  const pid = target.server.pid;
  target.server.rss.openWindow();
  const heapBefore = await target.server.heapAllocated?.();
  const cpuBefore = cpuMs(pid);
  const killer = setTimeout(() => child.kill("SIGKILL"), (seconds + 30) * 1000);
  let out: Deno.CommandOutput;
  try {
    out = await child.output();
  } finally {
    clearTimeout(killer);
  }
  const peak = target.server.rss.closeWindow();
  const cpuDuring = cpuMs(pid) - cpuBefore;
  const heapAfter = heapBefore === undefined ? undefined : await target.server.heapAllocated?.();
  await delay(SETTLE_MS);
  const stdout = decoder.decode(out.stdout);
  const line = stdout.split("\n").find((l) => l.startsWith("BENCH_RESULT "));
  const ended = target.server.exited();
  if (ended !== undefined) {
    throw new SetupError(
      `${target.server.name} ended during the load of ${target.label} (code ${ended.code}, ` +
        `signal ${ended.signal ?? "none"}); its log:\n${tail(target.server.logFile)}`,
    );
  }
  if (out.code !== 0 || line === undefined) {
    throw new Error(
      `wrk failed on ${target.label} (code ${out.code}):\n${stdout}${decoder.decode(out.stderr)}`,
    );
  }
  const v = Object.fromEntries(
    line.split(" ").slice(1).map((pair) => pair.split("=")).map(([k, n]) => [k, Number(n)]),
  );
  const measuredSeconds = v.duration_us / 1e6;
  return {
    target: target.key,
    label: target.label,
    connections,
    threads,
    seconds: measuredSeconds,
    requests: v.requests,
    requests_per_second: v.requests / measuredSeconds,
    p50_ms: v.p50_us / 1000,
    p90_ms: v.p90_us / 1000,
    p99_ms: v.p99_us / 1000,
    max_ms: v.max_us / 1000,
    non_2xx: v.non2xx,
    socket_errors: { connect: v.connect, read: v.read, write: v.write, timeout: v.timeout },
    peak_rss_bytes: peak,
    bytes_per_response: v.requests > 0 ? Math.round(v.bytes / v.requests) : 0,
    cpu_ms_per_request: v.requests > 0 ? cpuDuring / v.requests : 0,
    heap_kib_per_request: heapBefore === undefined || heapAfter === undefined || v.requests === 0
      ? null
      : (heapAfter - heapBefore) / 1024 / v.requests,
  };
};

// One load measured in turns (loads of the same target, other targets' between them), as one:
// requests a second over all the turns' requests and seconds, CPU time and bytes per request over
// all their requests, the peaks and failures of all, and each latency percentile the median of the
// turns' (wrk reports percentiles, not the latencies they come from, so turns cannot be pooled).
export const combineTurns = (turns: ReadonlyArray<Measurement>): Measurement => {
  const sum = (f: (m: Measurement) => number) => turns.reduce((n, m) => n + f(m), 0);
  const requests = sum((m) => m.requests);
  const seconds = sum((m) => m.seconds);
  const perRequest = (f: (m: Measurement) => number) =>
    requests > 0 ? sum((m) => f(m) * m.requests) / requests : 0;
  return {
    ...turns[0],
    seconds,
    requests,
    requests_per_second: seconds > 0 ? requests / seconds : 0,
    p50_ms: median(turns.map((m) => m.p50_ms)),
    p90_ms: median(turns.map((m) => m.p90_ms)),
    p99_ms: median(turns.map((m) => m.p99_ms)),
    max_ms: Math.max(...turns.map((m) => m.max_ms)),
    non_2xx: sum((m) => m.non_2xx),
    socket_errors: {
      connect: sum((m) => m.socket_errors.connect),
      read: sum((m) => m.socket_errors.read),
      write: sum((m) => m.socket_errors.write),
      timeout: sum((m) => m.socket_errors.timeout),
    },
    peak_rss_bytes: Math.max(...turns.map((m) => m.peak_rss_bytes)),
    bytes_per_response: Math.round(perRequest((m) => m.bytes_per_response)),
    cpu_ms_per_request: perRequest((m) => m.cpu_ms_per_request),
    heap_kib_per_request: turns.every((m) => m.heap_kib_per_request !== null)
      ? perRequest((m) => m.heap_kib_per_request!)
      : null,
  };
};

export const failures = (m: Measurement) =>
  m.non_2xx + m.socket_errors.connect + m.socket_errors.read + m.socket_errors.write +
  m.socket_errors.timeout;

// --- The machine.

export const mib = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(0)} MiB`;

// 1, 5 and 15 minute load averages: other work on this shared machine skews the figures.
export const loadAverage = () => {
  try {
    return Deno.readTextFileSync("/proc/loadavg").split(" ").slice(0, 3).map(Number);
  } catch {
    return [];
  }
};

export const machine = () => {
  const read = (file: string) => {
    try {
      return Deno.readTextFileSync(file);
    } catch {
      return "";
    }
  };
  const memKb = Number(read("/proc/meminfo").match(/^MemTotal:\s+(\d+)/m)?.[1] ?? 0);
  return {
    cpus: navigator.hardwareConcurrency,
    cpu_model: read("/proc/cpuinfo").match(/^model name\s*:\s*(.+)$/m)?.[1] ?? "unknown",
    memory_gib: Math.round((memKb / 1024 / 1024) * 10) / 10,
    kernel: Deno.osRelease(),
  };
};

export const machineText = () => {
  const m = machine();
  return `${m.cpu_model}, ${m.cpus} cores, ${m.memory_gib} GiB, Linux ${m.kernel}`;
};

// A goal as the summary prints it: PASS or FAIL, what was measured, and why a figure may not count.
export interface Goal {
  readonly goal: string;
  readonly measured: string;
  readonly pass: boolean;
  readonly note?: string;
}
