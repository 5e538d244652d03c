// Path, query and header schemas shared by the endpoint groups.
import { Schema } from "effect";
import { DateString, IdFromString, TextOfLength } from "../domain/common.ts";

export const StorePath = Schema.Struct({ store_id: IdFromString });

export const RangeParams = Schema.Struct({
  scope_id: IdFromString,
  start: DateString,
  end: DateString,
});

export const IdempotencyHeaders = Schema.Struct({
  "idempotency-key": TextOfLength(1, 64),
});
