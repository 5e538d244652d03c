// The keep-alive and idle times as a client sees them over loopback: a kept-alive connection is
// closed after the keep-alive time, not the idle time, and one that keeps asking stays open past
// both. Wall-clock windows: run on its own by `deno task test:timing`, not in the parallel suite.
import assert from "node:assert/strict";
import { serve } from "../../src/http/serve.ts";
import { askLive } from "../helpers.ts";

const server = await serve(
  () =>
    Promise.resolve(
      new Response('{"status":"ok"}', { status: 200, headers: { "content-length": "15" } }),
    ),
  {
    port: 0,
    hostname: "127.0.0.1",
    headersMs: 600,
    requestMs: 5_000,
    idleMs: 1_500,
    keepAliveMs: 800,
  },
);
const connect = () => Deno.connect({ hostname: "127.0.0.1", port: server.port });

Deno.test("a kept-alive connection is closed after the keep-alive time, not the idle time", async () => {
  const conn = await connect();
  assert.match(await askLive(conn), /^HTTP\/1\.1 200/);
  const started = performance.now();
  const buffer = new Uint8Array(1024);
  try {
    while ((await conn.read(buffer)) !== null) {
      // nothing more is sent
    }
  } catch {
    // closed
  }
  const ms = performance.now() - started;
  conn.close();
  // After the keep-alive time (800 ms), not the idle time (1.5 s).
  assert.ok(ms >= 750 && ms < 1_450, `closed after ${Math.round(ms)} ms`);
});

Deno.test("a connection that keeps asking stays open past the keep-alive and idle times", async () => {
  const conn = await connect();
  try {
    // Every 500 ms for 2.5 s: each pause is under the keep-alive time, the whole over both.
    for (let i = 0; i < 6; i++) {
      assert.match(await askLive(conn), /^HTTP\/1\.1 200/);
      await new Promise((r) => setTimeout(r, 500));
    }
  } finally {
    conn.close();
  }
});

Deno.test({
  name: "stop the server",
  fn: async () => {
    await server.shutdown();
  },
  sanitizeOps: false,
  sanitizeResources: false,
});
