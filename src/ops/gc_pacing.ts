// Garbage collections paced by what the service does, where V8's own pacing lets memory pile up
// (docs/performance.md, Memory). All need V8's gc function, which `--v8-flags=--expose-gc` gives
// (the start task and the container set it); without it nothing is done and V8 collects as it
// would anyway.
//
// - Young collections by buffer bytes. Answer bodies (encoded, or unpacked from a kept answer; a
//   kept answer's shared bytes, and bytes released once written, are not counted) and rows read
//   from PostgreSQL live outside V8's heap, so making them does not fill the young generation, and
//   the collections that free them come only from the objects made beside them: under the energy
//   read load 100 MB of dead buffers waited between two collections, and V8 then ran a full
//   collection for the memory outside its heap. A young collection every PACE_BYTES of buffers
//   frees them while they are few.
// - Full collections by heap growth. A slow read (a year of metrics computed from its inputs) keeps
//   its objects through two young collections, so they move to the old generation; V8 lets that
//   grow to three or four times what was live after the last full collection (from 33 to 104 MB
//   in a pass over the 500 stores' metrics) before it collects. A full collection is asked for
//   once the old generation has grown HEAP_GROWTH_BYTES past what the last one left. After it,
//   glibc gives back the free pages in its arenas too: the buffers that collection freed (answers,
//   rows) were free but resident until the next pause. Measured under the reads at c=32 (2026-11-28,
//   two runs each way): peak RSS 240-250 MiB against 249-260, and 184 against 244-257 MiB once the
//   periods read had run; no cost the flags' run resolves.
// - Collections when idle. After a burst of work (an import: 44 MiB live, 106 MiB of V8's pages
//   held, RSS 254 MiB) the service, once idle for half a second, asks for one full collection,
//   which frees what the burst left (V8 gives back most of the pages it emptied: 48 -> 15 MiB in
//   tests/gc_pacing_test.ts), then has glibc give back what it freed. Still idle ten seconds later,
//   it has glibc give back what it holds free once more, and collects nothing. Until 2026-11-28 it
//   asked there for V8's "last-resort" collection: two whole collections, after which V8 let the
//   young generation start again from its least and set the old generation's limit just above
//   what was live, so the next burst paid for it in more collections (docs/performance.md, Memory,
//   "2026-11-28 11:30-12:50"). V8's own memory reducer does the same 8 s after a full collection
//   when the process is then idle, and the idle collection here is such a full collection: the
//   start task and the container turn it off (`--no-memory-reducer`; an idle service then holds
//   about 185 MiB instead of 133 after the reads, and the reads after a pause cost no more than
//   in a process without flags: docs/performance.md, Memory, "2026-11-28 13:30-15:30"). Asked for
//   after every half second of pause, as it was until 2026-11-27, it cost 25 % more CPU per request
//   on periods in turns of 4 s, and XLSX previews took 0.88 s against 0.60.
// - What it costs. The full collections asked for here are whole (no incremental marking) and V8
//   measures them as fast; from its collections' speed against the program's allocation speed V8
//   chooses the old generation's next limit, so after them it chooses low growing factors (1.1-1.8
//   under load, against 1.3-3.4 in a process without the flags; `--trace-gc-verbose`) and runs 2-3
//   times as many incremental full collections of its own. With the young generation's cap, the
//   collector took 3.2-13.8 points more of the CPU time on the reads (docs/performance.md, Memory,
//   2026-11-28). The start task and the container fix the factor at 1.75
//   (`--heap-growing-percent=75`): 0.3-3.3 points, and the whole benchmark's peak at 239 MiB.

import { getHeapSpaceStatistics } from "node:v8";

// What V8's gc function takes (of it, what the pacing asks for). A young collection runs at once. A
// full one with `execution: "async"` is posted as a task of V8's and runs whole, between two of the
// event loop's turns; the promise it returns is settled when it is done.
export type Collect = (
  options:
    | { readonly type: "minor" }
    | { readonly type: "major"; readonly execution: "async"; readonly flavor: "regular" },
) => void | Promise<void>;

const exposed = (globalThis as { gc?: unknown }).gc;

// V8's gc function, when the flag exposed it.
export const v8Collect: Collect | undefined = typeof exposed === "function"
  ? exposed as Collect
  : undefined;

// 8 MiB: about fifty years of energy days. Measured under the energy read load at c=32: peak RSS
// 215-235 MiB paced every 8 MiB against 265-285 MiB unpaced, with as many requests a second.
export const PACE_BYTES = 8 * 1024 * 1024;

// A counter of buffer bytes that asks for a young collection each time `every` bytes have passed.
export const makePacer = (collect: Collect | undefined, every: number = PACE_BYTES) => {
  let since = 0;
  let collections = 0;
  const noteBytes = (bytes: number) => {
    if (collect === undefined) return;
    since += bytes;
    if (since < every) return;
    since = 0;
    collections++;
    collect({ type: "minor" });
  };
  return { noteBytes, collections: () => collections };
};

// The process's pacer of young collections.
export const bufferPacer = makePacer(v8Collect);

// Bytes of buffers made (an answer's body encoded or unpacked, rows read from the database).
export const noteBufferBytes = bufferPacer.noteBytes;

// 24 MiB over what was live. Measured over a pass of the 500 stores' metrics then 8 s of them at
// c=32: V8's heap pages 94-108 MiB against 149-162 MiB, peak RSS 242 against 307 MiB.
export const HEAP_GROWTH_BYTES = 24 * 1024 * 1024;
// Idle after work: the heap in use has not moved by more than IDLE_DRIFT_BYTES for IDLE_CHECKS
// checks (0.5 s), and V8 holds IDLE_SLACK_BYTES more pages than the last idle collection left it
// (what they hold is live or dead: only a collection tells). One collection then gives back what
// it can; the next waits until V8 has taken as much again. Still for LONG_IDLE_CHECKS checks (10
// s), glibc gives back what it holds free once, until the heap moves again.
export const IDLE_CHECKS = 5;
export const LONG_IDLE_CHECKS = 100;
export const IDLE_DRIFT_BYTES = 512 * 1024;
export const IDLE_SLACK_BYTES = 16 * 1024 * 1024;
const CHECK_MS = 100;
export const STUCK_CHECKS = 100;

export interface HeapPacing {
  readonly collect: Collect | undefined;
  // The bytes in use in V8's heap now, the bytes of the pages V8 holds, and of the bytes in use
  // those outside the young generation (`old`; all of `used` when not given).
  readonly heap: () => { readonly used: number; readonly total: number; readonly old?: number };
  readonly growth?: number;
  // Run after each full collection asked for (idle or by growth), and once in a long pause: gives
  // back what the runtime freed outside V8's heap (src/ops/malloc_trim.ts).
  readonly giveBack?: () => void;
  // Checks are made by `tick` when given (tests), else every CHECK_MS by an unref'd timer.
  readonly manual?: boolean;
}

// Starts pacing full collections; returns the check (for tests) and the stop.
export const startHeapPacing = (options: HeapPacing) => {
  const growth = options.growth ?? HEAP_GROWTH_BYTES;
  const { collect } = options;
  // What the old generation held after the last full collection (or the least seen since).
  const oldOf = (heap: ReturnType<HeapPacing["heap"]>) => heap.old ?? heap.used;
  let mark = oldOf(options.heap());
  // Pages V8 held after the last idle collection (none yet: the first idle moment after the start
  // gives back what loading the modules took).
  let idleTotal = 0;
  let running = false;
  let runningChecks = 0;
  let asked = 0;
  let idle = 0;
  let still = 0;
  let lastUsed = mark;
  // Whether the long pause's trim was done since the heap last moved.
  let trimmed = false;
  let longPauses = 0;
  // A full collection, after which the runtime gives back what it freed; `whenIdle`: an idle one.
  const run = (whenIdle: boolean) => {
    if (collect === undefined) return;
    running = true;
    runningChecks = 0;
    still = 0;
    const done = () => {
      running = false;
      const heap = options.heap();
      mark = oldOf(heap);
      lastUsed = heap.used;
      if (whenIdle) idleTotal = heap.total;
      options.giveBack?.();
    };
    let result: void | Promise<void>;
    try {
      result = collect({ type: "major", execution: "async", flavor: "regular" });
    } catch {
      running = false;
      return;
    }
    if (result instanceof Promise) result.then(done, () => running = false);
    else done();
  };
  const tick = () => {
    if (collect === undefined) return;
    if (running) {
      if (++runningChecks < STUCK_CHECKS) return;
      // Not settled after STUCK_CHECKS checks: given up on (its task never ran).
      running = false;
    }
    const heap = options.heap();
    const old = oldOf(heap);
    if (old < mark) mark = old;
    if (old - mark >= growth) {
      asked++;
      run(false);
      return;
    }
    const moved = Math.abs(heap.used - lastUsed) > IDLE_DRIFT_BYTES;
    still = moved ? 0 : still + 1;
    lastUsed = heap.used;
    if (moved) trimmed = false;
    // `run` starts the count of still checks again: the long pause counts from the last collection.
    if (still >= IDLE_CHECKS && heap.total - idleTotal >= IDLE_SLACK_BYTES) {
      idle++;
      run(true);
    } else if (still >= LONG_IDLE_CHECKS && !trimmed) {
      trimmed = true;
      longPauses++;
      options.giveBack?.();
    }
  };
  const timer = options.manual || collect === undefined ? undefined : setInterval(tick, CHECK_MS);
  if (timer !== undefined) Deno.unrefTimer(timer);
  const pacing = {
    tick,
    asked: () => asked,
    idle: () => idle,
    longPauses: () => longPauses,
    stop: () => clearInterval(timer),
  };
  if (timer !== undefined) processHeapPacing = pacing;
  return pacing;
};

const YOUNG_SPACES = new Set(["new_space", "new_large_object_space"]);

// The process's heap for startHeapPacing: in use and held (Deno.memoryUsage), and in use outside
// the young generation (V8's heap spaces). The young generation fills and empties between two young
// collections (up to 16 MiB with the flags of then): counted in the growth, it asked for a
// full collection when the old generation had grown by as little as a third of HEAP_GROWTH_BYTES.
export const processHeap = () => {
  let young = 0;
  for (const space of getHeapSpaceStatistics()) {
    if (YOUNG_SPACES.has(space.space_name)) young += space.space_used_size;
  }
  const { heapUsed, heapTotal } = Deno.memoryUsage();
  return { used: heapUsed, total: heapTotal, old: heapUsed - young };
};

// The process's pacing of full collections, once started (src/main.ts).
let processHeapPacing: { readonly asked: () => number; readonly idle: () => number } | undefined;

// Collections the process asked for so far (GET /metrics).
export const pacedCollections = () => ({
  young: bufferPacer.collections(),
  full: processHeapPacing?.asked() ?? 0,
  idle: processHeapPacing?.idle() ?? 0,
});
