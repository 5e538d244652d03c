// The table of every path the service answers, matched exactly (case, slashes), with each route's
// body policy: the front door refuses what no route takes before any of it is read.
import * as HttpApi from "@effect/platform/HttpApi";
import { Context, Either, Option, ParseResult, Schema } from "effect";
import { Api } from "../api/api.ts";
import { decodeMessage } from "../api/contract_middleware.ts";
import type { Message } from "../domain/errors.ts";
import { Messages } from "../domain/messages.ts";
import type { IncomingHeaders } from "../domain/request.ts";
import { Admission, Authentication, PendingAuthentication } from "../api/security.ts";
import type { Permission } from "../domain/auth.ts";
import { MAX_BASE64_CHARS } from "../domain/imports.ts";

export type BodyPolicy =
  // No body is read; one that is announced is refused (413).
  | { readonly kind: "none" }
  // A JSON body of at most maxBytes; another media type is 415.
  | { readonly kind: "json"; readonly maxBytes: number };

export interface Route {
  readonly method: string;
  readonly path: string;
  readonly body: BodyPolicy;
  // The endpoint verifies a credential (the front door checks it first where `admission` says so).
  readonly credential?: boolean;
  // Checked from the headers before a body is read or heavy work starts (api/security.ts).
  readonly admission?: { readonly permission: Permission; readonly heavy: boolean };
  // Of a route that takes a body: the endpoint's own header schema, checked before the body is
  // read (the HttpApi decodes headers only after the body). The refusal it would give, or none.
  readonly checkHeaders?: (headers: IncomingHeaders) => Message | undefined;
}

// Small JSON bodies: a session request, a profile edit, an empty commit.
export const SMALL_JSON_BYTES = 16 * 1024;
// A preview: the longest base64 text the schema takes, plus filename and reason. A 4 MiB file's
// base64 with a CRLF every 64 or 76 characters (5.94 or 5.89 MB once JSON escapes them) fits.
export const PREVIEW_JSON_BYTES = MAX_BASE64_CHARS + 64 * 1024;

const bodyLimits: Record<string, number> = {
  "imports.preview": PREVIEW_JSON_BYTES,
};

const NONE: BodyPolicy = { kind: "none" };

// The headers as the HttpApi decodes them: lower-case names, a repeated header's values joined.
const headerRecord = (headers: IncomingHeaders) => {
  const record: Record<string, string> = {};
  for (const [name, value] of headers) {
    const key = name.toLowerCase();
    record[key] = key in record ? `${record[key]}, ${value}` : value;
  }
  return record;
};

// The refusal of headers that `schema` does not accept, worded as the HttpApi's own (a decode
// failure, contract_middleware.ts).
const headerCheck = <A>(schema: Schema.Schema<A, unknown, never>) => {
  const decode = Schema.decodeUnknownEither(schema);
  return (headers: IncomingHeaders): Message | undefined => {
    const decoded = decode(headerRecord(headers));
    if (Either.isRight(decoded)) return undefined;
    const issues = ParseResult.ArrayFormatter.formatErrorSync(decoded.left);
    return Messages.decodeFailed(decodeMessage(issues, "en"), decodeMessage(issues, "zh-CN"));
  };
};

// Every endpoint of the contract, from the Api itself, plus the documents outside it.
export const apiRoutes = (): ReadonlyArray<Route> => {
  const routes: Array<Route> = [];
  HttpApi.reflect(Api, {
    onGroup() {},
    onEndpoint({ group, endpoint, middleware, mergedAnnotations }) {
      const takesBody = Option.isSome(endpoint.payloadSchema) && endpoint.method !== "GET";
      routes.push({
        method: endpoint.method,
        path: endpoint.path,
        body: takesBody
          ? {
            kind: "json",
            maxBytes: bodyLimits[`${group.identifier}.${endpoint.name}`] ?? SMALL_JSON_BYTES,
          }
          : endpoint.method === "POST"
          ? { kind: "json", maxBytes: SMALL_JSON_BYTES }
          : NONE,
        credential: [...middleware].some((m) =>
          (m as unknown) === Authentication || (m as unknown) === PendingAuthentication
        ),
        admission: Option.getOrUndefined(Context.getOption(mergedAnnotations, Admission)),
        checkHeaders: takesBody || endpoint.method === "POST"
          ? Option.getOrUndefined(Option.map(endpoint.headersSchema, headerCheck))
          : undefined,
      });
    },
  });
  routes.push(
    { method: "GET", path: "/openapi.json", body: NONE },
    { method: "GET", path: "/api-docs", body: NONE },
  );
  return routes;
};

type Segment = { readonly literal: string } | { readonly param: string };

interface Compiled {
  readonly segments: ReadonlyArray<Segment>;
  readonly methods: Map<string, Route>;
}

export type Match =
  | { readonly kind: "route"; readonly route: Route }
  | { readonly kind: "method"; readonly allow: ReadonlyArray<string> }
  | { readonly kind: "none" };

// Exact matching: "/api/v1/stores" only; not "/API/V1/STORES", "//api/v1/stores", "/api/v1/stores/".
export const makeRouter = (routes: ReadonlyArray<Route>) => {
  const byShape = new Map<string, Compiled>();
  for (const route of routes) {
    const segments = route.path.split("/").slice(1).map((s): Segment =>
      s.startsWith(":") ? { param: s.slice(1) } : { literal: s }
    );
    const shape = segments.map((s) => ("param" in s ? ":" : s.literal)).join("/");
    const entry = byShape.get(shape) ?? { segments, methods: new Map() };
    entry.methods.set(route.method, route);
    byShape.set(shape, entry);
  }
  const compiled = [...byShape.values()];

  const matches = (entry: Compiled, parts: ReadonlyArray<string>) =>
    entry.segments.length === parts.length &&
    entry.segments.every((s, i) => ("param" in s ? parts[i] !== "" : s.literal === parts[i]));

  return (method: string, pathname: string): Match => {
    if (!pathname.startsWith("/")) return { kind: "none" };
    const parts = pathname.split("/").slice(1);
    // A literal segment beats a parameter ("/imports/template" before "/imports/:batch_id").
    let found: Compiled | undefined;
    for (const entry of compiled) {
      if (!matches(entry, parts)) continue;
      if (
        found === undefined ||
        entry.segments.filter((s) => "literal" in s).length >
          found.segments.filter((s) => "literal" in s).length
      ) found = entry;
    }
    if (found === undefined) return { kind: "none" };
    const route = found.methods.get(method) ??
      (method === "HEAD" ? found.methods.get("GET") : undefined);
    if (route !== undefined) return { kind: "route", route };
    const allow = [...found.methods.keys()];
    if (allow.includes("GET")) allow.push("HEAD");
    return { kind: "method", allow: allow.sort() };
  };
};
