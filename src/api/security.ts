// The authentication middleware of every business endpoint: bearer key or signed session cookie.
import { HttpApiMiddleware, HttpApiSecurity, OpenApi } from "@effect/platform";
import { Caller } from "../domain/auth.ts";
import { ForbiddenWire, ServiceUnavailableWire, UnauthorizedWire } from "../domain/errors.ts";
import { Schema } from "effect";

export const SESSION_COOKIE = "svc05_session";

export class Authentication extends HttpApiMiddleware.Tag<Authentication>()("Api/Authentication", {
  provides: Caller,
  failure: Schema.Union(UnauthorizedWire, ForbiddenWire, ServiceUnavailableWire),
  security: {
    bearer: HttpApiSecurity.bearer.pipe(
      HttpApiSecurity.annotate(OpenApi.Description, "Authorization: Bearer <ACCESS_KEY>"),
    ),
    session: HttpApiSecurity.apiKey({ in: "cookie", key: SESSION_COOKIE }).pipe(
      HttpApiSecurity.annotate(
        OpenApi.Description,
        "Signed 8-hour session made by POST /auth/session",
      ),
    ),
  },
}) {}
