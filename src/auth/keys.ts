// Access keys: random secrets shown once, stored as SHA-256 hashes; issue, list, revoke.
import * as SqlClient from "@effect/sql/SqlClient";
import { createHash, randomBytes } from "node:crypto";
import { Data, Duration, Effect } from "effect";
import type { Permission } from "../domain/auth.ts";

export class KeyAdminError extends Data.TaggedError("KeyAdminError")<{ message: string }> {}

export const KEY_PREFIX = "esk_";

export const hashKey = (key: string) => createHash("sha256").update(key, "utf8").digest("hex");

export const newKey = () => KEY_PREFIX + randomBytes(32).toString("base64url");

export const DEFAULT_KEY_LIFETIME = "90d";

// Accepts 45m, 8h, 30d, 3600s; a bare number is seconds.
export const parseLifetime = (text: string): Duration.Duration | undefined => {
  const m = /^(\d{1,9})\s*(s|m|h|d)?$/.exec(text.trim());
  if (m === null || Number(m[1]) === 0) return undefined;
  const n = Number(m[1]);
  switch (m[2] ?? "s") {
    case "m":
      return Duration.minutes(n);
    case "h":
      return Duration.hours(n);
    case "d":
      return Duration.days(n);
    default:
      return Duration.seconds(n);
  }
};

export const parsePermissions = (text: string): ReadonlyArray<Permission> | undefined => {
  const parts = [...new Set(text.split(",").map((p) => p.trim()).filter((p) => p !== ""))];
  if (parts.length === 0) return undefined;
  if (!parts.every((p): p is Permission => p === "read" || p === "write" || p === "raw")) {
    return undefined;
  }
  return parts;
};

export interface IssueKeyInput {
  readonly member: string;
  readonly displayName?: string | null;
  readonly permissions: ReadonlyArray<Permission>;
  readonly stores: ReadonlyArray<number> | null;
  readonly lifetime: Duration.Duration | null;
}

export interface IssuedKey {
  readonly id: number;
  readonly member: string;
  readonly permissions: ReadonlyArray<Permission>;
  readonly stores: ReadonlyArray<number> | null;
  readonly expires_at: string | null;
  readonly key: string;
}

export const issueKey = (input: IssueKeyInput) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient;
    const member = input.member.trim();
    if (member === "" || member.length > 100) {
      return yield* new KeyAdminError({ message: "member must be 1 to 100 characters" });
    }
    if (input.stores !== null) {
      if (input.stores.length === 0) {
        return yield* new KeyAdminError({ message: "--stores needs at least one store id" });
      }
      const known = yield* sql<{ id: number }>`
        SELECT id::int AS id FROM stores WHERE id = ANY(${input.stores}::int[])`;
      const missing = input.stores.filter((id) => !known.some((row) => row.id === id));
      if (missing.length > 0) {
        return yield* new KeyAdminError({ message: `unknown store id(s): ${missing.join(", ")}` });
      }
    }
    const role = input.permissions.includes("write") ? "WRITER" : "READER";
    // A member asking for write gets a role that allows writes; an existing writer is never downgraded.
    const [row] = yield* sql<{ id: number }>`
      INSERT INTO members (login_name, display_name, db_role)
      VALUES (${member}, ${input.displayName ?? null}, ${role})
      ON CONFLICT (login_name) DO UPDATE SET
        db_role = CASE WHEN members.db_role = 'WRITER' THEN 'WRITER' ELSE EXCLUDED.db_role END,
        display_name = COALESCE(EXCLUDED.display_name, members.display_name)
      RETURNING id::int AS id`;
    const key = newKey();
    const seconds = input.lifetime === null ? null : Duration.toSeconds(input.lifetime);
    const [issued] = yield* sql<{ id: number; expires_at: string | null }>`
      INSERT INTO access_keys (member_id, key_hash, key_prefix, permissions, store_ids, expires_at)
      VALUES (
        ${row.id}, ${hashKey(key)}, ${key.slice(0, 10)}, ${input.permissions}::text[],
        ${input.stores}::int[],
        CASE WHEN ${seconds}::float8 IS NULL THEN NULL
             ELSE now() + make_interval(secs => ${seconds}::float8) END)
      RETURNING id::int AS id,
        to_char(expires_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS expires_at`;
    return {
      id: issued.id,
      member,
      permissions: input.permissions,
      stores: input.stores,
      expires_at: issued.expires_at,
      key,
    } satisfies IssuedKey;
  });

export interface KeyListing {
  readonly id: number;
  readonly member: string;
  readonly prefix: string;
  readonly permissions: ReadonlyArray<string>;
  readonly stores: ReadonlyArray<number> | null;
  readonly created_at: string;
  readonly expires_at: string | null;
  readonly revoked_at: string | null;
}

export const listKeys = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient;
  return yield* sql<KeyListing>`
    SELECT k.id::int AS id, m.login_name AS member, k.key_prefix AS prefix, k.permissions,
      k.store_ids AS stores,
      to_char(k.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS created_at,
      to_char(k.expires_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS expires_at,
      to_char(k.revoked_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS revoked_at
    FROM access_keys k JOIN members m ON m.id = k.member_id
    ORDER BY k.id`;
});

export const revokeKey = (id: number) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient;
    const rows = yield* sql<{ id: number; already: boolean }>`
      UPDATE access_keys SET revoked_at = COALESCE(revoked_at, now())
      WHERE id = ${id}
      RETURNING id::int AS id, revoked_at < now() AS already`;
    if (rows.length === 0) {
      return yield* new KeyAdminError({ message: `no access key with id ${id}` });
    }
    return { id, alreadyRevoked: rows[0].already };
  });
