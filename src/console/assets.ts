// Serves the browser console from dist/console: the page at "/" and at every "/console/..." path
// (the console routes in the browser), its script and stylesheet at "/console/assets/<name>".
// Every answer carries a strict Content-Security-Policy (no inline script or style, nothing from
// another origin, no framing) and the other headers a page of a money-settling service needs.
import { createHash } from "node:crypto";
import { gzipSync } from "node:zlib";
import { CONSOLE_DIST, readStamp } from "./build.ts";
import { acceptsGzip, etagMatches, type Incoming, markGzipped } from "../domain/request.ts";
import { type Language, pick } from "../domain/language.ts";
import { Messages } from "../domain/messages.ts";

export const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data: blob:",
  "connect-src 'self'",
  "font-src 'self'",
  "manifest-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join("; ");

export const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  "content-security-policy": CONTENT_SECURITY_POLICY,
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "x-frame-options": "DENY",
  "cross-origin-opener-policy": "same-origin",
  "cross-origin-resource-policy": "same-origin",
  "permissions-policy": "camera=(), microphone=(), geolocation=(), payment=()",
};

interface Asset {
  readonly contentType: string;
  readonly plain: Uint8Array<ArrayBuffer>;
  readonly gzip: Uint8Array<ArrayBuffer>;
  readonly etag: string;
  // Hashed names never change: cached for a year. The page is revalidated.
  readonly immutable: boolean;
}

const asset = (plain: Uint8Array<ArrayBuffer>, contentType: string, immutable: boolean): Asset => ({
  contentType,
  plain,
  gzip: new Uint8Array(gzipSync(plain)),
  etag: `"${createHash("sha256").update(plain).digest("base64url").slice(0, 27)}"`,
  immutable,
});

interface Bundle {
  readonly page: Asset;
  readonly assets: ReadonlyMap<string, Asset>;
}

const load = async (): Promise<Bundle | undefined> => {
  const stamp = await readStamp();
  if (stamp === undefined) return undefined;
  const read = (name: string) => Deno.readFile(new URL(name, CONSOLE_DIST));
  return {
    page: asset(await read("index.html"), "text/html; charset=utf-8", false),
    assets: new Map([
      [
        `/console/assets/${stamp.script}`,
        asset(await read(`assets/${stamp.script}`), "text/javascript; charset=utf-8", true),
      ],
      [
        `/console/assets/${stamp.stylesheet}`,
        asset(await read(`assets/${stamp.stylesheet}`), "text/css; charset=utf-8", true),
      ],
    ]),
  };
};

// Whether a path belongs to the console (and not to the API).
export const isConsolePath = (pathname: string) =>
  pathname === "/" || pathname === "/console" || pathname.startsWith("/console/");

export type ConsoleHandler = (
  request: Incoming,
  url: URL,
  language?: Language,
) => Promise<Response>;

// The bundle is read on the first request for the console (a process that only serves the API
// never holds it); a missing bundle is 503 until one is built.
export const makeConsoleHandler = (): ConsoleHandler => {
  let loading: Promise<Bundle | undefined> | undefined;
  return async (request, url, language = "en") => {
    // A bundle replaced while it was read is read again on the next request.
    loading ??= load().catch(() => undefined);
    const bundle = await loading;
    const headers = new Headers(SECURITY_HEADERS);
    if (bundle === undefined) {
      loading = undefined;
      headers.set("content-type", "application/json");
      const m = Messages.consoleNotBuilt();
      return new Response(
        JSON.stringify({ error: { code: m.code, message: pick(m, language) } }),
        { status: 503, headers },
      );
    }
    const found = url.pathname.startsWith("/console/assets/")
      ? bundle.assets.get(url.pathname)
      : bundle.page;
    if (found === undefined) {
      headers.set("content-type", "application/json");
      const m = Messages.noConsoleAsset();
      return new Response(
        JSON.stringify({ error: { code: m.code, message: pick(m, language) } }),
        { status: 404, headers },
      );
    }
    headers.set("content-type", found.contentType);
    headers.set("etag", found.etag);
    headers.set(
      "cache-control",
      found.immutable ? "public, max-age=31536000, immutable" : "no-cache",
    );
    headers.set("vary", "accept-encoding");
    if (etagMatches(request.headers.get("if-none-match"), found.etag)) {
      return new Response(null, { status: 304, headers });
    }
    const gzip = acceptsGzip(request);
    const body = gzip ? found.gzip : found.plain;
    if (gzip) markGzipped(headers, found.etag);
    headers.set("content-length", String(body.byteLength));
    return new Response(request.method === "HEAD" ? null : body, { status: 200, headers });
  };
};
