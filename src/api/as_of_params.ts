// The query parameters of the reads that can be made as of an earlier instant.
import { Schema } from "effect";
import { AsOfFields } from "../domain/as_of.ts";
import { DateString, IdFromString } from "../domain/common.ts";
import { RangeParams } from "./params.ts";

export const RangeAsOfParams = Schema.Struct({ ...RangeParams.fields, ...AsOfFields });

export const PeriodAsOfParams = Schema.Struct({
  scope_id: IdFromString,
  as_of: DateString,
  ...AsOfFields,
});
