// Handlers of the export group: a file answer, sent while it is written.
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder";
import { Effect, Layer } from "effect";
import { Api } from "../api/api.ts";
import { streamResponse } from "../api/json_response.ts";
import { Caller } from "../domain/auth.ts";
import { downloadHeaders } from "../files/layout.ts";
import { type ExportFile, ExportService } from "./export_service.ts";

const fileResponse = (file: ExportFile) =>
  streamResponse(file.body, {
    contentType: file.mediaType,
    headers: downloadHeaders(file.filename),
  });

export const ExportHttpLive = HttpApiBuilder.group(
  Api,
  "export",
  (handlers) =>
    Effect.gen(function* () {
      const exports = yield* ExportService;
      return handlers.handle("stores", ({ urlParams }) =>
        Effect.flatMap(Caller, (caller) =>
          Effect.map(
            exports.exportFile(caller, {
              start: urlParams.start,
              end: urlParams.end,
              format: urlParams.format,
              storeIds: urlParams.store_ids,
              legacy: urlParams.legacy ?? "blank",
            }),
            fileResponse,
          )));
    }),
).pipe(Layer.provide(ExportService.Default));
