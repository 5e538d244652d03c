// Shared limits on what clients may make the service hold or do at once: a budget counted in units
// (bytes of request bodies, or heavy tasks), in all and per holder (a credential, or the client's
// address when there is none). A share is taken before the work starts and given back once; past
// either bound the request is refused at once (503 BUSY with Retry-After): nothing queues.
export class Budget {
  #used = 0;
  readonly #byHolder = new Map<string, number>();

  constructor(readonly total: number, readonly perHolder: number) {}

  // The share's release, or undefined when it does not fit. A share larger than either bound is
  // counted as that bound, so that one request alone is always admitted on an idle service.
  take(holder: string, units: number): (() => void) | undefined {
    const share = Math.min(units, this.total, this.perHolder);
    const mine = this.#byHolder.get(holder) ?? 0;
    if (this.#used + share > this.total || mine + share > this.perHolder) return undefined;
    this.#used += share;
    this.#byHolder.set(holder, mine + share);
    let given = false;
    return () => {
      if (given) return;
      given = true;
      this.#used -= share;
      const left = (this.#byHolder.get(holder) ?? share) - share;
      if (left <= 0) this.#byHolder.delete(holder);
      else this.#byHolder.set(holder, left);
    };
  }

  get used(): number {
    return this.#used;
  }

  usedBy(holder: string): number {
    return this.#byHolder.get(holder) ?? 0;
  }
}
