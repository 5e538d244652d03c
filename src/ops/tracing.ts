// OpenTelemetry traces over OTLP/HTTP (JSON), through Effect's own tracer: every request's server span
// (with http.route, the template) and the service, repository and SQL spans under it. Imported only
// when tracing is configured (tracing_layer.ts), so a service without it loads none of this.
import * as OtlpSerialization from "@effect/opentelemetry/OtlpSerialization";
import * as OtlpTracer from "@effect/opentelemetry/OtlpTracer";
import * as FetchHttpClient from "@effect/platform/FetchHttpClient";
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder";
import { Effect, Layer, Option, Redacted, Tracer } from "effect";
import type { TracingSettings } from "../config.ts";
import { RequestNote } from "../domain/request.ts";
import { API_VERSION } from "../domain/version.ts";

interface MutableSpan {
  sampled: boolean;
  export: (span: unknown) => void;
  attribute: (key: string, value: unknown) => void;
}

const noExport = () => {};

// The platform's server span records the whole URL and its query string: a query value may hold
// anything (a key pasted into a URL), so only the path leaves the process, as in the access log.
const withoutQuery = (span: Tracer.Span) => {
  const mutable = span as unknown as MutableSpan;
  const attribute = mutable.attribute;
  mutable.attribute = function (key: string, value: unknown) {
    if (key === "url.query") return;
    if (key === "url.full" && typeof value === "string") {
      const cut = value.indexOf("?");
      return attribute.call(this, key, cut < 0 ? value : value.slice(0, cut));
    }
    return attribute.call(this, key, value);
  };
};

// Parent-based sampling: a trace is kept or dropped as a whole; a new trace is kept with `ratio`.
const sampled = (tracer: Tracer.Tracer, ratio: number): Tracer.Tracer =>
  Tracer.make({
    context: tracer.context,
    span(name, parent, context, links, startTime, kind, options) {
      const span = tracer.span(name, parent, context, links, startTime, kind, options);
      withoutQuery(span);
      const keep = Option.isSome(parent) ? parent.value.sampled : Math.random() < ratio;
      if (!keep) {
        const mutable = span as unknown as MutableSpan;
        mutable.sampled = false;
        mutable.export = noExport;
      }
      return span;
    },
  });

// The front door's request id on the server span, to find a trace from a log line and back.
const requestIdOnSpan = HttpApiBuilder.middleware((app) =>
  Effect.flatMap(
    Effect.serviceOption(RequestNote),
    (note) =>
      Option.isSome(note)
        ? Effect.zipRight(Effect.annotateCurrentSpan("http.request_id", note.value.requestId), app)
        : app,
  )
);

export const tracingLayer = (settings: TracingSettings) =>
  Layer.merge(
    Layer.unwrapScoped(
      Effect.map(
        OtlpTracer.make({
          url: settings.tracesUrl,
          resource: { serviceName: settings.serviceName, serviceVersion: API_VERSION },
          headers: Redacted.value(settings.headers),
          exportInterval: settings.exportIntervalMs,
        }),
        (tracer) => Layer.setTracer(sampled(tracer, settings.ratio)),
      ),
    ).pipe(Layer.provide(OtlpSerialization.layerJson), Layer.provide(FetchHttpClient.layer)),
    requestIdOnSpan,
  );
