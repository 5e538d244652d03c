// The Authentication middleware and the session endpoints.
import { HttpApiBuilder, HttpServerRequest } from "@effect/platform";
import { Effect, Layer } from "effect";
import { Api } from "../api/api.ts";
import { Authentication, PendingAuthentication, SESSION_COOKIE } from "../api/security.ts";
import { Auth, type RequestFacts, SESSION_HOURS } from "./auth_service.ts";

const hostOf = (url: string) => {
  try {
    return new URL(url).host;
  } catch {
    return undefined;
  }
};

const requestFacts = Effect.map(HttpServerRequest.HttpServerRequest, (request): RequestFacts => ({
  method: request.method,
  authorization: request.headers["authorization"],
  cookie: request.cookies[SESSION_COOKIE],
  origin: request.headers["origin"],
  host: request.headers["host"] ?? hostOf(request.originalUrl),
}));

// Both schemes lead to the same decision, so whichever runs gives the same answer.
export const AuthenticationLive = Layer.effect(
  Authentication,
  Effect.gen(function* () {
    const auth = yield* Auth;
    const decide = () => Effect.flatMap(requestFacts, auth.authenticate);
    return { bearer: decide, session: decide };
  }),
);

export const PendingAuthenticationLive = Layer.effect(
  PendingAuthentication,
  Effect.gen(function* () {
    const auth = yield* Auth;
    const pending = () => Effect.flatMap(requestFacts, auth.pendingOf);
    return { bearer: pending, session: pending };
  }),
);

const sessionCookie = Authentication.security.session;

export const AuthHttpLive = HttpApiBuilder.group(
  Api,
  "auth",
  (handlers) =>
    Effect.gen(function* () {
      const auth = yield* Auth;
      return handlers
        .handle("session", ({ payload }) =>
          Effect.gen(function* () {
            const facts = yield* requestFacts;
            const session = yield* auth.createSession(payload.access_key, facts);
            yield* HttpApiBuilder.securitySetCookie(sessionCookie, session.cookie, {
              httpOnly: true,
              secure: true,
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
            yield* auth.endSession(yield* requestFacts);
            yield* HttpApiBuilder.securitySetCookie(sessionCookie, "", {
              httpOnly: true,
              secure: true,
              sameSite: "strict",
              path: "/",
              maxAge: 0,
            });
            return { status: "LOGGED_OUT" as const };
          }));
    }),
);
