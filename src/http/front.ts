// The front door of every request, before the HttpApi sees it: exact routes (404, 405), media types
// (415), bodies read under a cap and a deadline (413, 408) and checked for nesting (400), a time
// limit on the whole request (503), compressed and cached documents, X-Request-ID, the access log and
// the request metrics (with GET /metrics behind its own token).
import { Context, type Redacted } from "effect";
import { gzipSync } from "node:zlib";
import { isUtf8 } from "node:buffer";
import { createHash } from "node:crypto";
import {
  acceptsGzip,
  etagMatches,
  loggedPart,
  loggedPath,
  markGzipped,
  RequestNote,
  type RequestNoteShape,
} from "../domain/request.ts";
import type { Message } from "../domain/errors.ts";
import { retryAfterOf, statusOfCode } from "../domain/error_codes.ts";
import { type Language, negotiateLanguage, pick } from "../domain/language.ts";
import { Messages } from "../domain/messages.ts";
import type { Log } from "../log.ts";
import { bytesBody, isJsonMediaType, jsonDepthExceeds, MAX_JSON_DEPTH, readBody } from "./body.ts";
import { makeRouter, type Match, type Route } from "./routes.ts";
import { appendHeaders, type Incoming } from "./incoming.ts";
import { type Deadline, makeDeadlines, settlesWithin } from "./deadlines.ts";
import { Budget } from "./admission.ts";
import { compressJson, type KeptGzip } from "./compress.ts";
import { type AdmissionLimits, DEFAULT_ADMISSION, MAX_MILLIS } from "../config.ts";
import {
  checkBearer,
  CONSOLE_ROUTE,
  type OpsMetrics,
  type RouteStats,
  tokenDigest,
  UNMATCHED_ROUTE,
} from "../ops/metrics.ts";
import { type ConsoleHandler, isConsolePath } from "../console/assets.ts";

export type InnerHandler = (
  request: Request,
  context?: Context.Context<never>,
) => Promise<Response>;

export interface FrontOptions {
  readonly routes: ReadonlyArray<Route>;
  readonly requestMs: number;
  readonly bodyMs: number;
  readonly log: Log;
  // Makes the handler of the /api-docs page (on its first request).
  readonly docsPage: () => Promise<(request: Request) => Promise<Response>>;
  // The browser console: "/" and "/console/..." (absent: those paths are unknown).
  readonly console?: ConsoleHandler;
  // Request metrics and GET /metrics (absent: that path is unknown and nothing is counted).
  readonly metrics?: FrontMetrics;
  // Checks a request's credential and permission from its headers alone (routes with an admission:
  // bodies and heavy work); absent, those requests go on unchecked to the HttpApi, which decides.
  readonly gate?: Gate;
  readonly admission?: AdmissionLimits;
  // How long a heavy answer may hold its admission at most (its own time limit ends it before).
  readonly heavyHoldMs?: number;
  // The gzip form of a kept answer's bytes, made once (compress.ts).
  readonly keptGzip?: KeptGzip;
}

export type GateOutcome =
  | { readonly kind: "refused"; readonly response: Response }
  // `holder` names the credential (its key) for the per-credential limits.
  | { readonly kind: "admitted"; readonly holder: string };

export type Gate = (request: Incoming, route: Route, language: Language) => Promise<GateOutcome>;

// Seconds a client is asked to wait after a 503 BUSY: a body's upload, or a heavy task, to end.
const BODY_RETRY_S = 2;
const HEAVY_RETRY_S = 5;

export interface FrontMetrics {
  readonly registry: OpsMetrics;
  // The bearer token a scrape must send.
  readonly token: Redacted.Redacted<string>;
}

export const METRICS_PATH = "/metrics";
const METRICS_ROUTE: Route = { method: "GET", path: METRICS_PATH, body: { kind: "none" } };

// The docs page runs its own inline script and styles and asks this service for the contract; it
// loads nothing from elsewhere and may not be framed.
const DOCS_PAGE_POLICY = "default-src 'none'; script-src 'unsafe-inline' 'wasm-unsafe-eval'; " +
  "style-src 'unsafe-inline'; img-src 'self' data: blob:; font-src 'self' data:; " +
  "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

// Paths whose answers are the same for everyone until a restart: compressed once, with an ETag.
const DOCUMENTS = new Set(["/openapi.json", "/api-docs"]);

const encoder = new TextEncoder();

// A refusal in the request's language; its status is its code's (error_codes.ts).
export const errorResponse = (m: Message, language: Language, extra?: HeadersInit) => {
  const headers = new Headers({ ...retryAfterOf(m.code) });
  new Headers(extra).forEach((value, name) => headers.set(name, value));
  const body = encoder.encode(
    JSON.stringify({ error: { code: m.code, message: pick(m, language) } }),
  );
  const status = statusOfCode(m.code);
  headers.set("content-type", "application/json");
  headers.set("content-length", String(body.byteLength));
  return new Response(body, { status, headers });
};

interface Document {
  readonly status: number;
  readonly contentType: string;
  readonly plain: Uint8Array<ArrayBuffer>;
  readonly gzip: Uint8Array<ArrayBuffer>;
  readonly etag: string;
}

const announcesBody = (request: Incoming) => {
  const length = request.headers.get("content-length");
  return request.headers.has("transfer-encoding") || (length !== null && length !== "0");
};

// A Transfer-Encoding with a coding other than chunked (gzip, deflate, ...): the service decodes
// none, and would read the coded bytes as the body (RFC 9112 6.1).
const otherCoding = (request: Incoming) =>
  request.headers.get("transfer-encoding")?.split(",").some((coding) =>
    coding.trim().toLowerCase() !== "chunked"
  ) ?? false;

const FORM_TYPES = ["multipart/form-data", "application/x-www-form-urlencoded"];

// The Content-Length a request announces; Infinity when it is not a plain number.
const declaredLength = (request: Incoming) => {
  const length = request.headers.get("content-length");
  if (length === null) return undefined;
  return /^\d{1,15}$/.test(length) ? Number(length) : Infinity;
};

const tooLarge = (maxBytes: number, language: Language) =>
  errorResponse(Messages.bodyTooLarge(maxBytes), language);

const busy = (retryAfterS: number, m: Message, language: Language) =>
  errorResponse(m, language, { "retry-after": String(retryAfterS) });

// What a request asks for: the console, or a route of the table (or none, or another method).
type Target = Match | { readonly kind: "console" };
const CONSOLE_TARGET: Target = { kind: "console" };

// The front door over the HttpApi's web handler.
export const makeFront = (inner: InnerHandler, options: FrontOptions) => {
  const metrics = options.metrics;
  const limits = options.admission ?? DEFAULT_ADMISSION;
  const bodies = new Budget(limits.bodyBytes, limits.bodyBytesPerKey);
  const heavy = new Budget(limits.heavy, limits.heavyPerKey);
  // Two time limits added may pass the longest delay a timer takes, which would fire at once.
  const heavyHoldMs = Math.min(options.heavyHoldMs ?? 10 * 60_000, MAX_MILLIS);
  // Each request's steps until the endpoint has answered, its answer given or not.
  const working = new Set<Promise<Response>>();
  const matchRoute = makeRouter(
    metrics === undefined ? options.routes : [...options.routes, METRICS_ROUTE],
  );
  const documents = new Map<string, Promise<Document>>();
  // The time limit of every request in flight (deadlines.ts).
  const deadlines = makeDeadlines(options.requestMs);
  const target = (method: string, pathname: string): Target =>
    options.console !== undefined && isConsolePath(pathname)
      ? CONSOLE_TARGET
      : matchRoute(method, pathname);

  // Each route's series are found by the route itself: no string is made per request.
  const statsOf = new Map<Route, RouteStats>();
  let unmatched: RouteStats | undefined;
  let consoleStats: RouteStats | undefined;
  const digest = metrics === undefined ? undefined : tokenDigest(metrics.token);
  if (metrics !== undefined) {
    for (const r of [...options.routes, METRICS_ROUTE]) {
      statsOf.set(r, metrics.registry.route(r.path));
    }
    unmatched = metrics.registry.route(UNMATCHED_ROUTE);
    consoleStats = metrics.registry.route(CONSOLE_ROUTE);
  }
  const statsFor = (t: Target | undefined) =>
    t?.kind === "route"
      ? statsOf.get(t.route) ?? unmatched!
      : t?.kind === "console"
      ? consoleStats!
      : unmatched!;

  const serveMetrics = async (request: Incoming, registry: OpsMetrics, language: Language) => {
    if (announcesBody(request)) return errorResponse(Messages.noBodyTaken(), language);
    const check = checkBearer(request.headers.get("authorization"), digest!);
    if (check !== "ok") {
      return errorResponse(
        check === "missing" ? Messages.missingMetricsToken() : Messages.invalidMetricsToken(),
        language,
        { "www-authenticate": 'Bearer realm="metrics"' },
      );
    }
    const text = await registry.render();
    return new Response(request.method === "HEAD" ? null : text, {
      status: 200,
      headers: {
        "content-type": "text/plain; version=0.0.4; charset=utf-8",
        "cache-control": "no-store",
      },
    });
  };

  const loadDocument = (url: URL, note: RequestNoteShape) => {
    let doc = documents.get(url.pathname);
    if (doc === undefined) {
      doc = (async () => {
        const request = new Request(new URL(url.pathname, url), { method: "GET" });
        const response = url.pathname === "/api-docs"
          ? await (await options.docsPage())(request)
          : await inner(request, Context.make(RequestNote, note));
        const plain = new Uint8Array(await response.arrayBuffer());
        return {
          status: response.status,
          contentType: response.headers.get("content-type") ?? "application/octet-stream",
          plain,
          gzip: new Uint8Array(gzipSync(plain)),
          etag: `"${createHash("sha256").update(plain).digest("base64url").slice(0, 27)}"`,
        };
      })();
      documents.set(url.pathname, doc);
      // A failed build is not kept: the next request tries again.
      doc.then(
        (d) => d.status !== 200 && documents.delete(url.pathname),
        () => documents.delete(url.pathname),
      );
    }
    return doc;
  };

  const serveDocument = async (request: Incoming, url: URL, note: RequestNoteShape) => {
    const doc = await loadDocument(url, note);
    if (doc.status !== 200) {
      return new Response(doc.plain, {
        status: doc.status,
        headers: { "content-type": doc.contentType },
      });
    }
    const headers = new Headers({
      "content-type": doc.contentType,
      etag: doc.etag,
      "cache-control": "no-cache",
      vary: "accept-encoding",
      "x-content-type-options": "nosniff",
    });
    if (url.pathname === "/api-docs") {
      headers.set("content-security-policy", DOCS_PAGE_POLICY);
      headers.set("x-frame-options", "DENY");
    }
    if (etagMatches(request.headers.get("if-none-match"), doc.etag)) {
      return new Response(null, { status: 304, headers });
    }
    const gzip = acceptsGzip(request);
    if (gzip) markGzipped(headers, doc.etag);
    const body = gzip ? doc.gzip : doc.plain;
    headers.set("content-length", String(body.byteLength));
    return new Response(request.method === "HEAD" ? null : body, { status: 200, headers });
  };

  // Shares of the admission budgets a request holds: a body's until its answer is ready, a heavy
  // task's until its answer has been sent.
  type Held = { readonly body: Array<() => void>; readonly work: Array<() => void> };

  // Step 1, what is not a route's to answer: the console, unknown paths, other methods, the
  // documents and /metrics.
  const answerOffRoute = (
    request: Incoming,
    url: URL,
    note: RequestNoteShape,
    match: Target,
  ): Promise<Response> | Response | undefined => {
    const language = note.language ?? "en";
    if (match.kind === "console" && options.console !== undefined) {
      if (request.method !== "GET" && request.method !== "HEAD") {
        return errorResponse(Messages.methodNotAllowed("GET, HEAD"), language, {
          allow: "GET, HEAD",
        });
      }
      if (announcesBody(request)) return errorResponse(Messages.noBodyTaken(), language);
      return options.console(request, url, language);
    }
    if (match.kind === "none" || match.kind === "console") {
      return errorResponse(Messages.noEndpoint(), language);
    }
    if (match.kind === "method") {
      return errorResponse(Messages.methodNotAllowed(match.allow.join(", ")), language, {
        allow: match.allow.join(", "),
      });
    }
    if ((request.method === "GET" || request.method === "HEAD") && DOCUMENTS.has(url.pathname)) {
      return serveDocument(request, url, note);
    }
    if (match.route === METRICS_ROUTE && metrics !== undefined) {
      return serveMetrics(request, metrics.registry, language);
    }
    return undefined;
  };

  // Step 2, from the headers alone: the credential and its permission (the contract's 401 and 403
  // come before any refusal of what was sent), then a body where none is taken, an announced
  // length past the cap, the endpoint's headers, then the shares of the limits all clients have
  // together. No body byte is read before all of them.
  const admit = async (
    request: Incoming,
    route: Route,
    peer: string | undefined,
    held: Held,
    language: Language,
  ): Promise<Response | undefined> => {
    let holder = peer === undefined ? "anonymous" : `peer ${peer}`;
    const admission = route.admission;
    if (options.gate !== undefined && route.credential && admission !== undefined) {
      const gated = await options.gate(request, route, language);
      if (gated.kind === "refused") return gated.response;
      holder = gated.holder;
    }
    const policy = route.body;
    if (policy.kind === "none" && announcesBody(request)) {
      return errorResponse(Messages.noBodyTaken(), language);
    }
    const declared = declaredLength(request);
    if (policy.kind === "json" && declared !== undefined && declared > policy.maxBytes) {
      return tooLarge(policy.maxBytes, language);
    }
    if (policy.kind === "json" && otherCoding(request)) {
      return errorResponse(Messages.bodyFraming(), language);
    }
    const badHeaders = route.checkHeaders?.(request.headers);
    if (badHeaders !== undefined) return errorResponse(badHeaders, language);
    if (policy.kind === "json") {
      const release = bodies.take(holder, declared ?? policy.maxBytes);
      if (release === undefined) {
        return busy(BODY_RETRY_S, Messages.bodiesBusy(), language);
      }
      held.body.push(release);
    }
    if (admission?.heavy === true) {
      const release = heavy.take(holder, 1);
      if (release === undefined) {
        return busy(HEAVY_RETRY_S, Messages.heavyBusy(), language);
      }
      // Given back when the answer has been sent, or after the longest a heavy answer may take.
      const backstop = setTimeout(release, heavyHoldMs);
      Deno.unrefTimer(backstop);
      held.work.push(() => {
        clearTimeout(backstop);
        release();
      });
    }
    return undefined;
  };

  // Step 3, a JSON body read under its cap and the body time limit, checked for its media type
  // and nesting.
  const readJson = async (
    request: Incoming,
    maxBytes: number,
    language: Language,
    gone: AbortSignal,
  ): Promise<Uint8Array<ArrayBuffer> | Response> => {
    const contentType = request.headers.get("content-type");
    const media = contentType?.split(";")[0].trim().toLowerCase() ?? "";
    if (FORM_TYPES.includes(media)) return errorResponse(Messages.sendJson(), language);
    // The service decodes no content coding (RFC 9110 8.4): a coded body is refused, not read as
    // JSON (gzip bytes) or taken as plain when it may not be.
    const coding = request.headers.get("content-encoding")?.trim().toLowerCase();
    if (coding !== undefined && coding !== "" && coding !== "identity") {
      return errorResponse(Messages.noContentCoding(), language);
    }
    const read = await readBody(request, maxBytes, options.bodyMs, gone);
    switch (read.kind) {
      case "too-large":
        return tooLarge(maxBytes, language);
      case "timeout":
        return errorResponse(Messages.bodyLate(options.bodyMs), language, { connection: "close" });
      case "failed":
        return errorResponse(
          read.code?.startsWith("HPE_") ? Messages.bodyFraming() : Messages.bodyNotRead(),
          language,
        );
      case "gone":
        return errorResponse(Messages.clientGone(), language, { connection: "close" });
    }
    if (read.bytes.byteLength > 0 && !isJsonMediaType(contentType)) {
      return errorResponse(Messages.sendJsonUtf8(), language);
    }
    if (jsonDepthExceeds(read.bytes)) {
      return errorResponse(Messages.jsonTooDeep(MAX_JSON_DEPTH), language);
    }
    // JSON is UTF-8 (RFC 8259): bytes that are not would be decoded with replacement characters
    // and stored so (a GBK name, say).
    if (!isUtf8(read.bytes)) return errorResponse(Messages.jsonNotUtf8(), language);
    return read.bytes;
  };

  // Step 4, the endpoint's answer. The stream holds the body until the endpoint reads it, then
  // nothing does: no caller keeps the bytes while the answer is awaited.
  const forward = (
    request: Incoming,
    note: RequestNoteShape,
    controller: AbortController,
    body: Uint8Array<ArrayBuffer> | undefined,
  ): Promise<Response> => {
    const forwarded = new Request(request.url, {
      method: request.method === "HEAD" ? "GET" : request.method,
      body: body === undefined ? undefined : bytesBody(body),
      // @ts-ignore: Deno's RequestInit lacks the standard duplex field that streamed bodies need.
      duplex: "half",
      signal: controller.signal,
    });
    appendHeaders(request.headers, forwarded.headers);
    return inner(forwarded, Context.make(RequestNote, note));
  };

  // The answer to one request, before X-Request-ID and logging: the steps above in order.
  const answer = async (
    request: Incoming,
    url: URL,
    note: RequestNoteShape,
    match: Target,
    controller: AbortController,
    peer: string | undefined,
    held: Held,
  ): Promise<Response> => {
    const language = note.language ?? "en";
    const offRoute = answerOffRoute(request, url, note, match);
    if (offRoute !== undefined || match.kind !== "route") {
      return offRoute ?? errorResponse(Messages.noEndpoint(), language);
    }
    const route = match.route;
    // Admission, the body and the endpoint's answer within the request's time limit (503 TIMEOUT
    // past it, the work interrupted). A write's transaction is not interrupted once it runs
    // (db/errors.ts): past the limit after the endpoint was reached, its outcome is not known yet,
    // and the answer says so.
    let reached = false;
    const steps = async () => {
      const refused = await admit(request, route, peer, held, language);
      if (refused !== undefined) return refused;
      let body: Uint8Array<ArrayBuffer> | undefined;
      if (route.body.kind === "json") {
        const read = await readJson(request, route.body.maxBytes, language, controller.signal);
        if (read instanceof Response) return read;
        body = read;
      }
      reached = true;
      return forward(request, note, controller, body);
    };
    let deadline: Deadline | undefined;
    const late = new Promise<Response>((resolve) => {
      deadline = deadlines.add(() => {
        controller.abort();
        const write = reached && request.method !== "GET" && request.method !== "HEAD";
        resolve(errorResponse(
          (write ? Messages.writeTooLong : Messages.requestTooLong)(options.requestMs),
          language,
        ));
      });
    });
    try {
      const work = steps();
      // Work that goes on after its answer (a write past the time limit) is waited for on a stop.
      working.add(work);
      const forget = () => working.delete(work);
      work.then(forget, forget);
      return await Promise.race([work, late]);
    } finally {
      deadline?.clear();
    }
  };

  // `controller`: the server's for this request, aborted when the client goes away; the time limit
  // aborts it too. Without one (a call in process), one is made that follows the request's signal.
  // (AbortSignal.any joined two signals per request through weak references, which young
  // collections do not clear: each request's signals and what they held reached the old
  // generation.)
  // `peer`: the client's address, which holds the limits' shares of a request without a credential.
  const handle = async (
    request: Incoming,
    controller?: AbortController,
    peer?: string,
  ): Promise<Response> => {
    const started = performance.now();
    const held = { body: [] as Array<() => void>, work: [] as Array<() => void> };
    let follow: (() => void) | undefined;
    if (controller === undefined) {
      const own = new AbortController();
      controller = own;
      follow = () => own.abort();
      if (request.signal?.aborted) own.abort();
      else request.signal?.addEventListener("abort", follow, { once: true });
    }
    const note: RequestNoteShape = {
      requestId: crypto.randomUUID(),
      memberId: null,
      language: negotiateLanguage(request.headers.get("accept-language")),
    };
    let url: URL | undefined;
    let matched: Target | undefined;
    let response: Response;
    metrics?.registry.started();
    try {
      url = new URL(request.url);
      matched = target(request.method, url.pathname);
      response = await answer(request, url, note, matched, controller, peer, held);
    } catch (error) {
      options.log.error("request failed before the handler", {
        request_id: note.requestId,
        cause: error instanceof Error ? error.message : String(error),
      });
      response = errorResponse(Messages.internal(note.requestId), note.language ?? "en");
    }
    for (const release of held.body) release();
    if (follow !== undefined) request.signal?.removeEventListener("abort", follow);
    if (request.method === "GET" || request.method === "HEAD") {
      response = await compressJson(request, response, options.keptGzip).catch(() => response);
    }
    // HEAD: the headers GET would have, compression included, without the body.
    if (request.method === "HEAD" && response.body !== null) {
      response.body.cancel().catch(() => {});
      response = new Response(null, { status: response.status, headers: response.headers });
    }
    // Every answer but the console's files and the documents is in the request's language.
    const languageVaries = matched?.kind !== "console" &&
      !(url !== undefined && DOCUMENTS.has(url.pathname));
    try {
      response.headers.set("x-request-id", note.requestId);
    } catch {
      // An immutable Response (none of ours is): answer with a copy.
      response = new Response(response.body, response);
      response.headers.set("x-request-id", note.requestId);
    }
    if (languageVaries) response.headers.append("vary", "accept-language");
    if (matched?.kind === "route" || response.status >= 400) {
      // An endpoint's answer (or any refusal: 404, 405, ...) that says nothing of caching is kept
      // by no cache (a session's answers carry no Authorization header that would keep them out of
      // shared caches).
      if (!response.headers.has("cache-control")) {
        response.headers.set("cache-control", "private, no-store");
      }
      // Its media type is the one it says (no browser reads JSON as a page or a script), and a
      // 401 names the scheme that would be accepted (RFC 9110 11.6.1).
      response.headers.set("x-content-type-options", "nosniff");
      if (response.status === 401 && !response.headers.has("www-authenticate")) {
        response.headers.set("www-authenticate", 'Bearer realm="energy-service"');
      }
    }
    const length = response.headers.get("content-length");
    const logLine = (bytes: number | null, cut = false) => {
      for (const release of held.work) release();
      const ms = performance.now() - started;
      metrics?.registry.finished(statsFor(matched), request.method, response.status, ms / 1000);
      options.log.write(response.status >= 500 || cut ? "warn" : "info", "request", {
        method: request.method.slice(0, 10),
        path: url === undefined ? null : loggedPath(url.pathname),
        // Query parameter names only: a value may hold anything.
        query: url === undefined || url.search === "" ? undefined : [
          ...new Set(url.searchParams.keys()),
        ].map(loggedPart).join(",").slice(0, 200),
        status: response.status,
        ms: Math.round(ms * 10) / 10,
        bytes,
        request_id: note.requestId,
        member: note.memberId,
        // The body stopped before its end: the client went away, or reading it failed.
        ...(cut ? { cut: true } : {}),
      });
    };
    if (length !== null || response.body === null) {
      logLine(length === null ? 0 : Number(length));
      return response;
    }
    // A streamed answer is logged when it has been sent, with its size and its whole time.
    let bytes = 0;
    let logged = false;
    const finish = (cut: boolean) => {
      if (logged) return;
      logged = true;
      logLine(bytes, cut);
    };
    const counted = response.body.pipeThrough(
      new TransformStream<Uint8Array, Uint8Array>({
        transform(chunk, controller) {
          bytes += chunk.byteLength;
          controller.enqueue(chunk);
        },
        flush() {
          finish(false);
        },
      }),
    );
    const reader = counted.getReader();
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        try {
          const { done, value } = await reader.read();
          if (done) controller.close();
          else controller.enqueue(value);
        } catch (error) {
          finish(true);
          controller.error(error);
        }
      },
      cancel(reason) {
        finish(true);
        return reader.cancel(reason);
      },
    });
    return new Response(body, { status: response.status, headers: response.headers });
  };

  // Waits, at most `ms`, for the work of the requests under way to end, answered or not (a write
  // still running after its 503 TIMEOUT): a stop, once no request comes in, closes the database only
  // then. True when all of it ended.
  const settled = (ms: number) => settlesWithin(Promise.allSettled([...working]), ms);

  return Object.assign(handle, { settled });
};
