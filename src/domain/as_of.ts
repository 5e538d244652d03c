// Reads as of an earlier instant (beyond the contract): which data a read is asked to show. Every
// read of energy, targets, metrics and periods names the data it was made from with a token
// (the number of the last commit it saw, and the loaded snapshot, sealed); sending the token back,
// or an instant, reads the data as it was then.
import { Effect, Schema } from "effect";
import { isCalendarDay } from "./common.ts";
import { type BadRequest, badRequest } from "./errors.ts";
import { Messages } from "./messages.ts";

// RFC 3339 (§5.6) with a time zone: "T" between date and time ("t" or a space, as §5.6 allows),
// "Z" ("z") or a numeric offset. Checked exactly, so that every instant accepted is one PostgreSQL
// reads as written: a real day of years 0001-9999, hours 00-23, minutes and seconds 00-59, at most
// six fraction digits (PostgreSQL keeps microseconds), offsets within ±14:00 (the widest in use).
// A leap second (:60) is refused: PostgreSQL would read it as the next minute's first second, so
// the instant answered would not be the one asked for.
const RFC3339 =
  /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.\d{1,6})?(?:[Zz]|[+-](\d{2}):(\d{2}))$/;

export const INSTANT_MAX_LENGTH = 32;

export const isInstant = (s: string) => {
  const m = s.length <= INSTANT_MAX_LENGTH ? RFC3339.exec(s) : null;
  if (m === null || !isCalendarDay(Number(m[1]), Number(m[2]), Number(m[3]))) return false;
  const [hour, minute, second] = [Number(m[4]), Number(m[5]), Number(m[6])];
  if (hour > 23 || minute > 59 || second > 59) return false;
  if (m[7] === undefined) return true;
  const [offsetHours, offsetMinutes] = [Number(m[7]), Number(m[8])];
  return offsetMinutes <= 59 && offsetHours * 60 + offsetMinutes <= 14 * 60;
};

// An accepted instant in the one spelling sent to the database: "T" and "Z" in upper case.
export const canonicalInstant = (s: string) =>
  `${s.slice(0, 10)}T${s.slice(11)}`.replace(/z$/, "Z");

export const InstantString = Schema.String.pipe(
  Schema.filter(isInstant, {
    message: () =>
      "expected an RFC 3339 instant such as 2026-11-20T08:00:00Z (a real day of years " +
      "0001-9999, seconds 00-59, at most 6 fraction digits, an offset within ±14:00)",
  }),
).annotations({
  identifier: "Instant",
  jsonSchema: { type: "string", format: "date-time", maxLength: INSTANT_MAX_LENGTH },
});

// What a data token holds once opened (src/auth/data_seal.ts seals it, so that a client learns
// nothing from it and cannot make one): "<commit number>.<first 16 hex digits of the snapshot's
// generation>".
const TOKEN = /^([1-9]\d{0,15})\.([0-9a-f]{16})$/;

// A sealed value as the service hands it out (base64url of the nonce, ciphertext and tag).
export const SEALED = /^[A-Za-z0-9_-]{40,160}$/;

export const DataToken = Schema.String.pipe(
  Schema.filter((s) => SEALED.test(s), {
    message: () => "expected a data token as an earlier answer's Data-Token header gives it",
  }),
).annotations({
  identifier: "DataToken",
  jsonSchema: { type: "string", pattern: SEALED.source, maxLength: 160 },
});

// The query parameters of a read that can be made as of an earlier instant.
export const AsOfFields = {
  known_at: Schema.optional(InstantString).annotations({
    description: "Read the data as it was known at this instant (RFC 3339: a real day of years " +
      "0001-9999, seconds 00-59 (no leap second), at most 6 fraction digits, Z or an offset " +
      "within ±14:00): commits made later are not seen. Not with data_token.",
  }),
  data_token: Schema.optional(DataToken).annotations({
    description: "Read the data exactly as an earlier answer saw it: the value of that " +
      "answer's Data-Token header, as it is (opaque; one altered or made up is 400). Not with " +
      "known_at.",
  }),
};

export type AsOf =
  | { readonly kind: "current" }
  | { readonly kind: "instant"; readonly at: string }
  | { readonly kind: "token"; readonly seq: string; readonly generation: string };

export const CURRENT: AsOf = { kind: "current" };

const foreignToken = badRequest(Messages.foreignToken());

// Which data a read asks for. `open` opens a sealed data token (undefined: not one this service
// sealed).
export const asOfOf = <E, R>(
  q: { readonly known_at?: string; readonly data_token?: string },
  open: (token: string) => Effect.Effect<string | undefined, E, R>,
): Effect.Effect<AsOf, E | BadRequest, R> => {
  if (q.known_at !== undefined && q.data_token !== undefined) {
    return Effect.fail(badRequest(Messages.bothAsOf()));
  }
  if (q.known_at !== undefined) {
    return Effect.succeed<AsOf>({ kind: "instant", at: canonicalInstant(q.known_at) });
  }
  if (q.data_token !== undefined) {
    return Effect.flatMap(open(q.data_token), (text) => {
      const m = text === undefined ? null : TOKEN.exec(text);
      return m === null
        ? Effect.fail(foreignToken)
        : Effect.succeed<AsOf>({ kind: "token", seq: m[1], generation: m[2] });
    });
  }
  return Effect.succeed(CURRENT);
};

// The commit a read as of an earlier instant shows: its number (for the queries), its token, when
// it was made, and the instant the answer names: the one asked for, or the commit's own when a
// token was sent, but none then for a key limited to some stores (the commit may be another
// store's: its instant would tell when other stores committed).
export interface ResolvedAsOf {
  readonly seq: string;
  readonly token: string;
  readonly committedAt: string;
  readonly knownAt: string | undefined;
}
