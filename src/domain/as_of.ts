// Reads as of an earlier instant (beyond the contract): which data a read is asked to show. Every
// read of energy, targets, metrics and periods names the data it was made from with a token
// (the number of the last commit it saw, and the loaded snapshot); sending the token back, or an
// instant, reads the data as it was then.
import { Effect, Schema } from "effect";
import { badRequest } from "./errors.ts";

// RFC 3339 with a time zone, at most microseconds (PostgreSQL's precision).
const RFC3339 =
  /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(\.\d{1,6})?([Zz]|[+-]\d{2}:\d{2})$/;

export const InstantString = Schema.String.pipe(
  Schema.filter((s) => s.length <= 40 && RFC3339.test(s) && !Number.isNaN(Date.parse(s)), {
    message: () => "expected an RFC 3339 instant such as 2026-11-20T08:00:00Z",
  }),
).annotations({
  identifier: "Instant",
  jsonSchema: { type: "string", format: "date-time", maxLength: 40 },
});

// "<commit number>.<first 16 hex digits of the snapshot's generation>".
const TOKEN = /^([1-9]\d{0,15})\.([0-9a-f]{16})$/;

export const DataToken = Schema.String.pipe(
  Schema.filter((s) => TOKEN.test(s), {
    message: () => "expected a data token as an earlier answer's Data-Token header gives it",
  }),
).annotations({
  identifier: "DataToken",
  jsonSchema: { type: "string", pattern: TOKEN.source, maxLength: 33 },
});

// The query parameters of a read that can be made as of an earlier instant.
export const AsOfFields = {
  known_at: Schema.optional(InstantString).annotations({
    description: "Read the data as it was known at this instant (RFC 3339): commits made " +
      "later are not seen. Not with data_token.",
  }),
  data_token: Schema.optional(DataToken).annotations({
    description: "Read the data exactly as an earlier answer saw it: the value of that " +
      "answer's Data-Token header. Not with known_at.",
  }),
};

export type AsOf =
  | { readonly kind: "current" }
  | { readonly kind: "instant"; readonly at: string }
  | { readonly kind: "token"; readonly seq: string; readonly generation: string };

export const CURRENT: AsOf = { kind: "current" };

export const asOfOf = (q: { readonly known_at?: string; readonly data_token?: string }) => {
  if (q.known_at !== undefined && q.data_token !== undefined) {
    return Effect.fail(badRequest("Send known_at or data_token, not both", "INVALID_REQUEST"));
  }
  if (q.known_at !== undefined) return Effect.succeed<AsOf>({ kind: "instant", at: q.known_at });
  if (q.data_token !== undefined) {
    const [, seq, generation] = TOKEN.exec(q.data_token)!;
    return Effect.succeed<AsOf>({ kind: "token", seq, generation });
  }
  return Effect.succeed(CURRENT);
};

// The commit a read as of an earlier instant shows: its number (for the queries), its token, when
// it was made, and the instant asked for (the commit's own instant when a token was sent).
export interface ResolvedAsOf {
  readonly seq: string;
  readonly token: string;
  readonly committedAt: string;
  readonly knownAt: string;
}
