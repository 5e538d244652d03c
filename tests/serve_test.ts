// The listening server against slow and idle clients, over real loopback connections: half-sent
// headers, dripping bodies and idle connections are closed; others are served meanwhile.
import assert from "node:assert/strict";
import { Option } from "effect";
import { DEFAULT_LIMITS } from "../src/config.ts";
import { serve } from "../src/http/serve.ts";
import { askLive, makeTestApp } from "./helpers.ts";

// The service's own origin is the address it listens on (no PUBLIC_ORIGIN).
const app = await makeTestApp(undefined, {
  limits: { ...DEFAULT_LIMITS, bodyMs: 600, requestMs: 5_000 },
  config: { publicOrigin: Option.none(), host: "127.0.0.1", port: 0 },
});
const server = await serve(app.handler, {
  port: 0,
  hostname: "127.0.0.1",
  headersMs: 600,
  requestMs: 5_000,
  idleMs: 1_500,
  keepAliveMs: 800,
});
const base = `http://127.0.0.1:${server.port}`;
const encoder = new TextEncoder();

// Resolves with what the server sent once it closes the connection (or after `limitMs`).
const readUntilClosed = async (conn: Deno.Conn, limitMs: number) => {
  const chunks: Array<string> = [];
  const buffer = new Uint8Array(4096);
  const started = Date.now();
  const timer = setTimeout(() => conn.close(), limitMs);
  let closedByServer = false;
  try {
    while (true) {
      const n = await conn.read(buffer);
      if (n === null) {
        closedByServer = true;
        break;
      }
      chunks.push(new TextDecoder().decode(buffer.subarray(0, n)));
    }
  } catch {
    // closed by our own timer, or reset by the server
    closedByServer = Date.now() - started < limitMs;
  } finally {
    clearTimeout(timer);
  }
  try {
    conn.close();
  } catch {
    // already closed
  }
  return { text: chunks.join(""), closedByServer, ms: Date.now() - started };
};

const connect = () => Deno.connect({ hostname: "127.0.0.1", port: server.port });

Deno.test("the server answers whole requests, bodies included", async () => {
  const live = await fetch(`${base}/health/live`);
  assert.equal(live.status, 200);
  assert.match(live.headers.get("x-request-id") ?? "", /^[0-9a-f-]{36}$/);
  await live.body?.cancel();
  const session = await fetch(`${base}/auth/session`, {
    method: "POST",
    headers: { "content-type": "application/json", origin: base },
    body: JSON.stringify({ access_key: "esk_unknown" }),
  });
  assert.equal(session.status, 401);
  assert.equal((await session.json()).error.code, "INVALID_CREDENTIAL");
});

Deno.test("an answer cut after its first bytes resets the connection: even a close-delimited body never looks whole", async () => {
  const cutting = await serve(() =>
    Promise.resolve(
      new Response(
        new ReadableStream<Uint8Array>({
          start(controller) {
            controller.enqueue(encoder.encode("date,kwh\r\n2026-01-01,1.0000\r\n"));
          },
          // A later page fails once the first has reached the client.
          async pull(controller) {
            await new Promise((resolve) => setTimeout(resolve, 200));
            controller.error(new Error("a later page failed"));
          },
        }),
        { headers: { "content-type": "text/csv" } },
      ),
    ), {
    port: 0,
    hostname: "127.0.0.1",
    headersMs: 600,
    requestMs: 5_000,
    idleMs: 1_500,
  });
  try {
    for (const version of ["1.0", "1.1"]) {
      const conn = await Deno.connect({ hostname: "127.0.0.1", port: cutting.port });
      await conn.write(encoder.encode(`GET /export HTTP/${version}\r\nhost: x\r\n\r\n`));
      const buffer = new Uint8Array(4096);
      let text = "";
      const ended = await (async () => {
        try {
          while (true) {
            const n = await conn.read(buffer);
            if (n === null) return "closed";
            text += new TextDecoder().decode(buffer.subarray(0, n));
          }
        } catch (error) {
          return error instanceof Deno.errors.ConnectionReset ? "reset" : String(error);
        }
      })();
      conn.close();
      assert.match(text, /2026-01-01/, version);
      assert.equal(ended, "reset", `HTTP/${version}: ${JSON.stringify(text)}`);
    }
  } finally {
    await cutting.shutdown();
  }
});

Deno.test("an HTTP/1.1 request without Host is 400 with the contract's error body; HTTP/1.0 needs none", async () => {
  const ask = async (request: string) => {
    const conn = await connect();
    await conn.write(encoder.encode(request));
    return (await readUntilClosed(conn, 3_000)).text;
  };
  const missing = await ask("GET /health/live HTTP/1.1\r\nAccept-Language: zh-CN\r\n\r\n");
  assert.match(missing, /^HTTP\/1\.1 400 /);
  assert.match(missing, /"code":"INVALID_REQUEST"/);
  assert.match(missing, /Host/);
  assert.match(missing, /x-request-id: /i);
  assert.match(await ask("GET /health/live HTTP/1.0\r\n\r\n"), /^HTTP\/1\.[01] 200 /);
});

Deno.test("TRACE and CONNECT are 405 and a target in absolute form is read for its path", async () => {
  const ask = async (head: string) => {
    const conn = await connect();
    await conn.write(encoder.encode(`${head}\r\nHost: x\r\nConnection: close\r\n\r\n`));
    return (await readUntilClosed(conn, 3_000)).text;
  };
  for (const head of ["TRACE /api/v1/dataset HTTP/1.1", "CONNECT 127.0.0.1:5432 HTTP/1.1"]) {
    const text = await ask(head);
    assert.match(text, /^HTTP\/1\.1 405 /, head);
    assert.match(text, /"code":"METHOD_NOT_ALLOWED"/, head);
    assert.match(text, /\r\nallow: [A-Z, ]+\r\n/i, head);
    assert.match(text, /\r\ncache-control: private, no-store\r\n/i, head);
    assert.match(text, /\r\nx-content-type-options: nosniff\r\n/i, head);
  }
  // As its origin form: /health/live, not the console's page.
  const absolute = await ask(`GET ${base}/health/live HTTP/1.1`);
  assert.match(absolute, /^HTTP\/1\.1 200 /);
  assert.match(absolute, /application\/json/);
  assert.match(await ask("OPTIONS * HTTP/1.1"), /^HTTP\/1\.1 404 /);
  // A path is matched as sent: "." and ".." segments and backslashes are not resolved into another
  // path.
  for (
    const path of [
      "/api/v1/x/../dataset",
      "/health/./live",
      "/health/live/%2e%2e/live",
      "/api/v1/x\\..\\dataset",
      "/api\\v1\\dataset",
    ]
  ) {
    assert.match(await ask(`GET ${path} HTTP/1.1`), /^HTTP\/1\.1 404 /, path);
  }
});

Deno.test("a client waiting for 100 Continue is refused from its headers before it is told to send", async () => {
  const head = (auth: string) =>
    `POST /api/v1/imports/preview HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n` +
    `Content-Length: 5000000\r\nExpect: 100-continue\r\nIdempotency-Key: k\r\n${auth}\r\n`;
  const conn = await connect();
  await conn.write(encoder.encode(head("")));
  const refused = (await readUntilClosed(conn, 3_000)).text;
  assert.match(refused, /^HTTP\/1\.1 401 /);
  assert.doesNotMatch(refused, /100 Continue/);
  // An admitted request is told to send: the service reads the body it then gets.
  const admitted = await connect();
  await admitted.write(encoder.encode(
    `POST /auth/session HTTP/1.1\r\nHost: 127.0.0.1:${server.port}\r\n` +
      "Content-Type: application/json\r\n" +
      `Origin: ${base}\r\nContent-Length: 28\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n`,
  ));
  const buffer = new Uint8Array(256);
  const n = await admitted.read(buffer);
  assert.match(new TextDecoder().decode(buffer.subarray(0, n ?? 0)), /^HTTP\/1\.1 100 Continue/);
  await admitted.write(encoder.encode('{"access_key":"esk_unknown"}'));
  const answer = (await readUntilClosed(admitted, 3_000)).text;
  assert.match(answer, /HTTP\/1\.1 401 /);
  assert.match(answer, /INVALID_CREDENTIAL/);
});

Deno.test("half-sent headers are closed after the header timeout", async () => {
  const conn = await connect();
  await conn.write(encoder.encode("GET /health/live HTTP/1.1\r\nHost: x\r\n"));
  const result = await readUntilClosed(conn, 10_000);
  assert.ok(result.closedByServer, `still open after ${result.ms} ms`);
});

Deno.test("a connection that sends nothing is closed", async () => {
  const conn = await connect();
  const result = await readUntilClosed(conn, 10_000);
  assert.ok(result.closedByServer, `still open after ${result.ms} ms`);
});

Deno.test("a request the service works on past the idle time is answered, not closed as idle", async () => {
  // Answers after twice the connection's idle time, within the request's time limit.
  const slow = await serve(
    () =>
      new Promise<Response>((resolve) => setTimeout(() => resolve(new Response("late")), 2_000)),
    {
      port: 0,
      hostname: "127.0.0.1",
      headersMs: 600,
      requestMs: 5_000,
      idleMs: 1_000,
      keepAliveMs: 800,
    },
  );
  try {
    const response = await fetch(`http://127.0.0.1:${slow.port}/slow`);
    assert.equal(response.status, 200);
    assert.equal(await response.text(), "late");
  } finally {
    await slow.shutdown();
  }
});

Deno.test("a stop waits for answers in flight up to its grace, then cuts what is still being sent", async () => {
  // One answer that ends at once, and one whose body never ends (a client taking an export forever).
  const served = await serve(
    (request) =>
      Promise.resolve(
        request.url.endsWith("/endless")
          ? new Response(new ReadableStream({ start: (c) => c.enqueue(encoder.encode("part")) }))
          : new Response("whole"),
      ),
    { port: 0, hostname: "127.0.0.1", headersMs: 600, requestMs: 5_000, idleMs: 60_000 },
  );
  const endless = await fetch(`http://127.0.0.1:${served.port}/endless`);
  const reader = endless.body!.getReader();
  assert.equal(new TextDecoder().decode((await reader.read()).value), "part");
  const finished = await served.shutdown(300);
  assert.equal(finished, false, "the endless answer did not finish");
  await assert.rejects(async () => {
    while (!(await reader.read()).done) { /* until cut */ }
  });
  // Nothing in flight: the stop finishes within its grace.
  const quiet = await serve(() => Promise.resolve(new Response("whole")), {
    port: 0,
    hostname: "127.0.0.1",
    headersMs: 600,
    requestMs: 5_000,
    idleMs: 60_000,
  });
  assert.equal(await (await fetch(`http://127.0.0.1:${quiet.port}/`)).text(), "whole");
  assert.equal(await quiet.shutdown(5_000), true);
});

Deno.test("a kept-alive connection is closed once no request follows its answer in time", async () => {
  const conn = await connect();
  const answer = await askLive(conn);
  assert.match(answer, /^HTTP\/1\.1 200/);
  assert.match(answer, /\r\nConnection: keep-alive\r\n/i);
  assert.match(answer, /\r\nKeep-Alive: timeout=0\r\n/i);
  const result = await readUntilClosed(conn, 10_000);
  // Which time closed it, and that one asking often stays open: tests/timing/keep_alive_test.ts.
  assert.ok(result.closedByServer, `still open after ${result.ms} ms`);
});

// One answer from the connection, whole: its head and as many body bytes as it announces. A
// connection that gives none within 10 s is closed, and the read fails.
const readAnswer = async (conn: Deno.Conn) => {
  const buffer = new Uint8Array(4096);
  const timer = setTimeout(() => conn.close(), 10_000);
  let text = "";
  try {
    while (true) {
      const head = text.indexOf("\r\n\r\n");
      const length = Number(/\r\ncontent-length: *(\d+)/i.exec(text)?.[1] ?? NaN);
      if (head >= 0 && encoder.encode(text.slice(head + 4)).length >= length) return text;
      const n = await conn.read(buffer);
      if (n === null) throw new Error(`closed after ${JSON.stringify(text)}`);
      text += new TextDecoder().decode(buffer.subarray(0, n));
    }
  } finally {
    clearTimeout(timer);
  }
};

Deno.test("a kept-alive connection reads its next request after a request with a body, read or refused unread", async () => {
  const conn = await connect();
  try {
    // `more`: further header lines, each ending in CRLF.
    const post = (path: string, body: string, more = "") =>
      conn.write(encoder.encode(
        `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1:${server.port}\r\n${more}` +
          `Origin: ${base}\r\nContent-Type: application/json\r\n` +
          `Content-Length: ${encoder.encode(body).length}\r\n\r\n${body}`,
      ));
    // Refused from its headers (no credential), its whole body already sent.
    await post("/api/v1/imports/preview", JSON.stringify({ filename: "a.csv" }));
    assert.match(await readAnswer(conn), /^HTTP\/1\.1 401[\s\S]*\r\nConnection: keep-alive\r\n/i);
    assert.match(await askLive(conn), /^HTTP\/1\.1 200/);
    // Read (the credential is in the body).
    await post("/auth/session", JSON.stringify({ access_key: "esk_unknown" }));
    assert.match(await readAnswer(conn), /^HTTP\/1\.1 401[\s\S]*INVALID_CREDENTIAL/);
    assert.match(await askLive(conn), /^HTTP\/1\.1 200/);
    // Admitted, its body many reads long and sent at once: read whole (not 408 once the body's
    // time is up), and the connection kept.
    const { key } = await app.key(["read", "write"]);
    const file = btoa("x".repeat(300 * 1024));
    const body = JSON.stringify({ filename: "a.csv", content_base64: file, reason: "r" });
    await post(
      "/api/v1/imports/preview",
      body,
      `Authorization: Bearer ${key}\r\nIdempotency-Key: k1\r\n`,
    );
    // (Without a snapshot the service is not ready for imports: its answer once the body is read.)
    const answer = await readAnswer(conn);
    assert.match(answer, /^HTTP\/1\.1 503[\s\S]*\r\nConnection: keep-alive\r\n[\s\S]*NOT_READY/i);
    assert.match(await askLive(conn), /^HTTP\/1\.1 200/);
  } finally {
    try {
      conn.close();
    } catch {
      // already closed by readAnswer's deadline
    }
  }
});

Deno.test("a body dripping one byte at a time is answered 408 and closed", async () => {
  const conn = await connect();
  await conn.write(encoder.encode(
    `POST /auth/session HTTP/1.1\r\nHost: 127.0.0.1:${server.port}\r\n` +
      "Content-Type: application/json\r\n" +
      "Content-Length: 100\r\n\r\n{",
  ));
  let stop = false;
  const drip = (async () => {
    for (let i = 0; i < 40 && !stop; i++) {
      await new Promise((r) => setTimeout(r, 100));
      try {
        await conn.write(encoder.encode(" "));
      } catch {
        return;
      }
    }
  })();
  const result = await readUntilClosed(conn, 10_000);
  stop = true;
  await drip;
  assert.match(result.text, /^HTTP\/1\.1 408/);
  assert.match(result.text, /REQUEST_TIMEOUT/);
  assert.ok(result.closedByServer, `still open after ${result.ms} ms`);
});

Deno.test("an announced oversized body is refused at once, not read", async () => {
  const conn = await connect();
  await conn.write(encoder.encode(
    `POST /auth/session HTTP/1.1\r\nHost: 127.0.0.1:${server.port}\r\n` +
      "Content-Type: application/json\r\n" +
      `Content-Length: ${300 * 1024 * 1024}\r\n\r\n{"access_key": "`,
  ));
  const result = await readUntilClosed(conn, 10_000);
  assert.match(result.text, /^HTTP\/1\.1 413/);
  assert.match(result.text, /PAYLOAD_TOO_LARGE/);
});

Deno.test("200 half-sent requests do not keep others from being served, and are all closed", async () => {
  const conns = await Promise.all(Array.from({ length: 200 }, () => connect()));
  await Promise.all(
    conns.map((c) => c.write(encoder.encode("GET /health/live HTTP/1.1\r\nHost: x\r\n"))),
  );
  const live = await fetch(`${base}/health/live`);
  assert.equal(live.status, 200);
  await live.body?.cancel();
  const results = await Promise.all(conns.map((c) => readUntilClosed(c, 10_000)));
  assert.equal(results.filter((r) => !r.closedByServer).length, 0);
});

Deno.test({
  name: "stop the server and close the test app",
  fn: async () => {
    await server.shutdown();
    await app.close();
  },
  sanitizeOps: false,
  sanitizeResources: false,
});

Deno.test("one kept buffer answers many requests, one after another and at once, and stays whole", async () => {
  // As a large kept answer is served: the same bytes for every request (src/reads/read_cache.ts).
  const shared = new Uint8Array(700_000).map((_, i) => 65 + (i % 26));
  const copy = shared.slice();
  const answer = () =>
    new Response(shared, {
      headers: { "content-type": "application/json", "content-length": String(shared.length) },
    });
  const server = await serve(() => Promise.resolve(answer()), {
    port: 0,
    hostname: "127.0.0.1",
    headersMs: 5_000,
    requestMs: 10_000,
    idleMs: 10_000,
  });
  try {
    const url = `http://127.0.0.1:${server.port}/`;
    const fetchBody = async () => {
      const response = await fetch(url);
      assert.equal(response.headers.get("content-length"), String(copy.byteLength));
      return new Uint8Array(await response.arrayBuffer());
    };
    const bodies = [await fetchBody(), await fetchBody(), await fetchBody()];
    bodies.push(...await Promise.all(Array.from({ length: 8 }, fetchBody)));
    for (const body of bodies) assert.deepEqual(body, copy);
    assert.deepEqual(shared, copy);
  } finally {
    await server.shutdown();
  }
});
