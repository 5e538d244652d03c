// The request being served: what the front door and the features that read a request before the
// HttpApi does (the credential check, the console) see of it, and the facts the access log reports:
// its id and, once known, the member.
import { Context } from "effect";
import type { Language } from "./language.ts";

export interface RequestNoteShape {
  readonly requestId: string;
  memberId: number | null;
  // The language its Accept-Language chose (language.ts), for every text of its answer.
  readonly language?: Language;
}

export class RequestNote extends Context.Tag("Http/RequestNote")<RequestNote, RequestNoteShape>() {}

export interface IncomingHeaders extends Iterable<[string, string]> {
  get(name: string): string | null;
  has(name: string): boolean;
}

// A web Request (in-process callers, tests), or the server's lighter form of a request without a
// body (src/http/incoming.ts).
export interface Incoming {
  readonly method: string;
  // The absolute URL, as a web Request's `url`.
  readonly url: string;
  readonly headers: IncomingHeaders;
  readonly body: ReadableStream<Uint8Array<ArrayBuffer>> | null;
  // A web Request's signal (a call in process); the server gives the front door a controller.
  readonly signal?: AbortSignal;
}

// The entity tags an If-None-Match header lists, without their weak prefix.
export const tagsOf = (header: string) =>
  header.split(",").map((t) => t.trim().replace(/^W\//, ""));

// Whether If-None-Match is "*": it matches any representation (RFC 9110 §13.1.2), also an answer
// that has no ETag (a read as of an earlier instant).
export const matchesAny = (header: string | null | undefined) => header?.trim() === "*";

// Whether Accept-Encoding takes gzip (RFC 9110 12.5.3): as its own entry says, else as "*" says;
// q=0 refuses it.
export const acceptsGzip = (
  request: { readonly headers: { get(name: string): string | null } },
) => {
  let gzip: boolean | undefined;
  let any: boolean | undefined;
  for (const part of (request.headers.get("accept-encoding") ?? "").split(",")) {
    const [coding, ...params] = part.trim().toLowerCase().split(";").map((p) => p.trim());
    const taken = !params.some((p) => /^q=0(\.0{0,3})?$/.test(p));
    if (coding === "gzip" || coding === "x-gzip") gzip = taken;
    else if (coding === "*") any = taken;
  }
  return gzip ?? any ?? false;
};

// An answer sent gzip-encoded: the compressed bytes are another representation of it, named by a
// weak tag (If-None-Match compares weakly).
export const markGzipped = (headers: Headers, etag: string) => {
  headers.set("content-encoding", "gzip");
  headers.set("etag", `W/${etag}`);
};

// Whether If-None-Match names this ETag (weak comparison, as RFC 9110 has it for If-None-Match).
export const etagMatches = (header: string | null | undefined, etag: string) =>
  header !== null && header !== undefined && (matchesAny(header) || tagsOf(header).includes(etag));

const MAX_LOGGED_PATH = 200;
// A path segment or query name logged (or traced) as it was sent only up to this length: a longer
// one is written as "…", since a client may put a key there (an access key is 47 characters), and
// a key never leaves the process. The service's own segments (ids, dates, asset names) are shorter.
const MAX_LOGGED_PART = 32;

export const loggedPart = (part: string) => part.length > MAX_LOGGED_PART ? "…" : part;

export const loggedPath = (pathname: string) =>
  pathname.split("/").map(loggedPart).join("/").slice(0, MAX_LOGGED_PATH);
