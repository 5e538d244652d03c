// The kept answers: within their byte budget whatever is asked, least recently used first out.
import assert from "node:assert/strict";
import { ConfigProvider, Effect, Either, FastCheck as fc } from "effect";
import { AppConfig, DEFAULT_ANSWER_CACHE_MB } from "../src/config.ts";
import {
  AnswerCache,
  AS_IS_BELOW_BYTES,
  DEFLATE,
  ENTRY_OVERHEAD,
  type Packing,
  PLAIN_MIN_BYTES,
  SHARED_PLAIN_MIN_BYTES,
} from "../src/http/answer_cache.ts";
import { releaseBody } from "../src/http/lanes.ts";
import type { CachedAnswer } from "../src/http/answer_cache.ts";

// A kept answer's bytes as a lane sends them.
const served = (cache: AnswerCache, answer: CachedAnswer) => cache.take(answer).bytes;

// Kept as given, so that the model knows each entry's cost.
const AS_IS: Packing = { pack: (bytes) => bytes, unpack: (bytes) => bytes };

type Op =
  | { readonly op: "set"; readonly key: string; readonly size: number; readonly version: string }
  | { readonly op: "get"; readonly key: string }
  | { readonly op: "delete"; readonly key: string };

// Twenty keys: with each entry at most an eighth of the budget, nine or more make it evict.
const key = fc.integer({ min: 0, max: 19 }).map((n) =>
  n === 19 ? "a-longer-key".repeat(3) : `k${n}`
);
// What an entry of `size` bytes under `key` costs the budget.
const cost = (k: string, size: number) => size + k.length * 2 + ENTRY_OVERHEAD;
const ops = fc.array(
  fc.oneof(
    fc.record({
      op: fc.constant("set" as const),
      key,
      size: fc.integer({ min: 0, max: 400 }),
      version: fc.string({ maxLength: 3 }),
    }),
    fc.record({ op: fc.constant("get" as const), key }),
    fc.record({ op: fc.constant("delete" as const), key }),
  ),
  { maxLength: 120 },
);

Deno.test("kept answers stay within their budget, overhead counted, and leave least recently used first", () => {
  fc.assert(fc.property(fc.integer({ min: 0, max: 8000 }), ops, (budget, steps) => {
    const cache = new AnswerCache(budget, AS_IS);
    // The model: entries from least to most recently used.
    let model: Array<{ key: string; version: string; size: number }> = [];
    for (const step of steps) {
      if (step.op === "set") {
        model = model.filter((e) => e.key !== step.key);
        if (budget > 0 && cost(step.key, step.size) <= budget / 8) {
          model.push({ key: step.key, version: step.version, size: step.size });
          while (model.reduce((n, e) => n + cost(e.key, e.size), 0) > budget) model.shift();
        }
        cache.set(step.key, step.version, new Uint8Array(step.size).fill(step.size));
      } else if (step.op === "get") {
        const found = model.find((e) => e.key === step.key);
        const got = cache.get(step.key);
        assert.equal(got?.version, found?.version);
        assert.equal(got?.packed.byteLength, found?.size);
        if (found !== undefined) model = [...model.filter((e) => e !== found), found];
      } else {
        model = model.filter((e) => e.key !== step.key);
        cache.delete(step.key);
      }
      assert.ok(cache.bytes <= budget);
      assert.equal(cache.bytes, model.reduce((n, e) => n + cost(e.key, e.size), 0));
      assert.equal(cache.size, model.length);
    }
  }));
});

Deno.test("the least recently used answer leaves first; reading one makes it recent", () => {
  const size = 100;
  const each = size + 2 * 2 + ENTRY_OVERHEAD;
  const cache = new AnswerCache(each * 8, AS_IS);
  for (let i = 0; i < 8; i++) cache.set(`k${i}`, `v${i}`, new Uint8Array(size));
  assert.equal(cache.size, 8);
  assert.equal(cache.get("k0")?.version, "v0");
  cache.set("k8", "v8", new Uint8Array(size));
  // k1 was the least recently used (k0 was just read).
  assert.equal(cache.get("k1"), undefined);
  assert.equal(cache.get("k0")?.version, "v0");
  assert.equal(cache.get("k8")?.version, "v8");
  assert.equal(cache.bytes, each * 8);
  // An answer over an eighth of the budget is not kept, and leaves the others in place.
  cache.set("kx", "vx", new Uint8Array(each));
  assert.equal(cache.get("kx"), undefined);
  assert.equal(cache.size, 8);
});

Deno.test("a budget of 0 keeps nothing", () => {
  const cache = new AnswerCache(0);
  cache.set("k", "v", new Uint8Array(1));
  cache.set("e", "v", new Uint8Array(0));
  assert.equal(cache.get("k"), undefined);
  assert.equal(cache.size, 0);
});

Deno.test("ANSWER_CACHE_MB: 32 MiB unless set, 0 keeps none, anything else is refused at start", async () => {
  const read = (value: string | undefined) =>
    Effect.runPromise(Effect.either(AppConfig.fromEnv.pipe(
      Effect.withConfigProvider(
        ConfigProvider.fromMap(new Map(value === undefined ? [] : [["ANSWER_CACHE_MB", value]])),
      ),
    )));
  const unset = await read(undefined);
  assert.ok(Either.isRight(unset));
  assert.equal(unset.right.answerCacheMb, DEFAULT_ANSWER_CACHE_MB);
  assert.equal(DEFAULT_ANSWER_CACHE_MB, 32);
  for (const [value, mb] of [["0", 0], ["128", 128]] as const) {
    const set = await read(value);
    assert.ok(Either.isRight(set));
    assert.equal(set.right.answerCacheMb, mb);
  }
  for (const value of ["-1", "4097", "1.5", "lots"]) {
    assert.ok(Either.isLeft(await read(value)), value);
  }
});

Deno.test("kept answers come back byte for byte, and cost what they take packed", () => {
  // Sizes around zlib's 64-byte smallest chunk and its 16 KB default one included.
  const sized = fc.oneof(
    fc.uint8Array({ maxLength: 5000 }),
    fc.integer({ min: 0, max: 130 }).chain((n) => fc.uint8Array({ minLength: n, maxLength: n })),
    fc.integer({ min: 16_380, max: 16_390 }).map((n) => new Uint8Array(n).fill(n % 7)),
  );
  fc.assert(fc.property(sized, fc.string(), (bytes, text) => {
    const cache = new AnswerCache(1024 * 1024);
    const json = new TextEncoder().encode(JSON.stringify({ text, days: Array(50).fill(text) }));
    for (const [key, given] of [["bytes", bytes], ["json", json]] as const) {
      cache.set(key, "v", given);
      const kept = cache.get(key)!;
      assert.deepEqual(served(cache, kept), given);
    }
  }));
  // A year of JSON days is kept in a small part of its size.
  const year = new TextEncoder().encode(JSON.stringify(
    Array.from(
      { length: 366 },
      (_, i) => ({ business_date: `2025-01-${i}`, energy_kwh: "12.3400" }),
    ),
  ));
  const cache = new AnswerCache(1024 * 1024);
  cache.set("year", "v", year);
  assert.ok(cache.bytes < year.byteLength / 4, `${cache.bytes} of ${year.byteLength}`);
  assert.equal(cache.facts().served, 0);
  served(cache, cache.get("year")!);
  assert.equal(cache.facts().served, 1);
});

Deno.test("DEFLATE unpacks exactly what it packed, from AS_IS_BELOW_BYTES on into a buffer of its own", () => {
  // Lengths around node:buffer's 4 KB pool, and a year of days' size.
  const length = fc.oneof(
    fc.integer({ min: 0, max: 200 }),
    fc.integer({ min: AS_IS_BELOW_BYTES - 3, max: AS_IS_BELOW_BYTES + 3 }),
    fc.integer({ min: 16_380, max: 16_390 }),
    fc.integer({ min: 150_000, max: 170_000 }),
  );
  fc.assert(
    fc.property(length, fc.integer({ min: 0, max: 255 }), (n, seed) => {
      const given = Uint8Array.from({ length: n }, (_, i) => (i * seed + (i >> 5)) & 0xff);
      const bytes = DEFLATE.unpack(DEFLATE.pack(given), n);
      // (a node:buffer Buffer under the smallest sizes: compared as bytes)
      assert.deepEqual(new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength), given);
      if (n >= AS_IS_BELOW_BYTES) {
        // What the server releases once written: the whole buffer, nobody else's.
        assert.equal(bytes.byteOffset, 0);
        assert.equal(bytes.buffer.byteLength, n);
        releaseBody(bytes);
        assert.equal(bytes.byteLength, 0);
      }
    }),
    { numRuns: 60 },
  );
});

Deno.test("a large answer served again is kept unpacked within a quarter of the budget, and leaves with its entry", () => {
  const big = (seed: number) =>
    new TextEncoder().encode(
      JSON.stringify(Array.from({ length: 16_000 }, (_, i) => ({ i, v: (i * seed) % 997 }))),
    );
  const first = big(3);
  assert.ok(first.byteLength >= PLAIN_MIN_BYTES);
  const cache = new AnswerCache(4 * 1024 * 1024);
  cache.set("catalog", "v1", first);
  const packedCost = cache.bytes;
  const once = served(cache, cache.get("catalog")!);
  assert.deepEqual(once, first);
  assert.equal(cache.bytes, packedCost);
  // Served a second time: these bytes are kept, and answer from then on.
  const twice = served(cache, cache.get("catalog")!);
  assert.deepEqual(twice, first);
  assert.notEqual(twice, once);
  assert.equal(cache.bytes, packedCost + first.byteLength);
  assert.equal(served(cache, cache.get("catalog")!), twice);
  // A new version replaces the entry and its unpacked bytes.
  const second = big(5);
  cache.set("catalog", "v2", second);
  assert.ok(cache.bytes < packedCost * 2);
  const fresh = cache.get("catalog")!;
  assert.equal(fresh.version, "v2");
  assert.deepEqual(served(cache, fresh), second);
  assert.deepEqual(served(cache, fresh), second);
  assert.deepEqual(served(cache, fresh), second);
  // A quarter of 4 MiB holds three such copies; a fourth large answer stays packed only.
  for (const key of ["a", "b", "c"]) {
    cache.set(key, "v", big(key.charCodeAt(0)));
    served(cache, cache.get(key)!);
    served(cache, cache.get(key)!);
  }
  const before = cache.bytes;
  served(cache, cache.get("c")!);
  assert.equal(cache.bytes, before);
  assert.ok(cache.bytes <= cache.maxBytes);
  // An entry that left the cache while held is served but not kept unpacked.
  const held = cache.get("a")!;
  cache.delete("a");
  const gone = cache.bytes;
  assert.deepEqual(served(cache, held), big("a".charCodeAt(0)));
  assert.deepEqual(served(cache, held), big("a".charCodeAt(0)));
  assert.equal(cache.bytes, gone);
});

Deno.test("an answer many callers share is kept unpacked from a smaller size, others only from PLAIN_MIN_BYTES", () => {
  const list = new TextEncoder().encode(
    JSON.stringify(Array.from({ length: 3_000 }, (_, i) => ({ id: i, name: `store ${i}` }))),
  );
  assert.ok(list.byteLength >= SHARED_PLAIN_MIN_BYTES && list.byteLength < PLAIN_MIN_BYTES);
  const cache = new AnswerCache(4 * 1024 * 1024);
  cache.set("stores", "v", list, SHARED_PLAIN_MIN_BYTES);
  cache.set("energy", "v", list);
  for (let i = 0; i < 3; i++) {
    served(cache, cache.get("stores")!);
    served(cache, cache.get("energy")!);
  }
  const shared = served(cache, cache.get("stores")!);
  assert.equal(served(cache, cache.get("stores")!), shared, "the shared answer's bytes are kept");
  assert.deepEqual(shared, list);
  const own = served(cache, cache.get("energy")!);
  assert.notEqual(served(cache, cache.get("energy")!), own, "the other is unpacked each time");
  assert.deepEqual(own, list);
});

Deno.test("bytes unpacked for one caller are that caller's to release; kept bytes never are", () => {
  const list = new TextEncoder().encode(
    JSON.stringify(Array.from({ length: 3_000 }, (_, i) => ({ id: i, name: `store ${i}` }))),
  );
  const cache = new AnswerCache(4 * 1024 * 1024);
  cache.set("stores", "v", list, SHARED_PLAIN_MIN_BYTES);
  cache.set("energy", "v", list);
  // The first serving of a shared answer is unpacked for its caller alone; the second is kept
  // unpacked, and is so from then on.
  const first = cache.take(cache.get("stores")!);
  assert.equal(first.owned, true);
  const second = cache.take(cache.get("stores")!);
  assert.equal(second.owned, false);
  const third = cache.take(cache.get("stores")!);
  assert.equal(third.owned, false);
  assert.equal(third.bytes, second.bytes);
  // Released, the caller's own bytes are gone; the kept ones still answer whole.
  releaseBody(first.bytes);
  assert.equal(first.bytes.byteLength, 0);
  assert.deepEqual(cache.take(cache.get("stores")!).bytes, list);
  // An answer kept packed only is unpacked anew, and owned, each time.
  for (let i = 0; i < 3; i++) {
    const own = cache.take(cache.get("energy")!);
    assert.equal(own.owned, true);
    assert.deepEqual(own.bytes, list);
    releaseBody(own.bytes);
  }
  assert.deepEqual(cache.take(cache.get("energy")!).bytes, list);
  // A view on a part of a larger buffer is left alone.
  const whole = new Uint8Array(100).fill(7);
  releaseBody(whole.subarray(10, 20));
  assert.equal(whole.byteLength, 100);
  assert.equal(whole[50], 7);
});

Deno.test("a small answer is kept as it is: never unpacked, the same bytes for every caller, none theirs to release", () => {
  let unpacked = 0;
  const counting: Packing = {
    pack: (bytes) => bytes.slice(),
    unpack: (bytes) => {
      unpacked++;
      return bytes.slice();
    },
  };
  const cache = new AnswerCache(1024 * 1024, counting);
  const small = new TextEncoder().encode(JSON.stringify({ periods: "x".repeat(2_000) }));
  assert.ok(small.byteLength < AS_IS_BELOW_BYTES);
  cache.set("p", "v", small);
  // The caller's bytes may be released once written: the kept ones are a copy.
  releaseBody(small);
  const first = cache.take(cache.get("p")!);
  const second = cache.take(cache.get("p")!);
  assert.equal(first.owned, false);
  assert.equal(second.bytes, first.bytes);
  assert.equal(
    new TextDecoder().decode(first.bytes),
    JSON.stringify({ periods: "x".repeat(2_000) }),
  );
  assert.equal(unpacked, 0);
  // From AS_IS_BELOW_BYTES on, an answer is packed and unpacked for each caller.
  const large = new Uint8Array(AS_IS_BELOW_BYTES).fill(1);
  cache.set("l", "v", large);
  const own = cache.take(cache.get("l")!);
  assert.equal(own.owned, true);
  assert.deepEqual(own.bytes, large);
  assert.equal(unpacked, 1);
});
