// Request bodies as the front door reads them and hands them to the endpoint: the bytes sent,
// whatever their chunking; never more than the stated length or the cap; handed over, not copied.
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { FastCheck as fc } from "effect";
import { bytesBody, readBody } from "../src/http/body.ts";
import { concat } from "./import_zip_fixtures.ts";

// A request whose body arrives in the given chunks, with or without a stated length.
const incoming = (chunks: ReadonlyArray<Uint8Array<ArrayBuffer>>, length?: number) => {
  const headers = new Headers(length === undefined ? {} : { "content-length": String(length) });
  let at = 0;
  let cancelled = false;
  const body = new ReadableStream<Uint8Array<ArrayBuffer>>({
    pull(controller) {
      if (at < chunks.length) controller.enqueue(chunks[at++]);
      else controller.close();
    },
    cancel() {
      cancelled = true;
    },
  }, { highWaterMark: 0 });
  return {
    request: { method: "POST", url: "http://x/", headers, body },
    read: () => at,
    cancelled: () => cancelled,
  };
};

const chunkList = fc.array(fc.uint8Array({ maxLength: 64 }), { maxLength: 12 }).map((list) =>
  list.map((c) => new Uint8Array(c))
);

Deno.test("a body is read as the bytes sent, stated length or not, however it is chunked", async () => {
  await fc.assert(
    fc.asyncProperty(chunkList, fc.boolean(), async (chunks, stated) => {
      const all = concat(chunks);
      const { request } = incoming(chunks, stated ? all.length : undefined);
      const read = await readBody(request, 1024, 10_000);
      assert.equal(read.kind, "ok");
      if (read.kind === "ok") assert.deepEqual(read.bytes, all);
    }),
  );
});

Deno.test("a body in one chunk that is a view of a larger read is given as bytes of their own", async () => {
  // node:http gives a body's chunk as a Buffer over the socket's read (the request's head before it).
  const read = new Uint8Array(4096).map((_, i) => i % 251);
  const chunk = Buffer.from(read.buffer, 1000, 300) as unknown as Uint8Array<ArrayBuffer>;
  const outcome = await readBody(incoming([chunk]).request, 1024, 10_000);
  assert.equal(outcome.kind, "ok");
  if (outcome.kind !== "ok") return;
  assert.deepEqual([...outcome.bytes], [...read.subarray(1000, 1300)]);
  // Its buffer is its own: handing it over (to the embedded database's worker) hands over no more.
  assert.equal(outcome.bytes.buffer.byteLength, 300);
});

Deno.test("a body longer than its stated length is refused as too large, and not read further", async () => {
  const chunks = [new Uint8Array(10), new Uint8Array(10), new Uint8Array(10), new Uint8Array(10)];
  const { request, read, cancelled } = incoming(chunks, 15);
  assert.deepEqual(await readBody(request, 1024, 10_000), { kind: "too-large" });
  assert.equal(read(), 2);
  assert.ok(cancelled());
});

Deno.test("a body over the cap is refused from its stated length before any byte is read", async () => {
  const { request, read } = incoming([new Uint8Array(100)], 2000);
  assert.deepEqual(await readBody(request, 1024, 10_000), { kind: "too-large" });
  assert.equal(read(), 0);
});

Deno.test("a body without a stated length is refused once it passes the cap", async () => {
  const chunks = Array.from({ length: 8 }, () => new Uint8Array(200));
  const { request, read, cancelled } = incoming(chunks);
  assert.deepEqual(await readBody(request, 1024, 10_000), { kind: "too-large" });
  assert.equal(read(), 6);
  assert.ok(cancelled());
});

Deno.test("a body whose client has gone is not waited for", async () => {
  // The first chunk arrives; the rest never does.
  let pulls = 0;
  const body = new ReadableStream<Uint8Array<ArrayBuffer>>({
    pull: (controller) =>
      pulls++ === 0 ? controller.enqueue(new Uint8Array(10)) : new Promise<void>(() => {}),
  }, { highWaterMark: 0 });
  const headers = new Headers({ "content-length": "100" });
  const gone = new AbortController();
  const reading = readBody(
    { method: "POST", url: "http://x/", headers, body },
    1024,
    30_000,
    gone.signal,
  );
  gone.abort();
  assert.deepEqual(await reading, { kind: "gone" });
});

Deno.test("bytes handed to the endpoint as a request body arrive as those very bytes", async () => {
  const bytes = new TextEncoder().encode('{"filename":"a.csv","reason":"meter fix"}');
  const reader = bytesBody(bytes).getReader();
  const first = await reader.read();
  assert.equal(first.value, bytes);
  assert.ok((await reader.read()).done);
  const request = new Request("http://x/", {
    method: "POST",
    body: bytesBody(bytes),
    // @ts-ignore: Deno's RequestInit lacks the standard duplex field that streamed bodies need.
    duplex: "half",
  });
  assert.deepEqual(await request.json(), { filename: "a.csv", reason: "meter fix" });
});
