// Handlers of the changes group. The service is provided here: the group is its only user.
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder";
import { Effect, Layer } from "effect";
import { Api } from "../api/api.ts";
import { jsonResponse } from "../api/json_response.ts";
import { Caller } from "../domain/auth.ts";
import { ChangesService } from "./changes_service.ts";

export const ChangesHttpLive = HttpApiBuilder.group(
  Api,
  "changes",
  (handlers) =>
    Effect.gen(function* () {
      const changes = yield* ChangesService;
      return handlers
        .handle("feed", ({ urlParams }) =>
          Effect.flatMap(
            Caller,
            (caller) => Effect.map(changes.feed(caller, urlParams), (page) => jsonResponse(page)),
          ))
        .handle("batches", ({ urlParams }) =>
          Effect.flatMap(Caller, (caller) => changes.batches(caller, urlParams)))
        .handle("audit", ({ path, urlParams }) =>
          Effect.flatMap(Caller, (caller) =>
            changes.audit(caller, path.store_id, urlParams)));
    }),
).pipe(Layer.provide(ChangesService.Default));
