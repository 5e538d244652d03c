// What statements confirmed (a credential's row, the version of a read's data), kept for as long as
// no change has been noticed since (change_notices.ts): each value with the generation of notices
// at which its statement began, at most `max` values, the oldest set out first.
export class Confirmed<V> {
  readonly #entries = new Map<string, { readonly value: V; readonly generation: number }>();

  constructor(readonly max: number) {}

  // The value, while no notice has come since its statement began.
  get(key: string, generation: number): V | undefined {
    const entry = this.#entries.get(key);
    return entry !== undefined && entry.generation === generation ? entry.value : undefined;
  }

  set(key: string, value: V, generation: number): void {
    this.#entries.delete(key);
    this.#entries.set(key, { value, generation });
    if (this.#entries.size > this.max) {
      for (const oldest of this.#entries.keys()) {
        this.#entries.delete(oldest);
        break;
      }
    }
  }
}
