// Beyond the contract: the change feed of energy revisions in commit order, the list of import
// batches and a store's profile audit log.
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint";
import * as HttpApiGroup from "@effect/platform/HttpApiGroup";
import * as OpenApi from "@effect/platform/OpenApi";
import { Schema } from "effect";
import {
  AuditLog,
  BatchList,
  BatchStatus,
  ChangeCursor,
  CHANGES_DEFAULT_LIMIT,
  CHANGES_MAX_LIMIT,
  CHANGES_SCAN_ROWS,
  ChangesPage,
  LIST_DEFAULT_LIMIT,
  LIST_MAX_LIMIT,
} from "../domain/changes.ts";
import { CountFromString, IdFromString } from "../domain/common.ts";
import { CALLER, operation, STORE_OBJECT } from "./openapi.ts";
import { StorePath } from "./params.ts";
import { Admission, admits, Authentication } from "./security.ts";

const limitParam = (max: number, fallback: number) =>
  Schema.optional(
    IdFromString.pipe(Schema.filter((n) => n <= max, {
      message: () => `expected a limit from 1 to ${max}`,
    })),
  ).annotations({ description: `At most this many items (1 to ${max}, default ${fallback})` });

const afterId = Schema.optional(IdFromString).annotations({
  description: "Only items with a larger id: the previous page's next_after",
});

export const ChangesParams = Schema.Struct({
  after: Schema.optional(ChangeCursor).annotations({
    description: "The previous page's next_cursor, or a page's head_cursor; absent: from the " +
      "first commit (or from_seq)",
  }),
  from_seq: Schema.optional(CountFromString).annotations({
    description: "Start at this commit (a change's commit_seq, or head_seq). For keys of every " +
      "store only; not with after",
  }),
  limit: limitParam(CHANGES_MAX_LIMIT, CHANGES_DEFAULT_LIMIT),
});

export const BatchListParams = Schema.Struct({
  after: afterId,
  limit: limitParam(LIST_MAX_LIMIT, LIST_DEFAULT_LIMIT),
  status: Schema.optional(BatchStatus).annotations({ description: "Only batches in this status" }),
});

export const AuditParams = Schema.Struct({
  after: afterId,
  limit: limitParam(LIST_MAX_LIMIT, LIST_DEFAULT_LIMIT),
});

export class ChangesApi extends HttpApiGroup.make("changes")
  .add(
    HttpApiEndpoint.get("feed", "/changes")
      .setUrlParams(ChangesParams)
      .addSuccess(ChangesPage)
      .annotate(Admission, admits("raw", false))
      .annotateContext(operation({
        summary: "Energy revisions in commit order",
        description: "Every revision of a store-day, in the order the commits that made them " +
          "became visible (the snapshot's batches first, then each import commit; within a " +
          "batch in file row order), for the stores of the key: the day after the revision " +
          "(served `energy_kwh`, `status`, `source_kind`, quality) and the served value before " +
          "it, with the batch, the actor and the commit's instant. Follow `next_cursor` from " +
          "the start and apply each change to reconstruct every store-day's current value; a " +
          "client that is up to date gets `has_more: false` and keeps the cursor for later. " +
          `A request looks at 4 x limit import rows (2,000 at least, ${CHANGES_SCAN_ROWS} at ` +
          "most), whether or not they made a change the key may see, so a page can be " +
          "short, even empty, with `has_more: true`. Cursors are opaque (sealed by the " +
          "service): one the service did not give is 400 INVALID_REQUEST, one of data a later " +
          "snapshot load replaced 409 DATA_REPLACED. A client that wants only recent changes " +
          "starts from `head_cursor` (the last commit on); a key of every store may also start " +
          "at any commit with `from_seq` (403 STORE_FORBIDDEN for a key limited to some " +
          "stores). For such a key, `head_seq` is null, `scanned_rows` counts its stores' rows " +
          "only, and a change's `change_reason` and `actor` are null unless it may read every " +
          "store of the batch (as GET /imports/{batch_id} decides). `state_kept` is false for " +
          "a revision a later one replaced before this database kept replaced states (its " +
          "values are then null). Needs the raw and read permissions.",
        errors: [...CALLER, "INVALID_REQUEST", "STORE_FORBIDDEN", "DATA_REPLACED"],
      })),
  )
  .add(
    HttpApiEndpoint.get("batches", "/imports")
      .setUrlParams(BatchListParams)
      .addSuccess(BatchList)
      .annotate(Admission, admits("raw", false))
      .annotateContext(operation({
        summary: "Import batches",
        description: "Import batches in id order (uploads and the snapshot's platform " +
          "batches), with their status (a preview past its expiry is EXPIRED), who uploaded " +
          "them, their commit number and counts per action; a key limited to some stores sees " +
          "the batches whose rows are all of its stores. `next_after` is the id to pass as " +
          "`after` for the next page (null: none). Needs the raw and read permissions.",
        errors: [...CALLER, "INVALID_REQUEST"],
      })),
  )
  .add(
    HttpApiEndpoint.get("audit", "/stores/:store_id/audit")
      .setPath(StorePath)
      .setUrlParams(AuditParams)
      .addSuccess(AuditLog)
      .annotate(Admission, admits("raw", false))
      .annotateContext(operation({
        summary: "A store's profile audit log",
        description: "Every profile edit of the store, oldest first: the fields before and " +
          "after, who made it and when. Needs the raw and read permissions.",
        errors: [...CALLER, ...STORE_OBJECT],
      })),
  )
  .middleware(Authentication)
  .prefix("/api/v1")
  .annotate(
    OpenApi.Description,
    "Revisions in commit order, import batches and the profile audit log",
  ) {}
