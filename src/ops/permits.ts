// A counting semaphore that hands a released permit to the longest waiter, one waiter per release.
// Effect's own Semaphore wakes every waiter on each release and all but one take their turn again
// from the start, each retry one frame deeper: with a thousand requests queued on the embedded
// database's one connection, that was quadratic work and hundreds of megabytes of fiber stacks.
import { Effect } from "effect";

export interface Permits {
  // Runs the effect holding one permit, waiting in line for it; interruptible while it waits.
  readonly withPermit: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>;
  // One permit, to be given back with release (a scope's acquire and release).
  readonly take: Effect.Effect<void>;
  readonly release: Effect.Effect<void>;
  // Fibers waiting for a permit.
  readonly waiting: () => number;
}

export const unsafeMakePermits = (count: number): Permits => {
  let free = count;
  // A Set keeps insertion order: the first waiter is the longest waiting.
  const waiters = new Set<() => void>();
  const giveBack = () => {
    const next = waiters.values().next();
    if (next.done) {
      free++;
      return;
    }
    waiters.delete(next.value);
    next.value();
  };
  const take = Effect.async<void>((resume) => {
    if (free > 0) {
      free--;
      resume(Effect.void);
      return;
    }
    let handed = false;
    const wake = () => {
      handed = true;
      resume(Effect.void);
    };
    waiters.add(wake);
    // Interrupted while waiting: leave the line, or pass on a permit handed over meanwhile.
    return Effect.sync(() => {
      if (handed) giveBack();
      else waiters.delete(wake);
    });
  });
  const release = Effect.sync(giveBack);
  return {
    take,
    release,
    withPermit: (effect) =>
      Effect.uninterruptibleMask((restore) =>
        Effect.zipRight(restore(take), Effect.ensuring(restore(effect), release))
      ),
    waiting: () => waiters.size,
  };
};

export const makePermits = (count: number): Effect.Effect<Permits> =>
  Effect.sync(() => unsafeMakePermits(count));
