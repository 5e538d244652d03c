// The change feed, the list of import batches and a store's profile audit log (beyond the
// contract): what changed, in the order it became visible, for clients that follow the data.
import { Schema } from "effect";
import { SEALED } from "./as_of.ts";
import { Count, DateString, DecimalString, FreeObject, Id, MAX_ID, Nullable } from "./common.ts";
import { DayStatus, SourceKind } from "./energy.ts";

export const CHANGES_MAX_LIMIT = 1000;
export const CHANGES_DEFAULT_LIMIT = 100;
// Import rows looked at per request at most, whether or not they made a change the key may see.
export const CHANGES_SCAN_ROWS = 10_000;
export const LIST_MAX_LIMIT = 200;
export const LIST_DEFAULT_LIMIT = 50;

// What a cursor holds once opened (src/auth/data_seal.ts seals it, so that a key learns nothing
// from it, such as how many commits or rows other stores had, and cannot make one): "<commit
// number>.<row number>.<first 16 hex digits of the snapshot's generation>", the position after
// the last row a page looked at. <n>.0.<generation> is the start of commit n (0.0: the first).
const CURSOR = /^(0|[1-9]\d{0,15})\.(0|[1-9]\d{0,9})\.([0-9a-f]{16})$/;

export const ChangeCursor = Schema.String.pipe(
  Schema.filter((s) => SEALED.test(s), {
    message: () => "expected a cursor as an earlier page's next_cursor or head_cursor gives it",
  }),
).annotations({
  identifier: "ChangeCursor",
  description: "An opaque cursor: send it back as it is",
  jsonSchema: { type: "string", pattern: SEALED.source, maxLength: 160 },
});

export interface CursorParts {
  readonly seq: string;
  readonly row: number;
  readonly generation: string;
}

// The parts of an opened cursor; undefined when the text is not one (a row beyond an integer).
export const cursorParts = (cursor: string): CursorParts | undefined => {
  const m = CURSOR.exec(cursor);
  if (m === null || Number(m[2]) > MAX_ID) return undefined;
  return { seq: m[1], row: Number(m[2]), generation: m[3] };
};

export const cursorText = (p: CursorParts) => `${p.seq}.${p.row}.${p.generation}`;

export const Actor = Schema.Struct({
  member_id: Id,
  login_name: Schema.String,
  display_name: Nullable(Schema.String),
}).annotations({ identifier: "Actor" });

// One revision of a store-day: the day as it was after it, and the served value before it.
export const Change = Schema.Struct({
  commit_seq: Id,
  committed_at: Schema.String,
  batch_id: Id,
  batch_no: Schema.String,
  batch_kind: Schema.String,
  row_number: Id,
  import_row_id: Id,
  store_id: Id,
  scope_id: Id,
  business_date: DateString,
  energy_id: Id,
  revision_no: Id,
  operation: Schema.String,
  // The batch's reason and uploader, for a key that may read the whole batch (as
  // GET /imports/{id} decides); null for a key limited to some of its stores.
  change_reason: Nullable(Schema.String).annotations({
    description: "The batch's reason; null for a key that may not read every store of the batch",
  }),
  actor: Nullable(Actor).annotations({
    description: "Who committed the batch (null for the snapshot's batches, and for a key that " +
      "may not read every store of the batch)",
  }),
  state_kept: Schema.Boolean,
  energy_kwh: Nullable(DecimalString),
  status: Nullable(DayStatus),
  source_kind: Nullable(SourceKind),
  quality_status: Nullable(Schema.String),
  quality_note: Nullable(Schema.String),
  before_energy_kwh: Nullable(DecimalString),
  before_status: Nullable(DayStatus),
}).annotations({ identifier: "Change" });

export const ChangesPage = Schema.Struct({
  changes: Schema.Array(Change),
  next_cursor: ChangeCursor.annotations({
    description: "Pass it as `after` for the next page (the same when nothing came)",
  }),
  has_more: Schema.Boolean,
  scanned_rows: Count.annotations({
    description: "Import rows of the key's stores that this request looked at",
  }),
  head_seq: Nullable(Count).annotations({
    description: "The number of the last commit made, for a key of every store; null for a key " +
      "limited to some stores (the count of every store's commits is not its to know)",
  }),
  head_cursor: ChangeCursor.annotations({
    description: "A cursor at the start of the last commit made: passed as `after`, the feed " +
      "gives that commit's changes and those of later commits only",
  }),
}).annotations({ identifier: "ChangesPage" });
export type ChangesPage = typeof ChangesPage.Type;

export const BatchStatus = Schema.Literal("PREVIEWED", "COMMITTED", "EXPIRED");

export const BatchItem = Schema.Struct({
  id: Id,
  batch_no: Schema.String,
  batch_kind: Schema.String,
  status: BatchStatus,
  filename: Nullable(Schema.String),
  change_reason: Nullable(Schema.String),
  uploaded_at: Schema.String,
  committed_at: Nullable(Schema.String),
  commit_seq: Nullable(Id),
  uploaded_by: Nullable(Actor),
  action_counts: Schema.Record({ key: Schema.String, value: Count }),
}).annotations({ identifier: "BatchItem" });
export type BatchItem = typeof BatchItem.Type;

export const BatchList = Schema.Struct({
  batches: Schema.Array(BatchItem),
  next_after: Nullable(Id),
}).annotations({ identifier: "BatchList" });

export const AuditEntry = Schema.Struct({
  id: Id,
  action: Schema.String,
  actor: Nullable(Actor),
  before: Nullable(FreeObject),
  after: Nullable(FreeObject),
  created_at: Schema.String,
}).annotations({ identifier: "AuditEntry" });
export type AuditEntry = typeof AuditEntry.Type;

export const AuditLog = Schema.Struct({
  store_id: Id,
  entries: Schema.Array(AuditEntry),
  next_after: Nullable(Id),
}).annotations({ identifier: "AuditLog" });
