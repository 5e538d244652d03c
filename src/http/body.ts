// Request bodies read under a byte cap and a deadline, and JSON checked for nesting before parsing.
import type { Incoming } from "./incoming.ts";

// The code of a body's failure when its client stopped sending before the body had all arrived.
export const EARLY_END = "EARLY_END";

export type BodyOutcome =
  | { readonly kind: "ok"; readonly bytes: Uint8Array<ArrayBuffer> }
  | { readonly kind: "too-large" }
  | { readonly kind: "timeout" }
  // `code`: the stream's error code (node:http's parser's, "HPE_...", for a body it could not read)
  | { readonly kind: "failed"; readonly code?: string }
  | { readonly kind: "gone" };

// Reads at most maxBytes; stops (and cancels the stream) as soon as more arrive, the deadline
// passes or the client goes away (`gone` aborted, or its sending side ended: "gone"). A body of a
// stated length is copied into one buffer of that length as it arrives, each chunk let go at once;
// one without is gathered in chunks and joined at the end.
export const readBody = async (
  request: Incoming,
  maxBytes: number,
  deadlineMs: number,
  gone?: AbortSignal,
): Promise<BodyOutcome> => {
  const declared = request.headers.get("content-length");
  if (declared !== null && (!/^\d{1,15}$/.test(declared) || Number(declared) > maxBytes)) {
    return { kind: "too-large" };
  }
  if (request.body === null) return { kind: "ok", bytes: new Uint8Array(0) };
  const limit = declared === null ? maxBytes : Number(declared);
  const whole = declared === null ? undefined : new Uint8Array(limit);
  const reader = request.body.getReader();
  const chunks: Array<Uint8Array<ArrayBuffer>> = [];
  let total = 0;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let leave: (() => void) | undefined;
  const stopped = new Promise<"timeout" | "gone">((resolve) => {
    timer = setTimeout(() => resolve("timeout"), deadlineMs);
    leave = () => resolve("gone");
    if (gone?.aborted) leave();
    else gone?.addEventListener("abort", leave, { once: true });
  });
  try {
    while (true) {
      const next = await Promise.race([reader.read(), stopped]);
      if (next === "timeout" || next === "gone") {
        reader.cancel().catch(() => {});
        return { kind: next };
      }
      if (next.done) break;
      if (total + next.value.byteLength > limit) {
        reader.cancel().catch(() => {});
        return { kind: "too-large" };
      }
      if (whole === undefined) chunks.push(next.value);
      else whole.set(next.value, total);
      total += next.value.byteLength;
    }
  } catch (error) {
    const code = (error as { code?: unknown } | null)?.code;
    if (code === EARLY_END) return { kind: "gone" };
    return typeof code === "string" ? { kind: "failed", code } : { kind: "failed" };
  } finally {
    clearTimeout(timer);
    if (leave !== undefined) gone?.removeEventListener("abort", leave);
  }
  if (whole !== undefined) {
    return { kind: "ok", bytes: total === whole.length ? whole : whole.slice(0, total) };
  }
  // A chunk may be a view of a larger read: a copy of its own (a Buffer's slice would be a view).
  if (chunks.length === 1) return { kind: "ok", bytes: new Uint8Array(chunks[0]) };
  const bytes = new Uint8Array(total);
  let at = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, at);
    at += chunk.byteLength;
  }
  return { kind: "ok", bytes };
};

// Bytes already read, as a request body: a Request made from bytes copies them (the Fetch
// standard's body extraction) and keeps the copy while the request object lives; a stream of
// this one chunk hands over the bytes themselves and keeps nothing once read.
export const bytesBody = (bytes: Uint8Array<ArrayBuffer>): ReadableStream<Uint8Array> =>
  new ReadableStream<Uint8Array>({
    pull(controller) {
      controller.enqueue(bytes);
      controller.close();
    },
  });

export const MAX_JSON_DEPTH = 32;

// The deepest nesting of arrays and objects in a JSON text, counted without parsing it (strings
// and their escapes are skipped); stops counting once past `limit`.
export const jsonDepthExceeds = (bytes: Uint8Array, limit = MAX_JSON_DEPTH): boolean => {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < bytes.length; i++) {
    const c = bytes[i];
    if (inString) {
      if (c === 0x5c) i++; // backslash: skip the escaped character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) {
      inString = true;
    } else if (c === 0x5b || c === 0x7b) {
      if (++depth > limit) return true;
    } else if (c === 0x5d || c === 0x7d) {
      depth--;
    }
  }
  return false;
};

// "application/json" with at most a UTF-8 charset parameter.
export const isJsonMediaType = (contentType: string | null): boolean => {
  if (contentType === null) return false;
  const [type, ...params] = contentType.split(";").map((p) => p.trim().toLowerCase());
  if (type !== "application/json") return false;
  return params.every((p) => p === "" || p === "charset=utf-8" || p === 'charset="utf-8"');
};
