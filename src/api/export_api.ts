// Beyond the contract: the current served values of stores in the import file's own layout.
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint";
import * as HttpApiGroup from "@effect/platform/HttpApiGroup";
import * as HttpApiSchema from "@effect/platform/HttpApiSchema";
import * as OpenApi from "@effect/platform/OpenApi";
import { Context, Schema } from "effect";
import { DateString, Id } from "../domain/common.ts";
import { CALLER, operation } from "./openapi.ts";
import { Admission, admits, Authentication } from "./security.ts";

export const XLSX_MEDIA = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet";
const CSV_MEDIA = "text/csv";

// A store_ids query parameter holds at most this many ids.
export const MAX_EXPORT_STORE_IDS = 1000;

const ID_TEXT = "[1-9]\\d{0,9}";

// "1,2,3": ids >= 1 separated by commas, at most MAX_EXPORT_STORE_IDS of them.
export const StoreIdList = Schema.transform(
  Schema.String.pipe(
    Schema.maxLength(MAX_EXPORT_STORE_IDS * 11),
    Schema.pattern(new RegExp(`^${ID_TEXT}(,${ID_TEXT})*$`), {
      message: () => "expected store ids >= 1 separated by commas, such as 1,2,3",
    }),
  ),
  Schema.Array(Id).pipe(Schema.maxItems(MAX_EXPORT_STORE_IDS, {
    message: () => `expected at most ${MAX_EXPORT_STORE_IDS} store ids`,
  })),
  {
    strict: true,
    decode: (text) => text.split(",").map(Number),
    encode: (ids) => ids.join(","),
  },
).annotations({
  jsonSchema: {
    type: "string",
    pattern: `^${ID_TEXT}(,${ID_TEXT})*$`,
    description: `Store ids separated by commas, at most ${MAX_EXPORT_STORE_IDS}`,
  },
});

export const ExportParams = Schema.Struct({
  start: DateString,
  end: DateString,
  format: Schema.Literal("xlsx", "csv").annotations({
    description: "xlsx: one worksheet per brand, a column per day; csv: one row per store-day",
  }),
  store_ids: Schema.optional(StoreIdList),
  legacy: Schema.optional(Schema.Literal("blank", "values")).annotations({
    description: "Days served from their sealed legacy value: `blank` (default; sent back, " +
      "SKIP_MISSING, the legacy value keeps serving) or `values` (the number; sent back, " +
      "RELINK: the value is confirmed as cleaned, a new revision)",
  }),
});

// The file itself: the document lists the media types of a file answer.
export const FileAnswer = HttpApiSchema.Uint8Array({ contentType: XLSX_MEDIA }).annotations({
  description: "The file's bytes",
});

const binary = { schema: { type: "string", format: "binary" } };

// An operation's annotations whose 200 answer is a file of one of `media` (besides `json`, the
// JSON answer the schema describes, when there is one).
export const fileOperation = (
  doc: Parameters<typeof operation>[0],
  media: ReadonlyArray<string>,
  keepJson = false,
) => {
  const base = operation(doc);
  const transform = Context.unsafeGet(base, OpenApi.Transform);
  return Context.add(base, OpenApi.Transform, (op) => {
    const done = transform(op);
    const ok = done.responses["200"];
    const content = Object.fromEntries([
      ...Object.entries(ok.content ?? {}).filter(([type]) => keepJson && type.includes("json")),
      ...media.map((type) => [type, binary] as const),
    ]);
    return {
      ...done,
      responses: {
        ...done.responses,
        "200": {
          ...ok,
          content,
          headers: {
            ...ok.headers,
            "Content-Disposition": {
              description: 'attachment; filename="..." when the answer is a file',
              schema: { type: "string" },
            },
          },
        },
      },
    };
  });
};

export class ExportApi extends HttpApiGroup.make("export")
  .add(
    HttpApiEndpoint.get("stores", "/stores/export")
      .annotate(Admission, admits("read", true))
      .setUrlParams(ExportParams)
      .addSuccess(FileAnswer)
      .annotateContext(fileOperation({
        summary: "Export served energy in the import file's layout",
        description:
          "The current served values (as GET /stores/{store_id}/energy serves them) of " +
          "the listed stores, or of every store the key may see, from `start` to `end` " +
          "(inclusive, at most 366 days, within the dataset's days), as a file an import " +
          "preview reads: `xlsx`, one worksheet per brand named as in the template, store names " +
          "in column A and a column per day; `csv`, UTF-8 with the columns 品牌, 门店, 日期, " +
          "日能耗, 备注 and one row per store-day. A cleaned value is a number, a void day `VOID`, " +
          "a day without data is blank; a day served from its sealed legacy value is blank " +
          "unless `legacy=values` (in the import's rules a number over a legacy value is a new " +
          "revision). Sent back untouched, a default export previews as UNCHANGED and " +
          "SKIP_MISSING rows only. At most 1000 `store_ids` " +
          "and 1,000,000 store-days (stores x days) per request; the file is written while it " +
          "is sent. Text that a spreadsheet would evaluate is written as text. Needs the read " +
          "permission.",
        errors: [
          ...CALLER,
          "INVALID_REQUEST",
          "INVALID_RANGE",
          "RANGE_TOO_LONG",
          "NOT_FOUND",
          "STORE_FORBIDDEN",
        ],
      }, [XLSX_MEDIA, `${CSV_MEDIA}; charset=utf-8`])),
  )
  .middleware(Authentication)
  .prefix("/api/v1")
  .annotate(
    OpenApi.Description,
    "Served values in the import file layout, to correct and upload again",
  ) {}
