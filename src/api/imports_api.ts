// The import path: template, preview, commit, batch detail and row lineage.
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint";
import * as HttpApiGroup from "@effect/platform/HttpApiGroup";
import * as OpenApi from "@effect/platform/OpenApi";
import { Schema } from "effect";
import { CountFromString, DateString, IdFromString, PathId } from "../domain/common.ts";
import {
  CommitInput,
  DiscardResult,
  Import,
  ImportAction,
  ImportReview,
  Lineage,
  PreviewInput,
  Template,
} from "../domain/imports.ts";
import { fileOperation, XLSX_MEDIA } from "./export_api.ts";
import { CALLER, JSON_BODY, operation, STORE_OBJECT, WRITE } from "./openapi.ts";
import { IdempotencyHeaders, RowPageParams } from "./params.ts";
import { Admission, admits, Authentication } from "./security.ts";

// The template's days (both or neither) and whether to answer the file itself.
export const TemplateParams = Schema.Struct({
  start: Schema.optional(DateString),
  end: Schema.optional(DateString),
  download: Schema.optional(Schema.Literal("1")).annotations({
    description: "1: answer the workbook itself instead of the JSON Template",
  }),
});

const ACTION_TEXT = `(${ImportAction.literals.join("|")})`;
const ACTION_LIST = new RegExp(`^${ACTION_TEXT}(,${ACTION_TEXT})*$`);

// "UPDATE,INSERT": import actions separated by commas, each at most once.
export const ActionList = Schema.transform(
  Schema.String.pipe(
    Schema.maxLength(200),
    Schema.pattern(ACTION_LIST, {
      message: () => `expected import actions separated by commas (${ImportAction.literals})`,
    }),
  ),
  Schema.Array(ImportAction),
  {
    strict: true,
    decode: (text) => [...new Set(text.split(","))] as Array<ImportAction>,
    encode: (actions) => actions.join(","),
  },
).annotations({
  jsonSchema: {
    type: "string",
    pattern: ACTION_LIST.source,
    description: "Import actions separated by commas, such as UPDATE,INSERT",
  },
});

// What a review sends: a filter of the rows, a page of them, or all of them as a CSV file.
export const ReviewParams = Schema.Struct({
  action: Schema.optional(ActionList).annotations({
    description: "Only rows with one of these actions (default: every action)",
  }),
  warned: Schema.optional(Schema.Literal("1")).annotations({
    description: "1: only rows with a plausibility warning",
  }),
  row_offset: Schema.optional(CountFromString).annotations({
    description: "Rows to skip among those that match, in file order (default 0)",
  }),
  row_limit: Schema.optional(IdFromString).annotations({
    description: "At most this many rows (default, and at most: 10,000, a whole file)",
  }),
  download: Schema.optional(Schema.Literal("csv")).annotations({
    description: "csv: answer the same rows as a CSV file (UTF-8, a BOM) to keep or share",
  }),
});

export class ImportsApi extends HttpApiGroup.make("imports")
  .add(
    HttpApiEndpoint.get("template", "/imports/template")
      .annotate(Admission, admits("write", true))
      .setUrlParams(TemplateParams)
      .addSuccess(Template)
      .annotateContext(
        fileOperation(
          {
            summary: "Download the import template",
            description:
              "An XLSX workbook (base64) with one worksheet per brand, its store names " +
              "prefilled from the current profiles, and the limits of an import. Its day columns " +
              "end at the dataset's end (at most 31 of them, fewer when stores x days would " +
              "exceed 10,000), or are the days from `start` to `end` when both are given " +
              "(inclusive, at most 366 days, within the dataset's days). With `download=1`, or " +
              `with \`Accept: ${XLSX_MEDIA}\`, the answer is the workbook itself ` +
              "(Content-Disposition: attachment). Needs the write and read permissions.",
            errors: [
              ...CALLER,
              "ROLE_READ_ONLY",
              "INVALID_REQUEST",
              "INVALID_RANGE",
              "RANGE_TOO_LONG",
            ],
          },
          [XLSX_MEDIA],
          true,
        ),
      ),
  )
  .add(
    HttpApiEndpoint.post("preview", "/imports/preview")
      .annotate(Admission, admits("write", true))
      .setHeaders(IdempotencyHeaders)
      .setPayload(PreviewInput)
      .addSuccess(Import)
      .annotateContext(operation({
        summary: "Preview an import file",
        description: "Stores the file (XLSX or CSV, at most 4 MiB and 10,000 rows) and a draft " +
          "batch with one planned action per row; effective energy does not change. A retry " +
          "with the same Idempotency-Key and body answers the same batch. Needs the write and read " +
          "permissions.",
        errors: [
          ...CALLER,
          ...JSON_BODY,
          ...WRITE,
          "INVALID_BASE64",
          "FILE_TOO_LARGE",
          "INVALID_FILE",
          "STORE_FORBIDDEN",
          "IDEMPOTENCY_KEY_REUSED",
        ],
      })),
  )
  .add(
    HttpApiEndpoint.post("commit", "/imports/:batch_id/commit")
      .annotate(Admission, admits("write", true))
      .setPath(Schema.Struct({ batch_id: PathId }))
      .setHeaders(IdempotencyHeaders)
      .setPayload(CommitInput)
      .addSuccess(Import)
      .annotateContext(operation({
        summary: "Commit a previewed batch",
        description: "Applies the batch's planned actions in one transaction; each changed day " +
          "gets a new immutable revision. An expired batch, or days changed since the " +
          "preview, answer 409 and change nothing. A retry with the same Idempotency-Key is " +
          "idempotent. The body is `{}`. Needs the write and read permissions. The answer's " +
          "`Data-Token` names the data the commit made (a retry's, data at least as new): a " +
          "read with `data_token` set to it shows the commit.",
        commitToken: true,
        errors: [
          ...CALLER,
          ...JSON_BODY,
          ...WRITE,
          ...STORE_OBJECT,
          "IDEMPOTENCY_KEY_REUSED",
          "NOT_COMMITTABLE",
          "ALREADY_COMMITTED",
          "BATCH_EXPIRED",
          "STALE_PREVIEW",
        ],
      })),
  )
  .add(
    HttpApiEndpoint.get("review", "/imports/:batch_id/review")
      .annotate(Admission, admits("write", false))
      .setPath(Schema.Struct({ batch_id: PathId }))
      .setUrlParams(ReviewParams)
      .addSuccess(ImportReview)
      .annotateContext(
        fileOperation(
          {
            summary: "Review an upload batch before its commit",
            description: "An upload batch's rows named by their place in the file (worksheet, " +
              "row and column as a spreadsheet shows them), with the plausibility warnings its " +
              "preview found (a value far from the store's recent days, a drop to zero: they " +
              "never block the commit). `action` and `warned` filter the rows, `row_offset` and " +
              "`row_limit` page through those that match (`matched_rows` counts them all), and " +
              "`download=csv` answers them as a CSV file. Counts cover every row. Needs the " +
              "write and read permissions, as the preview; another member's batch needs raw too.",
            errors: [...CALLER, ...STORE_OBJECT, "ROLE_READ_ONLY", "NOT_COMMITTABLE"],
          },
          ["text/csv; charset=utf-8"],
          true,
        ),
      ),
  )
  .add(
    HttpApiEndpoint.post("discard", "/imports/:batch_id/discard")
      .annotate(Admission, admits("write", false))
      .setPath(Schema.Struct({ batch_id: PathId }))
      .setPayload(CommitInput)
      .addSuccess(DiscardResult)
      .annotateContext(operation({
        summary: "Discard a previewed batch",
        description: "The preview expires at once (its status reads EXPIRED) and can never be " +
          "committed; nothing else changes. Discarding it again answers the same. A committed " +
          "batch is 409. The body is `{}`. Needs the write and read permissions.",
        errors: [
          ...CALLER,
          ...JSON_BODY,
          ...WRITE,
          ...STORE_OBJECT,
          "NOT_COMMITTABLE",
          "ALREADY_COMMITTED",
        ],
      })),
  )
  .add(
    HttpApiEndpoint.get("batch", "/imports/:batch_id")
      .setPath(Schema.Struct({ batch_id: PathId }))
      .setUrlParams(RowPageParams)
      .addSuccess(Import)
      .annotate(Admission, admits("raw", false))
      .annotateContext(operation({
        summary: "An import batch",
        description: "A batch with its counts, rows and planned or applied actions. The rows " +
          "are sent as they are read, so a batch of any size streams; `row_offset` and " +
          "`row_limit` send a page of them in file order (the counters still count every " +
          "row). Needs the raw and read permissions.",
        errors: [...CALLER, ...STORE_OBJECT],
      })),
  )
  .add(
    HttpApiEndpoint.get("lineage", "/import-rows/:import_row_id/lineage")
      .setPath(Schema.Struct({ import_row_id: PathId }))
      .addSuccess(Lineage)
      .annotate(Admission, admits("raw", false))
      .annotateContext(operation({
        summary: "Lineage of an import row",
        description: "The raw values of one import row and the sealed source records behind " +
          "it. Needs the raw and read permissions.",
        errors: [...CALLER, ...STORE_OBJECT],
      })),
  )
  .middleware(Authentication)
  .prefix("/api/v1")
  .annotate(
    OpenApi.Description,
    "Importing cleaned energy: template, preview, review, discard, commit, batch detail and " +
      "row lineage",
  ) {}
