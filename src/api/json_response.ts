// Answers whose bodies are already JSON text, and conditional reads (RFC 9110 §13.1.2): a strong
// ETag made of the data's version and the code's shape tag; If-None-Match holding it answers
// 304 Not Modified without a body. Answers depend on the caller's credential: private, revalidated.
import * as HttpServerResponse from "@effect/platform/HttpServerResponse";
import { Stream } from "effect";
import type { JsonText } from "../domain/answers.ts";
import { tagsOf } from "../domain/request.ts";

const CACHE_CONTROL = "private, no-cache";

export const etagOf = (kind: string, version: string, tag: string) => `"${kind}.${version}.${tag}"`;

// The version of `kind` a client holds, when its If-None-Match names one made by this code: a
// statement can compare it with the current version and skip building the body.
export const heldVersion = (header: string | undefined, kind: string, tag: string) => {
  if (header === undefined) return undefined;
  for (const t of tagsOf(header)) {
    const prefix = `"${kind}.`;
    const suffix = `.${tag}"`;
    if (t.startsWith(prefix) && t.endsWith(suffix) && t.length > prefix.length + suffix.length) {
      return t.slice(prefix.length, -suffix.length);
    }
  }
  return undefined;
};

// A 200 answer whose JSON body is already in the contract's final shape: it leaves as is, without
// a second encode (the tests check it against the schema).
export const jsonResponse = (body: JsonText, etag?: string) =>
  HttpServerResponse.text(body, {
    contentType: "application/json",
    headers: etag === undefined ? undefined : { etag, "cache-control": CACHE_CONTROL },
  });

export const notModifiedHeaders = (etag: string, extra?: Readonly<Record<string, string>>) => ({
  ...extra,
  etag,
  "cache-control": CACHE_CONTROL,
});

export const notModified = (etag: string, extra?: Readonly<Record<string, string>>) =>
  HttpServerResponse.empty({ status: 304, headers: notModifiedHeaders(etag, extra) });

// The headers that name the data an answer was made from (reads as of an earlier instant): the
// token of its commit on every read, and for a read as of an earlier instant the instant it shows.
// Such an answer never changes, but no client keeps it (`no-store`: it has no validator, and a
// kept copy could be used without asking, by the back button or a forced cache): a key revoked, or
// a browser signed out and used by another member, must not read it without the service deciding
// the credential again.
export const dataHeaders = (
  token: string | undefined,
  asOf?: { readonly knownAt: string | undefined; readonly committedAt: string },
): Record<string, string> => ({
  ...(token === undefined ? {} : { "data-token": token }),
  ...(asOf?.knownAt === undefined ? {} : { "data-known-at": asOf.knownAt }),
  ...(asOf === undefined ? {} : { "cache-control": "private, no-store" }),
});

const encoder = new TextEncoder();

// An answer sent while it is made, from a stream that lets go of its source once it has been run:
// the web handler keeps its last request's fiber, and so that request's response, until another
// request comes through it, and a sent answer's rows (a preview's 10,000, a download's) must not
// stay with it. The stream is run once, to send it.
export const streamResponse = <E>(
  body: Stream.Stream<Uint8Array, E>,
  options?: HttpServerResponse.Options,
) => {
  let source: Stream.Stream<Uint8Array, E> | undefined = body;
  return HttpServerResponse.stream(
    Stream.suspend(() => {
      const taken = source;
      source = undefined;
      return taken ?? Stream.dieMessage("an answer's body was read a second time");
    }),
    options,
  );
};

// A JSON answer sent while it is read: `open`, then the parts (JSON text) joined by `separator`
// (", " as PostgreSQL's json_agg writes it), then `close`. Memory holds one part at a time
// whatever the answer's size. A failure after the first bytes can only cut the connection short
// (the client sees a truncated body).
export const jsonStream = <E>(
  open: string,
  parts: Stream.Stream<JsonText, E>,
  close: string,
  etag?: string,
  separator = ", ",
) =>
  streamResponse(
    Stream.make(open).pipe(
      Stream.concat(
        parts.pipe(
          Stream.mapAccum(true, (first, part) => [false, first ? part : `${separator}${part}`]),
        ),
      ),
      Stream.concat(Stream.make(close)),
      Stream.map((text) => encoder.encode(text)),
    ),
    {
      contentType: "application/json",
      headers: etag === undefined ? undefined : { etag, "cache-control": CACHE_CONTROL },
    },
  );

// JSON text given in parts (strings, or UTF-8 bytes as the database sent them), as one buffer of
// bytes, each part written into it in turn: the parts are never joined into one string (an
// answer's text of over 128 KB would be a large object of V8's old generation, made and dropped for
// every request; the bytes live outside the heap and go with the request). Sized for ASCII text,
// grown when a part is not.
export const encodeParts = (
  parts: ReadonlyArray<string | Uint8Array | ArrayGroup>,
): Uint8Array<ArrayBuffer> => {
  let size = 0;
  for (const part of parts) {
    size += typeof part === "string"
      ? part.length
      : part instanceof ArrayGroup
      ? part.json.length
      : part.byteLength;
  }
  let bytes = new Uint8Array(size);
  let at = 0;
  const room = (needed: number) => {
    if (at + needed <= bytes.length) return;
    const grown = new Uint8Array(Math.max(bytes.length * 2, at + needed));
    grown.set(bytes.subarray(0, at));
    bytes = grown;
  };
  const write = (text: string) => {
    let rest = text;
    for (;;) {
      const { read, written } = encoder.encodeInto(rest, bytes.subarray(at));
      at += written;
      if (read === rest.length) return;
      rest = rest.slice(read);
      room(rest.length * 3);
    }
  };
  // A text part that ends in the first half of a surrogate pair hands it to the next text part,
  // which may hold the second half (as the joined text would); bytes are whole characters.
  let carried = "";
  for (const [i, part] of parts.entries()) {
    if (part instanceof ArrayGroup) {
      // Over the "]" before it, its own "[" made the comma between the two groups' items.
      if (carried !== "") write(carried);
      carried = "";
      at -= 1;
      const start = at;
      write(part.json);
      bytes[start] = 0x2c;
      continue;
    }
    if (typeof part !== "string") {
      if (carried !== "") write(carried);
      carried = "";
      room(part.byteLength);
      bytes.set(part, at);
      at += part.byteLength;
      continue;
    }
    let rest = carried + part;
    carried = "";
    const last = rest.charCodeAt(rest.length - 1);
    if (i < parts.length - 1 && last >= 0xd800 && last <= 0xdbff) {
      carried = rest.slice(-1);
      rest = rest.slice(0, -1);
    }
    write(rest);
  }
  return at === bytes.length ? bytes : bytes.slice(0, at);
};

// The headers of a JSON answer of store data besides its type: its ETag (and so its cache rule)
// and the headers that name its data.
export const jsonHeaders = (
  etag?: string,
  extra?: Readonly<Record<string, string>>,
): Record<string, string> => ({
  ...(etag === undefined ? {} : { etag, "cache-control": CACHE_CONTROL }),
  ...extra,
});

// A JSON answer of encoded bytes (encodeParts, or a kept answer's). The bytes go out as they are:
// a web Response made from a byte array copies it (the Fetch standard's body extraction), so the
// body is a stream that hands over these very bytes, and the length is stated here.
export const jsonBytes = (
  bytes: Uint8Array<ArrayBuffer>,
  etag?: string,
  extra?: Readonly<Record<string, string>>,
) =>
  HttpServerResponse.raw(
    new ReadableStream<Uint8Array>({
      pull(controller) {
        controller.enqueue(bytes);
        controller.close();
      },
    }),
    {
      contentType: "application/json",
      headers: { ...jsonHeaders(etag, extra), "content-length": String(bytes.byteLength) },
    },
  );

// A JSON answer made of parts (encodeParts).
export const jsonParts = (
  parts: ReadonlyArray<string | Uint8Array>,
  etag?: string,
  extra?: Readonly<Record<string, string>>,
) => jsonBytes(encodeParts(parts), etag, extra);

// The JSON text of a group of an array's items ("[a,b]") that continues the array written just
// before it, which ends in "]": encodeParts writes it over that "]" and makes its "[" the comma
// between the two groups. Neither text is sliced or joined, so that no second string is made.
export class ArrayGroup {
  constructor(readonly json: string) {}
}

// JSON.stringify(value)'s text, made in parts: the array under `key` is written `size` items at a
// time (encodeParts joins them; a 366-day metrics answer is 240 KB).
export const chunkedJson = (
  value: Readonly<Record<string, unknown>>,
  key: string,
  size = 32,
): Array<string | ArrayGroup> => {
  const parts: Array<string | ArrayGroup> = [];
  let text = "{";
  for (const [name, field] of Object.entries(value)) {
    if (field === undefined) continue;
    text += `${text === "{" ? "" : ","}${JSON.stringify(name)}:`;
    if (name !== key || !Array.isArray(field) || field.length === 0) {
      text += JSON.stringify(field);
      continue;
    }
    parts.push(text);
    for (let i = 0; i < field.length; i += size) {
      const json = JSON.stringify(field.slice(i, i + size));
      parts.push(i === 0 ? json : new ArrayGroup(json));
    }
    text = "";
  }
  parts.push(`${text}}`);
  return parts;
};
