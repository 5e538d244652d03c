// Collections paced by buffer bytes and by heap growth (src/ops/gc_pacing.ts).
import assert from "node:assert/strict";
import { type Collect, makePacer, PACE_BYTES, startHeapPacing } from "../src/ops/gc_pacing.ts";

Deno.test("a young collection is asked for once per pace of buffer bytes, and never without gc", () => {
  const asked: Array<unknown> = [];
  const pacer = makePacer((options) => asked.push(options), 1_000);
  for (let i = 0; i < 9; i++) pacer.noteBytes(100);
  assert.equal(asked.length, 0);
  pacer.noteBytes(100);
  assert.deepEqual(asked, [{ type: "minor" }]);
  // One large buffer is one collection, and the count starts again after it.
  pacer.noteBytes(5_000);
  assert.equal(asked.length, 2);
  pacer.noteBytes(999);
  assert.equal(asked.length, 2);
  pacer.noteBytes(1);
  assert.equal(asked.length, 3);
  assert.equal(pacer.collections(), 3);

  const none = makePacer(undefined);
  none.noteBytes(PACE_BYTES * 10);
  assert.equal(none.collections(), 0);
});

Deno.test("a full collection is asked for when the heap has grown past its mark, then the mark moves", () => {
  const asked: Array<Parameters<Collect>[0]> = [];
  let used = 100;
  const pacing = startHeapPacing({
    collect: (options) => asked.push(options),
    heapUsed: () => used,
    growth: 50,
    manual: true,
  });
  used = 149;
  pacing.tick();
  assert.equal(asked.length, 0);
  used = 150;
  pacing.tick();
  assert.deepEqual(asked, [{ type: "major", execution: "async" }]);
  // While the collection goes on nothing more is asked, however the heap moves.
  for (const u of [400, 300, 200, 120]) {
    used = u;
    pacing.tick();
  }
  assert.equal(asked.length, 1);
  // The size after the collection is the new mark: 120 + 50.
  used = 160;
  pacing.tick();
  assert.equal(asked.length, 1);
  used = 170;
  pacing.tick();
  assert.equal(asked.length, 2);
  assert.equal(pacing.asked(), 2);
  // A heap that shrinks on its own lowers the mark.
  for (let i = 0; i < 4; i++) pacing.tick();
  used = 60;
  pacing.tick();
  used = 110;
  pacing.tick();
  assert.equal(asked.length, 3);
  pacing.stop();

  const off = startHeapPacing({ collect: undefined, heapUsed: () => used, growth: 1 });
  used = 10_000;
  off.tick();
  assert.equal(off.asked(), 0);
  off.stop();
});
