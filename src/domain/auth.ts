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
