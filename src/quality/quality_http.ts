// Handlers of the quality group. The service is provided here: the group is its only user.
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder";
import { Effect, Layer } from "effect";
import { Api } from "../api/api.ts";
import { Caller } from "../domain/auth.ts";
import { rangeOf } from "../domain/range.ts";
import { QualityService } from "./quality_service.ts";

export const QualityHttpLive = HttpApiBuilder.group(
  Api,
  "quality",
  (handlers) =>
    Effect.gen(function* () {
      const quality = yield* QualityService;
      return handlers.handle("check", ({ path, urlParams }) =>
        Effect.flatMap(Caller, (caller) =>
          quality.check(
            caller,
            rangeOf(path.store_id, urlParams),
            urlParams.known_at !== undefined || urlParams.data_token !== undefined,
          )));
    }),
).pipe(Layer.provide(QualityService.Default));
