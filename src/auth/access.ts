// Access, decided here and nowhere else (rules.md §9): the credential's row and its liveness
// (SQL fragments, also composed into the one-round-trip energy read), the permissions an operation
// needs, and the store scope of a key.
import { createHash } from "node:crypto";
import { Effect } from "effect";
import type { CallerShape, Credential, Permission } from "../domain/auth.ts";
import { canWrite } from "../domain/auth.ts";
import { badRequest, forbidden, notFound } from "../domain/errors.ts";
import { Messages } from "../domain/messages.ts";
import { checkRange, type RangeRequest } from "../domain/range.ts";
import * as SqlClient from "@effect/sql/SqlClient";
import { dbBoundary } from "../db/errors.ts";
import { utcMicros } from "../db/sql_text.ts";
import type { ScopeFacts } from "../domain/stores.ts";
import { span } from "../ops/span.ts";

// A key's store scope as a short name ("all", or a digest of its stores): answers that differ by
// scope (lists, the portfolio) carry it in their keys and versions.
export const scopeDigest = (storeIds: ReadonlyArray<number> | null) =>
  storeIds === null ? "all" : createHash("sha256").update(storeIds.join(",")).digest("hex");

// --- The credential's row (SQL). `param` is a placeholder or a PL/pgSQL variable.

// A key is live until it is revoked or expires; a session also until it ends or expires.
const KEY_LIVE = "(k.revoked_at IS NULL AND (k.expires_at IS NULL OR k.expires_at > now()))";
const SESSION_LIVE = "(s.ended_at IS NULL AND s.expires_at > now())";

// The expiry instants (utcMicros, which compare as text) let a credential checked once be judged
// again against the database's clock alone (src/db/change_notices.ts).
const CREDENTIAL_COLUMNS = `k.id::int AS key_id, m.id::int AS member_id, m.login_name,
    m.display_name, m.db_role, k.permissions, k.store_ids, ${KEY_LIVE} AS key_live,
    ${utcMicros("k.expires_at")} AS key_expires`;

// The row of the key with this SHA-256 (none when no key matches).
export const credentialByKeySql = (param: string) => `
  SELECT ${CREDENTIAL_COLUMNS}, true AS session_live, NULL::text AS session_expires
  FROM access_keys k JOIN members m ON m.id = k.member_id
  WHERE k.key_hash = ${param}`;

// The row of the session with this SHA-256, with its key's.
export const credentialBySessionSql = (param: string) => `
  SELECT ${CREDENTIAL_COLUMNS}, ${SESSION_LIVE} AS session_live,
    ${utcMicros("s.expires_at")} AS session_expires
  FROM sessions s
  JOIN access_keys k ON k.id = s.key_id
  JOIN members m ON m.id = k.member_id
  WHERE s.id = ${param}`;

// The rows of many credentials in one statement: `keys` and `sessions` are text[] of one length
// (each credential's key hash or session hash, the other null), each row numbered by its
// credential's place (`i`, from 1); none for a credential that matches nothing.
export const credentialsSql = (keys: string, sessions: string) => `
  SELECT q.i::int AS i, x.*
  FROM unnest(${keys}::text[], ${sessions}::text[]) WITH ORDINALITY AS q(key_hash, session_hash, i)
  CROSS JOIN LATERAL (
    ${credentialByKeySql("q.key_hash")}
    UNION ALL
    ${credentialBySessionSql("q.session_hash")}
  ) x`;

// The credential's row into the PL/pgSQL record variable `c`: by key when `keyHash` is not null,
// else by session (`sessionHash`); FOUND then says whether a row was found. For a routine that
// checks the credential and reads in one statement (credentialParams gives the two arguments).
export const credentialIntoSql = (c: string, keyHash: string, sessionHash: string) => `
  IF ${keyHash} IS NOT NULL THEN
    SELECT x.* INTO ${c} FROM (${credentialByKeySql(keyHash)}) x;
  ELSE
    SELECT x.* INTO ${c} FROM (${credentialBySessionSql(sessionHash)}) x;
  END IF;`;

// The key hash and the session hash of a credential, one of them null, as such a routine takes them.
export const credentialParams = (credential: Credential) =>
  [
    credential.kind === "key" ? credential.keyHash : null,
    credential.kind === "session" ? credential.sessionHash : null,
  ] as const;

// Whether a credential row `c` may read store `store` (the SQL form of read() below, for a
// statement that checks and reads in one round trip; the service still decides from the row).
export const mayReadStoreSql = (c: string, store: string) =>
  `${c}.key_live AND ${c}.session_live AND 'read' = ANY (${c}.permissions)
     AND (${c}.store_ids IS NULL OR ${store} = ANY (${c}.store_ids))`;

// Whether a key whose stores are `storeIds` (an int[] expression, null: every store) may read
// every row of import batch `batch` (an id expression): GET /imports/{batch_id} answers 403
// otherwise, the batch list leaves the batch out, and the change feed hides its reason and actor.
// Stops at the first row of another store.
export const mayReadBatchSql = (batch: string, storeIds: string) =>
  `(${storeIds} IS NULL OR NOT EXISTS (
     SELECT 1 FROM import_rows r
     WHERE r.batch_id = ${batch} AND NOT (r.resolved_store_id = ANY (${storeIds}))))`;

// An upload batch's review (its rows, their values before and proposed) to a writer: the member
// who previewed it reads it as the preview answered it; any other batch is import detail, which
// needs raw (rules.md §9).
export const mayReview = (caller: CallerShape, previewedBy: number | null) =>
  previewedBy === caller.memberId ? Effect.void : requirePermission(caller, "raw");

// A credential's row as the queries above return it.
export interface CredentialRow {
  readonly key_id: number;
  readonly member_id: number;
  readonly login_name: string;
  readonly display_name: string | null;
  readonly db_role: "READER" | "WRITER";
  readonly permissions: ReadonlyArray<Permission>;
  readonly store_ids: ReadonlyArray<number> | null;
  readonly key_live: boolean;
  readonly session_live: boolean;
  // utcMicros text; null: never.
  readonly key_expires: string | null;
  readonly session_expires: string | null;
}

// Whether a credential row that was live is still live at `now` (utcMicros text of the database's
// clock) when nothing else about it has changed.
export const liveAt = (row: CredentialRow, now: string) =>
  row.key_live && row.session_live &&
  (row.key_expires === null || row.key_expires > now) &&
  (row.session_expires === null || row.session_expires > now);

export const liveCredential = (row: CredentialRow | undefined) =>
  row !== undefined && row.key_live && row.session_live ? row : undefined;

// --- Permissions and store scope.

// write and raw build on read: their answers show store data (a template's store names, a
// preview's current values and notes, a profile, revisions and versions), which a key without
// read must not see.
export const requirePermission = (caller: CallerShape, permission: Permission) => {
  if (
    permission !== "read" && caller.permissions.has(permission) && !caller.permissions.has("read")
  ) {
    return Effect.fail(
      forbidden(Messages.readPermissionAlso(permission)),
    );
  }
  if (!caller.permissions.has(permission)) {
    return Effect.fail(
      forbidden(Messages.permissionMissing(permission)),
    );
  }
  if (permission === "write" && !canWrite(caller)) {
    return Effect.fail(forbidden(Messages.roleReadOnly()));
  }
  return Effect.void;
};

export const inScope = (caller: CallerShape, storeId: number) =>
  caller.storeIds === null || caller.storeIds.includes(storeId);

// A store's scopes are read on every request that needs them: they change when a snapshot is
// reloaded, and a store must never be read through a scope it had before (another store's, now).
export class StoreAccess extends Effect.Service<StoreAccess>()("Auth/StoreAccess", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient;
    // The scopes of one store; empty when the store does not exist.
    const scopes = (storeId: number) =>
      dbBoundary(sql<ScopeFacts>`
        SELECT s.id AS store_id, sc.id AS scope_id, sc.timezone, sc.unit
        FROM stores s JOIN scopes sc ON sc.store_id = s.id
        WHERE s.id = ${storeId}
        ORDER BY sc.id`).pipe(span("StoreAccess.scopes"));

    // 403 without the permission, 404 for an unknown store, 403 outside the key's stores.
    const store = (caller: CallerShape, storeId: number, permission: Permission) =>
      Effect.gen(function* () {
        yield* requirePermission(caller, permission);
        const found = yield* scopes(storeId);
        if (found.length === 0) return yield* notFound(Messages.storeMissing(storeId));
        if (!inScope(caller, storeId)) {
          return yield* forbidden(Messages.storeOutside(storeId));
        }
        return found;
      });

    // As store(), plus: the scope must be this store's metering scope (400 otherwise).
    const scope = (caller: CallerShape, storeId: number, scopeId: number, permission: Permission) =>
      Effect.flatMap(store(caller, storeId, permission), (scopes) => {
        const found = scopes.find((s) => s.scope_id === scopeId);
        return found === undefined
          ? Effect.fail(
            badRequest(Messages.scopeNotOfStore(scopeId, storeId)),
          )
          : Effect.succeed<ScopeFacts>(found);
      });

    // As scope(), for a read of a date range of at most maxDays days.
    const range = (caller: CallerShape, request: RangeRequest, maxDays: number) =>
      Effect.zipLeft(
        scope(caller, request.storeId, request.scopeId, "read"),
        checkRange(request.start, request.end, maxDays),
      );

    // As scope(), after a statement that checked the credential and found this scope of this store
    // in the same round trip (energy_read gives its time zone and unit only then): the facts come
    // from that statement instead of the store's scopes, and the caller is still decided here, in
    // scope()'s order. Without them (a refusal, or the scope not the store's), scope() decides.
    const foundScope = (
      caller: CallerShape,
      storeId: number,
      scopeId: number,
      found: Omit<ScopeFacts, "store_id" | "scope_id"> | undefined,
    ) =>
      found === undefined ? scope(caller, storeId, scopeId, "read") : Effect.gen(function* () {
        yield* requirePermission(caller, "read");
        if (!inScope(caller, storeId)) return yield* forbidden(Messages.storeOutside(storeId));
        return { store_id: storeId, scope_id: scopeId, ...found } satisfies ScopeFacts;
      });

    return { store, scope, range, foundScope } as const;
  }),
}) {}
