// Handlers of the energy group: daily energy, per-day versions, revision history.
import { HttpApiBuilder } from "@effect/platform";
import { Effect } from "effect";
import { Api } from "../api/api.ts";
import { Caller, PendingCaller } from "../domain/auth.ts";
import { rangeOf } from "../domain/range.ts";
import { EnergyService } from "./energy_service.ts";

export const EnergyHttpLive = HttpApiBuilder.group(
  Api,
  "energy",
  (handlers) =>
    Effect.gen(function* () {
      const energy = yield* EnergyService;
      return handlers
        .handle(
          "days",
          ({ path, urlParams }) =>
            Effect.flatMap(PendingCaller, (pending) =>
              energy.daysFor(pending, rangeOf(path.store_id, urlParams))),
        )
        .handle(
          "versions",
          ({ path }) =>
            Effect.flatMap(Caller, (caller) =>
              energy.versions(caller, path.store_id, path.business_date)),
        )
        .handle(
          "history",
          ({ path }) =>
            Effect.flatMap(Caller, (caller) =>
              energy.history(caller, path.energy_id)),
        );
    }),
);
