// The authentication middleware of every business endpoint: bearer key or signed session cookie.
import * as HttpApiMiddleware from "@effect/platform/HttpApiMiddleware";
import * as HttpApiSecurity from "@effect/platform/HttpApiSecurity";
import * as OpenApi from "@effect/platform/OpenApi";
import { Caller, PendingCaller } from "../domain/auth.ts";
import { ForbiddenWire, ServiceUnavailableWire, UnauthorizedWire } from "../domain/errors.ts";
import { Schema } from "effect";

export const SESSION_COOKIE = "svc05_session";

const security = {
  bearer: HttpApiSecurity.bearer.pipe(
    HttpApiSecurity.annotate(OpenApi.Description, "Authorization: Bearer <ACCESS_KEY>"),
  ),
  session: HttpApiSecurity.apiKey({ in: "cookie", key: SESSION_COOKIE }).pipe(
    HttpApiSecurity.annotate(
      OpenApi.Description,
      "Signed 8-hour session made by POST /auth/session",
    ),
  ),
};

const failure = Schema.Union(UnauthorizedWire, ForbiddenWire, ServiceUnavailableWire);

// Verifies the credential before the handler runs and provides the Caller.
export class Authentication extends HttpApiMiddleware.Tag<Authentication>()("Api/Authentication", {
  provides: Caller,
  failure,
  security,
}) {}

// Same schemes, but only reads the credential (401 when there is none or it is malformed) and
// provides a PendingCaller: the handler verifies it in the same statement as its data.
export class PendingAuthentication extends HttpApiMiddleware.Tag<PendingAuthentication>()(
  "Api/PendingAuthentication",
  { provides: PendingCaller, failure, security },
) {}
