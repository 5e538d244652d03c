// Garbage collections paced by what the service does, where V8's own pacing lets memory pile up
// (docs/performance.md, Memory). Both need V8's gc function, which `--v8-flags=--expose-gc` gives
// (the start task and the container set it); without it nothing is done and V8 collects as it
// would anyway.
//
// - Young collections by buffer bytes. Answer bodies (encoded, or unpacked from a kept answer; a
//   kept answer's shared bytes are not counted) and rows read from PostgreSQL live outside
//   V8's heap, so making them does not fill the young generation, and the collections that free
//   them come only from the objects made beside them: under the energy read load 100 MB of dead
//   buffers waited between two collections, and V8 then ran a full collection for the memory
//   outside its heap. A young collection every PACE_BYTES of buffers frees them while they are few.
// - Full collections by heap growth. A slow read (a year of metrics computed from its inputs) keeps
//   its objects through two young collections, so they move to the old generation; V8 lets that
//   grow to three or four times what was live after the last full collection (from 33 to 104 MB
//   in a pass over the 500 stores' metrics) before it collects. A full collection, run
//   incrementally, is asked for once the heap has grown HEAP_GROWTH_BYTES past it.

// What V8's gc function takes: a young collection runs at once, a full one is started and goes on
// in steps.
export type Collect = (
  options: { readonly type: "minor" } | { readonly type: "major"; readonly execution: "async" },
) => void;

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
const CHECK_MS = 100;
// Checks skipped after asking, while the collection goes on; the heap size after them is the new
// mark.
const SETTLE_CHECKS = 4;

export interface HeapPacing {
  readonly collect: Collect | undefined;
  // The bytes in use in V8's heap now.
  readonly heapUsed: () => number;
  readonly growth?: number;
  // Checks are made by `tick` when given (tests), else every CHECK_MS by an unref'd timer.
  readonly manual?: boolean;
}

// Starts pacing full collections; returns the check (for tests) and the stop.
export const startHeapPacing = (options: HeapPacing) => {
  const growth = options.growth ?? HEAP_GROWTH_BYTES;
  let mark = options.heapUsed();
  let settling = 0;
  let asked = 0;
  const tick = () => {
    if (options.collect === undefined) return;
    const used = options.heapUsed();
    if (settling > 0) {
      settling--;
      if (settling === 0) mark = used;
      return;
    }
    if (used < mark) mark = used;
    if (used - mark < growth) return;
    asked++;
    settling = SETTLE_CHECKS;
    options.collect({ type: "major", execution: "async" });
  };
  const timer = options.manual || options.collect === undefined
    ? undefined
    : setInterval(tick, CHECK_MS);
  if (timer !== undefined) Deno.unrefTimer(timer);
  const pacing = { tick, asked: () => asked, stop: () => clearInterval(timer) };
  if (timer !== undefined) processHeapPacing = pacing;
  return pacing;
};

// The process's pacing of full collections, once started (src/main.ts).
let processHeapPacing: { readonly asked: () => number } | undefined;

// Collections the process asked for so far (GET /metrics).
export const pacedCollections = () => ({
  young: bufferPacer.collections(),
  full: processHeapPacing?.asked() ?? 0,
});
