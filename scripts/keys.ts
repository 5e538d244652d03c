// Admin CLI for access keys: issue, list, revoke. Works on DATABASE_URL or the embedded database.
import { Cause, Effect, Exit, Layer, Option } from "effect";
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
import type { SqlClient } from "@effect/sql";
import { AdminDatabaseLive } from "../src/db/database.ts";
import { migrate } from "../src/db/migrator.ts";

const usage = `usage:
  deno task keys issue --member NAME --permissions read[,write][,raw] [--stores ID,ID] [--expires-in 8h] [--name "Display Name"]
  deno task keys list
  deno task keys revoke KEY_ID`;

const fail = (message: string): never => {
  console.error(`error: ${message}\n${usage}`);
  Deno.exit(2);
};

const { positionals, values } = parseArgs({
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
      const lifetimeText = values["expires-in"] ?? DEFAULT_KEY_LIFETIME;
      const lifetime = parseLifetime(lifetimeText) ??
        fail(`--expires-in ${lifetimeText}: use e.g. 45m, 8h, 30d`);
      const stores = values.stores === undefined ? null : values.stores.split(",").map((s) => {
        const id = Number(s.trim());
        return Number.isInteger(id) && id >= 1 ? id : fail(`--stores: ${s} is not a store id`);
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
      const id = Number(rest[0]);
      if (!Number.isInteger(id) || id < 1) return fail("revoke takes a KEY_ID");
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
    Effect.provide(AdminDatabaseLive.pipe(Layer.provideMerge(AppConfig.layer))),
    Effect.asVoid,
  );

const exit = await Effect.runPromiseExit(command());
if (Exit.isFailure(exit)) {
  const failure = Option.getOrUndefined(Cause.failureOption(exit.cause)) as
    | { message?: string }
    | undefined;
  console.error(`error: ${failure?.message ?? Cause.pretty(exit.cause)}`);
  Deno.exit(1);
}
