// Profile edits (contract part 3): name and address, guarded by the profile's version, audited.
import * as SqlClient from "@effect/sql/SqlClient";
import { Effect } from "effect";
import { dbBoundary, onSqlState } from "../db/errors.ts";
import type { CallerShape } from "../domain/auth.ts";
import { conflict, forbidden } from "../domain/errors.ts";
import { Messages } from "../domain/messages.ts";
import { StoreAccess } from "../auth/access.ts";
import { span } from "../ops/span.ts";

export interface ProfileChange {
  readonly name: string;
  readonly address: string;
  readonly expectedVersion: number;
}

interface ProfileRow {
  readonly id: number;
  readonly brand_id: number;
  readonly name: string;
  readonly address: string | null;
  readonly version: number;
  readonly profile_editable: boolean;
}

export class ProfileService extends Effect.Service<ProfileService>()("Stores/ProfileService", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient;
    const access = yield* StoreAccess;

    // One transaction; the store's row is locked first, so of concurrent edits made against one
    // version exactly one finds that version and the others answer 409.
    const apply = (caller: CallerShape, storeId: number, change: ProfileChange) =>
      Effect.gen(function* () {
        const [row] = yield* sql<ProfileRow>`
          SELECT id, brand_id, name, address, version, profile_editable
          FROM stores WHERE id = ${storeId} FOR UPDATE`;
        if (!row.profile_editable) {
          return yield* forbidden(Messages.profileNotEditable(storeId));
        }
        if (row.version !== change.expectedVersion) {
          return yield* conflict(
            Messages.staleVersion(row.version, change.expectedVersion),
          );
        }
        const profile = { id: row.id, name: row.name, address: row.address, version: row.version };
        if (row.name === change.name && row.address === change.address) {
          return { status: "UNCHANGED" as const, profile };
        }
        const taken = yield* sql<{ id: number }>`
          SELECT id FROM stores
          WHERE brand_id = ${row.brand_id} AND name = ${change.name} AND id <> ${storeId}`;
        if (taken.length > 0) {
          return yield* conflict(Messages.nameTaken(change.name));
        }
        const [updated] = yield* sql<{ version: number }>`
          UPDATE stores SET name = ${change.name}, address = ${change.address},
            version = version + 1
          WHERE id = ${storeId}
          RETURNING version`;
        yield* sql`
          INSERT INTO audit_log (member_id, action, entity_type, entity_id, before, after)
          VALUES (${caller.memberId}, 'PROFILE_UPDATED', 'store', ${storeId},
            ${
          JSON.stringify({ name: row.name, address: row.address, version: row.version })
        }::jsonb,
            ${
          JSON.stringify({
            name: change.name,
            address: change.address,
            version: updated.version,
          })
        }::jsonb)`;
        return {
          status: "UPDATED" as const,
          profile: {
            id: row.id,
            name: change.name,
            address: change.address,
            version: updated.version,
          },
        };
      });

    // 403 without write (or a read-only role), 404 unknown store, 403 outside the key's stores.
    const update = (caller: CallerShape, storeId: number, change: ProfileChange) =>
      Effect.gen(function* () {
        yield* access.store(caller, storeId, "write");
        return yield* dbBoundary(
          onSqlState(
            sql.withTransaction(apply(caller, storeId, change)),
            ["23505"],
            () => conflict(Messages.nameTaken(change.name)),
          ),
        );
      }).pipe(span("ProfileService.update"));

    return { update } as const;
  }),
  dependencies: [StoreAccess.Default],
}) {}
