// Tracing when OTEL_EXPORTER_OTLP_ENDPOINT is set: the OpenTelemetry modules are imported then and
// only then, so a service without tracing neither loads nor pays for them.
import * as HttpMiddleware from "@effect/platform/HttpMiddleware";
import { Effect, Layer, Option } from "effect";
import { AppConfig } from "../config.ts";

export const TracingLive = Layer.unwrapEffect(
  Effect.gen(function* () {
    const config = yield* AppConfig;
    // Without a collector no span is made at all (a span costs its clock reads and attributes on
    // every service, repository and SQL call of every request), and the server span's attributes
    // (the URL parsed again, the headers redacted) are not gathered.
    if (Option.isNone(config.tracing)) {
      return Layer.merge(
        Layer.setTracerEnabled(false),
        Layer.scopedDiscard(
          Effect.locallyScoped(HttpMiddleware.currentTracerDisabledWhen, () => true),
        ),
      );
    }
    const { tracingLayer } = yield* Effect.promise(() => import("./tracing.ts"));
    return tracingLayer(config.tracing.value);
  }),
);
