// One statement for what many requests ask at once: each request asks with its own arguments and
// gets its own answer, from a statement that began after it asked. What is asked while `running`
// statements are under way waits for the next one, at most `size` items to a statement. A request
// that stops waiting does not stop the statement the others wait for, nor does a defect one item
// meets fail the others.
import { Cause, Deferred, Effect, Exit, FiberRef } from "effect";
import { type ReadTarget, readTarget } from "./read_target.ts";

export interface BatchLimits {
  readonly size: number;
  readonly running: number;
}

// The reads that check a credential and read a store's data in one statement (an energy read; the
// check of a kept metrics, targets or periods answer): at most 16 to a statement, 2 statements of
// each kind under way. Beside a database on the same two cores, more at once only queued there.
export const READS_AT_ONCE: BatchLimits = { size: 16, running: 2 };

interface Waiting<I, A, E> {
  readonly item: I;
  readonly done: Deferred.Deferred<A, E>;
}

// `run` answers the items in their order, and only reads: after a defect it is run again for each
// item alone. Items go to the database their request's statements go to (read_target.ts): one
// statement holds the items of one target.
export const makeBatched = <I, A, E>(
  run: (items: ReadonlyArray<I>) => Effect.Effect<ReadonlyArray<A>, E>,
  limits: BatchLimits,
) =>
  Effect.gen(function* () {
    const scope = yield* Effect.scope;
    const waiting = new Map<ReadTarget, Array<Waiting<I, A, E>>>();
    let running = 0;

    const answersTo = (target: ReadTarget, items: ReadonlyArray<I>) =>
      Effect.suspend(() => run(items)).pipe(
        Effect.flatMap((answers) =>
          answers.length === items.length
            ? Effect.succeed(answers)
            : Effect.dieMessage(`${answers.length} answers to ${items.length} items`)
        ),
        Effect.locally(readTarget, target),
        Effect.exit,
      );

    const runOne = (target: ReadTarget, batch: ReadonlyArray<Waiting<I, A, E>>) =>
      answersTo(target, batch.map((w) => w.item)).pipe(
        Effect.flatMap((exit) =>
          // A defect (not a failure such as a busy database, which each would meet alone too) in a
          // statement of many: each item again alone, so that only the one behind it fails.
          Exit.isFailure(exit) && batch.length > 1 && Cause.isDie(exit.cause)
            ? Effect.forEach(batch, (w) =>
              Effect.flatMap(
                answersTo(target, [w.item]),
                (alone) => Deferred.done(w.done, Exit.map(alone, ([answer]) => answer)),
              ), { discard: true })
            : Effect.forEach(
              batch,
              (w, i) => Deferred.done(w.done, Exit.map(exit, (answers) => answers[i])),
              { discard: true },
            )
        ),
        Effect.ensuring(Effect.suspend(() => {
          running--;
          return startWaiting;
        })),
      );

    const startWaiting: Effect.Effect<void> = Effect.suspend(() => {
      const starts: Array<Effect.Effect<unknown>> = [];
      for (const [target, queue] of waiting) {
        while (running < limits.running && queue.length > 0) {
          running++;
          starts.push(Effect.forkIn(runOne(target, queue.splice(0, limits.size)), scope));
        }
      }
      return Effect.all(starts, { discard: true });
    });

    return (item: I): Effect.Effect<A, E> =>
      Effect.gen(function* () {
        const target = yield* FiberRef.get(readTarget);
        const done = yield* Deferred.make<A, E>();
        const queue = waiting.get(target) ?? [];
        waiting.set(target, queue);
        queue.push({ item, done });
        yield* startWaiting;
        return yield* Deferred.await(done);
      });
  });
