// OpenTelemetry traces over OTLP/HTTP (JSON), through Effect's own tracer: every request's server span
// (with http.route, the template) and the service, repository and SQL spans under it. Imported only
// when tracing is configured (tracing_layer.ts), so a service without it loads none of this.
import * as OtlpSerialization from "@effect/opentelemetry/OtlpSerialization";
import * as OtlpTracer from "@effect/opentelemetry/OtlpTracer";
import * as FetchHttpClient from "@effect/platform/FetchHttpClient";
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder";
import { Effect, type Exit, Layer, Option, Redacted, Tracer } from "effect";
import type { TracingSettings } from "../config.ts";
import { loggedPath, RequestNote } from "../domain/request.ts";
import { API_VERSION } from "../domain/version.ts";

// A span as the exporter's tracer made it, seen through two rules: the query string never leaves
// the process (the platform's server span records the whole URL and its query, and a query value
// may hold anything: a key pasted into a URL), and a span of a trace that is not kept is never
// ended, so never exported.
class KeptSpan implements Tracer.Span {
  readonly _tag = "Span";
  constructor(private readonly inner: Tracer.Span, readonly sampled: boolean) {}
  get name() {
    return this.inner.name;
  }
  get spanId() {
    return this.inner.spanId;
  }
  get traceId() {
    return this.inner.traceId;
  }
  get parent() {
    return this.inner.parent;
  }
  get context() {
    return this.inner.context;
  }
  get status() {
    return this.inner.status;
  }
  get attributes() {
    return this.inner.attributes;
  }
  get links() {
    return this.inner.links;
  }
  get kind() {
    return this.inner.kind;
  }
  end(endTime: bigint, exit: Exit.Exit<unknown, unknown>) {
    if (this.sampled) this.inner.end(endTime, exit);
  }
  attribute(key: string, value: unknown) {
    // No query (it may hold anything), and the path as the access log writes it.
    if (key === "url.query") return;
    if (key === "url.path" && typeof value === "string") {
      return this.inner.attribute(key, loggedPath(value));
    }
    if (key === "url.full" && typeof value === "string") {
      const url = URL.parse(value);
      return this.inner.attribute(key, url === null ? "" : url.origin + loggedPath(url.pathname));
    }
    this.inner.attribute(key, value);
  }
  event(name: string, startTime: bigint, attributes?: Record<string, unknown>) {
    this.inner.event(name, startTime, attributes);
  }
  addLinks(links: ReadonlyArray<Tracer.SpanLink>) {
    this.inner.addLinks(links);
  }
}

// Parent-based sampling: a trace is kept or dropped as a whole; a new trace is kept with `ratio`.
const sampled = (tracer: Tracer.Tracer, ratio: number): Tracer.Tracer =>
  Tracer.make({
    context: tracer.context,
    span(name, parent, context, links, startTime, kind, options) {
      const span = tracer.span(name, parent, context, links, startTime, kind, options);
      const keep = Option.isSome(parent) ? parent.value.sampled : Math.random() < ratio;
      return new KeptSpan(span, keep && span.sampled);
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
