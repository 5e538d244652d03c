// What the front door, the lanes and the console read of a request: a web Request (in-process
// callers, tests), or the server's lighter form of a request without a body (serve.ts), whose
// headers are read from node:http's raw ones and for which no web Request is built. Building one
// for every request (its URL parsed, each header converted and appended) was about 3 KB of what a
// kept answer's request allocated; the HttpApi, when a request reaches it, is given a Request of its
// own anyway (front.ts).
export interface IncomingHeaders {
  get(name: string): string | null;
  has(name: string): boolean;
}

export interface Incoming {
  readonly method: string;
  // The absolute URL, as a web Request's `url`.
  readonly url: string;
  readonly headers: IncomingHeaders;
  readonly body: ReadableStream<Uint8Array<ArrayBuffer>> | null;
  // A web Request's signal (a call in process); the server gives the front door a controller.
  readonly signal?: AbortSignal;
}

// HTTP whitespace around a value, which a web Headers object drops.
const EDGE_SPACE = /^[\t\n\r ]+|[\t\n\r ]+$/g;

// Headers as node:http received them ([name, value, name, value, ...]), read as a web Headers object
// reads its own: names without regard to case, a repeated header's values joined by ", ", values
// without surrounding whitespace.
export class RawHeaders implements IncomingHeaders, Iterable<[string, string]> {
  constructor(private readonly raw: ReadonlyArray<string>) {}

  get(name: string): string | null {
    const wanted = name.toLowerCase();
    let found: string | null = null;
    for (let i = 0; i + 1 < this.raw.length; i += 2) {
      if (this.raw[i].length !== wanted.length || this.raw[i].toLowerCase() !== wanted) continue;
      const value = this.raw[i + 1].replace(EDGE_SPACE, "");
      found = found === null ? value : `${found}, ${value}`;
    }
    return found;
  }

  has(name: string): boolean {
    return this.get(name) !== null;
  }

  *[Symbol.iterator](): Iterator<[string, string]> {
    for (let i = 0; i + 1 < this.raw.length; i += 2) yield [this.raw[i], this.raw[i + 1]];
  }
}

// A request without a body, as the server gives it to the front door.
export class BodilessRequest implements Incoming {
  readonly body = null;
  readonly headers: RawHeaders;
  constructor(readonly method: string, readonly url: string, raw: ReadonlyArray<string>) {
    this.headers = new RawHeaders(raw);
  }
}

// A request's headers as a web Headers object (for a Request made from it).
export const webHeaders = (headers: IncomingHeaders): Headers =>
  headers instanceof RawHeaders ? new Headers([...headers]) : headers as Headers;
