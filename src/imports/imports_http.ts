// Handlers of the imports group: template, preview, commit, batch detail, lineage.
import { HttpApiBuilder } from "@effect/platform";
import { Effect } from "effect";
import { Api } from "../api/api.ts";
import { Caller } from "../domain/auth.ts";
import { ImportService } from "./import_service.ts";

export const ImportsHttpLive = HttpApiBuilder.group(
  Api,
  "imports",
  (handlers) =>
    Effect.gen(function* () {
      const imports = yield* ImportService;
      return handlers
        .handle("template", () => Effect.flatMap(Caller, imports.template))
        .handle("preview", ({ headers, payload }) =>
          Effect.flatMap(Caller, (caller) =>
            imports.preview(caller, headers["idempotency-key"], {
              filename: payload.filename,
              contentBase64: payload.content_base64,
              reason: payload.reason,
            })))
        .handle(
          "commit",
          ({ headers, path }) =>
            Effect.flatMap(Caller, (caller) =>
              imports.commit(caller, headers["idempotency-key"], path.batch_id)),
        )
        .handle(
          "batch",
          ({ path }) =>
            Effect.flatMap(Caller, (caller) =>
              imports.batch(caller, path.batch_id)),
        )
        .handle(
          "lineage",
          ({ path }) =>
            Effect.flatMap(Caller, (caller) =>
              imports.lineage(caller, path.import_row_id)),
        );
    }),
);
