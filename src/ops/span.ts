// A named span around an effect, without the call-site stack trace Effect captures for each span it
// is asked to make (a `new Error()` per call, made even when nothing records spans, a part of every
// busy read's time). The span's name says where it comes from. With tracing off (no collector,
// tracing_layer.ts) the effect runs as it is: Effect would still make a span that records nothing
// and copy the request's services to carry it.
import { Effect, FiberRef } from "effect";

export const span =
  (name: string, attributes?: Record<string, unknown>) =>
  <A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    Effect.flatMap(
      FiberRef.get(FiberRef.currentTracerEnabled),
      (enabled) =>
        enabled ? Effect.withSpan(self, name, { attributes, captureStackTrace: false }) : self,
    );
