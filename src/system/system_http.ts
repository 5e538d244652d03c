// Liveness and readiness: the database answers, every migration is applied and every routine
// installed.
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder";
import * as SqlClient from "@effect/sql/SqlClient";
import { Effect } from "effect";
import { Api } from "../api/api.ts";
import { dbBoundary } from "../db/errors.ts";
import { pendingMigrations } from "../db/migrator.ts";
import { notReady } from "../domain/errors.ts";
import { pendingRoutines } from "../routines.ts";

export const SystemHttpLive = HttpApiBuilder.group(
  Api,
  "system",
  (handlers) =>
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient;
      const pending = Effect.all([pendingMigrations, pendingRoutines]);
      const ready = dbBoundary(Effect.provideService(pending, SqlClient.SqlClient, sql))
        .pipe(
          Effect.catchAllDefect(() => Effect.fail(notReady())),
          Effect.flatMap(([migrations, routines]) =>
            migrations > 0
              ? Effect.fail(notReady(`${migrations} migration(s) not applied`))
              : routines > 0
              ? Effect.fail(notReady(`${routines} routine(s) not installed`))
              : Effect.succeed({ status: "ready" as const })
          ),
        );
      return handlers
        .handle("live", () => Effect.succeed({ status: "ok" as const }))
        .handle("ready", () => ready);
    }),
);
