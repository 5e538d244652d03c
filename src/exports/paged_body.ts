// A file body written while it is sent: pages of rows read from the database one at a time, each
// page written as bytes one slice at a time, each slice made only when the client has taken the one
// before. The event loop is let go before every slice, so an export never holds it for long; a page
// is read only when every byte of the page before has been taken, so a slow client holds one page
// and a few slices, whatever the file's size.
import { Effect, Option, Stream } from "effect";

// How one file is written from its pages. The writer may keep state (a ZIP's offsets): it is made
// for each run of the body.
export interface PageWriter<P> {
  // The bytes before the first page (may be empty).
  readonly head: () => Uint8Array;
  // The number of slices a page is written in, and the bytes of slice `index` (in order).
  readonly slices: (page: P) => number;
  readonly slice: (page: P, index: number) => Uint8Array;
  // The bytes after the last page.
  readonly tail: () => Uint8Array;
}

export interface PagedBody<P, E> {
  // Page 0, read before the answer starts: a failure to read it is an ordinary error answer.
  readonly first: P;
  readonly pageCount: number;
  // Reads page `index` (1 .. pageCount - 1).
  readonly read: (index: number) => Effect.Effect<P, E>;
  readonly writer: () => PageWriter<P>;
  // The performance.now() past which no more bytes are made: the body fails with late().
  readonly deadline: number;
  readonly late: () => E;
}

/**
 * Lets timers and sockets run before the fiber goes on: an immediate, which runs once the event
 * loop has polled for I/O. Effect.yieldNow resumes on a microtask (a timer only every 2,048th
 * time), and microtasks run before any I/O is polled; a zero-delay timer waits a millisecond or two
 * even when nothing else is waiting.
 */
export const yieldToEventLoop: Effect.Effect<void> = Effect.async<void>((resume) => {
  const immediate = setImmediate(() => resume(Effect.void));
  return Effect.sync(() => clearImmediate(immediate));
});

const EMPTY: Uint8Array = new Uint8Array(0);

// Slices are made back to back for at most this long, then the event loop gets its turn: other
// requests wait at most this long for each export running (and the heavy-work admission bounds how
// many run), and a lone export does not pay a timer's delay for every slice.
const SLICES_FOR_MS = 10;

/**
 * The body as a stream pulled one chunk at a time (one chunk per pull, none made ahead). A failure
 * to read a page, or the deadline passing, fails the stream: the answer has started, so the HTTP
 * layer ends the connection without a clean end and the client sees a cut body.
 */
export const pagedBody = <P, E>(body: PagedBody<P, E>): Stream.Stream<Uint8Array, E> => {
  const { pageCount, read, deadline, late } = body;
  // Page 0 is handed to the one run of the body and then let go, like every page after it.
  let unsent: { readonly page: P } | undefined = { page: body.first };
  const makeWriter = body.writer;
  return Stream.suspend(() => {
    if (unsent === undefined) return Stream.die(new Error("a paged body is sent once"));
    let page: P | undefined = unsent.page;
    unsent = undefined;
    const writer = makeWriter();
    let index = 0;
    let slice = 0;
    let started = false;
    let finished = false;
    let ranSince = performance.now();
    const inTime = Effect.suspend(() =>
      performance.now() > deadline ? Effect.fail(Option.some(late())) : Effect.void
    );
    // The next non-empty chunk, or None at the end.
    const next: Effect.Effect<Uint8Array, Option.Option<E>> = Effect.gen(function* () {
      while (true) {
        let bytes = EMPTY;
        if (!started) {
          yield* inTime;
          started = true;
          bytes = writer.head();
        } else if (page !== undefined && slice < writer.slices(page)) {
          if (performance.now() - ranSince >= SLICES_FOR_MS) {
            yield* yieldToEventLoop;
            ranSince = performance.now();
          }
          yield* inTime;
          bytes = writer.slice(page, slice++);
        } else if (index + 1 < pageCount) {
          yield* inTime;
          // The page before is let go first: one page is held at a time.
          page = undefined;
          page = yield* Effect.mapError(read(++index), Option.some);
          slice = 0;
        } else if (!finished) {
          yield* inTime;
          finished = true;
          page = undefined;
          bytes = writer.tail();
        } else {
          return yield* Effect.fail(Option.none());
        }
        if (bytes.length > 0) return bytes;
      }
    });
    return Stream.repeatEffectOption(next);
  });
};
