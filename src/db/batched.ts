// One statement for what many requests ask at once: each request asks with its own arguments and
// gets its own answer, from a statement that began after it asked. What is asked while `running`
// statements are under way waits for the next one, at most `size` items to a statement, and no
// longer than a request waits for a pooled connection (then 503 BUSY or NOT_READY, as a full pool
// answers). A request that stops waiting takes its item back and stops no statement the others
// wait for, nor does a defect one item meets fail the others.
import { Cause, Clock, Deferred, Effect, Exit, FiberRef, Option, Tracer } from "effect";
import { type ServiceUnavailable, unavailable } from "../domain/errors.ts";
import { Messages } from "../domain/messages.ts";
import { POOL_WAIT_MS, poolAway } from "../ops/pg_pools.ts";
import { type ReadTarget, readTarget } from "./read_target.ts";

export interface BatchLimits {
  readonly size: number;
  readonly running: number;
}

// The reads that check a credential and read a store's data in one statement (an energy read; the
// check of a kept metrics, targets or periods answer): at most 16 to a statement, 2 statements of
// each kind and database under way. Beside a database on the same two cores, more at once only
// queued there.
export const READS_AT_ONCE: BatchLimits = { size: 16, running: 2 };

interface Waiting<I, A, E> {
  readonly item: I;
  readonly done: Deferred.Deferred<A, E | ServiceUnavailable>;
  // When it is taken back if still queued (the clock's monotonic nanoseconds).
  readonly deadline: bigint;
  // The asking request's tracer and span, when it is traced and has a span.
  readonly trace: { readonly tracer: Tracer.Tracer; readonly span: Tracer.AnySpan } | undefined;
}

// The asking fiber's tracer and span, when it traces and has a span.
const traceOf = Effect.flatMap(
  FiberRef.get(FiberRef.currentTracerEnabled),
  (enabled) =>
    enabled
      ? Effect.flatMap(
        Effect.serviceOption(Tracer.ParentSpan),
        (span) =>
          Option.isNone(span)
            ? Effect.succeed(undefined)
            : Effect.map(Effect.tracer, (tracer) => ({ tracer, span: span.value })),
      )
      : Effect.succeed(undefined),
);

// A statement runs apart from the requests it answers. When some of them are sampled for tracing,
// it is a span (its SQL under it) in the trace of the first, under that request's span, linked to
// the others' spans, in the requests' tracer; when none is, it makes no span.
const traced =
  <I, A, E>(batch: ReadonlyArray<Waiting<I, A, E>>) =>
  <X, Y>(statement: Effect.Effect<X, Y>): Effect.Effect<X, Y> => {
    const sampled = batch.flatMap((w) => w.trace?.span.sampled === true ? [w.trace] : []);
    if (sampled.length === 0) return Effect.withTracerEnabled(statement, false);
    const [first, ...others] = sampled;
    return statement.pipe(
      Effect.withSpan("Batched.statement", {
        parent: first.span,
        links: others.map((t) => ({ _tag: "SpanLink" as const, span: t.span, attributes: {} })),
        attributes: { "batch.items": batch.length },
        captureStackTrace: false,
      }),
      Effect.withTracer(first.tracer),
      Effect.withTracerEnabled(true),
    );
  };

// Each database's items: those waiting (in the order asked, so in the order of their deadlines),
// its statements under way, and whether its one timer for the queue's deadlines is running.
interface Lane<I, A, E> {
  readonly target: ReadTarget;
  readonly queue: Array<Waiting<I, A, E>>;
  running: number;
  sweeping: boolean;
}

// `run` answers the items in their order, and only reads: after a defect it is run again for each
// item alone. Items go to the database their request's statements go to (read_target.ts): each
// database has its own statements and its own share of `running`. A statement runs with the
// fiber references the service was built with (not those of the request that happened to start
// it: its services), its database and its tracing (`traced`) aside.
export const makeBatched = <I, A, E>(
  run: (items: ReadonlyArray<I>) => Effect.Effect<ReadonlyArray<A>, E>,
  limits: BatchLimits,
) =>
  Effect.gen(function* () {
    const scope = yield* Effect.scope;
    const own = yield* Effect.getFiberRefs;
    const lanes = new Map<ReadTarget, Lane<I, A, E>>();
    const laneOf = (target: ReadTarget) => {
      const found = lanes.get(target);
      if (found !== undefined) return found;
      const lane: Lane<I, A, E> = { target, queue: [], running: 0, sweeping: false };
      lanes.set(target, lane);
      return lane;
    };
    // Whether `waiting` was still queued (and is not any more).
    const takeBack = (lane: Lane<I, A, E>, waiting: Waiting<I, A, E>) => {
      const at = lane.queue.indexOf(waiting);
      if (at >= 0) lane.queue.splice(at, 1);
      return at >= 0;
    };

    const answersTo = (target: ReadTarget, batch: ReadonlyArray<Waiting<I, A, E>>) =>
      Effect.suspend(() => run(batch.map((w) => w.item))).pipe(
        Effect.flatMap((answers) =>
          answers.length === batch.length
            ? Effect.succeed(answers)
            : Effect.dieMessage(`${answers.length} answers to ${batch.length} items`)
        ),
        traced(batch),
        Effect.locally(readTarget, target),
        Effect.exit,
      );

    const runOne = (
      target: ReadTarget,
      lane: Lane<I, A, E>,
      batch: ReadonlyArray<Waiting<I, A, E>>,
    ): Effect.Effect<void> =>
      answersTo(target, batch).pipe(
        Effect.flatMap((exit) =>
          // A defect (not a failure such as a busy database, which each would meet alone too) in a
          // statement of many: each item again alone, so that only the one behind it fails.
          Exit.isFailure(exit) && batch.length > 1 && Cause.isDie(exit.cause)
            ? Effect.forEach(batch, (w) =>
              Effect.flatMap(
                answersTo(target, [w]),
                (alone) => Deferred.done(w.done, Exit.map(alone, ([answer]) => answer)),
              ), { discard: true })
            : Effect.forEach(
              batch,
              (w, i) => Deferred.done(w.done, Exit.map(exit, (answers) => answers[i])),
              { discard: true },
            )
        ),
        Effect.ensuring(Effect.suspend(() => {
          lane.running--;
          return startWaiting(target, lane);
        })),
      );

    // Starts what the lane's free share of `running` allows. Run uninterruptibly: the count and
    // the items taken must go with a statement that starts.
    const startWaiting = (target: ReadTarget, lane: Lane<I, A, E>): Effect.Effect<void> =>
      Effect.suspend(() => {
        const starts: Array<Effect.Effect<unknown>> = [];
        while (lane.running < limits.running && lane.queue.length > 0) {
          lane.running++;
          const batch = lane.queue.splice(0, limits.size);
          starts.push(
            Effect.forkIn(
              Effect.zipRight(Effect.setFiberRefs(own), runOne(target, lane, batch)),
              scope,
            ),
          );
        }
        return Effect.all(starts, { discard: true });
      });

    // Busy, as a request that waited for a pooled connection is, unless that database's full pool
    // has not been answered (src/ops/pg_pools.ts): then it is away.
    const refuse = (lane: Lane<I, A, E>, items: ReadonlyArray<Waiting<I, A, E>>) => {
      const refusal = unavailable(
        poolAway(lane.target) ? Messages.databaseUnreachable() : Messages.connectionsBusy(),
      );
      return Effect.forEach(items, (w) => Deferred.fail(w.done, refusal), { discard: true });
    };

    // Past its wait, an item still queued is taken back (refuse, above). One timer a lane, for the
    // first item's deadline, while items are queued (not one for each item). Only its sleep is
    // interruptible: an item it took out of the queue is always answered.
    const sweep = (lane: Lane<I, A, E>): Effect.Effect<void> =>
      Effect.gen(function* () {
        while (lane.queue.length > 0) {
          const now = yield* Clock.currentTimeNanos;
          const deadline = lane.queue[0].deadline;
          if (deadline > now) {
            yield* Effect.interruptible(Effect.sleep(Number(deadline - now) / 1e6));
            continue;
          }
          const late: Array<Waiting<I, A, E>> = [];
          while (lane.queue.length > 0 && lane.queue[0].deadline <= now) {
            late.push(lane.queue.shift()!);
          }
          yield* refuse(lane, late);
        }
        // In the step that found the queue empty: an item queued after it starts a new timer.
        lane.sweeping = false;
      });

    // The batcher's scope closing ends its timers: what is still queued is refused then.
    const stopSweeping = (lane: Lane<I, A, E>) =>
      Effect.suspend(() => {
        lane.sweeping = false;
        return refuse(lane, lane.queue.splice(0));
      });

    return (item: I): Effect.Effect<A, E | ServiceUnavailable> =>
      Effect.uninterruptibleMask((restore) =>
        Effect.gen(function* () {
          const target = yield* FiberRef.get(readTarget);
          const lane = laneOf(target);
          const waiting: Waiting<I, A, E> = {
            item,
            done: yield* Deferred.make<A, E | ServiceUnavailable>(),
            deadline: (yield* Clock.currentTimeNanos) + BigInt(POOL_WAIT_MS) * 1_000_000n,
            trace: yield* traceOf,
          };
          lane.queue.push(waiting);
          yield* startWaiting(target, lane);
          if (lane.queue.length > 0 && !lane.sweeping) {
            lane.sweeping = true;
            const swept = Effect.onInterrupt(sweep(lane), () => stopSweeping(lane));
            yield* Effect.forkIn(Effect.zipRight(Effect.setFiberRefs(own), swept), scope);
          }
          return yield* restore(Deferred.await(waiting.done)).pipe(
            Effect.onInterrupt(() => Effect.sync(() => takeBack(lane, waiting))),
          );
        })
      );
  });
