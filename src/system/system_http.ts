// Liveness and readiness: the database answers, every migration is applied and every routine
// installed. With a read replica, the ready answer's Reads-From header says where reads go.
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder";
import * as HttpServerResponse from "@effect/platform/HttpServerResponse";
import * as SqlClient from "@effect/sql/SqlClient";
import { Effect, Option } from "effect";
import { Api } from "../api/api.ts";
import { DatabaseLoss } from "../db/database.ts";
import { dbBoundary } from "../db/errors.ts";
import { pendingMigrations } from "../db/migrator.ts";
import { ReadReplica } from "../db/read_replica.ts";
import { unavailable } from "../domain/errors.ts";
import { Messages } from "../domain/messages.ts";
import { pendingRoutines } from "../routines.ts";
import { poolBusy } from "../ops/pg_pools.ts";

export const SystemHttpLive = HttpApiBuilder.group(
  Api,
  "system",
  (handlers) =>
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient;
      const pending = Effect.all([pendingMigrations, pendingRoutines]);
      const READY = { status: "ready" as const };
      let passed = false;
      const checked = dbBoundary(Effect.provideService(pending, SqlClient.SqlClient, sql))
        .pipe(
          Effect.catchAllDefect(() => Effect.fail(unavailable(Messages.databaseUnreachable()))),
          Effect.flatMap(([migrations, routines]) =>
            migrations > 0
              ? Effect.fail(unavailable(Messages.migrationsPending(migrations)))
              : routines > 0
              ? Effect.fail(unavailable(Messages.routinesPending(routines)))
              : Effect.sync(() => {
                passed = true;
                return READY;
              })
          ),
        );
      // A primary whose connections are all in use while the database answers them is a busy
      // service, not one to take out of rotation: once a check has passed, the probe is answered
      // ready instead of queueing behind the requests for a connection (or failing BUSY when it
      // waited past the pool's wait).
      const busyAfterPass = () => passed && poolBusy("primary");
      const ready = Effect.suspend(() =>
        busyAfterPass() ? Effect.succeed(READY) : checked.pipe(
          Effect.catchIf(
            (e) => e.code === "BUSY" && busyAfterPass(),
            () => Effect.succeed(READY),
          ),
        )
      );
      // The database checked is the primary; a replica away or behind leaves the service ready,
      // reading the primary: "Reads-From: replica", or "primary; <why>".
      const replica = yield* Effect.serviceOption(ReadReplica);
      const readyAnswer = Option.isNone(replica) || !replica.value.configured
        ? ready
        : Effect.zipWith(ready, replica.value.status, (body, reads) =>
          HttpServerResponse.unsafeJson(body, {
            headers: { "reads-from": reads.used ? "replica" : `primary; ${reads.reason}` },
          }));
      // Alive while the process can answer and its database is not lost for good.
      const loss = yield* Effect.serviceOption(DatabaseLoss);
      const live = Option.isNone(loss) ? Effect.succeed({ status: "ok" as const }) : Effect.flatMap(
        loss.value.lost,
        Option.match({
          onNone: () => Effect.succeed({ status: "ok" as const }),
          onSome: () => Effect.fail(unavailable(Messages.databaseLost())),
        }),
      );
      return handlers
        .handle("live", () => live)
        .handle("ready", () => readyAnswer);
    }),
);
