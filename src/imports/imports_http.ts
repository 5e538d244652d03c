// Handlers of the imports group: template (JSON, or the workbook itself), preview, commit, batch
// detail, lineage. Import answers are encoded here and sent as their rows are read: head and
// counters first, then the rows page by page (a batch of a million rows holds one page in memory).
import { currentLanguage } from "../domain/language.ts";
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder";
import * as HttpServerRequest from "@effect/platform/HttpServerRequest";
import * as HttpServerResponse from "@effect/platform/HttpServerResponse";
import { Buffer } from "node:buffer";
import { Array as Arr, Effect, Layer, Stream } from "effect";
import { Api } from "../api/api.ts";
import { XLSX_MEDIA } from "../api/export_api.ts";
import { dataHeaders, jsonResponse, jsonStream } from "../api/json_response.ts";
import { DataSeal } from "../auth/data_seal.ts";
import { JsonText } from "../domain/answers.ts";
import { Caller } from "../domain/auth.ts";
import { badRequest } from "../domain/errors.ts";
import { Messages } from "../domain/messages.ts";
import { downloadHeaders } from "../files/layout.ts";
import { templateColumns, templateLimits } from "../files/template.ts";
import { protectText } from "../files/cell_text.ts";
import { CSV_BOM, CSV_MEDIA_TYPE, csvLine } from "../exports/layout.ts";
import { type ImportReview, MAX_IMPORT_ROWS } from "../domain/imports.ts";
import { type ImportAnswer, ImportService } from "./import_service.ts";
import { TemplateService } from "./template_service.ts";

// Whether an Accept header asks for the XLSX media type (and not with q=0).
const acceptsXlsx = (accept: string | undefined) =>
  accept !== undefined &&
  accept.split(",").some((range) => {
    const [type, ...params] = range.split(";").map((part) => part.trim().toLowerCase());
    return type === XLSX_MEDIA && !params.some((p) => /^q\s*=\s*0(\.0{0,3})?$/.test(p));
  });

// The template workbook itself, as a download.
const workbook = (filename: string, bytes: Uint8Array) =>
  HttpServerResponse.uint8Array(bytes, {
    contentType: XLSX_MEDIA,
    headers: downloadHeaders(filename),
  });

// Rows of an Import answer made into text at once: the text of a few tens of KB stays among V8's
// young objects, freed by the next scavenge; a page's text of a few MB (two bytes a character as
// soon as a name is Chinese) would be a large object, freed only by a full collection.
const TEXT_ROWS = 100;

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
  // Each page is written TEXT_ROWS rows at a time, their JSON without the brackets, joined by ","
  // as one array's items, one text at a time as the connection takes them: a page's texts made at
  // once outlive collections of young objects and end up among the old ones.
  const rows = answer.rows.pipe(
    Stream.mapConcat((page) => Arr.chunksOf(page, TEXT_ROWS)),
    Stream.rechunk(1),
    Stream.map((rows) => JsonText(JSON.stringify(rows).slice(1, -1))),
  );
  return jsonStream(`${top.slice(0, -1)},"rows":[`, rows, "]}", undefined, ",");
};

// The review's rows as a CSV file: their place in the file first, free text protected against
// formula evaluation (as exports write it).
const REVIEW_COLUMNS = [
  "sheet",
  "row",
  "column",
  "brand",
  "store",
  "date",
  "raw_energy",
  "before_kwh",
  "proposed_kwh",
  "action",
  "warnings",
  "quality_note",
];
export const reviewCsv = (review: ImportReview) =>
  CSV_BOM + csvLine(REVIEW_COLUMNS) + review.rows.map((r) =>
    csvLine([
      protectText(r.sheet ?? ""),
      String(r.file_row),
      protectText(r.column),
      protectText(r.brand ?? ""),
      protectText(r.store_name ?? ""),
      r.business_date,
      protectText(r.raw_energy ?? ""),
      r.before_energy_kwh ?? "",
      r.proposed_energy_kwh ?? "",
      r.action,
      protectText(r.warnings.map((w) => `${w.code}: ${w.message}`).join("; ")),
      protectText(r.quality_note ?? ""),
    ])
  ).join("");

export const ImportsHttpLive = HttpApiBuilder.group(
  Api,
  "imports",
  (handlers) =>
    Effect.gen(function* () {
      const imports = yield* ImportService;
      const templates = yield* TemplateService;
      const seal = yield* DataSeal;
      return handlers
        .handle("template", ({ urlParams }) =>
          Effect.gen(function* () {
            const caller = yield* Caller;
            const request = yield* HttpServerRequest.HttpServerRequest;
            const file = urlParams.download === "1" || acceptsXlsx(request.headers["accept"]);
            const { start, end } = urlParams;
            if ((start === undefined) !== (end === undefined)) {
              return yield* badRequest(Messages.startEndTogether());
            }
            const built = start === undefined || end === undefined
              ? yield* templates.latest(caller)
              : yield* templates.ranged(caller, start, end);
            return file ? workbook(built.filename, built.bytes) : {
              filename: built.filename,
              content_base64: Buffer.from(built.bytes).toString("base64"),
              sheets: built.sheets.map((s) => ({ name: s.name, stores: s.stores })),
              columns: templateColumns(yield* currentLanguage),
              limits: templateLimits(),
            };
          }))
        .handle("preview", ({ headers, payload }) =>
          Effect.flatMap(Caller, (caller) =>
            Effect.map(
              imports.preview(caller, headers["idempotency-key"], {
                filename: payload.filename,
                file: payload.content_base64,
                reason: payload.reason,
              }),
              encode,
            )))
        .handle("commit", ({ headers, path }) =>
          Effect.gen(function* () {
            const caller = yield* Caller;
            const answer = yield* imports.commit(caller, headers["idempotency-key"], path.batch_id);
            const token = yield* seal.dataToken(answer.token);
            return HttpServerResponse.setHeaders(encode(answer), dataHeaders(token));
          }))
        .handle("review", ({ path, urlParams }) =>
          Effect.gen(function* () {
            const caller = yield* Caller;
            const review = yield* imports.review(caller, path.batch_id, {
              actions: urlParams.action ?? null,
              warnedOnly: urlParams.warned === "1",
              offset: urlParams.row_offset ?? 0,
              // A batch to review holds at most a file's rows.
              limit: Math.min(urlParams.row_limit ?? MAX_IMPORT_ROWS, MAX_IMPORT_ROWS),
            });
            return urlParams.download === "csv"
              ? HttpServerResponse.text(reviewCsv(review), {
                contentType: CSV_MEDIA_TYPE,
                headers: downloadHeaders(`review-${review.batch_no}.csv`),
              })
              : review;
          }))
        .handle("discard", ({ path }) =>
          Effect.flatMap(Caller, (caller) => imports.discard(caller, path.batch_id)))
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
).pipe(Layer.provide(TemplateService.Default));
