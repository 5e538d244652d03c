// Admin CLI for access keys: issue, list, revoke. Works on DATABASE_URL or the embedded database.
import { Cause, Effect, Exit, Layer } from "effect";
import { parseArgs } from "node:util";
import {
  DEFAULT_KEY_LIFETIME,
  issueKey,
  listKeys,
  parseLifetime,
  parsePermissions,
  revokeKey,
} from "../src/auth/keys.ts";
import { AppConfig } from "../src/config.ts";
import { MAX_ID } from "../src/domain/common.ts";
import type { SqlClient } from "@effect/sql";
import { ExistingDatabaseLive } from "../src/db/database.ts";
import { migrate } from "../src/db/migrator.ts";
import { failureReason } from "../src/log.ts";

const usage = `usage:
  deno task keys issue --member NAME --permissions read[,write][,raw] [--stores ID,ID] [--expires-in 8h] [--name "Display Name"]
  deno task keys list
  deno task keys revoke KEY_ID`;

const fail = (message: string): never => {
  console.error(`error: ${message}\n${usage}`);
  Deno.exit(2);
};

// An unknown option, or a value that looks like one (--expires-in -5m), is a usage error.
const parsed = (() => {
  try {
    return parseArgs({
      args: Deno.args,
      allowPositionals: true,
      options: {
        member: { type: "string" },
        name: { type: "string" },
        permissions: { type: "string" },
        stores: { type: "string" },
        "expires-in": { type: "string" },
        help: { type: "boolean", short: "h" },
      },
    });
  } catch (error) {
    return fail((error as Error).message);
  }
})();
const { positionals, values } = parsed;

// A store or key id as digits only (Number would take 1e0 or 0x1).
const idOf = (text: string) => /^\d{1,10}$/.test(text.trim()) ? Number(text.trim()) : NaN;

if (values.help) {
  console.log(usage);
  Deno.exit(0);
}

const command = (): Effect.Effect<void, unknown, never> => {
  const [verb, ...rest] = positionals;
  switch (verb) {
    case "issue": {
      const permissions = parsePermissions(values.permissions ?? "") ??
        fail("--permissions takes read, write and raw separated by commas");
      // Every answer of write and raw shows store names and values: without read the service
      // refuses them all (403 PERMISSION_MISSING), so such a key would be of no use.
      if (!permissions.includes("read")) {
        fail("write and raw build on read: give read too (--permissions read,write)");
      }
      const lifetimeText = values["expires-in"] ?? DEFAULT_KEY_LIFETIME;
      const lifetime = parseLifetime(lifetimeText) ??
        fail(`--expires-in ${lifetimeText}: use e.g. 45m, 8h, 30d`);
      const stores = values.stores === undefined ? null : values.stores.split(",").map((s) => {
        const id = idOf(s);
        return id >= 1 && id <= MAX_ID ? id : fail(`--stores: ${s} is not a store id`);
      });
      const member = values.member ?? fail("--member is required");
      return run(Effect.map(
        issueKey({ member, displayName: values.name ?? null, permissions, stores, lifetime }),
        (issued) => {
          console.log(
            `issued key ${issued.id} for ${issued.member} (${
              issued.permissions.join(",")
            }; stores ${issued.stores?.join(",") ?? "all"}; expires ${
              issued.expires_at ?? "never"
            }). It is shown once:`,
          );
          console.log(issued.key);
        },
      ));
    }
    case "list":
      return run(Effect.map(listKeys, (keys) => {
        console.log("id\tmember\tpermissions\tstores\texpires_at\trevoked_at\tprefix");
        for (const k of keys) {
          console.log(
            [
              k.id,
              k.member,
              k.permissions.join(","),
              k.stores?.join(",") ?? "all",
              k.expires_at ?? "never",
              k.revoked_at ?? "-",
              `${k.prefix}…`,
            ].join("\t"),
          );
        }
      }));
    case "revoke": {
      const id = idOf(rest[0] ?? "");
      if (!(id >= 1 && id <= MAX_ID)) return fail("revoke takes a KEY_ID");
      return run(
        Effect.map(
          revokeKey(id),
          (r) =>
            console.log(r.alreadyRevoked ? `key ${id} was already revoked` : `key ${id} revoked`),
        ),
      );
    }
    default:
      return fail(verb === undefined ? "a command is required" : `unknown command ${verb}`);
  }
};

const run = <A, E>(effect: Effect.Effect<A, E, SqlClient.SqlClient>) =>
  Effect.gen(function* () {
    yield* migrate;
    return yield* effect;
  }).pipe(
    Effect.provide(ExistingDatabaseLive.pipe(Layer.provideMerge(AppConfig.layer))),
    Effect.asVoid,
  );

const exit = await Effect.runPromiseExit(command());
if (Exit.isFailure(exit)) {
  console.error(`error: ${failureReason(Cause.squash(exit.cause))}`);
  Deno.exit(1);
}
