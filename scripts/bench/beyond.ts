// CLI: deno task bench:beyond — what the reads beyond the contract cost, measured on a fresh local
// PostgreSQL database of the 60-store demo with a few import commits on top:
//   - energy, metrics and periods of a year read now, by data_token and by known_at (sequential
//     latency percentiles, and requests per second from 8 concurrent clients);
//   - the export of 366 days x 60 stores (XLSX and CSV): time to the last byte, size, the service's
//     peak RSS;
//   - the change feed followed from the start to its head with limit=1000 (changes per second),
//     for a key of every store and a key of 3 stores;
//   - the data-quality check of 366 days.
// The client runs on the same machine (fetch from this process): figures compare the reads with
// each other, not with other servers. ADMIN_DATABASE_URL (default
// postgres://postgres@127.0.0.1:5432/postgres) is where the database is created; it is dropped at
// the end. Results: .data/bench/beyond-<stamp>.json.
import { adminQuery } from "../pg_admin.ts";

const ROOT = decodeURIComponent(new URL("../../", import.meta.url).pathname).replace(/\/$/, "");
const OUT_DIR = `${ROOT}/.data/bench`;
const DENO = Deno.execPath();
const adminUrl = new URL(
  Deno.env.get("ADMIN_DATABASE_URL") ?? "postgres://postgres@127.0.0.1:5432/postgres",
);
const STORES = 60;
const SEQUENTIAL = Number(Deno.env.get("BEYOND_REQUESTS") ?? 300);
const CONCURRENT_SECONDS = Number(Deno.env.get("BEYOND_SECONDS") ?? 5);
const CLIENTS = 8;

const log = (line: string) => console.log(line);
const delay = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const admin = (text: string) => adminQuery(adminUrl.toString(), text);

const run = async (args: Array<string>, env: Record<string, string>) => {
  const out = await new Deno.Command(DENO, {
    args,
    cwd: ROOT,
    env,
    stdout: "piped",
    stderr: "piped",
  })
    .output();
  const text = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
  if (out.code !== 0) throw new Error(`${args.join(" ")} failed:\n${text.slice(-2000)}`);
  return new TextDecoder().decode(out.stdout);
};

const freePort = () => {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  return port;
};

const peakRss = (pid: number) => {
  const status = Deno.readTextFileSync(`/proc/${pid}/status`);
  return Number(status.match(/^VmHWM:\s+(\d+)\s+kB/m)![1]) * 1024;
};

const percentile = (sorted: ReadonlyArray<number>, p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))];

const summarize = (ms: Array<number>) => {
  ms.sort((a, b) => a - b);
  return {
    n: ms.length,
    p50_ms: +percentile(ms, 0.5).toFixed(2),
    p90_ms: +percentile(ms, 0.9).toFixed(2),
    p99_ms: +percentile(ms, 0.99).toFixed(2),
  };
};

const stamp = new Date().toISOString().replace(/[:.]/g, "-");
const name = `beyond_${crypto.randomUUID().replaceAll("-", "").slice(0, 12)}`;
const databaseUrl = new URL(adminUrl);
databaseUrl.pathname = `/${name}`;
const env = { DATABASE_URL: databaseUrl.toString() };
let service: Deno.ChildProcess | undefined;

const main = async () => {
  await Deno.mkdir(OUT_DIR, { recursive: true });
  log(`creating ${name} and seeding ${STORES} stores`);
  await admin(`CREATE DATABASE ${name}`);
  await run(["run", "-A", "scripts/seed.ts", "--stores", String(STORES)], env);
  const issue = async (member: string, permissions: string, stores?: string) =>
    (await run([
      "run",
      "-A",
      "scripts/keys.ts",
      "issue",
      "--member",
      member,
      "--permissions",
      permissions,
      ...(stores === undefined ? [] : ["--stores", stores]),
      "--expires-in",
      "2h",
    ], env)).trim().split("\n").at(-1)!.trim();
  const key = await issue("beyond", "read,write,raw");
  const scopedKey = await issue("beyond-scoped", "read,raw", "1,2,3");

  const port = freePort();
  service = new Deno.Command(DENO, {
    args: ["run", "-A", "src/main.ts"],
    cwd: ROOT,
    env: {
      ...env,
      HOST: "127.0.0.1",
      PORT: String(port),
      SEED_DEMO: "false",
      BUILD_CONSOLE: "false",
      LOG_LEVEL: "warn",
    },
    stdout: "null",
    stderr: "inherit",
  }).spawn();
  const base = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 600; i++) {
    try {
      const r = await fetch(`${base}/health/ready`);
      await r.body?.cancel();
      if (r.ok) break;
    } catch { /* not yet */ }
    await delay(200);
  }
  const headers = (k: string) => ({ authorization: `Bearer ${k}` });
  const get = async (path: string, k = key) => {
    const r = await fetch(`${base}${path}`, { headers: headers(k) });
    const bytes = new Uint8Array(await r.arrayBuffer());
    if (!r.ok) throw new Error(`${path}: ${r.status} ${new TextDecoder().decode(bytes)}`);
    return { response: r, bytes };
  };
  const post = async (path: string, body: unknown) => {
    const r = await fetch(`${base}${path}`, {
      method: "POST",
      headers: {
        ...headers(key),
        "content-type": "application/json",
        "idempotency-key": crypto.randomUUID(),
      },
      body: JSON.stringify(body),
    });
    const json = await r.json();
    if (!r.ok) throw new Error(`${path}: ${r.status} ${JSON.stringify(json)}`);
    return json;
  };

  const stores = JSON.parse(new TextDecoder().decode((await get("/api/v1/stores")).bytes))
    .stores as Array<{ id: number; scope_id: number; name: string; brand_name: string }>;
  const dataset = JSON.parse(new TextDecoder().decode((await get("/api/v1/dataset")).bytes));
  const end: string = dataset.end;
  const dayBefore = (n: number) =>
    new Date(Date.parse(`${end}T00:00:00Z`) - n * 86_400_000).toISOString().slice(0, 10);
  const start = dayBefore(365);

  // Five commits of 60 stores x 20 days each (different windows), so that the history has depth.
  log("committing 5 imports of 1,200 values");
  let token = "";
  let knownAt = "";
  for (let c = 0; c < 5; c++) {
    const lines = ["品牌,门店,日期,日能耗"];
    for (const s of stores) {
      for (let d = 0; d < 20; d++) {
        lines.push(`${s.brand_name},${s.name},${dayBefore(c * 20 + d)},${(c + 1) * 11 + d}.25`);
      }
    }
    const preview = await post("/api/v1/imports/preview", {
      filename: `beyond-${c}.csv`,
      content_base64: btoa(
        String.fromCharCode(...new TextEncoder().encode(lines.join("\r\n") + "\r\n")),
      ),
      reason: "bench history",
    });
    await post(`/api/v1/imports/${preview.id}/commit`, {});
    if (c === 1) {
      const s = stores[0];
      const r = await get(
        `/api/v1/stores/${s.id}/energy?scope_id=${s.scope_id}&start=${start}&end=${end}`,
      );
      token = r.response.headers.get("data-token")!;
      knownAt = new Date().toISOString();
    }
  }

  const reads: Record<string, (s: { id: number; scope_id: number }) => string> = {
    energy: (s) => `/api/v1/stores/${s.id}/energy?scope_id=${s.scope_id}&start=${start}&end=${end}`,
    metrics: (s) =>
      `/api/v1/stores/${s.id}/metrics?scope_id=${s.scope_id}&start=${start}&end=${end}`,
    periods: (s) => `/api/v1/stores/${s.id}/periods?scope_id=${s.scope_id}&as_of=${end}`,
    quality: (s) =>
      `/api/v1/stores/${s.id}/quality?scope_id=${s.scope_id}&start=${start}&end=${end}`,
  };
  const modes: Record<string, string> = {
    now: "",
    data_token: `&data_token=${token}`,
    known_at: `&known_at=${encodeURIComponent(knownAt)}`,
  };
  const results: Record<string, unknown> = {};
  log("\nread                     p50 ms   p90 ms   p99 ms   req/s (8 clients)   bytes");
  for (const [read, path] of Object.entries(reads)) {
    for (const [mode, suffix] of Object.entries(modes)) {
      if (read === "quality" && mode !== "now") continue;
      const pathOf = (i: number) => path(stores[i % stores.length]) + suffix;
      for (let i = 0; i < 20; i++) await get(pathOf(i));
      const ms: Array<number> = [];
      let bytes = 0;
      for (let i = 0; i < SEQUENTIAL; i++) {
        const t0 = performance.now();
        const r = await get(pathOf(i * 7));
        ms.push(performance.now() - t0);
        bytes = r.bytes.length;
      }
      let done = 0;
      const until = performance.now() + CONCURRENT_SECONDS * 1000;
      await Promise.all(
        Array.from({ length: CLIENTS }, async (_, c) => {
          for (let i = c; performance.now() < until; i += CLIENTS) {
            await get(pathOf(i * 13));
            done++;
          }
        }),
      );
      const row = {
        ...summarize(ms),
        rps: +(done / CONCURRENT_SECONDS).toFixed(0),
        bytes,
      };
      results[`${read}.${mode}`] = row;
      log(
        `${`${read} ${mode}`.padEnd(24)} ${String(row.p50_ms).padStart(7)} ${
          String(row.p90_ms).padStart(8)
        } ${String(row.p99_ms).padStart(8)}   ${
          String(row.rps).padStart(8)
        }            ${row.bytes}`,
      );
    }
  }

  const mib = (bytes: number) => `${(bytes / 1048576).toFixed(0)} MiB`;
  results.peak_rss_after_reads = peakRss(service.pid);
  log(`service peak RSS after the reads: ${mib(peakRss(service.pid))}`);
  log("\nexport of 366 days x 60 stores");
  for (const format of ["xlsx", "csv"]) {
    const times: Array<number> = [];
    let size = 0;
    for (let i = 0; i < 3; i++) {
      const t0 = performance.now();
      const r = await get(`/api/v1/stores/export?start=${start}&end=${end}&format=${format}`);
      times.push(performance.now() - t0);
      size = r.bytes.length;
    }
    times.sort((a, b) => a - b);
    results[`export.${format}`] = { ms: times.map((t) => +t.toFixed(0)), bytes: size };
    log(`  ${format}: ${times.map((t) => t.toFixed(0)).join(", ")} ms; ${size} bytes`);
  }
  results.peak_rss_after_export = peakRss(service.pid);
  log(`service peak RSS after the exports: ${mib(peakRss(service.pid))}`);

  log("\nchange feed from the start, limit=1000");
  for (const [label, k] of [["every store", key], ["3 stores", scopedKey]] as const) {
    let cursor = "";
    let changes = 0;
    let requests = 0;
    const t0 = performance.now();
    for (;;) {
      const r = await get(`/api/v1/changes?limit=1000${cursor}`, k);
      const page = JSON.parse(new TextDecoder().decode(r.bytes));
      requests++;
      changes += page.changes.length;
      cursor = `&after=${page.next_cursor}`;
      if (!page.has_more) break;
    }
    const seconds = (performance.now() - t0) / 1000;
    results[`feed.${label}`] = { changes, requests, seconds: +seconds.toFixed(2) };
    log(
      `  ${label}: ${changes} changes in ${requests} requests, ${seconds.toFixed(2)} s (${
        (changes / seconds).toFixed(0)
      } changes/s)`,
    );
  }
  results.peak_rss_after_feed = peakRss(service.pid);
  log(`service peak RSS after the feed: ${mib(peakRss(service.pid))}`);
  const cpu = Deno.readTextFileSync("/proc/cpuinfo").match(/model name\s*:\s*(.*)/)?.[1];
  results.machine = { cpu, cores: navigator.hardwareConcurrency, at: new Date().toISOString() };
  await Deno.writeTextFile(`${OUT_DIR}/beyond-${stamp}.json`, JSON.stringify(results, null, 2));
  log(`results: .data/bench/beyond-${stamp}.json (${cpu}, ${navigator.hardwareConcurrency} cores)`);
};

try {
  await main();
} finally {
  if (service !== undefined) {
    try {
      service.kill("SIGTERM");
      await service.status;
    } catch { /* gone */ }
  }
  await admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => {});
}
