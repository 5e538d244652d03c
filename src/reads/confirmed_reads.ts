// Checks of a read's credential and data version answered from what a statement confirmed since
// the last change noticed (src/db/change_notices.ts), instead of a statement of their own. A
// statement that found a credential live and a range's data at a version is remembered with the
// generation of notices at which it began; a later check with that credential and that range is
// answered from memory after a barrier (so that no change made before the request goes unnoticed)
// while the generation is unchanged and the credential has not expired by the database's clock.
// Reads of the replica, which may not have replayed what the notices announced, always ask.
import { Effect, FiberRef, Option } from "effect";
import { type CredentialRow, liveAt, liveCredential } from "../auth/access.ts";
import { ChangeNotices, type ChangeNoticesShape } from "../db/change_notices.ts";
import { readTarget } from "../db/read_target.ts";
import type { Credential } from "../domain/auth.ts";

// What a statement that checks a credential and a range's version answers: the credential's row,
// and when it may read the range, the version, the data token and the scope's facts.
export interface CheckedRead {
  readonly credential: CredentialRow | undefined;
  readonly version: string | undefined;
  readonly token: string | undefined;
  readonly scope?: { readonly timezone: string; readonly unit: string };
}

// Values with the generation their statement began at: at most `max`, the oldest set out first.
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

// Credentials and ranges remembered, at most this many of each.
export const CONFIRMED_MAX = 4096;

export interface Check {
  readonly credential: Credential;
  // The read's store, scope and range (what its version is of).
  readonly range: string;
  // Only the version is asked for: held, the version the caller holds (the check passes only
  // when it is current), or undefined for whatever version is current.
  readonly held: string | undefined;
}

const credentialKey = (credential: Credential) =>
  credential.kind === "key" ? `k${credential.keyHash}` : `s${credential.sessionHash}`;

// The notices, where the service hears them (undefined: every read asks its statement).
const noticesOf = Effect.map(Effect.serviceOption(ChangeNotices), Option.getOrUndefined);

// `confirm` for a read of the primary; a read of the replica asks its statement.
const onPrimaryElse = <A, E, R>(
  statement: Effect.Effect<A, E, R>,
  confirm: Effect.Effect<A, E, R>,
) =>
  Effect.flatMap(FiberRef.get(readTarget), (target) => target === "primary" ? confirm : statement);

// The database's clock once a barrier shows that no change has been noticed since `generation`;
// undefined otherwise.
const unchangedSince = (notices: ChangeNoticesShape, generation: number) =>
  Effect.map(
    notices.barrier,
    (now) => now !== undefined && notices.generation() === generation ? now : undefined,
  );

// `check`: the read's check, or undefined when the read wants the data too (it then asks its
// statement, whose answer is remembered only for a check).
export const makeConfirmedReads = Effect.gen(function* () {
  const notices = yield* noticesOf;
  const credentials = new Confirmed<{ row: CredentialRow; token: string | undefined }>(
    CONFIRMED_MAX,
  );
  const ranges = new Confirmed<{ version: string; scope: CheckedRead["scope"] }>(CONFIRMED_MAX);

  const fromMemory = (notices: ChangeNoticesShape, check: Check) =>
    Effect.gen(function* () {
      const generation = notices.generation();
      const range = ranges.get(check.range, generation);
      const credential = credentials.get(credentialKey(check.credential), generation);
      if (
        range === undefined || credential === undefined ||
        (check.held !== undefined && range.version !== check.held)
      ) return undefined;
      const now = yield* unchangedSince(notices, generation);
      if (now === undefined || !liveAt(credential.row, now)) return undefined;
      return {
        credential: credential.row,
        version: range.version,
        token: credential.token,
        scope: range.scope,
      } satisfies CheckedRead;
    });

  // `statement` answers the check (and the data, unless only the version was asked for).
  return <A extends CheckedRead, E, R>(
    check: Check | undefined,
    statement: Effect.Effect<A, E, R>,
  ): Effect.Effect<A | CheckedRead, E, R> =>
    notices === undefined || check === undefined ? statement : onPrimaryElse(
      statement,
      Effect.gen(function* () {
        const found = yield* fromMemory(notices, check);
        if (found !== undefined) return found;
        const generation = notices.generation();
        const answer = yield* statement;
        const row = liveCredential(answer.credential);
        if (row !== undefined && answer.version !== undefined && answer.scope !== undefined) {
          credentials.set(
            credentialKey(check.credential),
            { row, token: answer.token },
            generation,
          );
          ranges.set(check.range, { version: answer.version, scope: answer.scope }, generation);
        }
        return answer;
      }),
    );
});

// One value a statement reads (a credential's row for a request that reads no range of data, a
// list's version), answered from memory as above: `kept` says whether a value may be remembered,
// `live` whether a remembered one still holds at the database's clock `now`.
export const makeConfirmedValues = <V>(
  kept: (value: V) => boolean,
  live: (value: V, now: string) => boolean = () => true,
) =>
  Effect.gen(function* () {
    const notices = yield* noticesOf;
    const values = new Confirmed<V>(CONFIRMED_MAX);
    return <E, R>(key: string, statement: Effect.Effect<V, E, R>): Effect.Effect<V, E, R> =>
      notices === undefined ? statement : onPrimaryElse(
        statement,
        Effect.gen(function* () {
          const generation = notices.generation();
          const known = values.get(key, generation);
          if (known !== undefined) {
            const now = yield* unchangedSince(notices, generation);
            if (now !== undefined && live(known, now)) return known;
          }
          const asked = notices.generation();
          const value = yield* statement;
          if (kept(value)) values.set(key, value, asked);
          return value;
        }),
      );
  });

// A credential's row (none: no such key or session) confirmed as above.
export const makeConfirmedCredentials = Effect.map(
  makeConfirmedValues<CredentialRow | undefined>(
    (row) => liveCredential(row) !== undefined,
    (row, now) => row !== undefined && liveAt(row, now),
  ),
  (confirm) =>
  <E, R>(credential: Credential, statement: Effect.Effect<CredentialRow | undefined, E, R>) =>
    confirm(credentialKey(credential), statement),
);
