// Kept answers of current reads: the encoded bytes of recent answers, each with the version of the
// data it was made from, under a byte budget (ANSWER_CACHE_MB), least recently used out first.
// An entry is only a guess: the handler asks the database whether the data is still at that
// version (in the statement that checks the credential, or from what such a statement confirmed
// since the last change noticed: confirmed_reads.ts) and sends the bytes only when it is, the
// way a client's If-None-Match is answered. So the cache never decides what a caller may read nor
// which version is current; it spares building and encoding the same answer again. Keys name the
// read and, where the answer depends on it, the key's store scope. Kept bytes are shared by every
// answer that sends them and never written into.
import { Effect } from "effect";
import { AppConfig } from "../config.ts";
import { currentLanguage } from "../domain/language.ts";
import { span } from "../ops/span.ts";
import { makePermits } from "../ops/permits.ts";

export interface KeptAnswer {
  readonly version: string;
  readonly bytes: Uint8Array<ArrayBuffer>;
}

interface Entry extends KeptAnswer {
  // The bytes gzip-encoded, made the first time a client that accepts it is sent them.
  gzip?: Uint8Array<ArrayBuffer>;
}

// What /metrics reports of the kept answers.
export interface ReadCacheFacts {
  readonly budget: number;
  readonly bytes: number;
  readonly entries: number;
  // Lookups, those that found an answer, and those the kept bytes answered (the data unchanged).
  readonly lookups: number;
  readonly found: number;
  readonly served: number;
}

// What an entry costs besides its bytes (its key's UTF-16 text is counted too): the map's and the
// entry's objects, so that many small answers cannot hold more memory than the budget says.
export const ENTRY_OVERHEAD = 128;

// Keys asked for once and not kept, remembered (without their answers) so that a second ask keeps
// the answer: at most this many, the oldest forgotten first.
export const ASKED_KEYS = 4096;

// The bounded store itself, without effects (tested on its own). An answer is kept the second time
// its key is set within the last ASKED_KEYS keys (or at once when `always`: the store lists, one per
// key scope): reads that are never repeated (a different window each time) then keep nothing,
// instead of turning the whole budget over with answers no one asks for again, each of which would
// be old garbage once pushed out.
export class AnswerStore {
  readonly #entries = new Map<string, Entry>();
  // The entry of kept bytes, for their gzip form.
  readonly #byBytes = new WeakMap<Uint8Array, Entry>();
  readonly #asked = new Set<string>();
  #bytes = 0;
  #lookups = 0;
  #found = 0;
  #served = 0;

  // maxBytes 0: nothing is kept. An answer that costs more than an eighth of the budget is not
  // kept either (one would push out many).
  constructor(readonly maxBytes: number) {}

  get(key: string): KeptAnswer | undefined {
    this.#lookups++;
    const entry = this.#entries.get(key);
    if (entry === undefined) return undefined;
    this.#found++;
    // Most recently used last: eviction takes the first.
    this.#entries.delete(key);
    this.#entries.set(key, entry);
    return entry;
  }

  set(key: string, version: string, bytes: Uint8Array<ArrayBuffer>, always = false): void {
    const known = always || this.#entries.has(key);
    this.delete(key);
    const cost = costOf(key, bytes);
    if (this.maxBytes === 0 || cost > this.maxBytes / 8) return;
    if (!known && !this.#asked.delete(key)) {
      this.#asked.add(key);
      if (this.#asked.size > ASKED_KEYS) {
        for (const oldest of this.#asked) {
          this.#asked.delete(oldest);
          break;
        }
      }
      return;
    }
    const entry: Entry = { version, bytes };
    this.#entries.set(key, entry);
    this.#byBytes.set(bytes, entry);
    this.#bytes += cost;
    this.#fit();
  }

  // Least recently used entries leave until the budget holds.
  #fit() {
    for (const [oldest] of this.#entries) {
      if (this.#bytes <= this.maxBytes) break;
      this.delete(oldest);
    }
  }

  delete(key: string): void {
    const entry = this.#entries.get(key);
    if (entry === undefined) return;
    this.#entries.delete(key);
    this.#byBytes.delete(entry.bytes);
    this.#bytes -= costOf(key, entry.bytes) + (entry.gzip?.byteLength ?? 0);
  }

  // The gzip form of bytes that are a kept answer's, made once with `encode` and kept beside them
  // (counted in the budget); undefined for any other bytes.
  gzipOf(
    bytes: Uint8Array,
    encode: (bytes: Uint8Array) => Uint8Array<ArrayBuffer>,
  ): Uint8Array<ArrayBuffer> | undefined {
    const entry = this.#byBytes.get(bytes);
    if (entry === undefined) return undefined;
    if (entry.gzip === undefined) {
      const gzip = encode(bytes);
      entry.gzip = gzip;
      this.#bytes += gzip.byteLength;
      this.#fit();
      return gzip;
    }
    return entry.gzip;
  }

  // Counts a kept answer sent as the answer.
  served(): void {
    this.#served++;
  }

  facts(): ReadCacheFacts {
    return {
      budget: this.maxBytes,
      bytes: this.#bytes,
      entries: this.#entries.size,
      lookups: this.#lookups,
      found: this.#found,
      served: this.#served,
    };
  }
}

const costOf = (key: string, bytes: Uint8Array) =>
  bytes.byteLength + key.length * 2 + ENTRY_OVERHEAD;

// Answers made at once. A read holds its inputs and its answer's text from its statement to its
// last byte; with every client's read in that state together (32 clients, a year of metrics each)
// the heap held them all at once and grew by as much. Past this many, a read waits for its turn
// holding nothing. Enough that the database works on some reads while the service computes others:
// with fewer, each waited for the other (docs/performance.md).
export const BUILDS_AT_ONCE = 6;

export class ReadCache extends Effect.Service<ReadCache>()("Api/ReadCache", {
  effect: Effect.gen(function* () {
    const config = yield* AppConfig;
    const store = new AnswerStore(config.answerCacheMb * 1024 * 1024);
    const builds = yield* makePermits(BUILDS_AT_ONCE);
    // Builds of an answer under way, by key: callers that ask meanwhile wait for the one build
    // instead of making their own (after a start, every client at once asks for the same lists).
    const building = new Map<string, Promise<void>>();

    // An answer's key in the language of the request (language.ts): answers in another language
    // are other answers.
    const inLanguage = (key: string) =>
      Effect.map(currentLanguage, (language) => language === "en" ? key : `${language}|${key}`);

    // The answer kept under `key`, if any.
    const get = (key: string) =>
      Effect.flatMap(inLanguage(key), (k) => Effect.sync(() => store.get(k))).pipe(
        span("ReadCache.get"),
      );

    const set = (key: string, version: string, bytes: Uint8Array<ArrayBuffer>, always = false) =>
      Effect.flatMap(
        inLanguage(key),
        (k) => Effect.sync(() => store.set(k, version, bytes, always)),
      )
        .pipe(span("ReadCache.set"));

    // Counts a kept answer that was the answer.
    const served = Effect.sync(() => store.served());

    // Runs `effect` once for concurrent callers of the same key: a caller that finds a build under
    // way waits for it to end (whatever its outcome) and then runs `effect` itself, which by then
    // finds the answer kept.
    const once = <A, E, R>(key: string, effect: Effect.Effect<A, E, R>) =>
      Effect.suspend(() => {
        const pending = building.get(key);
        if (pending !== undefined) {
          return Effect.zipRight(Effect.promise(() => pending), effect);
        }
        const done = Promise.withResolvers<void>();
        building.set(key, done.promise);
        return Effect.ensuring(
          effect,
          Effect.sync(() => {
            building.delete(key);
            done.resolve();
          }),
        );
      });

    // Makes an answer (its statement, its computing and its encoding) in its turn.
    const build = <A, E, R>(effect: Effect.Effect<A, E, R>) => builds.withPermit(effect);

    // The gzip form of a kept answer's bytes (made once), for the front door; undefined for others.
    const gzipOf = (bytes: Uint8Array, encode: (bytes: Uint8Array) => Uint8Array<ArrayBuffer>) =>
      store.gzipOf(bytes, encode);

    return { get, set, served, once, build, gzipOf, facts: () => store.facts() } as const;
  }),
}) {}
