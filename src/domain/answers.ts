// What services hand to the HTTP layer besides plain values.
import { Brand } from "effect";
import type { ResolvedAsOf } from "./as_of.ts";

// JSON text already in the contract's final shape (built by PostgreSQL, for speed): only an _http
// module turns it into a response, as it is.
export type JsonText = string & Brand.Brand<"JsonText">;
export const JsonText = Brand.nominal<JsonText>();

// Such JSON as text, or as its UTF-8 bytes, read from the database as it stores them.
export type JsonPart = JsonText | Uint8Array;

// An answer with the version of the data it was made from. `value` is undefined when the caller
// already holds that version (a conditional read): then nothing was built. `token` names the
// commit the data had reached (absent before any data is loaded).
export interface Versioned<A> {
  readonly version: string;
  readonly value: A | undefined;
  readonly token?: string | undefined;
  // Set on an answer as of an earlier instant (then `value` is always built).
  readonly asOf?: ResolvedAsOf | undefined;
}

// An answer as of an earlier instant, with the commit it shows.
export interface AsOfAnswer<A> {
  readonly asOf: ResolvedAsOf;
  readonly value: A;
}
