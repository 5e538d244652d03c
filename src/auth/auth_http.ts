// The Authentication middleware and the session endpoints.
import * as Cookies from "@effect/platform/Cookies";
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder";
import type * as HttpApp from "@effect/platform/HttpApp";
import * as HttpServerRequest from "@effect/platform/HttpServerRequest";
import { Effect, Layer, Option, Schema } from "effect";
import { AppConfig } from "../config.ts";
import { Caller, canWrite } from "../domain/auth.ts";
import { Api } from "../api/api.ts";
import { Authentication, PendingAuthentication, SESSION_COOKIE } from "../api/security.ts";
import {
  Auth,
  PendingCheck,
  type PendingCheckShape,
  type RequestFacts,
  SESSION_HOURS,
} from "./auth_service.ts";
import type { Incoming } from "../domain/request.ts";
import { StoreAccess } from "./access.ts";
import { IdFromString } from "../domain/common.ts";
import { statusOfError } from "../domain/errors.ts";

// Names that reach this machine only.
const LOOPBACK = new Set(["localhost", "127.0.0.1", "[::1]"]);
// HOST values that listen on every address: no one name is the service's.
const EVERY_ADDRESS = new Set(["0.0.0.0", "::", "[::]", ""]);

export interface OriginSettings {
  readonly publicOrigin: Option.Option<string>;
  readonly host: string;
  readonly port: number;
}

// The origin a browser shows for this service: PUBLIC_ORIGIN when set (behind a TLS proxy the
// request reaches us as plain HTTP). Else the request's own Host, only when it names the address
// the service was configured to listen on (a loopback name, or HOST when it is one address, at
// PORT): a page of another site whose name was made to resolve here (DNS rebinding) sends its own
// name, and is refused. Undefined: no origin is the service's, and cookie writes are refused.
export const ownOrigin = (
  url: string,
  host: string | undefined,
  settings: OriginSettings,
): string | undefined => {
  if (Option.isSome(settings.publicOrigin)) return settings.publicOrigin.value;
  let given: URL;
  try {
    given = new URL(`http://${host ?? new URL(url).host}`);
  } catch {
    return undefined;
  }
  const listenHost = settings.host.toLowerCase();
  const named = LOOPBACK.has(given.hostname) ||
    (!EVERY_ADDRESS.has(listenHost) &&
      (given.hostname === listenHost || given.hostname === `[${listenHost}]`));
  const port = Number(given.port === "" ? 80 : given.port);
  // PORT=0 listens on a port chosen at start: the one the request reached is it.
  return named && (settings.port === 0 || port === settings.port) ? given.origin : undefined;
};

// The request's facts. The expected origin is worked out when a decision first asks for it (a
// cookie's write, a session's start or end): most requests never do.
const factsOf = (
  fields: Omit<RequestFacts, "expectedOrigin">,
  url: string,
  host: string | undefined,
  settings: OriginSettings,
): RequestFacts => {
  let expected: { readonly origin: string | undefined } | undefined;
  return {
    ...fields,
    get expectedOrigin() {
      expected ??= { origin: ownOrigin(url, host, settings) };
      return expected.origin;
    },
  };
};

export const requestFacts = (settings: OriginSettings) =>
  Effect.map(HttpServerRequest.HttpServerRequest, (request) =>
    factsOf(
      {
        method: request.method,
        authorization: request.headers["authorization"],
        cookie: request.cookies[SESSION_COOKIE],
        origin: request.headers["origin"],
      },
      request.originalUrl,
      request.headers["host"],
      settings,
    ));

// The same facts read from a request as the front door has it (its credential check).
export const webRequestFacts = (request: Incoming, settings: OriginSettings): RequestFacts =>
  factsOf(
    {
      method: request.method,
      authorization: request.headers.get("authorization") ?? undefined,
      cookie: Cookies.parseHeader(request.headers.get("cookie") ?? "")[SESSION_COOKIE],
      origin: request.headers.get("origin") ?? undefined,
    },
    request.url,
    request.headers.get("host") ?? undefined,
    settings,
  );

// Both schemes lead to the same decision, so whichever runs gives the same answer.
export const AuthenticationLive = Layer.effect(
  Authentication,
  Effect.gen(function* () {
    const auth = yield* Auth;
    const facts = requestFacts(yield* AppConfig);
    const decide = () => Effect.flatMap(facts, auth.authenticate);
    return { bearer: decide, session: decide };
  }),
);

// The pending credential is also noted for credentialFirst.
export const PendingAuthenticationLive = Layer.effect(
  PendingAuthentication,
  Effect.gen(function* () {
    const auth = yield* Auth;
    const facts = requestFacts(yield* AppConfig);
    const pending = () =>
      Effect.flatMap(facts, auth.pendingOf).pipe(
        Effect.tap((pending) =>
          Effect.map(Effect.serviceOption(PendingCheck), (check) => {
            if (Option.isSome(check)) check.value.pending = pending;
          })
        ),
      );
    return { bearer: pending, session: pending };
  }),
);

// The store a request's path names (/api/v1/stores/{store_id}/...), when it is a valid id, read
// as the router reads it (percent-decoded).
const STORE_PATH = /^\/api\/v1\/stores\/([^/]+)\//;
const decodeId = Schema.decodeUnknownOption(IdFromString);
export const storeOfPath = (url: string): number | undefined => {
  const found = STORE_PATH.exec(new URL(url, "http://path.only").pathname);
  if (found === null) return undefined;
  let segment: string;
  try {
    segment = decodeURIComponent(found[1]);
  } catch {
    return undefined;
  }
  return Option.getOrUndefined(decodeId(segment));
};

// The contract's order of refusals (401, then 403 or 404 for the store, before 400) for endpoints
// that verify their credential along with their data: a request refused for a parameter (by the
// contract's decoding or by its handler) before Auth decided on its credential has the credential
// verified then, and a bad one is the answer; so is a store its path names that is unknown or
// outside the key's stores. Only a refused request pays for these checks. Wraps the HttpApi's app
// inside the mapping of failures to answers (app.ts).
export const credentialFirst = Effect.map(
  Effect.all([Auth, StoreAccess, AppConfig]),
  ([auth, access, config]) => <E, R>(app: HttpApp.Default<E, R>) =>
    Effect.suspend(() => {
      const check: PendingCheckShape = { pending: undefined, decided: false };
      return app.pipe(
        Effect.catchAll((error) => {
          const pending = check.pending;
          const parameter = (error as { _tag?: unknown })?._tag === "HttpApiDecodeError" ||
            statusOfError(error) === 400;
          if (!parameter) return Effect.fail(error);
          return Effect.gen(function* () {
            const storeId = storeOfPath((yield* HttpServerRequest.HttpServerRequest).url);
            const undecided = pending !== undefined && !check.decided;
            // The endpoint's own decision when it made one before the refusal (a credential its
            // middleware accepted is decided again here: its caller is the endpoint's own).
            if (storeId === undefined) {
              if (undecided) yield* auth.verify(pending);
            } else {
              const caller = undecided
                ? yield* auth.verify(pending)
                : yield* Effect.flatMap(requestFacts(config), auth.authenticate);
              yield* access.store(caller, storeId, "read");
            }
            return yield* Effect.fail(error);
          });
        }),
        Effect.provideService(PendingCheck, check),
      );
    }),
);

const sessionCookie = Authentication.security.session;

const isHttps = (origin: string | undefined) => origin?.startsWith("https:") === true;

export const AuthHttpLive = HttpApiBuilder.group(
  Api,
  "auth",
  (handlers) =>
    Effect.gen(function* () {
      const auth = yield* Auth;
      const requestFactsNow = requestFacts(yield* AppConfig);
      return handlers
        .handle("session", ({ payload }) =>
          Effect.gen(function* () {
            const facts = yield* requestFactsNow;
            const session = yield* auth.createSession(payload.access_key, facts);
            // Secure when the service is reached over HTTPS (PUBLIC_ORIGIN, or the request's
            // own scheme): a Secure cookie is never sent over plain HTTP, which would lock out a
            // browser on http://host:8000 (browsers allow it only on localhost).
            yield* HttpApiBuilder.securitySetCookie(sessionCookie, session.cookie, {
              httpOnly: true,
              secure: isHttps(facts.expectedOrigin),
              sameSite: "strict",
              path: "/",
              maxAge: `${SESSION_HOURS} hours`,
            });
            return {
              status: "SESSION_CREATED" as const,
              member: session.member,
              expires_at: session.expiresAt,
            };
          }))
        .handle("logout", () =>
          Effect.gen(function* () {
            yield* auth.endSession(yield* requestFactsNow);
            yield* HttpApiBuilder.securitySetCookie(sessionCookie, "", {
              httpOnly: true,
              secure: isHttps((yield* requestFactsNow).expectedOrigin),
              sameSite: "strict",
              path: "/",
              maxAge: 0,
            });
            return { status: "LOGGED_OUT" as const };
          }))
        .handle("whoami", () =>
          Effect.map(Caller, (caller) => ({
            member: caller.loginName,
            name: caller.displayName,
            permissions: [...caller.permissions].sort(),
            store_ids: caller.storeIds === null ? null : [...caller.storeIds],
            can_write: canWrite(caller),
            via: caller.viaSession ? "session" as const : "key" as const,
          })));
    }),
);
