// Path, query and header schemas shared by the endpoint groups.
import { Schema } from "effect";
import {
  CountFromString,
  DateString,
  IdFromString,
  PathId,
  TextOfLength,
} from "../domain/common.ts";

export const StorePath = Schema.Struct({ store_id: PathId });

export const RangeParams = Schema.Struct({
  scope_id: IdFromString,
  start: DateString,
  end: DateString,
});

export const IdempotencyHeaders = Schema.Struct({
  "idempotency-key": TextOfLength(1, 64),
});

// Which rows of an import batch an answer sends (the counters always count every row).
export const RowPageParams = Schema.Struct({
  row_offset: Schema.optional(CountFromString).annotations({
    description: "Rows to skip, in file order (default 0)",
  }),
  row_limit: Schema.optional(IdFromString).annotations({
    description: "At most this many rows (default: every row)",
  }),
});
