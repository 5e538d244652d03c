// The portfolio read over 60, 500 and 2,000 stores x 366 days (the scale run's databases): cold, a
// year's window read for the first time, and kept, the same window read again while the data is
// unchanged (the answer kept by the service). One service per size, answers kept as configured.
import { Buffer } from "node:buffer";
import {
  freePort,
  type Goal,
  log,
  OUT_DIR,
  type Server,
  startServer,
  stopChild,
} from "./harness.ts";
import {
  type DatabaseSettings,
  issueKey,
  prepareDatabase,
  serviceArgsOn,
  serviceEnv,
} from "./setup.ts";
import { recordSeedTime } from "./scale.ts";
import { median } from "./stats.ts";
import { textTable } from "./text_table.ts";

const SIZES = [60, 500, 2000] as const;
// Windows read cold (each a different year), and repeats of the first one read kept.
const COLD_WINDOWS = 3;
const KEPT_READS = 20;
const COLD_GOAL_MS = 1000;
const KEPT_GOAL_MS = 20;

export interface PortfolioRow {
  readonly stores: number;
  readonly cold_ms: ReadonlyArray<number>;
  readonly kept_ms: number;
  readonly bytes: number;
}

const dayBefore = (date: string, days: number) =>
  new Date(Date.parse(`${date}T00:00:00Z`) - days * 86_400_000).toISOString().slice(0, 10);

// Bytes of an answer's head kept to read its status and length; the rest is only counted.
const HEAD_BYTES = 64 * 1024;

// One read over a plain connection, timed to its last byte; fails on any answer but 200 or a body
// of another length than its Content-Length says. Not `fetch`: its body stream costs the client
// more than the service's own work on a kept answer (docs/performance.md#portfolio).
const timedRead = async (url: string, key: string) => {
  const target = new URL(url);
  const started = performance.now();
  const conn = await Deno.connect({ hostname: target.hostname, port: Number(target.port) });
  let prefix = new Uint8Array(0);
  let total = 0;
  try {
    await conn.write(new TextEncoder().encode(
      `GET ${target.pathname}${target.search} HTTP/1.1\r\nHost: ${target.host}\r\n` +
        `Authorization: Bearer ${key}\r\nAccept-Encoding: identity\r\nConnection: close\r\n\r\n`,
    ));
    const buffer = new Uint8Array(1 << 20);
    for (let n = await conn.read(buffer); n !== null; n = await conn.read(buffer)) {
      if (prefix.length < HEAD_BYTES) {
        prefix = Buffer.concat([
          prefix,
          buffer.subarray(0, Math.min(n, HEAD_BYTES - prefix.length)),
        ]);
      }
      total += n;
    }
  } finally {
    conn.close();
  }
  const ms = performance.now() - started;
  const text = new TextDecoder("latin1").decode(prefix);
  const headEnd = text.indexOf("\r\n\r\n");
  const head = text.slice(0, Math.max(0, headEnd));
  const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1]);
  const length = Number(/^content-length:\s*(\d+)/im.exec(head)?.[1]);
  const bytes = headEnd < 0 ? 0 : total - headEnd - 4;
  if (status !== 200) throw new Error(`portfolio read answered ${status || head.slice(0, 80)}`);
  if (Number.isFinite(length) && bytes !== length) {
    throw new Error(`portfolio read: ${bytes} bytes of ${length}`);
  }
  return { ms, bytes };
};

export const portfolioRun = async (
  settings: DatabaseSettings & { readonly pool: number },
  stamp: string,
) => {
  const rows: Array<PortfolioRow> = [];
  for (const size of SIZES) {
    const url = new URL(settings.databaseUrl);
    url.pathname = `/bench_scale_${size}`;
    const sizeSettings = { ...settings, databaseUrl: url, database: `bench_scale_${size}` };
    // Seeded by the scale run, or here when only the portfolio is measured.
    const prepared = await prepareDatabase({ ...sizeSettings, reseed: false }, size);
    if (prepared.seededSeconds !== undefined) await recordSeedTime(size, prepared.seededSeconds);
    const key = await issueKey(sizeSettings, `bench-portfolio-${size}`, "Portfolio benchmark");
    const port = freePort(18093);
    let server: Server | undefined;
    try {
      server = await startServer(
        `portfolio-${size}`,
        serviceArgsOn(port),
        serviceEnv(url, settings.pool, port),
        port,
        "/health/ready",
        stamp,
      );
      const origin = `http://127.0.0.1:${port}`;
      const dataset = await (await fetch(`${origin}/api/v1/dataset`, {
        headers: { authorization: `Bearer ${key}` },
      })).json() as { end: string };
      const pathOf = (end: string) =>
        `${origin}/api/v1/portfolio?start=${dayBefore(end, 365)}&end=${end}`;
      const cold: Array<number> = [];
      let bytes = 0;
      for (let i = 0; i < COLD_WINDOWS; i++) {
        const read = await timedRead(pathOf(dayBefore(dataset.end, i)), key);
        cold.push(read.ms);
        bytes = read.bytes;
      }
      const kept: Array<number> = [];
      for (let i = 0; i < KEPT_READS; i++) {
        kept.push((await timedRead(pathOf(dataset.end), key)).ms);
      }
      const row = { stores: size, cold_ms: cold, kept_ms: median(kept), bytes };
      rows.push(row);
      log(
        `  portfolio ${String(size).padStart(4)} stores: cold ${
          cold.map((ms) => ms.toFixed(0)).join(" / ")
        } ms, kept ${row.kept_ms.toFixed(1)} ms (median of ${KEPT_READS}), ${bytes} bytes`,
      );
    } finally {
      if (server !== undefined) await stopChild(server.child);
    }
  }
  const largest = rows.find((r) => r.stores === SIZES.at(-1));
  const goals: Array<Goal> = largest === undefined
    ? [{ goal: "portfolio", measured: "not measured", pass: false }]
    : [
      {
        goal: `portfolio ${largest.stores} stores x 366 days cold <= ${COLD_GOAL_MS} ms`,
        measured: `${median([...largest.cold_ms]).toFixed(0)} ms (median of ${COLD_WINDOWS})`,
        pass: median([...largest.cold_ms]) <= COLD_GOAL_MS,
      },
      {
        goal: `portfolio ${largest.stores} stores x 366 days kept <= ${KEPT_GOAL_MS} ms`,
        measured: `${largest.kept_ms.toFixed(1)} ms`,
        pass: largest.kept_ms <= KEPT_GOAL_MS,
      },
    ];
  await Deno.writeTextFile(
    `${OUT_DIR}/${stamp}-portfolio.json`,
    JSON.stringify(rows, null, 2) + "\n",
  );
  return { rows, goals };
};

export const portfolioTable = (rows: ReadonlyArray<PortfolioRow>) =>
  textTable(
    ["stores", "cold ms (3 windows)", "kept ms (median)", "answer bytes"],
    rows.map((r) => [
      String(r.stores),
      r.cold_ms.map((ms) => ms.toFixed(0)).join(" / "),
      r.kept_ms.toFixed(1),
      String(r.bytes),
    ]),
    [1],
  );
