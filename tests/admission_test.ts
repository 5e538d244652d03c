// What all clients together may start: a credential and its permission are checked from the headers
// before any body byte is read, request bodies in flight and heavy work (previews, commits,
// exports) are bounded in all and per credential, and past a bound the answer is 503 BUSY with
// Retry-After, the body unread.
import assert from "node:assert/strict";
import { Effect, Option } from "effect";
import { ownOrigin } from "../src/auth/auth_http.ts";
import { DEFAULT_LIMITS } from "../src/config.ts";
import { Budget } from "../src/http/admission.ts";
import { generateSnapshot } from "../src/seed/generate.ts";
import { loadSnapshot } from "../src/seed/load.ts";
import { assertErrorBody, BASE, makeTestApp, readAnswer } from "./helpers.ts";
import { until } from "./until.ts";

const MiB = 1024 * 1024;
const app = await makeTestApp(
  (db) => db.run(Effect.asVoid(loadSnapshot(generateSnapshot({ stores: 3 }), { reset: false }))),
  {
    limits: { ...DEFAULT_LIMITS, bodyMs: 10_000, requestMs: 10_000 },
    admission: { bodyBytes: 8 * MiB, bodyBytesPerKey: 6 * MiB, heavy: 2, heavyPerKey: 1 },
  },
);
const reader = await app.key(["read"]);
const writer = await app.key(["read", "write"]);
const otherWriter = await app.key(["read", "write"]);
const dataset = (await app.call("GET", "/api/v1/dataset", { key: reader.key })).body;

// A body that sends `first` bytes at once and the rest only when `release` is called: a client
// still uploading. Counts what the service pulled from it.
const heldBody = (first: number) => {
  let pulled = 0;
  let release = () => {};
  const released = new Promise<void>((resolve) => (release = resolve));
  let sentFirst = false;
  const stream = new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (!sentFirst) {
        sentFirst = true;
        if (first > 0) {
          pulled += first;
          controller.enqueue(new TextEncoder().encode('{"filename":"a.csv","content_base64":"'));
          return;
        }
      }
      await released;
      controller.close();
    },
  }, { highWaterMark: 0 });
  return { stream, pulled: () => pulled, release };
};

const preview = (key: string | undefined, body: BodyInit, length?: number) => {
  const headers: Record<string, string> = {
    "content-type": "application/json",
    "idempotency-key": crypto.randomUUID(),
  };
  if (key !== undefined) headers.authorization = `Bearer ${key}`;
  if (length !== undefined) headers["content-length"] = String(length);
  return new Request(`${BASE}/api/v1/imports/preview`, { method: "POST", headers, body });
};

Deno.test("a request without a credential is refused before any of its body is read", async () => {
  let pulled = 0;
  const stream = new ReadableStream<Uint8Array>({
    pull(controller) {
      pulled += 64 * 1024;
      controller.enqueue(new Uint8Array(64 * 1024).fill(0x20));
    },
  }, { highWaterMark: 0 });
  const answer = await readAnswer(await app.handler(preview(undefined, stream, 5 * MiB)));
  assertErrorBody(answer, 401, "MISSING_CREDENTIAL");
  assert.equal(pulled, 0, `read ${pulled} bytes`);
  await stream.cancel().catch(() => {});
});

Deno.test("an invalid key and a key without write are refused before the body", async () => {
  for (
    const [key, status, code] of [
      ["esk_not_a_key_at_all_000000000000000000000", 401, "INVALID_CREDENTIAL"],
      [reader.key, 403, "PERMISSION_MISSING"],
    ] as const
  ) {
    const body = heldBody(0);
    const answer = await readAnswer(await app.handler(preview(key, body.stream, 5 * MiB)));
    assertErrorBody(answer, status, code);
    assert.equal(body.pulled(), 0);
    body.release();
  }
  // A profile edit, too: the permission is checked before its body.
  const edit = await app.handler(
    new Request(`${BASE}/api/v1/stores/1/profile`, {
      method: "PATCH",
      headers: { authorization: `Bearer ${reader.key}`, "content-type": "application/json" },
      body: heldBody(0).stream,
    }),
  );
  assertErrorBody(await readAnswer(edit), 403, "PERMISSION_MISSING");
});

Deno.test("a preview whose Idempotency-Key is missing or too long is refused before the body", async () => {
  for (
    const [idempotencyKey, language, message] of [
      [undefined, "en", "idempotency-key: is missing"],
      ["k".repeat(65), "en", "idempotency-key: expected 1 to 64 characters"],
      [undefined, "zh-CN", "idempotency-key：缺少此项"],
    ] as const
  ) {
    const body = heldBody(0);
    const headers: Record<string, string> = {
      authorization: `Bearer ${writer.key}`,
      "content-type": "application/json",
      "content-length": String(5 * MiB),
      "accept-language": language,
    };
    if (idempotencyKey !== undefined) headers["idempotency-key"] = idempotencyKey;
    const answer = await readAnswer(
      await app.handler(
        new Request(`${BASE}/api/v1/imports/preview`, {
          method: "POST",
          headers,
          body: body.stream,
        }),
      ),
    );
    assertErrorBody(answer, 400, "INVALID_REQUEST");
    const text = (answer.body as { error: { message: string } }).error.message;
    assert.ok(text.startsWith(message), text);
    assert.equal(body.pulled(), 0, `read ${body.pulled()} bytes`);
    body.release();
  }
});

Deno.test("bodies in flight are bounded per key and in all: 503 BUSY with Retry-After", async () => {
  // Two announced 4 MiB uploads of one key pass its 6 MiB share; the second is refused unread.
  const first = heldBody(1);
  const firstAnswer = app.handler(preview(writer.key, first.stream));
  // The first holds its share once it is read (an upload without Content-Length holds the
  // endpoint's cap).
  await until(() => first.pulled() > 0, 30_000);
  assert.ok(first.pulled() > 0, "the first upload was not read within 30 s");
  const second = heldBody(0);
  const refused = await readAnswer(await app.handler(preview(writer.key, second.stream, 4 * MiB)));
  assertErrorBody(refused, 503, "BUSY");
  assert.match(refused.headers.get("retry-after") ?? "", /^\d+$/);
  assert.equal(second.pulled(), 0);
  // Another key's small upload still fits in what is left of the whole budget.
  const smallBody = JSON.stringify({ filename: "a.csv" });
  const small = await readAnswer(
    await app.handler(preview(otherWriter.key, smallBody, smallBody.length)),
  );
  assert.equal(small.status, 400, JSON.stringify(small.body));
  // Past the whole budget, any key is refused.
  const third = heldBody(0);
  const whole = await readAnswer(
    await app.handler(preview(otherWriter.key, third.stream, 3 * MiB)),
  );
  assertErrorBody(whole, 503, "BUSY");
  // Once the first upload ends, its share is given back.
  first.release();
  const ended = await readAnswer(await firstAnswer);
  assert.equal(ended.status, 400);
  const again = await readAnswer(
    await app.handler(preview(writer.key, smallBody, smallBody.length)),
  );
  assert.equal(again.status, 400, JSON.stringify(again.body));
  second.release();
  third.release();
});

Deno.test("heavy work is bounded per key and in all, and an export holds its place until sent", async () => {
  const end = new Date(`${dataset.end}T00:00:00Z`);
  const start = new Date(end.getTime() - 30 * 86_400_000).toISOString().slice(0, 10);
  const exportPath = `/api/v1/stores/export?start=${start}&end=${dataset.end}&format=csv`;
  const exportOf = (key: string) =>
    app.handler(
      new Request(BASE + exportPath, { headers: { authorization: `Bearer ${key}` } }),
    );
  const otherReader = await app.key(["read"]);
  const thirdReader = await app.key(["read"]);
  // The first export is answered; its body, unread, keeps its place.
  const first = await exportOf(reader.key);
  assert.equal(first.status, 200);
  // One key runs one heavy task at once.
  assertErrorBody(await readAnswer(await exportOf(reader.key)), 503, "BUSY");
  // Another key runs one; a third is past the two the service runs at once.
  const second = await exportOf(otherReader.key);
  assert.equal(second.status, 200);
  const refused = await readAnswer(await exportOf(thirdReader.key));
  assertErrorBody(refused, 503, "BUSY");
  assert.match(refused.headers.get("retry-after") ?? "", /^\d+$/);
  // Read to the end (or given up), a place is free again.
  assert.ok((await first.text()).length > 0);
  await second.body?.cancel();
  const third = await exportOf(thirdReader.key);
  assert.equal(third.status, 200);
  assert.ok((await third.text()).length > 0);
});

Deno.test("a heavy task's place is held however long the time limits are set", async () => {
  // The export's and the request's limits at their largest: their sum is past what a timer takes.
  const longApp = await makeTestApp(
    (db) => db.run(Effect.asVoid(loadSnapshot(generateSnapshot({ stores: 2 }), { reset: false }))),
    {
      limits: { ...DEFAULT_LIMITS, exportMs: 2_147_483_647, requestMs: 2_147_483_647 },
      admission: { bodyBytes: 8 * MiB, bodyBytesPerKey: 6 * MiB, heavy: 2, heavyPerKey: 1 },
    },
  );
  try {
    const key = (await longApp.key(["read"])).key;
    const end = (await longApp.call("GET", "/api/v1/dataset", { key })).body.end;
    const exportOf = () =>
      longApp.handler(
        new Request(`${BASE}/api/v1/stores/export?start=${end}&end=${end}&format=csv`, {
          headers: { authorization: `Bearer ${key}` },
        }),
      );
    const first = await exportOf();
    assert.equal(first.status, 200);
    await new Promise((resolve) => setTimeout(resolve, 200));
    assertErrorBody(await readAnswer(await exportOf()), 503, "BUSY");
    await first.body?.cancel();
  } finally {
    await longApp.close();
  }
});

Deno.test("malformed JSON is 400 INVALID_JSON", async () => {
  for (const text of ["{bad", '{"access_key": "x"', "[1,]", ""]) {
    const answer = await readAnswer(
      await app.handler(
        new Request(`${BASE}/auth/session`, {
          method: "POST",
          headers: { "content-type": "application/json", origin: BASE },
          body: text,
        }),
      ),
    );
    assertErrorBody(answer, 400, text === "" ? undefined : "INVALID_JSON");
  }
});

Deno.test("without PUBLIC_ORIGIN, only the address the service listens on is its origin", () => {
  const listening = { publicOrigin: Option.none<string>(), host: "0.0.0.0", port: 8000 };
  const own = (host: string, settings = listening) =>
    ownOrigin(`http://${host}/auth/session`, host, settings);
  assert.equal(own("localhost:8000"), "http://localhost:8000");
  assert.equal(own("127.0.0.1:8000"), "http://127.0.0.1:8000");
  assert.equal(own("[::1]:8000"), "http://[::1]:8000");
  // Another site's name made to resolve here (DNS rebinding), or another port: no origin.
  assert.equal(own("evil.test:8000"), undefined);
  assert.equal(own("localhost:8080"), undefined);
  // HOST naming one address: that name too; a port chosen at start: the one reached.
  const named = { ...listening, host: "energy.internal", port: 0 };
  assert.equal(own("energy.internal:41234", named), "http://energy.internal:41234");
  assert.equal(own("evil.test:41234", named), undefined);
  // PUBLIC_ORIGIN, when set, is the one origin.
  const behindProxy = { ...listening, publicOrigin: Option.some("https://energy.example.com") };
  assert.equal(own("evil.test:8000", behindProxy), "https://energy.example.com");
});

Deno.test("a budget never admits past either bound and gives each share back once", () => {
  const budget = new Budget(10, 6);
  const a = budget.take("a", 4);
  assert.ok(a !== undefined);
  assert.equal(budget.take("a", 3), undefined);
  const b = budget.take("b", 6);
  assert.ok(b !== undefined);
  assert.equal(budget.take("c", 1), undefined);
  a();
  a();
  assert.equal(budget.used, 6);
  assert.equal(budget.usedBy("a"), 0);
  // A share larger than a bound counts as the bound: alone, it is admitted.
  b();
  const large = budget.take("a", 100);
  assert.ok(large !== undefined);
  assert.equal(budget.used, 6);
  large();
  assert.equal(budget.used, 0);
});

Deno.test("close", async () => {
  await app.close();
});
