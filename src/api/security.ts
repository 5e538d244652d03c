// The authentication middleware of every business endpoint: bearer key or signed session cookie.
import * as HttpApiMiddleware from "@effect/platform/HttpApiMiddleware";
import * as HttpApiSecurity from "@effect/platform/HttpApiSecurity";
import * as OpenApi from "@effect/platform/OpenApi";
import { Caller, PendingCaller, type Permission } from "../domain/auth.ts";
import { ForbiddenWire, ServiceUnavailableWire, UnauthorizedWire } from "../domain/errors.ts";
import { Context, Schema } from "effect";

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

// What the front door decides from a request's headers alone, before it reads a body or starts the
// work: the permission the endpoint needs (401/403 before any body byte is read), and whether its
// work is heavy (admitted against the limits all clients share).
export class Admission extends Context.Tag("Api/Admission")<Admission, {
  readonly permission: Permission;
  readonly heavy: boolean;
}>() {}

export const admits = (permission: Permission, heavy: boolean): Admission["Type"] => ({
  permission,
  heavy,
});
