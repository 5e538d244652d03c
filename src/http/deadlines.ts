// Deadlines of equal length for the requests in flight, under one timer. A timer per request (and
// the runtime's bookkeeping of it: a Timeout object, entries of its timer maps) lived as long as
// its request; under load those outlived two young collections and reached the old generation, a
// third of what each read left there (docs/performance.md, Memory). Every deadline here is `ms`
// after its start, so the oldest entry is always due first: the entries form a queue, and the one
// timer waits for its head.

export interface Deadline {
  // Forgets the deadline (the request is done); its callback will not run.
  readonly clear: () => void;
}

interface Entry {
  readonly due: number;
  readonly late: () => void;
  prev: Entry | undefined;
  next: Entry | undefined;
  live: boolean;
}

export const makeDeadlines = (
  ms: number,
  now: () => number = performance.now.bind(performance),
) => {
  let head: Entry | undefined;
  let tail: Entry | undefined;
  let size = 0;
  let timer: ReturnType<typeof setTimeout> | undefined;
  // When the armed timer fires (undefined: none armed).
  let armedFor: number | undefined;

  const unlink = (entry: Entry) => {
    if (!entry.live) return;
    entry.live = false;
    size--;
    if (entry.prev === undefined) head = entry.next;
    else entry.prev.next = entry.next;
    if (entry.next === undefined) tail = entry.prev;
    else entry.next.prev = entry.prev;
    entry.prev = entry.next = undefined;
    // None left: nothing to wait for (an idle process holds no timer).
    if (head === undefined && timer !== undefined) {
      clearTimeout(timer);
      timer = undefined;
      armedFor = undefined;
    }
  };

  const fire = () => {
    timer = undefined;
    armedFor = undefined;
    const at = now();
    while (head !== undefined && head.due <= at) {
      const entry = head;
      unlink(entry);
      entry.late();
    }
    arm();
  };

  // The timer waits for the head. Entries that finish early are not waited for one by one: when the
  // timer fires for a head that is gone, it is armed again for the head of then. Under load the
  // queue is never empty and one timer serves thousands of requests; one at a time, each arms and
  // clears its own, as before.
  const arm = () => {
    if (head === undefined || armedFor !== undefined) return;
    armedFor = head.due;
    timer = setTimeout(fire, Math.max(0, head.due - now()));
  };

  const add = (late: () => void): Deadline => {
    const entry: Entry = { due: now() + ms, late, prev: tail, next: undefined, live: true };
    if (tail === undefined) head = entry;
    else tail.next = entry;
    tail = entry;
    size++;
    arm();
    return { clear: () => unlink(entry) };
  };

  // Forgets the deadlines left (none will fire) and with them the timer.
  const stop = () => {
    while (head !== undefined) unlink(head);
  };

  return { add, stop, pending: () => size };
};

// Whether `promise` settles within `ms` (its outcome, success or failure, is not looked at).
export const settlesWithin = async (promise: Promise<unknown>, ms: number): Promise<boolean> => {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
  try {
    return await Promise.race([promise.then(() => true, () => true), late]);
  } finally {
    clearTimeout(timer);
  }
};
