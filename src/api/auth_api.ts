// Session cookie creation and logout (contract part 5).
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint";
import * as HttpApiGroup from "@effect/platform/HttpApiGroup";
import * as OpenApi from "@effect/platform/OpenApi";
import { LogoutResult, SessionInfo, SessionRequest, SessionResult } from "../domain/auth.ts";
import { CALLER, DATABASE, JSON_BODY, operation } from "./openapi.ts";
import { Authentication } from "./security.ts";

export class AuthApi extends HttpApiGroup.make("auth")
  .add(
    HttpApiEndpoint.post("session", "/auth/session")
      .setPayload(SessionRequest)
      .addSuccess(SessionResult)
      .annotateContext(operation({
        summary: "Start a browser session",
        description: "Exchanges an access key for the signed, HttpOnly `svc05_session` cookie " +
          "(8 hours, bound to the key: revoking or expiring the key ends it). Needs a " +
          "same-origin `Origin` header. Programs use the bearer key instead.",
        errors: [...JSON_BODY, "INVALID_CREDENTIAL", "ORIGIN_REQUIRED", ...DATABASE],
      })),
  )
  .add(
    HttpApiEndpoint.get("whoami", "/auth/session")
      .addSuccess(SessionInfo)
      .middleware(Authentication)
      .annotateContext(operation({
        summary: "Who the credential is",
        description: "The member behind the bearer key or session cookie, its permissions, " +
          "the stores it is limited to (null: every store) and whether its role may write: " +
          "what a client shows and offers. Every request is still decided on its own.",
        errors: CALLER,
      })),
  )
  .add(
    HttpApiEndpoint.post("logout", "/auth/logout")
      .addSuccess(LogoutResult)
      .annotateContext(operation({
        summary: "End the browser session",
        description: "Ends the session of the cookie sent, if any, and clears the cookie. " +
          "Needs a same-origin `Origin` header; takes no fields.",
        errors: [...JSON_BODY, "ORIGIN_REQUIRED", ...DATABASE],
      })),
  )
  .annotate(
    OpenApi.Description,
    "Browser sessions: a session cookie made from an access key, and logout",
  ) {}
