// The permits that queue statements for the embedded database's one connection and answer builds:
// at most `count` holders at once, first come first served, one waiter woken per release, and no
// permit lost when a waiter is interrupted, even at the moment a permit is handed to it.
import assert from "node:assert/strict";
import { Deferred, Effect, Fiber } from "effect";
import { makePermits, unsafeMakePermits } from "../src/ops/permits.ts";

Deno.test("no more than the permits' count hold one at once, and waiters are served in arrival order", async () => {
  const order: Array<number> = [];
  let holding = 0;
  let most = 0;
  await Effect.runPromise(Effect.gen(function* () {
    const permits = yield* makePermits(3);
    const work = (i: number) =>
      permits.withPermit(Effect.gen(function* () {
        holding++;
        most = Math.max(most, holding);
        order.push(i);
        yield* Effect.sleep("1 millis");
        holding--;
      }));
    yield* Effect.forEach(Array.from({ length: 200 }, (_, i) => i), work, {
      concurrency: "unbounded",
    });
  }));
  assert.equal(most, 3);
  assert.deepEqual(order, Array.from({ length: 200 }, (_, i) => i));
});

Deno.test("a release wakes one waiter; the others stay in line", async () => {
  await Effect.runPromise(Effect.gen(function* () {
    const permits = unsafeMakePermits(1);
    const gate = yield* Deferred.make<void>();
    const holder = yield* Effect.fork(permits.withPermit(Deferred.await(gate)));
    yield* Effect.yieldNow();
    const waiters = yield* Effect.forEach(
      [1, 2, 3, 4],
      () => Effect.fork(permits.withPermit(Effect.never)),
    );
    yield* Effect.yieldNow();
    assert.equal(permits.waiting(), 4);
    yield* Deferred.succeed(gate, undefined);
    yield* Fiber.join(holder);
    yield* Effect.yieldNow();
    assert.equal(permits.waiting(), 3);
    yield* Effect.forEach(waiters, Fiber.interrupt);
    assert.equal(permits.waiting(), 0);
  }));
});

Deno.test("an interrupted waiter leaves the line, and a permit handed to it passes on", async () => {
  await Effect.runPromise(Effect.gen(function* () {
    const permits = unsafeMakePermits(1);
    // Interrupted while waiting: the line shrinks and the permit still serves the next.
    yield* permits.take;
    const leaving = yield* Effect.fork(permits.withPermit(Effect.void));
    yield* Effect.yieldNow();
    assert.equal(permits.waiting(), 1);
    yield* Fiber.interrupt(leaving);
    assert.equal(permits.waiting(), 0);
    yield* permits.release;

    // Interrupted in the same turn as the permit is handed to it: the permit is not lost.
    yield* permits.take;
    const handed = yield* Effect.fork(permits.withPermit(Effect.never));
    yield* Effect.yieldNow();
    yield* Effect.zip(permits.release, Fiber.interrupt(handed), { concurrent: true });
    const next = yield* permits.withPermit(Effect.succeed("served")).pipe(
      Effect.timeout("2 seconds"),
    );
    assert.equal(next, "served");
  }));
});

Deno.test("many thousands of waiters are each served once", async () => {
  let served = 0;
  await Effect.runPromise(Effect.gen(function* () {
    const permits = yield* makePermits(1);
    yield* Effect.forEach(
      Array.from({ length: 5_000 }),
      () => permits.withPermit(Effect.sync(() => served++)),
      { concurrency: "unbounded" },
    );
    assert.equal(permits.waiting(), 0);
  }));
  assert.equal(served, 5_000);
});
