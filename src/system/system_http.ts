// Liveness and readiness: the database answers and every migration is applied.
import { HttpApiBuilder } from "@effect/platform";
import { SqlClient } from "@effect/sql";
import { Effect } from "effect";
import { Api } from "../api/api.ts";
import { dbBoundary } from "../db/errors.ts";
import { pendingMigrations } from "../db/migrator.ts";
import { notReady } from "../domain/errors.ts";

export const SystemHttpLive = HttpApiBuilder.group(
  Api,
  "system",
  (handlers) =>
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient;
      const ready = dbBoundary(Effect.provideService(pendingMigrations, SqlClient.SqlClient, sql))
        .pipe(
          Effect.catchAllDefect(() => Effect.fail(notReady())),
          Effect.flatMap((pending) =>
            pending === 0
              ? Effect.succeed({ status: "ready" as const })
              : Effect.fail(notReady(`${pending} migration(s) not applied`))
          ),
        );
      return handlers
        .handle("live", () => Effect.succeed({ status: "ok" as const }))
        .handle("ready", () => ready);
    }),
);
