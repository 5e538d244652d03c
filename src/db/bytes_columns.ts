// A result column of type text whose name ends in BYTES_SUFFIX reads as the UTF-8 bytes of its
// text (a Uint8Array), on either database (pg_bytes.ts, pglite_worker.ts): stored JSON that goes
// into an answer as it is never becomes a string.
const BYTES_SUFFIX = "_utf8";
export const TEXT_TYPE = 25; // PostgreSQL's text type

// Whether a result column (its name and type) is one.
export const isBytesColumn = (name: string, type: number) =>
  type === TEXT_TYPE && name.endsWith(BYTES_SUFFIX);
