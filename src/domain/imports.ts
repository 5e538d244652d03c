// Import batches, rows, template and lineage schemas (contract part 2).
import { Schema } from "effect";
import {
  Count,
  DateString,
  DecimalString,
  FreeObject,
  Id,
  Nullable,
  TextOfLength,
  TrimmedText,
} from "./common.ts";

export const ImportAction = Schema.Literal(
  "INSERT",
  "UPDATE",
  "UNCHANGED",
  "VOID",
  "RESTORE",
  "RELINK",
  "SKIP_MISSING",
  "KEEP_CLEANED",
);
export type ImportAction = typeof ImportAction.Type;

// The actions whose rows the commit applies (a new revision each); the others have no effect.
export const CHANGING_ACTIONS: ReadonlySet<ImportAction> = new Set<ImportAction>([
  "INSERT",
  "UPDATE",
  "RELINK",
  "RESTORE",
  "VOID",
]);

export const MAX_FILE_BYTES = 4 * 1024 * 1024;
export const MAX_IMPORT_ROWS = 10_000;

// base64 of 4 MiB is 5,592,408 characters; line breaks (76-character lines add 1/38 with CRLF)
// are allowed, so the bound is loose and the decoded size is what is checked (FILE_TOO_LARGE).
export const MAX_BASE64_CHARS = 6_000_000;

// An uploaded file as its payload is read: its bytes, or why its base64 text gives none (the
// preview answers INVALID_BASE64 or FILE_TOO_LARGE, after its own checks). Decoded once, here, so
// that the request does not hold the text (a third larger than the file) while the preview runs.
export type UploadedFile =
  | { readonly _tag: "File"; readonly bytes: Uint8Array<ArrayBuffer> }
  | { readonly _tag: "NotBase64" }
  | { readonly _tag: "TooLarge"; readonly size: number };

// Strict base64; line breaks and spaces, as some encoders wrap, are ignored.
// (A flat character class: nested groups overflow the regex stack on a 5 MB string.)
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

const decodeUpload = (text: string): UploadedFile => {
  const compact = text.replace(/[\r\n\t ]/g, "");
  if (compact.length % 4 !== 0 || !BASE64.test(compact)) return { _tag: "NotBase64" };
  // One buffer of the file's own size (the text was checked above).
  const bytes = Uint8Array.fromBase64(compact);
  return bytes.byteLength > MAX_FILE_BYTES
    ? { _tag: "TooLarge", size: bytes.byteLength }
    : { _tag: "File", bytes };
};

const isUploadedFile = (u: unknown): u is UploadedFile =>
  typeof u === "object" && u !== null && "_tag" in u &&
  (u._tag === "NotBase64" || u._tag === "TooLarge" ||
    (u._tag === "File" && "bytes" in u && u.bytes instanceof Uint8Array));

// The contract's content_base64 (a string of at most MAX_BASE64_CHARS) on the wire and in the
// OpenAPI document; the file (or its problem) in the handler.
const Base64File = Schema.transform(
  Schema.String.pipe(Schema.maxLength(MAX_BASE64_CHARS)),
  Schema.declare(isUploadedFile, { identifier: "UploadedFile" }),
  {
    strict: true,
    decode: decodeUpload,
    encode: (file) => file._tag === "File" ? file.bytes.toBase64() : "",
  },
);

export const PreviewInput = Schema.Struct({
  // The contract sets no least length; the format is read from the bytes, not the name.
  filename: TextOfLength(0, 255),
  content_base64: Base64File,
  reason: TrimmedText(500),
}).annotations({ identifier: "PreviewInput", parseOptions: { onExcessProperty: "error" } });

// Exactly {}: an empty Struct would accept (and drop) any field.
export const CommitInput = Schema.Record({ key: Schema.String, value: Schema.Never }).annotations({
  identifier: "CommitInput",
  description: "An empty JSON object; no fields are accepted",
});

export const ImportRow = Schema.Struct({
  id: Id,
  row_number: Id,
  resolved_store_id: Id,
  business_date: DateString,
  raw_energy: Nullable(Schema.String),
  proposed_energy_kwh: Nullable(DecimalString),
  before_energy_kwh: Nullable(DecimalString),
  action: ImportAction,
  source_kind: Schema.String,
  quality_status: Schema.String,
  quality_note: Nullable(Schema.String),
  lineage_status: Schema.String,
  note_field: Nullable(Schema.String),
}).annotations({ identifier: "ImportRow" });

export const Import = Schema.Struct({
  id: Id,
  batch_no: Schema.String,
  filename: Nullable(Schema.String),
  status: Schema.String,
  total_rows: Count,
  insert_rows: Count,
  update_rows: Count,
  relink_rows: Count,
  unchanged_rows: Count,
  missing_rows: Count,
  kept_cleaned_rows: Count,
  uploaded_at: Schema.String,
  committed_at: Nullable(Schema.String),
  change_reason: Nullable(Schema.String),
  rows: Schema.Array(ImportRow),
  action_counts: Schema.Record({ key: Schema.String, value: Count }),
}).annotations({ identifier: "Import" });

export const Template = Schema.Struct({
  filename: Schema.String,
  content_base64: Schema.String,
  sheets: Schema.Array(Schema.Struct({ name: Schema.String, stores: Count })),
  columns: Schema.Record({ key: Schema.String, value: Schema.String }),
  limits: Schema.Record({ key: Schema.String, value: Schema.Int }),
}).annotations({ identifier: "Template" });

export const SourceRecord = Schema.Struct({
  id: Id,
  source_kind: Schema.String,
  source_table: Schema.String,
  file_sha256: Schema.String,
  explanation: Nullable(Schema.String),
  record: FreeObject,
});

export const Lineage = Schema.Struct({
  id: Id,
  resolved_store_id: Id,
  batch_id: Id,
  raw_brand: Nullable(Schema.String),
  raw_store_name: Nullable(Schema.String),
  raw_date: Nullable(Schema.String),
  raw_energy: Nullable(Schema.String),
  action: ImportAction,
  source_kind: Schema.String,
  quality_status: Schema.String,
  quality_note: Nullable(Schema.String),
  source_reference: Nullable(FreeObject),
  sources: Schema.Array(SourceRecord),
}).annotations({ identifier: "Lineage" });

// --- The review of a preview (docs/imports.md, "Reviewing a preview"): beyond the contract, its
// own read, so that the Import answer keeps the contract's shape.

export const PlausibilityCode = Schema.Literal(
  "FAR_ABOVE_RECENT",
  "FAR_BELOW_RECENT",
  "DROP_TO_ZERO",
);
export type PlausibilityCode = typeof PlausibilityCode.Type;

export const PlausibilityWarning = Schema.Struct({
  code: PlausibilityCode,
  message: Schema.String,
  value_kwh: DecimalString,
  before_kwh: Nullable(DecimalString),
  recent_mean_kwh: Nullable(DecimalString),
  recent_days: Count,
}).annotations({
  identifier: "PlausibilityWarning",
  description: "A value worth a second look; it never blocks the commit",
});

export const ReviewRow = Schema.Struct({
  id: Id,
  row_number: Id,
  sheet: Nullable(Schema.String).annotations({
    description: "The worksheet (XLSX); null for a CSV file",
  }),
  file_row: Id.annotations({
    description: "The row of the worksheet or of the CSV file (its header is row 1)",
  }),
  column: Schema.String.annotations({
    description: "The column letter (XLSX) or the header name (CSV)",
  }),
  brand: Nullable(Schema.String),
  store_name: Nullable(Schema.String),
  resolved_store_id: Id,
  business_date: DateString,
  raw_date: Nullable(Schema.String),
  raw_energy: Nullable(Schema.String),
  before_energy_kwh: Nullable(DecimalString),
  proposed_energy_kwh: Nullable(DecimalString),
  action: ImportAction,
  quality_note: Nullable(Schema.String),
  note_field: Nullable(Schema.String),
  warnings: Schema.Array(PlausibilityWarning),
}).annotations({ identifier: "ReviewRow" });
export type ReviewRow = typeof ReviewRow.Type;

export const ImportReview = Schema.Struct({
  id: Id,
  batch_no: Schema.String,
  filename: Nullable(Schema.String),
  status: Schema.String,
  uploaded_at: Schema.String,
  total_rows: Count,
  changing_rows: Count.annotations({ description: "Rows the commit writes (a revision each)" }),
  action_counts: Schema.Record({ key: Schema.String, value: Count }),
  warned_rows: Count,
  warning_counts: Schema.Record({ key: Schema.String, value: Count }),
  matched_rows: Count.annotations({ description: "Rows that match the filter, all pages" }),
  row_offset: Count,
  rows: Schema.Array(ReviewRow),
}).annotations({ identifier: "ImportReview" });
export type ImportReview = typeof ImportReview.Type;

export const DiscardResult = Schema.Struct({
  id: Id,
  batch_no: Schema.String,
  status: Schema.String,
  discarded_at: Schema.String,
}).annotations({ identifier: "DiscardResult" });
