// Handlers of the imports group: template, preview, commit, batch detail, lineage. Import answers
// are encoded here and sent as their rows are read: head and counters first, then the rows page
// by page (a batch of a million rows holds one page in memory).
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder";
import { Effect, Stream } from "effect";
import { Api } from "../api/api.ts";
import { jsonResponse, jsonStream } from "../api/json_response.ts";
import { JsonText } from "../domain/answers.ts";
import { Caller } from "../domain/auth.ts";
import { type ImportAnswer, ImportService } from "./import_service.ts";

const encode = (answer: ImportAnswer) => {
  const c = answer.counts;
  const total = Object.values(c).reduce((sum, n) => sum + n, 0);
  const top = JSON.stringify({
    ...answer.head,
    total_rows: total,
    insert_rows: c.INSERT,
    update_rows: c.UPDATE,
    relink_rows: c.RELINK,
    unchanged_rows: c.UNCHANGED,
    missing_rows: c.SKIP_MISSING,
    kept_cleaned_rows: c.KEEP_CLEANED,
    action_counts: c,
  });
  // Each page is its rows' JSON without the brackets, pages joined by "," as one array's items.
  const rows = answer.rows.pipe(Stream.map((page) => JsonText(JSON.stringify(page).slice(1, -1))));
  return jsonStream(`${top.slice(0, -1)},"rows":[`, rows, "]}", undefined, ",");
};

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
            Effect.map(
              imports.preview(caller, headers["idempotency-key"], {
                filename: payload.filename,
                contentBase64: payload.content_base64,
                reason: payload.reason,
              }),
              encode,
            )))
        .handle(
          "commit",
          ({ headers, path }) =>
            Effect.flatMap(Caller, (caller) =>
              Effect.map(
                imports.commit(caller, headers["idempotency-key"], path.batch_id),
                encode,
              )),
        )
        .handle(
          "batch",
          ({ path, urlParams }) =>
            Effect.flatMap(Caller, (caller) =>
              Effect.map(
                imports.batch(caller, path.batch_id, {
                  offset: urlParams.row_offset ?? 0,
                  limit: urlParams.row_limit,
                }),
                encode,
              )),
        )
        .handle(
          "lineage",
          ({ path }) =>
            Effect.flatMap(Caller, (caller) =>
              Effect.map(imports.lineage(caller, path.import_row_id), (body) =>
                jsonResponse(body))),
        );
    }),
);
