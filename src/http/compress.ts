// JSON answers of at least MIN_BYTES go gzip-encoded to a client that accepts it (a store page's
// reads are 400 KB of JSON, 16 KB gzipped), with `Vary: Accept-Encoding` and a weak ETag (the
// compressed bytes are another representation; If-None-Match compares weakly, so the same tag
// still answers 304). Bytes a kept answer holds are compressed once (`kept`); others at level 1,
// where most of the saving is for a fraction of the work.
import { gzipSync } from "node:zlib";
import type { Incoming } from "./incoming.ts";
import { acceptsGzip } from "../domain/request.ts";

export const MIN_BYTES = 1024;

// The gzip form of bytes that are kept, made once with `encode`; undefined for others.
export type KeptGzip = (
  bytes: Uint8Array,
  encode: (bytes: Uint8Array) => Uint8Array<ArrayBuffer>,
) => Uint8Array<ArrayBuffer> | undefined;

const gzip = (bytes: Uint8Array) => new Uint8Array(gzipSync(bytes, { level: 1 }));

// The body of an answer of known length, read whole (an encoded JSON answer is one chunk).
const readWhole = async (body: ReadableStream<Uint8Array>, length: number) => {
  const reader = body.getReader();
  const chunks: Array<Uint8Array> = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    chunks.push(value);
    size += value.byteLength;
  }
  if (chunks.length === 1 && size === length) return chunks[0];
  const whole = new Uint8Array(size);
  let at = 0;
  for (const chunk of chunks) {
    whole.set(chunk, at);
    at += chunk.byteLength;
  }
  return whole;
};

export const compressJson = async (
  request: Incoming,
  response: Response,
  kept?: KeptGzip,
): Promise<Response> => {
  const type = response.headers.get("content-type") ?? "";
  const length = Number(response.headers.get("content-length"));
  if (
    response.status !== 200 || response.body === null || !type.startsWith("application/json") ||
    response.headers.has("content-encoding") || !(length >= MIN_BYTES)
  ) {
    return response;
  }
  // A document's answer already says so.
  if (!/\baccept-encoding\b/i.test(response.headers.get("vary") ?? "")) {
    response.headers.append("vary", "accept-encoding");
  }
  if (!acceptsGzip(request)) return response;
  const bytes = await readWhole(response.body, length);
  const encoded = kept?.(bytes, gzip) ?? gzip(bytes);
  const headers = new Headers(response.headers);
  headers.set("content-encoding", "gzip");
  headers.set("content-length", String(encoded.byteLength));
  const etag = headers.get("etag");
  if (etag !== null && !etag.startsWith("W/")) headers.set("etag", `W/${etag}`);
  return new Response(encoded, { status: 200, headers });
};
