// Collections paced by buffer bytes and by heap growth (src/ops/gc_pacing.ts).
import assert from "node:assert/strict";
import {
  type Collect,
  IDLE_CHECKS,
  IDLE_DRIFT_BYTES,
  IDLE_SLACK_BYTES,
  LONG_IDLE_CHECKS,
  makePacer,
  PACE_BYTES,
  processHeap,
  startHeapPacing,
  STUCK_CHECKS,
} from "../../src/ops/gc_pacing.ts";
import { openMallocTrim } from "../../src/ops/malloc_trim.ts";

Deno.test("a young collection is asked for once per pace of buffer bytes, and never without gc", () => {
  const asked: Array<unknown> = [];
  const pacer = makePacer((options) => {
    asked.push(options);
  }, 1_000);
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

const MIB = 1024 * 1024;

// A V8 stand-in: heap sizes set by the test, collections recorded and settled when the test says.
const fakeHeap = (used: number, total: number) => {
  const heap = { used, total };
  const asked: Array<Parameters<Collect>[0]> = [];
  const settles: Array<() => void> = [];
  const collect: Collect = (options) => {
    asked.push(options);
    if (options.type === "minor") return;
    return new Promise<void>((resolve) => settles.push(resolve));
  };
  // Settles the pending collection, leaving the heap at the sizes given.
  const finish = async (after: { used: number; total: number }) => {
    heap.used = after.used;
    heap.total = after.total;
    settles.shift()?.();
    await Promise.resolve();
  };
  return { heap, asked, collect, finish };
};

Deno.test("a full collection is asked for when the heap has grown past what the last one left", async () => {
  const v8 = fakeHeap(100 * MIB, 200 * MIB);
  const pacing = startHeapPacing({
    collect: v8.collect,
    heap: () => v8.heap,
    growth: 50 * MIB,
    manual: true,
  });
  v8.heap.used = 149 * MIB;
  pacing.tick();
  assert.equal(v8.asked.length, 0);
  v8.heap.used = 150 * MIB;
  pacing.tick();
  assert.deepEqual(v8.asked, [{ type: "major", execution: "async", flavor: "regular" }]);
  // While it runs nothing more is asked, however the heap moves.
  for (const used of [400, 300, 200]) {
    v8.heap.used = used * MIB;
    pacing.tick();
  }
  assert.equal(v8.asked.length, 1);
  // What it left is the new mark: 120 + 50, however long it ran.
  await v8.finish({ used: 120 * MIB, total: 200 * MIB });
  v8.heap.used = 169 * MIB;
  pacing.tick();
  assert.equal(v8.asked.length, 1);
  v8.heap.used = 170 * MIB;
  pacing.tick();
  assert.equal(v8.asked.length, 2);
  await v8.finish({ used: 130 * MIB, total: 200 * MIB });
  // A heap that shrinks on its own lowers the mark.
  v8.heap.used = 60 * MIB;
  pacing.tick();
  v8.heap.used = 110 * MIB;
  pacing.tick();
  assert.equal(v8.asked.length, 3);
  assert.equal(pacing.asked(), 3);
  assert.equal(pacing.idle(), 0);
  pacing.stop();

  let used = 0;
  const off = startHeapPacing({
    collect: undefined,
    heap: () => ({ used, total: used }),
    growth: 1,
  });
  used = 10_000;
  off.tick();
  assert.equal(off.asked(), 0);
  off.stop();
});

Deno.test("growth is the old generation's: a young generation filling up asks for nothing", () => {
  // 40 MiB old after the last collection; the young generation fills to 30 MiB and empties again.
  const heap = { used: 40 * MIB, old: 40 * MIB, total: 100 * MIB };
  const v8 = fakeHeap(heap.used, heap.total);
  const pacing = startHeapPacing({
    collect: v8.collect,
    heap: () => heap,
    growth: 24 * MIB,
    manual: true,
  });
  for (const young of [10, 20, 30, 0, 30]) {
    heap.used = heap.old + young * MIB;
    pacing.tick();
  }
  assert.equal(v8.asked.length, 0, "the young generation is not growth");
  // The old generation grows by the pace: one collection.
  heap.old = 64 * MIB;
  heap.used = heap.old + 5 * MIB;
  pacing.tick();
  assert.equal(v8.asked.length, 1);
  assert.deepEqual(v8.asked[0], { type: "major", execution: "async", flavor: "regular" });
  pacing.stop();

  // The process's own measure: the young generation is part of what is in use, not of the old.
  const measured = processHeap();
  assert.ok(measured.old > 0 && measured.old <= measured.used);
  assert.ok(measured.used <= measured.total);
  const young = Array.from({ length: 2_000 }, (_, i) => ({ i, text: `object ${i}` }));
  const after = processHeap();
  assert.ok(after.used - after.old > 0, "new objects are in the young generation");
  assert.equal(young.length, 2_000);
});

// Pacing over a V8 stand-in of 40 MiB in use and 100 MiB held, checked by hand, counting the
// trims that follow its collections.
const idlePacing = () => {
  const v8 = fakeHeap(40 * MIB, 100 * MIB);
  const counts = { trims: 0 };
  const pacing = startHeapPacing({
    collect: v8.collect,
    heap: () => v8.heap,
    manual: true,
    giveBack: () => counts.trims++,
  });
  const idleFor = (checks: number) => {
    for (let i = 0; i < checks; i++) pacing.tick();
  };
  return { v8, pacing, idleFor, counts };
};

Deno.test("an idle heap is collected once, then again only after V8 took more pages", async () => {
  const { v8, pacing, idleFor, counts } = idlePacing();
  // Work in progress: the heap in use moves, so nothing is asked.
  for (let i = 0; i < 3 * IDLE_CHECKS; i++) {
    v8.heap.used = (40 + (i % 2) * 2) * MIB;
    pacing.tick();
  }
  assert.equal(v8.asked.length, 0);
  // The work ends (this check still sees the heap move), then the heap is still for IDLE_CHECKS
  // checks (drift within IDLE_DRIFT_BYTES): one collection, a regular one (a "last-resort" one
  // would throw compiled code away, and the next burst would start cold).
  v8.heap.used = 38 * MIB;
  pacing.tick();
  idleFor(IDLE_CHECKS - 1);
  assert.equal(v8.asked.length, 0);
  v8.heap.used = 38 * MIB + IDLE_DRIFT_BYTES;
  pacing.tick();
  assert.deepEqual(v8.asked, [{ type: "major", execution: "async", flavor: "regular" }]);
  assert.equal(pacing.idle(), 1);
  idleFor(3 * IDLE_CHECKS);
  assert.equal(v8.asked.length, 1);
  assert.equal(counts.trims, 0);
  await v8.finish({ used: 38 * MIB, total: 50 * MIB });
  // What the runtime freed outside V8's heap is given back once the collection is done.
  assert.equal(counts.trims, 1);
  // Idle again, but V8 holds no more pages than it gave back to: nothing.
  idleFor(3 * IDLE_CHECKS);
  v8.heap.total = 50 * MIB + IDLE_SLACK_BYTES - 1;
  idleFor(3 * IDLE_CHECKS);
  assert.equal(v8.asked.length, 1);
  // Grown by IDLE_SLACK_BYTES of pages, most of them free: collected again after a still second.
  v8.heap.total = 50 * MIB + IDLE_SLACK_BYTES;
  idleFor(IDLE_CHECKS);
  assert.equal(v8.asked.length, 2);
  await v8.finish({ used: 38 * MIB, total: 48 * MIB });
  // A heap grown past its mark is collected at once, idle or not; the idle collection waits for a
  // still second after it.
  v8.heap.used = 90 * MIB;
  v8.heap.total = 100 * MIB;
  pacing.tick();
  assert.equal(v8.asked.length, 3);
  assert.equal(pacing.asked(), 1);
  // A collection asked for by growth is followed by a trim too, once it is done.
  assert.equal(counts.trims, 2);
  await v8.finish({ used: 85 * MIB, total: 100 * MIB });
  assert.equal(counts.trims, 3);
  idleFor(IDLE_CHECKS - 1);
  assert.equal(v8.asked.length, 3);
  idleFor(1);
  assert.equal(v8.asked.length, 4);
  await v8.finish({ used: 85 * MIB, total: 90 * MIB });
  idleFor(3 * IDLE_CHECKS);
  assert.equal(v8.asked.length, 4);
  assert.equal(pacing.idle(), 3);
  assert.equal(counts.trims, 4);
  assert.equal(pacing.asked(), 1);
  assert.ok(v8.asked.every((a) => a.type === "major" && a.flavor === "regular"));
  pacing.stop();
});

Deno.test("a collect that throws, fails or never settles leaves the pacing able to ask again", async () => {
  const heap = { used: 0, total: 0 };
  let calls = 0;
  const pacing = startHeapPacing({
    collect: () => {
      calls++;
      if (calls === 1) throw new Error("no");
      return Promise.reject(new Error("no"));
    },
    heap: () => heap,
    growth: 10,
    manual: true,
  });
  heap.used = 10;
  pacing.tick();
  pacing.tick();
  await Promise.resolve();
  await Promise.resolve();
  pacing.tick();
  assert.equal(calls, 3);
  pacing.stop();

  // A collection that never settles is given up on after STUCK_CHECKS checks.
  let asked = 0;
  const stuck = startHeapPacing({
    collect: () => {
      asked++;
      return new Promise<void>(() => {});
    },
    heap: () => heap,
    growth: 10,
    manual: true,
  });
  heap.used = 100;
  stuck.tick();
  for (let i = 1; i < STUCK_CHECKS; i++) stuck.tick();
  assert.equal(asked, 1);
  stuck.tick();
  assert.equal(asked, 2);
  stuck.stop();
});

Deno.test("V8 takes the options the pacing gives: an async collection settles and gives back pages", async () => {
  // A process of its own: the flag cannot be given to the test runner's isolate. The interval
  // keeps its event loop turning, as the service's listener does: V8's posted task runs in a turn.
  const script = `
    const alive = setInterval(() => {}, 5);
    let keep = [];
    for (let i = 0; i < 400000; i++) keep.push({ i, s: "x" + i });
    const big = Deno.memoryUsage().heapTotal;
    keep = null;
    const regular = gc({ type: "major", execution: "async", flavor: "regular" });
    await regular;
    clearInterval(alive);
    console.log(JSON.stringify({
      promise: regular instanceof Promise,
      big,
      collected: Deno.memoryUsage().heapTotal,
    }));
  `;
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["eval", "--v8-flags=--expose-gc", script],
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
  const text = new TextDecoder().decode(out.stdout).trim();
  const result = JSON.parse(text.split("\n").at(-1)!);
  assert.equal(result.promise, true);
  // Measured: 48-54 MiB of pages, 14-15 after the collection.
  assert.ok(result.collected < result.big / 2, text);
});

Deno.test("glibc's malloc_trim is found where the service runs (Linux with glibc) and runs", () => {
  const trim = openMallocTrim();
  if (Deno.build.os !== "linux") {
    assert.equal(trim, undefined);
    return;
  }
  assert.ok(trim !== undefined, "no malloc_trim in libc.so.6");
  trim();
});

Deno.test("a long pause gets one trim and no collection, and only after the heap moved another", async () => {
  const { v8, pacing, idleFor, counts } = idlePacing();
  // Half a second still: the regular idle collection, then its trim.
  idleFor(IDLE_CHECKS);
  assert.deepEqual(v8.asked, [{ type: "major", execution: "async", flavor: "regular" }]);
  await v8.finish({ used: 38 * MIB, total: 60 * MIB });
  assert.equal(counts.trims, 1);
  // The long pause counts from that collection: nothing before LONG_IDLE_CHECKS still checks.
  idleFor(LONG_IDLE_CHECKS - 1);
  assert.equal(counts.trims, 1);
  // Then glibc gives back what it holds free, and no collection is asked for (a collection that
  // shrank the heap here left the next burst to grow it again, in more collections).
  idleFor(1);
  assert.equal(counts.trims, 2);
  assert.equal(v8.asked.length, 1);
  // Still idle: not again.
  idleFor(3 * LONG_IDLE_CHECKS);
  assert.equal(counts.trims, 2);
  // Work moves the heap (too little for a regular idle collection), then a long pause again: one
  // more trim.
  v8.heap.used = 45 * MIB;
  pacing.tick();
  v8.heap.used = 39 * MIB;
  pacing.tick();
  idleFor(LONG_IDLE_CHECKS - 1);
  assert.equal(counts.trims, 2);
  idleFor(1);
  assert.equal(counts.trims, 3);
  // A short pause after work that took pages: the regular collection.
  v8.heap.used = 60 * MIB;
  v8.heap.total = 60 * MIB + IDLE_SLACK_BYTES;
  pacing.tick();
  idleFor(IDLE_CHECKS);
  assert.equal(v8.asked.length, 2);
  await v8.finish({ used: 50 * MIB, total: 70 * MIB });
  assert.equal(counts.trims, 4);
  assert.ok(v8.asked.every((a) => a.type === "major" && a.flavor === "regular"));
  assert.equal(pacing.idle(), 2);
  assert.equal(pacing.longPauses(), 2);
  assert.equal(pacing.asked(), 0);
  pacing.stop();
});
