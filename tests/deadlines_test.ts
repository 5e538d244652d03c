// Deadlines under one timer: each fires once at its time, in order, never after it was cleared,
// and the queue keeps one timer armed at most whatever the number of requests in flight.
import assert from "node:assert/strict";
import { makeDeadlines } from "../src/http/deadlines.ts";
import { until } from "./until.ts";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

Deno.test("deadlines fire in order, each once, not before their time", async () => {
  const deadlines = makeDeadlines(60);
  const fired: Array<[number, number]> = [];
  const started: Array<number> = [];
  for (let i = 0; i < 5; i++) {
    started.push(performance.now());
    deadlines.add(() => fired.push([i, performance.now()]));
    await sleep(10);
  }
  await until(() => fired.length === 5);
  assert.deepEqual(fired.map(([i]) => i), [0, 1, 2, 3, 4]);
  for (const [i, at] of fired) {
    assert.ok(at - started[i] >= 59, `deadline ${i} after ${at - started[i]} ms`);
  }
  assert.equal(deadlines.pending(), 0);
  deadlines.stop();
});

Deno.test("a cleared deadline never fires, wherever it is in the queue", async () => {
  const deadlines = makeDeadlines(40);
  const fired: Array<number> = [];
  const entries = Array.from({ length: 6 }, (_, i) => deadlines.add(() => fired.push(i)));
  // The head, one in the middle and the tail; clearing twice is harmless.
  for (const i of [0, 3, 5, 3]) entries[i].clear();
  assert.equal(deadlines.pending(), 3);
  await until(() => fired.length === 3);
  await sleep(50);
  assert.deepEqual(fired, [1, 2, 4]);
  entries[1].clear();
  assert.equal(deadlines.pending(), 0);
  deadlines.stop();
});

Deno.test("when every request finishes early nothing fires, and later ones still do", async () => {
  const deadlines = makeDeadlines(30);
  const fired: Array<string> = [];
  for (let i = 0; i < 1_000; i++) deadlines.add(() => fired.push("early")).clear();
  assert.equal(deadlines.pending(), 0);
  await sleep(50);
  deadlines.add(() => fired.push("late"));
  await until(() => fired.length > 0);
  assert.deepEqual(fired, ["late"]);
  deadlines.stop();
});

Deno.test("one timer is armed at most, however many deadlines are pending", async () => {
  let armed = 0;
  let peak = 0;
  const realSet = globalThis.setTimeout;
  const realClear = globalThis.clearTimeout;
  const live = new Set<unknown>();
  // Counts the timers the queue arms through the global functions.
  globalThis.setTimeout = ((fn: () => void, ms?: number) => {
    const id = realSet(() => {
      live.delete(id);
      fn();
    }, ms);
    live.add(id);
    armed++;
    peak = Math.max(peak, live.size);
    return id;
  }) as typeof setTimeout;
  globalThis.clearTimeout = ((id: number) => {
    live.delete(id);
    realClear(id);
  }) as typeof clearTimeout;
  try {
    // The queue's clock stands still while the deadlines are added, then passes them all: how many
    // timers are armed does not depend on how fast this machine adds them.
    let clock = 1_000;
    const deadlines = makeDeadlines(20, () => clock);
    let fired = 0;
    for (let i = 0; i < 500; i++) deadlines.add(() => fired++);
    const cleared = Array.from({ length: 500 }, () => deadlines.add(() => fired++));
    for (const d of cleared) d.clear();
    clock += 20;
    for (let waited = 0; fired < 500 && waited < 10_000; waited += 10) {
      await new Promise((resolve) => realSet(resolve, 10));
    }
    assert.equal(fired, 500);
    assert.equal(peak, 1);
    assert.equal(armed, 1);
    deadlines.stop();
  } finally {
    globalThis.setTimeout = realSet;
    globalThis.clearTimeout = realClear;
  }
});

Deno.test("stop forgets every pending deadline", async () => {
  const deadlines = makeDeadlines(20);
  let fired = 0;
  for (let i = 0; i < 3; i++) deadlines.add(() => fired++);
  deadlines.stop();
  await sleep(50);
  assert.equal(fired, 0);
  assert.equal(deadlines.pending(), 0);
});

Deno.test("the last deadline cleared leaves no timer behind", () => {
  // The test's own op sanitizer fails it if a timer is left armed.
  const deadlines = makeDeadlines(10_000);
  const a = deadlines.add(() => {});
  const b = deadlines.add(() => {});
  a.clear();
  b.clear();
  assert.equal(deadlines.pending(), 0);
});
