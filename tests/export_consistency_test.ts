// An export is one state of the data: its pages are read while the file is sent, and a commit that
// lands between them and changes a store not read yet cuts the file instead of mixing data from
// before and after it; a commit to stores already read leaves the file whole, as it was begun.
import assert from "node:assert/strict";
import { Effect, Either, Layer, ManagedRuntime, Option, Stream } from "effect";
import { AppConfig } from "../src/config.ts";
import type { CallerShape } from "../src/domain/auth.ts";
import { addDays, dayIndex } from "../src/domain/range.ts";
import { EXPORT_PAGE_VALUES, ExportService } from "../src/exports/export_service.ts";
import { generateSnapshot } from "../src/seed/generate.ts";
import { loadSnapshot } from "../src/seed/load.ts";
import { BASE, makeTestApp } from "./helpers.ts";
import { commitDay, storesOf } from "./import_helpers.ts";
import { concat } from "./import_zip_fixtures.ts";

const snapshot = generateSnapshot({ stores: 6 });
const app = await makeTestApp((db) =>
  db.run(Effect.asVoid(loadSnapshot(snapshot, { reset: false })))
);
const writer = await app.key(["read", "write"], { member: "exporter" });
// A year, the longest range an export takes.
const end = snapshot.dataset.end;
const start = addDays(end, -365);
const stores = await storesOf(app, writer.key);
const days = dayIndex(end) - dayIndex(start) + 1;
const perPage = Math.max(1, Math.floor(EXPORT_PAGE_VALUES / days));
assert.ok(perPage < stores.length, "the export of every store takes more than one page");

const decoder = new TextDecoder();

// The whole dataset as CSV, its body held by a reader that the test pulls.
const openExport = async () => {
  const response = await app.handler(
    new Request(`${BASE}/api/v1/stores/export?start=${start}&end=${end}&format=csv`, {
      headers: { authorization: `Bearer ${writer.key}` },
    }),
  );
  assert.equal(response.status, 200, await response.clone().text());
  return response.body!.getReader();
};

// The rest of a body: its text, or the error that cut it.
const drain = async (reader: ReadableStreamDefaultReader<Uint8Array>, head: Uint8Array) => {
  const parts = [head];
  try {
    while (true) {
      const { done, value } = await reader.read();
      if (done) return { text: decoder.decode(concat(parts)), cut: undefined };
      parts.push(value);
    }
  } catch (error) {
    return { text: undefined, cut: error };
  }
};

// The stores in the file's order (its first page first), and a value of a store-day in a file.
// Brand, store, date and value are never quoted in these files; a line of a note with a line
// break matches no store.
const records = (text: string) => text.split(/\r?\n/).slice(1).map((line) => line.split(","));
const order = async () => {
  const reader = await openExport();
  const { text } = await drain(reader, new Uint8Array(0));
  const known = new Set(stores.map((s) => s.name));
  const names = [...new Set(records(text!).map((r) => r[1]).filter((n) => known.has(n)))];
  assert.equal(names.length, stores.length);
  return names.map((name) => stores.find((s) => s.name === name)!);
};
const valueIn = (text: string, store: { name: string }, day: string) =>
  records(text).find((r) => r[1] === store.name && r[2] === day)?.[3];

// The export as the service makes it, pulled one chunk at a time (the HTTP layer sends a chunk
// when the client has taken the one before): its first chunk, then `meanwhile`, then the rest, as
// text or the error that cut it.
const runtime = ManagedRuntime.make(
  ExportService.Default.pipe(Layer.provide(Layer.merge(app.db.layer, AppConfig.make({})))),
);
const caller: CallerShape = {
  memberId: 0,
  keyId: 0,
  loginName: "exporter",
  displayName: null,
  dbRole: "READER",
  permissions: new Set(["read"]),
  storeIds: null,
  viaSession: false,
};
const exportAround = (meanwhile: () => Promise<void>) =>
  runtime.runPromise(Effect.scoped(Effect.gen(function* () {
    const service = yield* ExportService;
    const file = yield* service.exportFile(caller, {
      start,
      end,
      format: "csv",
      storeIds: undefined,
      legacy: "blank",
    });
    const pull = yield* Stream.toPull(file.body);
    const parts = [...(yield* pull)];
    yield* Effect.promise(meanwhile);
    while (true) {
      const next = yield* Effect.either(pull);
      if (Either.isRight(next)) parts.push(...next.right);
      else if (Option.isNone(next.left)) return { text: decoder.decode(concat(parts)) };
      else return { cut: next.left.value };
    }
  })));

Deno.test("a commit to a store the export has not read yet cuts the file", async () => {
  const inOrder = await order();
  const last = inOrder.at(-1)!;
  const around = await exportAround(() => commitDay(app, writer.key, last, end, "4321.0000"));
  assert.equal(around.text, undefined, "the file is cut, not whole");
  assert.equal(around.cut?.code, "BUSY");
  // Begun after the commit, the file is whole and holds it.
  const { text } = await drain(await openExport(), new Uint8Array(0));
  assert.equal(valueIn(text!, last, end), "4321.0000");
});

Deno.test("a commit to a store the export has read leaves the file whole, as it was begun", async () => {
  const inOrder = await order();
  const firstStore = inOrder[0];
  const { text: before } = await drain(await openExport(), new Uint8Array(0));
  const around = await exportAround(() => commitDay(app, writer.key, firstStore, end, "1234.0000"));
  assert.equal(around.cut, undefined);
  assert.equal(around.text, before, "the file shows the data as it was when it began");
  const { text: after } = await drain(await openExport(), new Uint8Array(0));
  assert.equal(valueIn(after!, firstStore, end), "1234.0000");
});

Deno.test({
  name: "export consistency test app closes",
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    await runtime.dispose();
    await app.close();
  },
});
