// The process's metrics in the Prometheus text format: requests by route template, method and status
// with their latency, imports by operation and outcome, the kept answers of current reads, the
// database pool and table sizes, memory and CPU. A request costs a map lookup and a few additions;
// everything else is done per scrape.
import { createHash, timingSafeEqual } from "node:crypto";
import type { ReadCacheFacts } from "../reads/read_cache.ts";
import process from "node:process";
import { getHeapStatistics } from "node:v8";
import { Redacted } from "effect";

// Seconds. A read is ~2-5 ms, the catalog ~15 ms, an import 0.4-0.8 s, the request limit 30 s.
const REQUEST_BOUNDS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
const IMPORT_BOUNDS = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

// Routes whose requests also count as imports (POST only).
const IMPORT_ROUTES: Readonly<Record<string, ImportOperation>> = {
  "/api/v1/imports/preview": "preview",
  "/api/v1/imports/:batch_id/commit": "commit",
};

export type ImportOperation = "preview" | "commit";

// Labels for requests no route answers: one series each, whatever the path was.
export const UNMATCHED_ROUTE = "(unmatched)";
export const CONSOLE_ROUTE = "(console)";

const METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"];
const methodIndex = new Map(METHODS.map((m, i) => [m, i]));
const OTHER_METHOD = METHODS.length;
const POST = methodIndex.get("POST");
const methodName = (index: number) => METHODS[index] ?? "OTHER";

// A label value in the exposition format: backslash, double quote and line feed escaped.
const labelValue = (text: string) =>
  text.replaceAll("\\", "\\\\").replaceAll('"', '\\"').replaceAll("\n", "\\n");

interface Series {
  readonly labels: string;
  count: number;
  sum: number;
  // Per bucket, not cumulative; the last one is +Inf.
  readonly buckets: Float64Array;
}

const makeSeries = (labels: string, bounds: ReadonlyArray<number>): Series => ({
  labels,
  count: 0,
  sum: 0,
  buckets: new Float64Array(bounds.length + 1),
});

const observe = (series: Series, bounds: ReadonlyArray<number>, seconds: number) => {
  series.count++;
  series.sum += seconds;
  let i = 0;
  while (i < bounds.length && seconds > bounds[i]) i++;
  series.buckets[i]++;
};

// The series of one route template, by method and status.
export interface RouteStats {
  readonly route: string;
  readonly importOperation: ImportOperation | undefined;
  readonly series: Map<number, Series>;
}

// What the database answers at a scrape (see db_probe.ts).
export interface DatabaseFacts {
  readonly driver: "postgres" | "pglite";
  readonly up: boolean;
  readonly probeSeconds: number;
  // Highest energy_revisions id: grows by one per revision written (a rolled-back commit can skip
  // ids); its rate is the revision write rate of every instance together.
  readonly revisionsLastId?: number;
  // The planner's row estimates (pg_class.reltuples, kept by ANALYZE and autovacuum).
  readonly tableRows?: ReadonlyArray<{ readonly table: string; readonly rows: number }>;
  // Connections to this database from every client, and the server's limit.
  readonly serverConnections?: number;
  readonly serverMaxConnections?: number;
}

export interface PoolFacts {
  // The database its connections go to: primary, or replica (DATABASE_READ_URL).
  readonly role: string;
  readonly total: number;
  readonly idle: number;
  readonly waiting: number;
  readonly max: number;
  readonly checkouts: number;
}

export interface OpsSources {
  readonly database?: () => Promise<DatabaseFacts>;
  readonly pool?: () => ReadonlyArray<PoolFacts>;
  readonly answers?: () => ReadCacheFacts;
  // Whether reads of current data go to the read replica now (only when one is configured).
  readonly replica?: () => Promise<{ readonly used: boolean }>;
}

const outcomeOf = (status: number) =>
  status < 300
    ? "ok"
    : status === 409
    ? "conflict"
    : status === 401 || status === 403
    ? "denied"
    : status === 404
    ? "not_found"
    : status >= 500
    ? "error"
    : "invalid";

const startedAt = Date.now() / 1000 - performance.now() / 1000;

export class OpsMetrics {
  readonly #routes = new Map<string, RouteStats>();
  readonly #imports = new Map<string, Series>();
  #inFlight = 0;
  #sources: OpsSources = {};

  // The stats of a route template (made once per template; the front door keeps them per route).
  route(template: string): RouteStats {
    let stats = this.#routes.get(template);
    if (stats === undefined) {
      stats = { route: template, importOperation: IMPORT_ROUTES[template], series: new Map() };
      this.#routes.set(template, stats);
    }
    return stats;
  }

  setSources(sources: OpsSources) {
    this.#sources = { ...this.#sources, ...sources };
  }

  started() {
    this.#inFlight++;
  }

  // One answered request: its route's stats, its method, its status and its whole time.
  finished(stats: RouteStats, method: string, status: number, seconds: number) {
    this.#inFlight--;
    const m = methodIndex.get(method) ?? OTHER_METHOD;
    const key = m * 1000 + status;
    let series = stats.series.get(key);
    if (series === undefined) {
      series = makeSeries(
        `route="${labelValue(stats.route)}",method="${methodName(m)}",status="${status}"`,
        REQUEST_BOUNDS,
      );
      stats.series.set(key, series);
    }
    observe(series, REQUEST_BOUNDS, seconds);
    if (stats.importOperation !== undefined && m === POST) {
      const outcome = outcomeOf(status);
      const importKey = `${stats.importOperation}/${outcome}`;
      let imported = this.#imports.get(importKey);
      if (imported === undefined) {
        imported = makeSeries(
          `operation="${stats.importOperation}",outcome="${outcome}"`,
          IMPORT_BOUNDS,
        );
        this.#imports.set(importKey, imported);
      }
      observe(imported, IMPORT_BOUNDS, seconds);
    }
  }

  async render(): Promise<string> {
    const out: Array<string> = [];
    const head = (name: string, type: string, help: string) =>
      out.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`);
    const sample = (name: string, labels: string, value: number) =>
      out.push(`${name}${labels === "" ? "" : `{${labels}}`} ${formatNumber(value)}`);
    const histogram = (
      name: string,
      help: string,
      all: Iterable<Series>,
      bounds: ReadonlyArray<number>,
    ) => {
      head(name, "histogram", help);
      for (const s of all) {
        let cumulative = 0;
        for (let i = 0; i <= bounds.length; i++) {
          cumulative += s.buckets[i];
          const le = i < bounds.length ? String(bounds[i]) : "+Inf";
          sample(`${name}_bucket`, `${s.labels},le="${le}"`, cumulative);
        }
        sample(`${name}_sum`, s.labels, s.sum);
        sample(`${name}_count`, s.labels, s.count);
      }
    };

    const requests = [...this.#routes.values()].flatMap((r) => [...r.series.values()]);
    head(
      "http_requests_total",
      "counter",
      "Requests answered, by route template, method and status.",
    );
    for (const s of requests) sample("http_requests_total", s.labels, s.count);
    histogram(
      "http_request_duration_seconds",
      "Time from a request's arrival to its last byte sent, by route template, method and status.",
      requests,
      REQUEST_BOUNDS,
    );
    head("http_requests_in_flight", "gauge", "Requests received and not yet fully answered.");
    sample("http_requests_in_flight", "", this.#inFlight);

    const imports = [...this.#imports.values()];
    head(
      "imports_total",
      "counter",
      "Import previews and commits answered, by operation and outcome.",
    );
    for (const s of imports) sample("imports_total", s.labels, s.count);
    histogram(
      "import_duration_seconds",
      "Time of import previews and commits, by operation and outcome.",
      imports,
      IMPORT_BOUNDS,
    );

    const memory = Deno.memoryUsage();
    const cpu = process.cpuUsage();
    head("process_resident_memory_bytes", "gauge", "Resident set size of the process.");
    sample("process_resident_memory_bytes", "", memory.rss);
    head("deno_heap_used_bytes", "gauge", "V8 heap in use.");
    sample("deno_heap_used_bytes", "", memory.heapUsed);
    head("deno_heap_total_bytes", "gauge", "V8 heap reserved.");
    sample("deno_heap_total_bytes", "", memory.heapTotal);
    head("deno_external_memory_bytes", "gauge", "Memory held outside the V8 heap by JS objects.");
    sample("deno_external_memory_bytes", "", memory.external);
    head(
      "deno_heap_allocated_bytes_total",
      "counter",
      "Bytes V8 allocated in its heap since the start (the allocation rate).",
    );
    // Deno's V8 gives total_allocated_bytes; node's typings of getHeapStatistics do not name it.
    const allocated = (getHeapStatistics() as { total_allocated_bytes?: number })
      .total_allocated_bytes;
    sample("deno_heap_allocated_bytes_total", "", allocated ?? 0);
    head("process_cpu_seconds_total", "counter", "User and system CPU time of the process.");
    sample("process_cpu_seconds_total", "", (cpu.user + cpu.system) / 1e6);
    head("process_start_time_seconds", "gauge", "Start of the process, in Unix seconds.");
    sample("process_start_time_seconds", "", Math.round(startedAt));

    const answers = this.#sources.answers?.();
    if (answers !== undefined) {
      head(
        "answer_cache_budget_bytes",
        "gauge",
        "ANSWER_CACHE_MB in bytes: what kept answers may cost.",
      );
      sample("answer_cache_budget_bytes", "", answers.budget);
      head(
        "answer_cache_bytes",
        "gauge",
        "What the kept answers cost now (bytes, keys, bookkeeping).",
      );
      sample("answer_cache_bytes", "", answers.bytes);
      head("answer_cache_entries", "gauge", "Answers kept.");
      sample("answer_cache_entries", "", answers.entries);
      head("answer_cache_lookups_total", "counter", "Current reads that looked for a kept answer.");
      sample("answer_cache_lookups_total", "", answers.lookups);
      head("answer_cache_found_total", "counter", "Lookups that found a kept answer.");
      sample("answer_cache_found_total", "", answers.found);
      head(
        "answer_cache_served_total",
        "counter",
        "Requests the kept bytes answered (their data unchanged).",
      );
      sample("answer_cache_served_total", "", answers.served);
    }

    // One series per pool, labelled with the database it reaches (primary, replica).
    const pools = this.#sources.pool?.() ?? [];
    if (pools.length > 0) {
      const of = (p: PoolFacts) => `pool="${p.role}"`;
      head(
        "db_pool_connections",
        "gauge",
        "PostgreSQL connections of this process's pools, by pool and state.",
      );
      for (const p of pools) {
        sample("db_pool_connections", `${of(p)},state="idle"`, p.idle);
        sample("db_pool_connections", `${of(p)},state="in_use"`, p.total - p.idle);
      }
      head("db_pool_max_connections", "gauge", "Size limit of each pool (DB_POOL_MAX).");
      for (const p of pools) sample("db_pool_max_connections", of(p), p.max);
      head("db_pool_waiting", "gauge", "Queries waiting for a connection of each pool.");
      for (const p of pools) sample("db_pool_waiting", of(p), p.waiting);
      head("db_pool_checkouts_total", "counter", "Connections taken from each pool.");
      for (const p of pools) sample("db_pool_checkouts_total", of(p), p.checkouts);
    }

    if (this.#sources.replica !== undefined) {
      head(
        "db_replica_used",
        "gauge",
        "1 while reads of current data go to the read replica (DATABASE_READ_URL), 0 while they " +
          "fall back to the primary.",
      );
      sample("db_replica_used", "", (await this.#sources.replica()).used ? 1 : 0);
    }

    if (this.#sources.database !== undefined) {
      const db = await this.#sources.database();
      head("db_info", "gauge", "The database the service uses (driver: postgres or pglite).");
      sample("db_info", `driver="${db.driver}"`, 1);
      head("db_up", "gauge", "1 when the scrape's database query answered in time, else 0.");
      sample("db_up", "", db.up ? 1 : 0);
      head("db_probe_duration_seconds", "gauge", "Time of the scrape's database query.");
      sample("db_probe_duration_seconds", "", db.probeSeconds);
      if (db.revisionsLastId !== undefined) {
        head(
          "energy_revisions_last_id",
          "gauge",
          "Highest revision id: grows by one per revision written, by any instance.",
        );
        sample("energy_revisions_last_id", "", db.revisionsLastId);
      }
      if (db.tableRows !== undefined && db.tableRows.length > 0) {
        head(
          "db_table_rows_estimate",
          "gauge",
          "Rows of the largest tables as the planner estimates them (updated by autovacuum).",
        );
        for (const t of db.tableRows) {
          sample("db_table_rows_estimate", `table="${labelValue(t.table)}"`, t.rows);
        }
      }
      if (db.serverConnections !== undefined) {
        head(
          "db_server_connections",
          "gauge",
          "Connections to this database from every client.",
        );
        sample("db_server_connections", "", db.serverConnections);
      }
      if (db.serverMaxConnections !== undefined) {
        head("db_server_max_connections", "gauge", "The server's max_connections.");
        sample("db_server_max_connections", "", db.serverMaxConnections);
      }
    }
    return out.join("\n") + "\n";
  }
}

const formatNumber = (value: number) =>
  Number.isFinite(value)
    ? String(value)
    : Number.isNaN(value)
    ? "NaN"
    : value > 0
    ? "+Inf"
    : "-Inf";

// The scrape token, kept as its SHA-256 so every comparison has the same length and time.
export const tokenDigest = (token: Redacted.Redacted<string>) =>
  createHash("sha256").update(Redacted.value(token).trim()).digest();

const MAX_TOKEN_CHARS = 1024;

// "missing" without an Authorization header, "invalid" for anything but the token as a bearer.
export const checkBearer = (
  header: string | null,
  digest: Uint8Array,
): "ok" | "missing" | "invalid" => {
  if (header === null) return "missing";
  if (header.length > MAX_TOKEN_CHARS + 7 || !/^bearer /i.test(header)) return "invalid";
  const given = createHash("sha256").update(header.slice(7).trim()).digest();
  return timingSafeEqual(given, digest) ? "ok" : "invalid";
};
