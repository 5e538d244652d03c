// What many requests ask at once goes as one statement (src/db/batched.ts): each item gets its own
// answer from a statement that began after it was asked for; a statement holds at most `size`
// items and at most `running` run at once; a failure fails only its own statement's items; a
// request that stops waiting takes its item back and stops no statement, wherever it is
// interrupted; an item waits no longer than for a pooled connection; a defect fails only the item
// behind it; the items of another database never share a statement nor wait for its statements.
import assert from "node:assert/strict";
import { Cause, Deferred, Effect, Exit, Fiber, Option, TestClock, TestContext } from "effect";
import { ServiceUnavailable } from "../src/domain/errors.ts";
import { POOL_WAIT_MS } from "../src/ops/pg_pools.ts";
import { makeBatched } from "../src/db/batched.ts";
import { readTarget } from "../src/db/read_target.ts";

// A statement that waits until the test lets it end, and what it was given.
const gated = () => {
  const seen: Array<ReadonlyArray<number>> = [];
  const gates: Array<Deferred.Deferred<void>> = [];
  let running = 0;
  let mostRunning = 0;
  const run = (items: ReadonlyArray<number>) =>
    Effect.gen(function* () {
      const gate = yield* Deferred.make<void>();
      gates.push(gate);
      seen.push(items);
      running++;
      mostRunning = Math.max(mostRunning, running);
      yield* Deferred.await(gate);
      running--;
      if (items.includes(13)) return yield* Effect.fail(`unlucky ${items.join(",")}`);
      if (items.includes(23)) return yield* Effect.dieMessage(`broken by 23 among ${items}`);
      return items.map((n) => n * 10);
    });
  // Lets every statement started so far end.
  const open = Effect.suspend(() =>
    Effect.forEach(gates.splice(0), (gate) => Deferred.succeed(gate, undefined), {
      discard: true,
    })
  );
  return { run, seen, open, mostRunning: () => mostRunning };
};

// Lets the forked fibers run up to their next wait.
const settle = Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 0)));

// Opens the statements until every fiber has its answer.
const answersOf = <A, E>(
  fibers: ReadonlyArray<Fiber.RuntimeFiber<A, E>>,
  open: Effect.Effect<void>,
) =>
  Effect.gen(function* () {
    for (let turn = 0; turn < 100; turn++) {
      yield* settle;
      yield* open;
      yield* settle;
      const polled = yield* Effect.forEach(fibers, Fiber.poll);
      if (polled.every((p) => p._tag === "Some")) return polled.map((p) => p.value);
    }
    return yield* Effect.dieMessage("an item was never answered");
  });

Deno.test("items asked while statements run share the next ones, each with its own answer", async () => {
  await Effect.runPromise(Effect.scoped(Effect.gen(function* () {
    const statement = gated();
    const ask = yield* makeBatched(statement.run, { size: 3, running: 2 });
    const fibers = yield* Effect.forEach(
      Array.from({ length: 10 }, (_, i) => i + 1),
      (n) => Effect.fork(ask(n)),
    );
    const exits = yield* answersOf(fibers, statement.open);
    assert.deepEqual(exits.map((e) => Exit.isSuccess(e) ? e.value : e), [
      10,
      20,
      30,
      40,
      50,
      60,
      70,
      80,
      90,
      100,
    ]);
    // Every item went in exactly one statement, none of more than 3, never more than 2 at once,
    // and fewer statements than items.
    assert.deepEqual(statement.seen.flat().sort((a, b) => a - b), [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    assert.ok(statement.seen.every((items) => items.length <= 3), JSON.stringify(statement.seen));
    assert.ok(statement.mostRunning() <= 2);
    assert.ok(statement.seen.length < 10, JSON.stringify(statement.seen));
  })));
});

Deno.test("a failed statement fails its own items only", async () => {
  await Effect.runPromise(Effect.scoped(Effect.gen(function* () {
    const statement = gated();
    const ask = yield* makeBatched(statement.run, { size: 2, running: 1 });
    // 1 goes alone; 12 and 13 wait and go together; 14 goes after them.
    const fibers = yield* Effect.forEach([1, 12, 13, 14], (n) => Effect.fork(ask(n)));
    const exits = yield* answersOf(fibers, statement.open);
    assert.deepEqual(statement.seen, [[1], [12, 13], [14]]);
    assert.deepEqual(exits[0], Exit.succeed(10));
    assert.deepEqual(exits[1], Exit.fail("unlucky 12,13"));
    assert.deepEqual(exits[2], Exit.fail("unlucky 12,13"));
    assert.deepEqual(exits[3], Exit.succeed(140));
  })));
});

Deno.test("a defect in a statement of many fails only the item behind it", async () => {
  await Effect.runPromise(Effect.scoped(Effect.gen(function* () {
    const statement = gated();
    const ask = yield* makeBatched(statement.run, { size: 3, running: 1 });
    // 1 goes alone; 22, 23 and 24 go together, then each again alone.
    const fibers = yield* Effect.forEach([1, 22, 23, 24], (n) => Effect.fork(ask(n)));
    const exits = yield* answersOf(fibers, statement.open);
    assert.deepEqual(statement.seen, [[1], [22, 23, 24], [22], [23], [24]]);
    assert.deepEqual(exits[0], Exit.succeed(10));
    assert.deepEqual(exits[1], Exit.succeed(220));
    assert.ok(Exit.isFailure(exits[2]) && Cause.isDie(exits[2].cause));
    assert.deepEqual(exits[3], Exit.succeed(240));
  })));
});

Deno.test("a request that stops waiting takes its item back and stops no statement the others wait for", async () => {
  await Effect.runPromise(Effect.scoped(Effect.gen(function* () {
    const statement = gated();
    const ask = yield* makeBatched(statement.run, { size: 4, running: 1 });
    const first = yield* Effect.fork(ask(1));
    yield* settle;
    const waiting = yield* Effect.forEach([2, 3, 4], (n) => Effect.fork(ask(n)));
    yield* settle;
    yield* Fiber.interrupt(first);
    yield* Fiber.interrupt(waiting[0]);
    const exits = yield* answersOf(waiting.slice(1), statement.open);
    assert.deepEqual(exits, [Exit.succeed(30), Exit.succeed(40)]);
    assert.deepEqual(statement.seen, [[1], [3, 4]]);
  })));
});

// Interrupted before its fiber runs, while its statement runs, or while queued behind another: the
// batcher keeps no item nor share of `running` for it, and answers the next request.
Deno.test("a request interrupted before, while or after it is queued leaves the batcher answering the next", async () => {
  for (const when of ["before it runs", "in its statement", "queued"] as const) {
    await Effect.runPromise(Effect.scoped(Effect.gen(function* () {
      const statement = gated();
      const ask = yield* makeBatched(statement.run, { size: 4, running: 1 });
      const blocker = when === "queued" ? yield* Effect.fork(ask(1)) : undefined;
      if (blocker !== undefined) yield* settle;
      const asked = yield* Effect.fork(ask(7));
      if (when !== "before it runs") yield* settle;
      yield* Fiber.interrupt(asked);
      const next = yield* Effect.fork(ask(8));
      const exits = yield* answersOf(
        blocker === undefined ? [next] : [blocker, next],
        statement.open,
      );
      assert.deepEqual(exits.at(-1), Exit.succeed(80), when);
      // Only a statement under way when it was interrupted read its item.
      assert.equal(statement.seen.flat().includes(7), when === "in its statement", when);
    })));
  }
});

// The fiber ended refused with 503 BUSY.
const assertRefusedBusy = (polled: Option.Option<Exit.Exit<unknown, unknown>>) => {
  assert.ok(Option.isSome(polled) && Exit.isFailure(polled.value), "refused");
  const error = Option.getOrUndefined(Cause.failureOption(polled.value.cause));
  assert.ok(error instanceof ServiceUnavailable, String(error));
  assert.equal(error.code, "BUSY");
};

Deno.test("an item queued past a pooled connection's wait is taken back: 503 BUSY", async () => {
  await Effect.runPromise(
    Effect.scoped(Effect.gen(function* () {
      const statement = gated();
      const ask = yield* makeBatched(statement.run, { size: 4, running: 1 });
      const first = yield* Effect.fork(ask(1));
      yield* settle;
      const queued = yield* Effect.fork(ask(2));
      yield* settle;
      yield* TestClock.adjust(POOL_WAIT_MS + 1);
      assertRefusedBusy(Option.some(yield* Fiber.await(queued)));
      // One queued later, once the queue was empty, is taken back at its own deadline, not before.
      const later = yield* Effect.fork(ask(3));
      yield* settle;
      yield* TestClock.adjust(POOL_WAIT_MS - 1);
      assert.equal(Option.isNone(yield* Fiber.poll(later)), true);
      yield* TestClock.adjust(2);
      yield* settle;
      assertRefusedBusy(yield* Fiber.poll(later));
      // A statement under way is waited for, however long it takes; the refused item is not read.
      yield* TestClock.adjust(POOL_WAIT_MS + 1);
      const [answer] = yield* answersOf([first], statement.open);
      assert.deepEqual(answer, Exit.succeed(10));
      assert.deepEqual(statement.seen, [[1]]);
    })).pipe(Effect.provide(TestContext.TestContext)),
  );
});

// The queue's one timer wakes at its first item's deadline: an item queued later, still queued when
// the first left, is refused at its own deadline, not at the first one's.
Deno.test("an item queued behind one that left is refused at its own deadline", async () => {
  await Effect.runPromise(
    Effect.scoped(Effect.gen(function* () {
      const statement = gated();
      const ask = yield* makeBatched(statement.run, { size: 4, running: 1 });
      const running = yield* Effect.fork(ask(1));
      yield* settle;
      const first = yield* Effect.fork(ask(2));
      yield* settle;
      yield* TestClock.adjust(POOL_WAIT_MS / 2);
      const second = yield* Effect.fork(ask(3));
      yield* settle;
      yield* Fiber.interrupt(first);
      yield* TestClock.adjust(POOL_WAIT_MS / 2 + 1);
      yield* settle;
      assert.equal(Option.isNone(yield* Fiber.poll(second)), true);
      yield* TestClock.adjust(POOL_WAIT_MS / 2);
      yield* settle;
      assertRefusedBusy(yield* Fiber.poll(second));
      const [answer] = yield* answersOf([running], statement.open);
      assert.deepEqual(answer, Exit.succeed(10));
      assert.deepEqual(statement.seen, [[1]]);
    })).pipe(Effect.provide(TestContext.TestContext)),
  );
});

Deno.test("the replica's and the primary's items never share a statement, nor wait for each other", async () => {
  await Effect.runPromise(Effect.scoped(Effect.gen(function* () {
    const targets: Array<string> = [];
    const statement = gated();
    const ask = yield* makeBatched(
      (items: ReadonlyArray<number>) =>
        Effect.flatMap(readTarget, (target) => {
          targets.push(`${target}:${items.join(",")}`);
          return statement.run(items);
        }),
      { size: 8, running: 1 },
    );
    const blocker = yield* Effect.fork(ask(0));
    yield* settle;
    const fibers = yield* Effect.forEach(
      [1, 2, 3, 4],
      (n) => Effect.fork(Effect.locally(ask(n), readTarget, n % 2 === 0 ? "replica" : "primary")),
    );
    yield* settle;
    // The primary's statement is under way; the replica's first item did not wait for it.
    assert.deepEqual(targets, ["primary:0", "replica:2"]);
    const exits = yield* answersOf([blocker, ...fibers], statement.open);
    assert.deepEqual(exits.map((e) => Exit.isSuccess(e) && e.value), [0, 10, 20, 30, 40]);
    assert.deepEqual(targets.sort(), ["primary:0", "primary:1,3", "replica:2", "replica:4"]);
  })));
});
