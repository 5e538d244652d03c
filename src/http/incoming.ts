// The server's lighter form of a request without a body (serve.ts; the shape is Incoming, in
// src/domain/request.ts): its headers are read from node:http's raw ones and no web Request is
// built for the front door's own checks; the HttpApi is given a Request of its own (front.ts).
import type { Incoming, IncomingHeaders } from "../domain/request.ts";
export type { Incoming };

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

// A request's headers appended to a Request's own (a Headers object given to Request is converted
// and copied; the Headers iterator makes an object per step, forEach does not).
export const appendHeaders = (from: IncomingHeaders, to: Headers) => {
  if (from instanceof RawHeaders) {
    for (const [name, value] of from) to.append(name, value);
  } else (from as Headers).forEach((value, name) => to.append(name, value));
};
