// Serves a web handler over node:http, whose server closes slow or idle connections (Deno.serve has
// no header, request or idle timeout): half-sent headers, dripping bodies and idle keep-alives.
import http from "node:http";
import type { Socket } from "node:net";
import { EARLY_END } from "./body.ts";
import { BodilessRequest, type Incoming } from "./incoming.ts";
import type { Message } from "../domain/errors.ts";
import { statusOfCode } from "../domain/error_codes.ts";
import { type Language, negotiateLanguage, pick } from "../domain/language.ts";
import { Messages } from "../domain/messages.ts";

export interface ServeOptions {
  readonly port: number;
  readonly hostname: string;
  // The request line and headers must arrive within this.
  readonly headersMs: number;
  // The whole request (headers and body) must arrive within this.
  readonly requestMs: number;
  // A connection with no traffic for this long is closed.
  readonly idleMs: number;
  // A connection with no request for this long after its last answer is closed (default 5 s).
  readonly keepAliveMs?: number;
  readonly onListen?: (address: { hostname: string; port: number }) => void;
}

export interface Served {
  readonly port: number;
  // Stops accepting, lets requests in flight finish, then closes idle connections. With graceMs,
  // connections still open after it (an answer a slow client is still taking) are closed: their
  // answers are cut. Resolves with whether everything finished in time.
  readonly shutdown: (graceMs?: number) => Promise<boolean>;
}

const KEEP_ALIVE_MS = 5_000;
const SWEEP_MS = 1_000;

// A connection's traffic as the sweep last saw it. node:http's own idle and keep-alive timeouts set
// a new timer on the socket for every request and every answer; under load those timers (and the
// runtime's bookkeeping of them) outlived young collections and reached the old generation. One
// sweep over the open connections reads their byte counters instead.
interface Watched {
  readonly socket: Socket;
  read: number;
  written: number;
  // When the sweep first saw the counters as they are (at or after the traffic itself, so a
  // connection is never closed before its time).
  quietSince: number;
  // Requests received whose answers are not yet written, and answers written.
  open: number;
  answered: number;
  // The latest request's answer while it is open: until its head is written the request's own time
  // limit applies, not the connection's idle time (the service may be working on it).
  pending?: http.ServerResponse;
  // Fails the body of the latest request while it is still arriving (see clientError); does nothing
  // once that request's message is complete.
  failBody?: (error: Error) => void;
  // The parser failed with a request in flight: the connection reads no more and is closed once
  // its answers are written.
  broken?: boolean;
}

// After an answer sent before its request's body was read (401, 403, 413, 503 BUSY, ...), the
// connection is closed without resetting it while the client still sends: a close with unread data
// resets the connection, and a client then sees the reset instead of the answer.
// - A short rest of the body (at most DRAIN_BYTES announced) is read and dropped, then the connection
//   is closed: even a client that writes its whole request before it reads gets the answer.
// - A longer one, or one of unknown length, is not read at all: the answer is sent, the service's
//   side of the connection is shut, and the client (browsers, fetch, curl read while they upload)
//   reads the answer and goes; one still there after LINGER_MS is cut. Reading and dropping
//   hundreds of megabytes would cost the memory and the time the refusal is there to save.
const DRAIN_BYTES = 1024 * 1024;
const LINGER_MS = 5_000;

const closeAfterRefusal = (req: http.IncomingMessage) => {
  const socket = req.socket;
  if (socket.destroyed) return;
  const cut = setTimeout(() => socket.destroy(), LINGER_MS);
  Deno.unrefTimer(cut);
  socket.once("close", () => clearTimeout(cut));
  const declared = Number(req.headers["content-length"] ?? NaN);
  const rest = declared - socket.bytesRead;
  req.removeAllListeners("data");
  if (Number.isFinite(declared) && rest <= DRAIN_BYTES) {
    const from = socket.bytesRead;
    req.on("data", () => {
      if (socket.bytesRead - from > DRAIN_BYTES) socket.destroy();
    });
    req.once("end", () => socket.end());
    req.resume();
    return;
  }
  socket.end();
  // node:http resumes an unread body to drop it once the answer is written (on the next tick), and
  // the socket then reads on at the client's pace: the body's bytes are read and dropped, hundreds
  // of megabytes of garbage under a flood. Afterwards the parser's reader is taken off and the
  // socket paused, so it reads no more and the client's rest stays in its own send buffer: at the
  // first turn of the event loop after that resume (a zero-delay timer would let the socket read on
  // for a millisecond or two).
  setImmediate(() => {
    socket.removeAllListeners("data");
    socket.pause();
  });
};

// Ends the service's side of a connection, and cuts it if the client has not closed its own a
// second later.
const endSoon = (socket: Socket | null) => {
  socket?.end();
  setTimeout(() => socket?.destroy(), 1_000).unref?.();
};

const MAX_HEADER_BYTES = 16 * 1024;

// Answers node:http's parser gives for a request it could not read, with the contract's error
// body (its own have none), in the language of an Accept-Language among the bytes it did read.
const PARSE_FAILURES: Record<string, { readonly reason: string; readonly message: () => Message }> =
  {
    HPE_HEADER_OVERFLOW: {
      reason: "Request Header Fields Too Large",
      message: () => Messages.headersTooLarge(MAX_HEADER_BYTES),
    },
    ERR_HTTP_REQUEST_TIMEOUT: { reason: "Request Timeout", message: Messages.requestLate },
    // CONNECT (node:http gives it apart from other requests): no path of this service takes it.
    CONNECT: {
      reason: "Method Not Allowed",
      message: () => Messages.methodNotAllowed(CONNECT_ALLOW),
    },
  };
const NOT_HTTP = { reason: "Bad Request", message: Messages.notHttp };

const ACCEPT_LANGUAGE = /\r\naccept-language:[ \t]*([^\r\n]{0,512})/i;

// The contract's error body of a refusal made here, below the front door.
const errorBodyOf = (m: Message, language: Language) =>
  JSON.stringify({ error: { code: m.code, message: pick(m, language) } });

const parseFailure = (error: Error & { code?: string; rawPacket?: unknown }) => {
  const { reason, message } = PARSE_FAILURES[error.code ?? ""] ?? NOT_HTTP;
  const m = message();
  const raw = error.rawPacket instanceof Uint8Array
    ? new TextDecoder().decode(error.rawPacket.subarray(0, MAX_HEADER_BYTES + 1024))
    : "";
  const language = negotiateLanguage(ACCEPT_LANGUAGE.exec(raw)?.[1]);
  return { status: statusOfCode(m.code), reason, body: errorBodyOf(m, language) };
};

// The methods a CONNECT's 405 names in its Allow header (RFC 9110 15.5.6).
const CONNECT_ALLOW = "GET, HEAD, POST, PATCH";

const answerParseFailure = (error: Error & { code?: string }, socket: Socket) => {
  const { status, reason, body } = parseFailure(error);
  // The headers the front door gives every answer of an endpoint.
  socket.write(
    `HTTP/1.1 ${status} ${reason}\r\ncontent-type: application/json\r\n` +
      `content-length: ${new TextEncoder().encode(body).byteLength}\r\n` +
      `x-request-id: ${crypto.randomUUID()}\r\ncache-control: private, no-store\r\n` +
      `x-content-type-options: nosniff\r\n${status === 405 ? `allow: ${CONNECT_ALLOW}\r\n` : ""}` +
      `connection: close\r\n\r\n` + body,
  );
  socket.end();
  // Read and drop what the client still sends, a little of it (see closeAfterRefusal); a late client
  // is not waited for.
  const cut = setTimeout(() => socket.destroy(), status === 408 ? 1_000 : LINGER_MS);
  Deno.unrefTimer(cut);
  const from = socket.bytesRead;
  socket.on("data", () => {
    if (socket.bytesRead - from > DRAIN_BYTES) socket.destroy();
  });
  socket.once("close", () => clearTimeout(cut));
  socket.resume();
};

const WATCHED = Symbol("watched");
type WatchedSocket = Socket & { [WATCHED]?: Watched };

// The request body as a web stream that reads from the socket only as fast as it is consumed, and
// stops reading for good when it is cancelled (a refused body is not read to its end). Nothing is
// taken from the request until the first read: a request refused from its headers holds no more
// of its body than node:http's own small buffer. `fail` errors the stream while the body is still
// arriving (now, or at its first read).
const bodyStream = (req: http.IncomingMessage, beforeFirstRead?: () => void) => {
  let done = false;
  let attached: ReadableStreamDefaultController<Uint8Array> | undefined;
  let failed: Error | undefined;
  const fail = (error: Error) => {
    if (done) return;
    if (attached === undefined) {
      failed = error;
      return;
    }
    done = true;
    attached.error(error);
  };
  const attach = (controller: ReadableStreamDefaultController<Uint8Array>) => {
    attached = controller;
    if (failed !== undefined) {
      done = true;
      controller.error(failed);
      return;
    }
    beforeFirstRead?.();
    req.on("data", (chunk: Uint8Array) => {
      if (done) return;
      // As node:http gives it (a view of the socket's read): the reader copies it into the body's
      // own buffer (readBody), so a copy here would be garbage of every body byte.
      controller.enqueue(chunk);
      if ((controller.desiredSize ?? 0) <= 0) req.pause();
    });
    req.once("end", () => {
      if (done) return;
      done = true;
      controller.close();
    });
    req.once("error", (error) => {
      if (done) return;
      done = true;
      controller.error(error);
    });
  };
  const stream = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (attached === undefined) attach(controller);
      if (!done) req.resume();
    },
    cancel() {
      done = true;
      req.pause();
    },
  }, { highWaterMark: 0 });
  return { stream, fail };
};

// The request has no signal of its own: the handler is given the controller instead (a signal given
// to Request is followed by a new one, through weak references that keep it and what it holds
// past young collections).
// A GET or HEAD has no body: it is given as a BodilessRequest, its headers read from node:http's raw
// ones, and no web Request is made (incoming.ts). Any other request is a web Request whose body is
// read from the socket as it is consumed; its headers are appended to the request's own (a Headers
// object given to Request is converted and copied: a third of what building the request allocated).
// `beforeFirstRead`: called when the body is first read (a client that waits for 100 Continue is
// told then, once the front door has admitted the request).
// `watched`: the connection's entry, given the body's `fail` while the body is still arriving.
const toIncoming = (
  req: http.IncomingMessage,
  watched: Watched | undefined,
  beforeFirstRead?: () => void,
): Incoming => {
  const method = req.method ?? "GET";
  const url = `http://${safeHost(req.headers.host)}${pathOf(req.url ?? "/")}`;
  // TRACE and TRACK are methods a web Request refuses to carry: the front door answers them 405
  // from the method alone (no route takes them), so they need no body.
  if (method === "GET" || method === "HEAD" || method === "TRACE" || method === "TRACK") {
    return new BodilessRequest(method, url, req.rawHeaders);
  }
  const body = bodyStream(req, beforeFirstRead);
  // Only while the message is incomplete: its body may be read long after it has all arrived.
  if (watched !== undefined) {
    watched.failBody = (error) => {
      if (!req.complete) body.fail(error);
    };
  }
  const request = new Request(url, {
    method,
    body: body.stream,
    // @ts-ignore: Deno's RequestInit lacks the standard duplex field that streamed bodies need.
    duplex: "half",
  });
  const headers = request.headers;
  for (let i = 0; i < req.rawHeaders.length; i += 2) {
    headers.append(req.rawHeaders[i], req.rawHeaders[i + 1]);
  }
  return request;
};

// A "." or ".." path segment, also percent-encoded, or a backslash (which a URL parser reads as a
// "/"), before any query.
const DOT_SEGMENT = /^[^?#]*(\/(\.|%2e){1,2}(\/|\?|#|$)|\\)/i;

// The request target's path and query: origin-form as sent ("//api" stays "//api": the front door
// matches it exactly), or those of an absolute-form target (RFC 9112 3.2.2: a server accepts
// "GET http://host/path"). Any other form ("*", an authority) names no path here: "/*" matches none.
const pathOf = (target: string) => {
  // A URL parser would resolve "." and ".." segments ("/api/v1/x/../stores" to "/api/v1/stores")
  // and backslashes: a path is matched as sent, so one that has them names no path.
  if (DOT_SEGMENT.test(target)) return "/*";
  if (target.startsWith("/")) return target;
  if (/^https?:\/\//i.test(target)) {
    try {
      const url = new URL(target);
      return `${url.pathname}${url.search}`;
    } catch {
      // Not a URL: no path.
    }
  }
  return "/*";
};

// A Host header that cannot be a URL's host is replaced: the URL is only used for its path.
const safeHost = (host: string | undefined) =>
  host !== undefined && /^[A-Za-z0-9.\-]{1,253}(:\d{1,5})?$|^\[[0-9A-Fa-f:.]{2,45}\](:\d{1,5})?$/
      .test(host)
    ? host
    : "localhost";

const writeResponse = async (
  response: Response,
  req: http.IncomingMessage,
  res: http.ServerResponse,
  // The Keep-Alive header's value ("timeout=5").
  keepAlive: string,
) => {
  // forEach rather than the Headers iterator: the iterator makes an object per step.
  const headers: Record<string, string | Array<string>> = {};
  response.headers.forEach((value, name) => {
    if (name !== "set-cookie") headers[name] = value;
  });
  const cookies = response.headers.getSetCookie();
  if (cookies.length > 0) headers["set-cookie"] = cookies;
  // An answer given before the body was read: the connection is closed after it without a reset
  // (closeAfterRefusal). One that says `Connection: close` itself (408, a client too slow to wait
  // for), or on a connection whose parser failed, is closed at once.
  if ((req.socket as WatchedSocket)[WATCHED]?.broken === true) headers["connection"] = "close";
  const unread = !req.complete;
  const closing = headers["connection"] === "close";
  if (!unread && !closing && res.shouldKeepAlive) headers["keep-alive"] = keepAlive;
  res.writeHead(response.status, headers);
  if (unread && !closing) res.once("finish", () => closeAfterRefusal(req));
  else if (unread) res.once("finish", () => endSoon(req.socket));
  if (response.body === null) {
    res.end();
    return;
  }
  const reader = response.body.getReader();
  try {
    while (true) {
      const { done, value } = await reader.read();
      if (done) break;
      if (res.destroyed) {
        await reader.cancel();
        return;
      }
      if (!res.write(value)) {
        // Wait for the client to take what was written (or to go away), and leave no listener
        // behind: a large answer waits many times.
        await new Promise<void>((resolve) => {
          const done = () => {
            res.off("drain", done);
            res.off("close", done);
            resolve();
          };
          res.on("drain", done);
          res.on("close", done);
        });
      }
    }
    res.end();
  } catch {
    // A cut answer must not look whole. Without a length or chunks (an HTTP/1.0 client, or a proxy
    // that speaks it) a body ends when the connection does: a plain close would end it as a
    // complete one, a reset does not.
    res.socket?.resetAndDestroy();
    res.destroy();
  }
};

export const serve = (
  // `controller` is aborted when the client goes away before its answer is written.
  handler: (request: Incoming, controller: AbortController, peer?: string) => Promise<Response>,
  options: ServeOptions,
): Promise<Served> => {
  const keepAliveMs = options.keepAliveMs ?? KEEP_ALIVE_MS;
  const keepAlive = `timeout=${Math.floor(keepAliveMs / 1000)}`;
  const server = http.createServer({
    headersTimeout: options.headersMs,
    requestTimeout: options.requestMs,
    // Kept by the sweep below, not by a timer per answer.
    keepAliveTimeout: 0,
    connectionsCheckingInterval: Math.min(1_000, options.headersMs),
    maxHeaderSize: MAX_HEADER_BYTES,
    // Answered below with the contract's error body (node:http's own 400 has none).
    requireHostHeader: false,
  } as http.ServerOptions);
  // A client that shuts its sending side once its request is sent (half-close, as netcat and some
  // devices do) still waits for the answer: node:http would end the connection at once, unanswered.
  (server as http.Server & { httpAllowHalfOpen: boolean }).httpAllowHalfOpen = true;
  // `expectsContinue`: the client sent Expect: 100-continue and waits before sending its body.
  // node:http would answer 100 at once; it is sent only when the body is first read, so a request
  // refused from its headers (no credential, too large) is refused before any of its body is sent.
  const onRequest = (
    req: http.IncomingMessage,
    res: http.ServerResponse,
    expectsContinue = false,
  ) => {
    // RFC 9112 3.2: an HTTP/1.1 request without Host is 400, and its connection is closed.
    if (req.httpVersion === "1.1" && req.headers.host === undefined) {
      const m = Messages.hostMissing();
      const body = new TextEncoder().encode(
        errorBodyOf(m, negotiateLanguage(req.headers["accept-language"])),
      );
      const headers = {
        "content-type": "application/json",
        "content-length": String(body.byteLength),
        "x-request-id": crypto.randomUUID(),
        "cache-control": "private, no-store",
        "x-content-type-options": "nosniff",
        connection: "close",
      };
      writeResponse(
        new Response(body, { status: statusOfCode(m.code), headers }),
        req,
        res,
        keepAlive,
      )
        .catch(() => res.destroy());
      return;
    }
    const controller = new AbortController();
    const watched = (req.socket as WatchedSocket)[WATCHED];
    if (watched !== undefined) {
      watched.open++;
      watched.pending = res;
    }
    // A client that goes away before its answer is written interrupts the work.
    res.once("close", () => {
      if (watched !== undefined) {
        watched.open--;
        watched.answered++;
        if (watched.pending === res) watched.pending = undefined;
        if (watched.broken && watched.open === 0) endSoon(req.socket);
      }
      if (!res.writableFinished) controller.abort();
    });
    const incoming = toIncoming(
      req,
      watched,
      expectsContinue
        ? () => {
          if (!res.headersSent) res.writeContinue();
        }
        : undefined,
    );
    handler(incoming, controller, req.socket.remoteAddress)
      .then((response) => writeResponse(response, req, res, keepAlive))
      .catch(() => {
        if (!res.headersSent) res.writeHead(500).end();
        else res.destroy();
      });
  };
  server.on("request", (req, res) => onRequest(req, res));
  server.on("checkContinue", (req, res) => onRequest(req, res, true));
  // An Expect other than 100-continue: node:http would answer 417 itself, without the contract's
  // error body; the expectation is ignored and the request answered as any other (RFC 9110 10.1.1
  // lets a server do either).
  server.on("checkExpectation", (req, res) => onRequest(req, res));
  server.on("connect", (_req: http.IncomingMessage, socket: Socket) => {
    answerParseFailure(Object.assign(new Error("CONNECT"), { code: "CONNECT" }), socket);
  });
  server.on("clientError", (error: Error & { code?: string }, socket: WatchedSocket) => {
    if (!socket.writable) {
      socket.destroy();
      return;
    }
    const entry = socket[WATCHED];
    if (entry !== undefined && entry.open > 0) {
      // Mid-request, anything but the parser's own failure (a socket error, the request's time
      // limit): nothing more can be said.
      if (!error.code?.startsWith("HPE_")) {
        socket.destroy();
        return;
      }
      // The parser failed with a request in flight (its body's framing broken, or bytes after it
      // that are not a request): the connection reads no more; a body still arriving fails, so
      // that its request is answered 400 at once and gives back what it holds; the connection
      // closes once its answers are written.
      entry.broken = true;
      socket.removeAllListeners("data");
      socket.pause();
      entry.failBody?.(Object.assign(new Error(error.message), { code: error.code }));
      return;
    }
    answerParseFailure(error, socket);
  });
  server.headersTimeout = options.headersMs;
  server.requestTimeout = options.requestMs;
  server.keepAliveTimeout = 0;

  // Socket inactivity: a connection with no traffic either way for idleMs is closed (not while the
  // service works on a request whose answer has not started), and one with no request for
  // keepAliveMs after its last answer.
  const watched = new Set<Watched>();
  server.on("connection", (socket: WatchedSocket) => {
    const entry: Watched = {
      socket,
      read: socket.bytesRead,
      written: socket.bytesWritten,
      quietSince: performance.now(),
      open: 0,
      answered: 0,
    };
    socket[WATCHED] = entry;
    watched.add(entry);
    socket.once("close", () => watched.delete(entry));
    // The client has sent all it will (a half-close, or the whole connection closed): a body still
    // arriving never will, and its request is answered at once (front.ts) instead of waiting for
    // the body's time limit.
    socket.once(
      "end",
      () =>
        entry.failBody?.(
          Object.assign(new Error("the client stopped sending"), { code: EARLY_END }),
        ),
    );
  });
  const sweep = () => {
    const now = performance.now();
    for (const entry of watched) {
      const { socket } = entry;
      const working = entry.pending !== undefined && !entry.pending.headersSent;
      if (
        working || socket.bytesRead !== entry.read || socket.bytesWritten !== entry.written
      ) {
        entry.read = socket.bytesRead;
        entry.written = socket.bytesWritten;
        entry.quietSince = now;
        continue;
      }
      const quiet = now - entry.quietSince;
      const between = entry.open === 0 && entry.answered > 0;
      if (quiet >= options.idleMs || (between && quiet >= keepAliveMs)) socket.destroy();
    }
  };
  const sweeper = setInterval(
    sweep,
    Math.max(10, Math.min(SWEEP_MS, options.idleMs / 4, keepAliveMs / 4)),
  );
  Deno.unrefTimer(sweeper);

  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, options.hostname, () => {
      const address = server.address();
      const port = typeof address === "object" && address !== null ? address.port : options.port;
      options.onListen?.({ hostname: options.hostname, port });
      resolve({
        port,
        shutdown: (graceMs?: number) =>
          new Promise<boolean>((done) => {
            let cut = false;
            const grace = graceMs === undefined ? undefined : setTimeout(() => {
              cut = true;
              // A cut answer is reset, so that it never looks whole (as in writeResponse).
              for (const entry of watched) {
                if (entry.open > 0) entry.socket.resetAndDestroy();
                else entry.socket.destroy();
              }
            }, graceMs);
            server.close(() => {
              clearInterval(sweeper);
              clearTimeout(grace);
              done(!cut);
            });
            server.closeIdleConnections();
          }),
      });
    });
  });
};
