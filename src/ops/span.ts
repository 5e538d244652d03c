// A named span around an effect, without the call-site stack trace Effect captures for each span
// it is asked to make (a `new Error()` per call, made even when nothing records spans: about 4 % of
// a busy read's time). The span's name says where it comes from.
import { Effect } from "effect";

export const span = (name: string, attributes?: Record<string, unknown>) =>
  Effect.withSpan(name, { attributes, captureStackTrace: false });
