// Session cookie creation and logout (contract part 5).
import { HttpApiEndpoint, HttpApiGroup } from "@effect/platform";
import { LogoutResult, SessionRequest, SessionResult } from "../domain/auth.ts";

export class AuthApi extends HttpApiGroup.make("auth")
  .add(
    HttpApiEndpoint.post("session", "/auth/session")
      .setPayload(SessionRequest)
      .addSuccess(SessionResult),
  )
  .add(HttpApiEndpoint.post("logout", "/auth/logout").addSuccess(LogoutResult)) {}
