// A black-box fault run: starts the service (embedded database in a temporary folder, or
// DATABASE_URL), throws hostile inputs at it over loopback while a probe asks /health/live every
// 100 ms, samples the server's RSS, and fails unless no answer is >= 500, no probe waits longer
// than 1 s and RSS stays under 400 MB. Bounded: every attack has a deadline; about two minutes.
// Usage: deno task hostile
import { deflateRawSync } from "node:zlib";
import {
  decoyBomb,
  handXlsx,
  inlineCell,
  numberCell,
  sheetXml,
  smallSheetRows,
} from "../tests/import_zip_fixtures.ts";

const RSS_LIMIT_MB = 400;
const PROBE_LIMIT_MS = 1_000;

const dataDir = await Deno.makeTempDir({ prefix: "hostile-" });
const databaseUrl = Deno.env.get("DATABASE_URL") ?? "";

const lines: Array<string> = [];
const start = () => {
  lines.length = 0;
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "src/main.ts"],
    cwd: new URL("..", import.meta.url),
    env: {
      PORT: "0",
      HOST: "127.0.0.1",
      DATA_DIR: dataDir,
      DATABASE_URL: databaseUrl,
      LOG_FORMAT: "json",
      LOG_LEVEL: "info",
      NO_COLOR: "1",
    },
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const pump = async (stream: ReadableStream<Uint8Array>) => {
    for await (const chunk of stream.pipeThrough(new TextDecoderStream())) {
      lines.push(...chunk.split("\n").filter((l) => l.trim() !== ""));
    }
  };
  return { child, pumping: Promise.all([pump(child.stdout), pump(child.stderr)]) };
};

const findPort = async () => {
  const deadline = Date.now() + 120_000;
  while (Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 250));
    for (const line of lines) {
      const port = /"msg":"ready on http:\/\/[^:]+:(\d+) /.exec(line)?.[1];
      if (port !== undefined) return Number(port);
    }
  }
  throw new Error(`the service did not start:\n${lines.join("\n")}`);
};

// The first start loads the demo (and its memory stays with that process): the run measures a
// second start over the same data, as a service runs day to day.
{
  const first = start();
  await findPort();
  first.child.kill("SIGTERM");
  await first.child.status;
  await first.pumping;
}
const { child, pumping } = start();
const port = await findPort();
let exited = false;
child.status.then(() => (exited = true));

const rssMb = () => {
  try {
    const status = Deno.readTextFileSync(`/proc/${child.pid}/status`);
    return Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? 0) / 1024;
  } catch {
    return 0;
  }
};

const base = `http://127.0.0.1:${port}`;
const keys = JSON.parse(await Deno.readTextFile(`${dataDir}/demo-keys.json`)) as Array<
  { member: string; key: string }
>;
const writer = keys.find((k) => k.member === "demo-analyst")!.key;

// The large workbooks are made before the probe starts: building them takes this process long
// enough to delay its own probes, which would then be booked to the server.
const bomb = decoyBomb(400 << 20, 4);
const dense = (() => {
  const rows: Array<string> = [`<row r="1">${inlineCell("A1", "门店名称")}</row>`];
  for (let r = 2; r <= 14_001; r++) {
    let cells = "";
    for (let c = 0; c < 100; c++) {
      cells += `<c r="${String.fromCharCode(66 + (c % 20))}${r}"><v>1</v></c>`;
    }
    rows.push(`<row r="${r}">${cells}</row>`);
  }
  return handXlsx([{ name: "Brand", xml: sheetXml(rows.join("")) }]);
})();
const garbage = deflateRawSync(new Uint8Array(4 << 20)).subarray(0, 4 << 20);

let peakRss = rssMb();
const sampler = setInterval(() => (peakRss = Math.max(peakRss, rssMb())), 25);

const probeTimes: Array<number> = [];
// The longest wait of a probe that ended since the current attack started (each attack reports
// its own).
let attackSlowest = 0;
let probing = true;
const probe = (async () => {
  while (probing) {
    const started = performance.now();
    try {
      const r = await fetch(`${base}/health/live`, { signal: AbortSignal.timeout(5_000) });
      await r.body?.cancel();
    } catch {
      // a probe that fails counts with its time
    }
    const waited = performance.now() - started;
    probeTimes.push(waited);
    attackSlowest = Math.max(attackSlowest, waited);
    await new Promise((r) => setTimeout(r, 100));
  }
})();

interface Result {
  readonly name: string;
  readonly status: number | string;
  readonly ms: number;
  readonly rssMb: number;
  readonly liveMs: number;
}
const results: Array<Result> = [];

const attack = async (name: string, run: () => Promise<number | string>) => {
  const before = peakRss;
  peakRss = rssMb();
  attackSlowest = 0;
  const started = performance.now();
  let status: number | string;
  try {
    status = await run();
  } catch (error) {
    status = `error: ${error instanceof Error ? error.message : error}`;
  }
  const result = {
    name,
    status,
    ms: Math.round(performance.now() - started),
    rssMb: Math.round(peakRss),
    liveMs: Math.round(attackSlowest),
  };
  peakRss = Math.max(before, peakRss);
  results.push(result);
  console.log(
    `${name.padEnd(48)} ${String(status).padEnd(12)} ${
      String(result.ms).padStart(6)
    } ms  peak RSS ${result.rssMb} MB  /health/live ${result.liveMs} ms`,
  );
};

const call = async (path: string, init: RequestInit = {}) => {
  const r = await fetch(base + path, { ...init, signal: AbortSignal.timeout(60_000) });
  await r.body?.cancel();
  return r.status;
};

const json = { "content-type": "application/json", origin: base };
const auth = { authorization: `Bearer ${writer}` };
const preview = (bytes: Uint8Array, name: string) =>
  call("/api/v1/imports/preview", {
    method: "POST",
    headers: { ...json, ...auth, "idempotency-key": crypto.randomUUID() },
    body: JSON.stringify({
      filename: name,
      content_base64: btoa(Array.from(bytes, (b) => String.fromCharCode(b)).join("")),
      reason: "hostile run",
    }),
  });

// Item 1: bodies, written over a raw connection until the server answers (a client library would
// report the server's early close as its own error).
const rawBody = async (path: string, headers: string, total: number) => {
  const conn = await Deno.connect({ port });
  const encoder = new TextEncoder();
  await conn.write(encoder.encode(`POST ${path} HTTP/1.1\r\nHost: x\r\n${headers}\r\n`));
  let answered = false;
  const reply = (async () => {
    const buffer = new Uint8Array(4096);
    const n = await conn.read(buffer).catch(() => null);
    answered = true;
    return n === null
      ? "closed"
      : Number(new TextDecoder().decode(buffer.subarray(0, n)).split(" ")[1]);
  })();
  const data = new Uint8Array(1 << 20).fill(0x61);
  const chunked = /transfer-encoding: chunked/i.test(headers);
  const chunk = chunked
    ? new Uint8Array([...encoder.encode("100000\r\n"), ...data, ...encoder.encode("\r\n")])
    : data;
  for (let sent = 0; sent < total && !answered; sent += chunk.length) {
    try {
      await conn.write(chunk);
    } catch {
      break;
    }
  }
  const status = await reply;
  try {
    conn.close();
  } catch { /* closed */ }
  return status;
};
const jsonHeaders = "Content-Type: application/json\r\nOrigin: http://x\r\n";
await attack(
  "300 MB JSON body, announced",
  () => rawBody("/auth/session", `${jsonHeaders}Content-Length: ${300 << 20}\r\n`, 300 << 20),
);
await attack(
  "300 MB JSON body, chunked",
  () => rawBody("/auth/session", `${jsonHeaders}Transfer-Encoding: chunked\r\n`, 300 << 20),
);
await attack("200 MB preview body, no length", () =>
  rawBody(
    "/api/v1/imports/preview",
    `${jsonHeaders}Authorization: Bearer ${writer}\r\nIdempotency-Key: h1\r\nTransfer-Encoding: chunked\r\n`,
    200 << 20,
  ));

// Items 2-4: workbooks.
await attack("XLSX decoy + 400 MB bomb", () => preview(bomb, "bomb.xlsx"));
await attack("XLSX row r=1000000000", () =>
  preview(
    handXlsx([{
      name: "Brand",
      xml: sheetXml(smallSheetRows() + `<row r="1000000000">${numberCell("B1000000000", 1)}</row>`),
    }]),
    "rows.xlsx",
  ));
await attack("XLSX merge A1:XFD1048576", () =>
  preview(
    handXlsx([{
      name: "Brand",
      xml: sheetXml(
        smallSheetRows(),
        `<mergeCells count="1"><mergeCell ref="C3:XFD1048576"/></mergeCells>`,
      ),
    }]),
    "merge.xlsx",
  ));
await attack("XLSX 1.4 M cells", () => preview(dense, "dense.xlsx"));
await attack("deflated 4 MiB of garbage as XLSX", () => preview(garbage, "garbage.xlsx"));

// Item 6: bad requests.
const form = new FormData();
form.set("access_key", "x");
await attack(
  "multipart body, no credential",
  () => call("/auth/session", { method: "POST", headers: { origin: base }, body: form }),
);
await attack("form-encoded body", () =>
  call("/auth/session", {
    method: "POST",
    headers: { origin: base, "content-type": "application/x-www-form-urlencoded" },
    body: "access_key=x",
  }));
await attack("100,000 nested [ in a preview", () =>
  call("/api/v1/imports/preview", {
    method: "POST",
    headers: { ...json, ...auth, "idempotency-key": "h2" },
    body: "[".repeat(100_000) + "]".repeat(100_000),
  }));
await attack("JSON as text/plain", () =>
  call("/auth/session", {
    method: "POST",
    headers: { origin: base, "content-type": "text/plain" },
    body: JSON.stringify({ access_key: "x" }),
  }));
for (const path of ["/API/V1/STORES", "//api/v1/stores", "/api/v1//stores"]) {
  await attack(`path ${path}`, () => call(path, { headers: auth }));
}
await attack(
  "DELETE /api/v1/stores",
  () => call("/api/v1/stores", { method: "DELETE", headers: auth }),
);

// Item 5: slow clients.
const encoder = new TextEncoder();
await attack("200 half-sent headers (closed by the server)", async () => {
  const conns = await Promise.all(Array.from({ length: 200 }, () => Deno.connect({ port })));
  await Promise.all(
    conns.map((c) => c.write(encoder.encode("GET /health/live HTTP/1.1\r\nHost: x\r\n"))),
  );
  const buffer = new Uint8Array(1024);
  const closed = await Promise.all(conns.map(async (c) => {
    const timer = setTimeout(() => c.close(), 20_000);
    try {
      while ((await c.read(buffer)) !== null) { /* drain */ }
      return true;
    } catch {
      return false;
    } finally {
      clearTimeout(timer);
      try {
        c.close();
      } catch { /* closed */ }
    }
  }));
  return `${closed.filter(Boolean).length}/200 closed`;
});
await attack("1 byte/s body (answered 408)", async () => {
  const conn = await Deno.connect({ port });
  await conn.write(encoder.encode(
    "POST /auth/session HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{",
  ));
  let open = true;
  const drip = (async () => {
    while (open) {
      await new Promise((r) => setTimeout(r, 1_000));
      await conn.write(encoder.encode(" ")).catch(() => (open = false));
    }
  })();
  const buffer = new Uint8Array(4096);
  const n = await conn.read(buffer).catch(() => null);
  open = false;
  await drip;
  try {
    conn.close();
  } catch { /* closed */ }
  return n === null ? "closed" : new TextDecoder().decode(buffer.subarray(0, n)).split(" ")[1];
});
await attack("broken chunk framing, then a preview at once", async () => {
  const conn = await Deno.connect({ port });
  await conn.write(encoder.encode(
    `POST /api/v1/imports/preview HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${writer}\r\n` +
      "Idempotency-Key: broken\r\nContent-Type: application/json\r\n" +
      'Transfer-Encoding: chunked\r\n\r\n5\r\n{"a":\r\nZZ\r\n',
  ));
  const buffer = new Uint8Array(4096);
  const n = await conn.read(buffer).catch(() => null);
  try {
    conn.close();
  } catch { /* closed */ }
  const first = n === null
    ? "closed"
    : new TextDecoder().decode(buffer.subarray(0, n)).split(" ")[1];
  // The heavy-work place it held is free again: the next preview is not 503 BUSY.
  const next = await preview(encoder.encode(""), "empty.csv");
  return first === "400" && next !== 503 ? `${first}, ${next}` : `error: ${first}, ${next}`;
});

probing = false;
await probe;
clearInterval(sampler);
const diedEarly = exited;
if (diedEarly) {
  console.log(
    `the service stopped during the run; its last lines:\n${lines.slice(-20).join("\n")}`,
  );
} else {
  child.kill("SIGTERM");
}
await child.status;
await pumping;
await Deno.remove(dataDir, { recursive: true });

const failures = results.filter((r) => typeof r.status === "number" && r.status >= 500);
const slowest = Math.round(Math.max(...probeTimes));
const peak = Math.round(Math.max(...results.map((r) => r.rssMb)));
console.log(
  `\n${results.length} attacks: ${failures.length} answered >= 500; health probe: ` +
    `${probeTimes.length} answers, slowest ${slowest} ms; peak server RSS ${peak} MB`,
);
const ok = !diedEarly && failures.length === 0 && slowest <= PROBE_LIMIT_MS &&
  peak <= RSS_LIMIT_MB &&
  results.every((r) => !String(r.status).startsWith("error"));
if (!ok) {
  console.log(
    `FAILED: limits are 0 answers >= 500, probe <= ${PROBE_LIMIT_MS} ms, RSS <= ${RSS_LIMIT_MB} MB`,
  );
  Deno.exit(1);
}
