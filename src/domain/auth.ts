// Who is calling: the member behind a verified access key, its permissions and store scope.
import { Context, Schema } from "effect";

export const Permission = Schema.Literal("read", "write", "raw");
export type Permission = typeof Permission.Type;

export interface CallerShape {
  readonly memberId: number;
  readonly keyId: number;
  readonly loginName: string;
  readonly displayName: string | null;
  readonly dbRole: "READER" | "WRITER";
  readonly permissions: ReadonlySet<Permission>;
  // null: every store; otherwise the stores the key is limited to.
  readonly storeIds: ReadonlyArray<number> | null;
  readonly viaSession: boolean;
}

export class Caller extends Context.Tag("Auth/Caller")<Caller, CallerShape>() {}

// The credential a request presents, not yet checked against the database.
export type Credential =
  | { readonly kind: "key"; readonly keyHash: string }
  // The hash of the cookie's session id: the id itself is never kept or sent to the database.
  | { readonly kind: "session"; readonly sessionHash: string };

// A request whose credential is well formed but not yet verified. It carries no permissions: a
// handler gets a CallerShape from it only through Auth.verify or Auth.accept on the credential's
// row (energy reads fetch that row in the same statement as their data).
export interface PendingCallerShape {
  readonly credential: Credential;
  readonly method: string;
  readonly origin: string | undefined;
  readonly expectedOrigin: string | undefined;
}

export class PendingCaller extends Context.Tag("Auth/PendingCaller")<
  PendingCaller,
  PendingCallerShape
>() {}

export const canWrite = (caller: CallerShape) =>
  caller.permissions.has("write") && caller.dbRole === "WRITER";

export const SessionRequest = Schema.Struct({
  access_key: Schema.String.pipe(Schema.minLength(1), Schema.maxLength(200)),
}).annotations({ identifier: "SessionRequest", parseOptions: { onExcessProperty: "error" } });

export const SessionResult = Schema.Struct({
  status: Schema.Literal("SESSION_CREATED"),
  member: Schema.String,
  expires_at: Schema.String,
}).annotations({ identifier: "SessionResult" });

export const LogoutResult = Schema.Struct({
  status: Schema.Literal("LOGGED_OUT"),
}).annotations({ identifier: "LogoutResult" });

// Who the current credential is and what it may do (GET /auth/session): what a client shows and
// offers. The service still decides every request on its own.
export const SessionInfo = Schema.Struct({
  member: Schema.String,
  name: Schema.NullOr(Schema.String),
  permissions: Schema.Array(Permission),
  store_ids: Schema.NullOr(Schema.Array(Schema.Int)),
  can_write: Schema.Boolean,
  via: Schema.Literal("session", "key"),
}).annotations({ identifier: "SessionInfo" });
