// Refusals reach the client over a real connection, not a reset: a client that reads while it
// uploads (browsers, fetch, curl) reads the 401 or 413 and its error body however large the body it
// was sending; one that writes its whole request before it reads does too when the rest is short;
// answers made by the HTTP layer itself carry the contract's body.
import assert from "node:assert/strict";
import { Effect } from "effect";
import { DEFAULT_ADMISSION, DEFAULT_LIMITS } from "../src/config.ts";
import { serve } from "../src/http/serve.ts";
import { generateSnapshot } from "../src/seed/generate.ts";
import { loadSnapshot } from "../src/seed/load.ts";
import { makeTestApp } from "./helpers.ts";

// One heavy task at a time, and body and request time limits far beyond any wait below: a request
// that kept its admission until a time limit ended it would keep the next one out.
const app = await makeTestApp(
  (db) => db.run(Effect.asVoid(loadSnapshot(generateSnapshot({ stores: 1 }), { reset: false }))),
  {
    limits: { ...DEFAULT_LIMITS, bodyMs: 60_000, requestMs: 120_000 },
    admission: { ...DEFAULT_ADMISSION, heavy: 1, heavyPerKey: 1 },
  },
);
const writer = await app.key(["read", "write"]);
const server = await serve(app.handler, {
  port: 0,
  hostname: "127.0.0.1",
  headersMs: 5_000,
  requestMs: 120_000,
  idleMs: 60_000,
});
const encoder = new TextEncoder();

// Sends the request (head, then `bodyBytes` bytes in chunks) and reads what the server sends until
// it closes: after the whole request is written, or (`readWhileWriting`) meanwhile. A write the
// server no longer takes ends the writing. `shut`: the sending side is shut once all is written.
const exchange = async (
  head: string,
  bodyBytes: number,
  readWhileWriting = false,
  shut = false,
) => {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port: server.port });
  const chunk = new Uint8Array(256 * 1024).fill(0x20);
  const parts: Array<Uint8Array> = [];
  let reset = false;
  const read = async () => {
    const buffer = new Uint8Array(64 * 1024);
    try {
      while (true) {
        const n = await conn.read(buffer);
        if (n === null) break;
        parts.push(buffer.slice(0, n));
      }
    } catch {
      reset = true;
    }
  };
  const timer = setTimeout(() => conn.close(), 15_000);
  const reading = readWhileWriting ? read() : undefined;
  try {
    await conn.write(encoder.encode(head));
    for (let sent = 0; sent < bodyBytes; sent += chunk.byteLength) {
      const n = Math.min(chunk.byteLength, bodyBytes - sent);
      let at = 0;
      while (at < n) at += await conn.write(chunk.subarray(at, n));
    }
    if (shut) await conn.closeWrite();
  } catch {
    // the server took no more
  }
  await (reading ?? read());
  clearTimeout(timer);
  try {
    conn.close();
  } catch {
    // closed by the timer
  }
  const text = new TextDecoder().decode(
    parts.reduce((all, p) => new Uint8Array([...all, ...p]), new Uint8Array()),
  );
  const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0);
  const end = text.includes("\r\n\r\n") ? text.indexOf("\r\n\r\n") : text.length;
  const body = text.slice(end + 4);
  return { status, head: text.slice(0, end).toLowerCase(), body, reset: reset && status === 0 };
};

const errorCode = (body: string) => {
  const parsed = JSON.parse(body) as { error: { code: string; message: string } };
  assert.equal(typeof parsed.error.message, "string");
  return parsed.error.code;
};

// What every answer carries, those the HTTP parser gives too: its X-Request-ID, no caching, no
// sniffing of its media type.
const assertFrontHeaders = (head: string) => {
  assert.match(head, /\r\nx-request-id: [0-9a-f-]{36}\r\n/);
  assert.match(head, /\r\ncache-control: private, no-store\r\n/);
  assert.match(head, /\r\nx-content-type-options: nosniff\r\n/);
};

const upload = (bytes: number, extra = "") =>
  `POST /api/v1/imports/preview HTTP/1.1\r\nhost: 127.0.0.1\r\n` +
  `content-type: application/json\r\ncontent-length: ${bytes}\r\nidempotency-key: k\r\n` +
  `${extra}\r\n`;

Deno.test("a refused upload without a credential is answered 401 to a client still writing", async () => {
  const bytes = 5_800_000;
  const answer = await exchange(upload(bytes), bytes, true);
  assert.equal(answer.reset, false, "the connection was reset before the answer was read");
  assert.equal(answer.status, 401);
  assert.equal(errorCode(answer.body), "MISSING_CREDENTIAL");
});

Deno.test("an oversized upload with a credential is answered 413 to a client still writing", async () => {
  const bytes = 20 * 1024 * 1024;
  const answer = await exchange(
    upload(bytes, `authorization: Bearer ${writer.key}\r\n`),
    bytes,
    true,
  );
  assert.equal(answer.reset, false, "the connection was reset before the answer was read");
  assert.equal(answer.status, 413);
  assert.equal(errorCode(answer.body), "PAYLOAD_TOO_LARGE");
});

Deno.test("a short refused body is read and dropped: a client that reads last gets the answer", async () => {
  const bytes = 512 * 1024;
  const answer = await exchange(
    `POST /auth/session HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n` +
      `content-length: ${bytes}\r\n\r\n`,
    bytes,
  );
  assert.equal(answer.reset, false, "the connection was reset before the answer was read");
  assert.equal(answer.status, 413);
  assert.equal(errorCode(answer.body), "PAYLOAD_TOO_LARGE");
});

Deno.test("headers past the limit are 431 with the contract's error body, not a reset", async () => {
  for (const size of [32 * 1024, 64 * 1024]) {
    const answer = await exchange(
      `GET /health/live HTTP/1.1\r\nhost: 127.0.0.1\r\nx-padding: ${"a".repeat(size)}\r\n\r\n`,
      0,
    );
    assert.equal(answer.reset, false, `${size}: reset`);
    assert.equal(answer.status, 431, `${size}`);
    assert.equal(errorCode(answer.body), "HEADERS_TOO_LARGE");
    assertFrontHeaders(answer.head);
  }
});

Deno.test("a request that is not HTTP is 400 with the contract's error body", async () => {
  const answer = await exchange("HELLO THERE\r\n\r\n", 0);
  assert.equal(answer.status, 400);
  assert.equal(errorCode(answer.body), "INVALID_REQUEST");
  assertFrontHeaders(answer.head);
});

// A preview of an empty file, whole: refused 400 INVALID_FILE once admitted, 503 BUSY while the
// one heavy task's admission is held.
const emptyPreview = () => {
  const body = JSON.stringify({ filename: "a.csv", content_base64: "", reason: "after" });
  return exchange(
    upload(body.length, `authorization: Bearer ${writer.key}\r\nconnection: close\r\n`) + body,
    0,
  );
};

// Asks until the preview is admitted, for at most 20 s (the body time limit is 60 s).
const admittedSoon = async () => {
  const until = Date.now() + 20_000;
  while (true) {
    const answer = await emptyPreview();
    if (answer.status !== 503 || Date.now() > until) return answer;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
};

Deno.test("a body whose chunked framing breaks is answered 400 with the contract's error body", async () => {
  const head = `POST /api/v1/imports/preview HTTP/1.1\r\nhost: 127.0.0.1\r\n` +
    `content-type: application/json\r\ntransfer-encoding: chunked\r\nidempotency-key: k\r\n` +
    `authorization: Bearer ${writer.key}\r\n\r\n`;
  for (const broken of ['5\r\n{"a":\r\nZZ\r\n', '5\r\n{"a":\r\n3\r\n1}\r\n0\r\n\r\n']) {
    const answer = await exchange(head + broken, 0);
    assert.equal(answer.reset, false, `${JSON.stringify(broken)}: reset`);
    assert.equal(answer.status, 400, JSON.stringify(broken));
    assert.equal(errorCode(answer.body), "INVALID_REQUEST");
    // Its admission was given back with the answer: the next preview is admitted.
    const next = await emptyPreview();
    assert.equal(next.status, 400);
    assert.equal(errorCode(next.body), "INVALID_FILE");
  }
});

Deno.test("a body in a transfer coding other than chunked is 400, not read as JSON", async () => {
  const answer = await exchange(
    `POST /api/v1/imports/preview HTTP/1.1\r\nhost: 127.0.0.1\r\n` +
      `content-type: application/json\r\ntransfer-encoding: gzip, chunked\r\n` +
      `idempotency-key: k\r\nauthorization: Bearer ${writer.key}\r\nconnection: close\r\n\r\n` +
      `2\r\n{}\r\n0\r\n\r\n`,
    0,
  );
  assert.equal(answer.status, 400);
  assert.equal(errorCode(answer.body), "INVALID_REQUEST");
  assert.match(JSON.parse(answer.body).error.message, /framed/);
});

Deno.test("an Expect other than 100-continue is answered as any request, with the contract's body", async () => {
  const answer = await exchange(
    `GET /api/v1/stores HTTP/1.1\r\nhost: 127.0.0.1\r\nexpect: 200-ok\r\nconnection: close\r\n\r\n`,
    0,
  );
  assert.equal(answer.status, 401);
  assert.equal(errorCode(answer.body), "MISSING_CREDENTIAL");
});

Deno.test("a client that goes away before its body has arrived gives back its admission", async () => {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port: server.port });
  await conn.write(encoder.encode(
    upload(100_000, `authorization: Bearer ${writer.key}\r\n`) + '{"filename":',
  ));
  // Once it is admitted and reading its body, the next preview waits for it. (Until then a preview
  // may be admitted before it: asked again.)
  const until = Date.now() + 20_000;
  let waits = await emptyPreview();
  while (waits.status !== 503 && Date.now() < until) waits = await emptyPreview();
  assert.equal(waits.status, 503);
  conn.close();
  const next = await admittedSoon();
  assert.equal(next.status, 400, "the admission was held until the body's time limit");
  assert.equal(errorCode(next.body), "INVALID_FILE");
});

// Sends the request, shuts the sending side (half-close), and reads the answer to its end.
const halfClosed = (request: string) => exchange(request, 0, false, true);

Deno.test("a client that shuts its sending side after its request still gets the answer", async () => {
  const read = await halfClosed(
    `GET /api/v1/stores HTTP/1.1\r\nhost: 127.0.0.1\r\nauthorization: Bearer ${writer.key}\r\n\r\n`,
  );
  assert.equal(read.status, 200);
  assert.ok(Array.isArray(JSON.parse(read.body).stores));
  const body = JSON.stringify({ filename: "a.csv", content_base64: "", reason: "half" });
  const preview = await halfClosed(
    upload(body.length, `authorization: Bearer ${writer.key}\r\n`) + body,
  );
  assert.equal(preview.status, 400);
  assert.equal(errorCode(preview.body), "INVALID_FILE");
  // One that shuts it before its body has all been sent is told so.
  const cut = await halfClosed(
    upload(body.length + 10, `authorization: Bearer ${writer.key}\r\n`) + body,
  );
  assert.equal(cut.status, 400);
  assert.equal(errorCode(cut.body), "INVALID_REQUEST");
});

Deno.test({
  name: "close the server and the test app",
  fn: async () => {
    await server.shutdown();
    await app.close();
  },
  sanitizeOps: false,
  sanitizeResources: false,
});
