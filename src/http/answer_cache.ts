// The encoded bytes of recent answers, each with the version of the data it was made from, in a
// bounded number of bytes. An entry is only a guess: the reader asks the database whether the data
// is still at that version (in the statement that checks the credential), and uses the bytes only
// when it is, the way a client's If-None-Match is answered. So the cache never decides what a caller
// may read nor which version is current; it spares building, decoding and encoding the same answer
// again (about 0.4 ms of the service and 1 ms of PostgreSQL for a year of energy days).
// Answers are kept deflated (level 1: a year of energy days, 160 KB, is kept in 15 KB, packed in
// 0.1 ms and unpacked in 0.1 ms), so a budget holds about ten times as many. An answer is unpacked
// into one buffer of its known length: no pieces to join, one allocation per answer served.
import zlib from "node:zlib";

// How answers are kept: pack on the way in, unpack on the way out, exactly. `length` is the
// unpacked size (what was given to pack).
export interface Packing {
  readonly pack: (bytes: Uint8Array) => Uint8Array;
  readonly unpack: (packed: Uint8Array, length: number) => Uint8Array;
}

// zlib's smallest output chunk.
const MIN_CHUNK = 64;

export const DEFLATE: Packing = {
  pack: (bytes) => zlib.deflateRawSync(bytes, { level: 1 }),
  // An output chunk one byte larger than the answer: inflated in one piece (16 KB pieces then
  // joined would be three times the work and twice the memory for a year of days). A chunk the
  // answer fills exactly makes zlib allocate a second one before it sees the end, unused: 160 KB of
  // garbage outside V8's heap for a year of energy days, which counts toward V8's limit for a full
  // collection, and the unpacking took 0.18-0.19 ms instead of 0.10. The spare byte is then given
  // back (a transfer to the answer's length: 0.00-0.01 ms), so that the bytes are their buffer's
  // whole and can be released once written (lanes' releaseBody).
  unpack: (packed, length) => {
    const out = zlib.inflateRawSync(packed, { chunkSize: Math.max(MIN_CHUNK, length + 1) });
    const buffer = out.buffer;
    // A chunk under 4 KB is a part of node:buffer's shared pool: left as it is.
    return buffer instanceof ArrayBuffer && out.byteOffset === 0 &&
        buffer.byteLength === out.byteLength + 1
      ? new Uint8Array(buffer.transfer(out.byteLength))
      : out;
  },
};

export interface CachedAnswer {
  readonly version: string;
  readonly packed: Uint8Array;
  // The answer's own size in bytes.
  readonly length: number;
}

// Answers of at least this size that are served again are also kept unpacked (a catalog of 500
// stores is 0.4 MB): the same bytes then answer every request, where unpacking them each time made
// 0.4 MB of garbage per request (at 1,700 requests a second, 0.6 GB a second to collect).
export const PLAIN_MIN_BYTES = 256 * 1024;
// The same for answers that many callers share, whatever their size from this one up (the list of
// 500 stores is 120 KB, asked for as often as the catalog): `set`'s plainFrom. Under the stores
// list at c=32, unpacking each answer made 190 MB of buffers a second, and peak RSS rose by 30-40
// MiB over the catalog's.
export const SHARED_PLAIN_MIN_BYTES = 16 * 1024;
// Answers under this size are kept as they are (a copy) and served as they are, never owned by the
// caller: deflate takes little off them (a year-to-date periods answer, about 2 KB, to about 1 KB),
// and unpacking one made a zlib stream for every request (about 3 KB of objects, and its state
// outside the heap): after the request itself, the largest part of what a kept periods answer's
// request allocated.
export const AS_IS_BELOW_BYTES = 4 * 1024;
// The unpacked copies take at most this share of the budget; once it is full no more are made
// (none is dropped for another: each dropped copy would be old garbage).
const PLAIN_SHARE = 4;

interface Entry extends CachedAnswer {
  // Times its bytes were served unpacked from `packed`.
  served: number;
  // The least size at which it is kept unpacked once served again.
  readonly plainFrom: number;
  plain?: Uint8Array<ArrayBuffer>;
  // Still in the cache (a caller may hold an entry that has since left it).
  kept: boolean;
}

// What an entry costs besides its packed bytes (its key's UTF-16 text is counted too): the map's
// and the entry's objects, so that many small answers cannot hold more memory than the budget says.
export const ENTRY_OVERHEAD = 128;

const costOf = (key: string, entry: CachedAnswer) =>
  entry.packed.byteLength + key.length * 2 + ENTRY_OVERHEAD +
  ((entry as Entry).plain?.byteLength ?? 0);

// What /metrics reports of the kept answers.
export interface AnswerCacheFacts {
  readonly budget: number;
  readonly bytes: number;
  readonly entries: number;
  // Requests that found a kept answer, and those the kept bytes answered (the data unchanged).
  readonly found: number;
  readonly served: number;
  readonly lookups: number;
}

export class AnswerCache {
  readonly #entries = new Map<string, Entry>();
  #bytes = 0;
  #plainBytes = 0;
  #lookups = 0;
  #found = 0;
  #served = 0;

  // maxBytes 0: nothing is kept. An answer that costs more than an eighth of the budget is not
  // kept either (one would push out many). `bytes` counts what the entries cost.
  constructor(readonly maxBytes: number, readonly packing: Packing = DEFLATE) {}

  get size(): number {
    return this.#entries.size;
  }

  get bytes(): number {
    return this.#bytes;
  }

  get(key: string): CachedAnswer | undefined {
    this.#lookups++;
    const entry = this.#entries.get(key);
    if (entry === undefined) return undefined;
    this.#found++;
    // Most recently used last: eviction takes the first.
    this.#entries.delete(key);
    this.#entries.set(key, entry);
    return entry;
  }

  // Whether an answer is kept under `key`, without counting a lookup or refreshing it.
  peek(key: string): CachedAnswer | undefined {
    return this.#entries.get(key);
  }

  // plainFrom: the least size at which the answer is kept unpacked too once served again
  // (SHARED_PLAIN_MIN_BYTES for an answer many callers share).
  set(key: string, version: string, bytes: Uint8Array, plainFrom = PLAIN_MIN_BYTES): void {
    this.delete(key);
    if (this.maxBytes === 0) return;
    // Under AS_IS_BELOW_BYTES `packed` holds the answer as it is.
    const packed = bytes.byteLength < AS_IS_BELOW_BYTES ? bytes.slice() : this.packing.pack(bytes);
    const entry: Entry = {
      version,
      packed,
      length: bytes.byteLength,
      served: 0,
      plainFrom,
      kept: true,
    };
    if (costOf(key, entry) > this.maxBytes / 8) return;
    this.#entries.set(key, entry);
    this.#bytes += costOf(key, entry);
    this.#fit();
  }

  // Least recently used entries leave until the budget holds.
  #fit() {
    for (const [oldest] of this.#entries) {
      if (this.#bytes <= this.maxBytes) break;
      this.delete(oldest);
    }
  }

  // The bytes of a kept answer that is the answer (the data unchanged), as they were given to set,
  // and whether they are the caller's alone: unpacked for this call and not kept (`owned`). Bytes
  // not owned may be the very bytes given to earlier callers: nobody writes into them. Owned bytes
  // are the caller's to release once written (laneJson's `owned`), so they need no collection to be
  // freed.
  take(answer: CachedAnswer): { readonly bytes: Uint8Array<ArrayBuffer>; readonly owned: boolean } {
    this.#served++;
    const entry = answer as Entry;
    if (entry.length < AS_IS_BELOW_BYTES) {
      return { bytes: entry.packed as Uint8Array<ArrayBuffer>, owned: false };
    }
    if (entry.plain !== undefined) return { bytes: entry.plain, owned: false };
    const bytes = this.packing.unpack(entry.packed, entry.length);
    const plain = new Uint8Array(bytes.buffer as ArrayBuffer, bytes.byteOffset, bytes.byteLength);
    entry.served++;
    if (
      entry.kept && entry.served >= 2 && entry.length >= entry.plainFrom &&
      this.#plainBytes + entry.length <= this.maxBytes / PLAIN_SHARE
    ) {
      entry.plain = plain;
      this.#plainBytes += entry.length;
      this.#bytes += entry.length;
      this.#fit();
      return { bytes: plain, owned: false };
    }
    return { bytes: plain, owned: true };
  }

  facts(): AnswerCacheFacts {
    return {
      budget: this.maxBytes,
      bytes: this.#bytes,
      entries: this.#entries.size,
      found: this.#found,
      served: this.#served,
      lookups: this.#lookups,
    };
  }

  delete(key: string): void {
    const entry = this.#entries.get(key);
    if (entry === undefined) return;
    this.#entries.delete(key);
    this.#bytes -= costOf(key, entry);
    this.#plainBytes -= entry.plain?.byteLength ?? 0;
    entry.kept = false;
  }
}
