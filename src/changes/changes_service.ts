// The change feed, the batch list and the audit log for a caller: raw permission and store scope
// (access.ts), cursors checked against the loaded snapshot, pages of bounded size.
import { Effect } from "effect";
import { requirePermission, StoreAccess } from "../auth/access.ts";
import type { CallerShape } from "../domain/auth.ts";
import {
  CHANGES_DEFAULT_LIMIT,
  CHANGES_SCAN_ROWS,
  type ChangesPage,
  cursorParts,
  cursorText,
  LIST_DEFAULT_LIMIT,
} from "../domain/changes.ts";
import { JsonText } from "../domain/answers.ts";
import { conflict, notReady } from "../domain/errors.ts";
import { ChangesRepo } from "./changes_repo.ts";
import { span } from "../ops/span.ts";

const replaced = () =>
  conflict("The cursor names data that a later snapshot load replaced", "DATA_REPLACED");

export class ChangesService extends Effect.Service<ChangesService>()("Changes/ChangesService", {
  effect: Effect.gen(function* () {
    const repo = yield* ChangesRepo;
    const access = yield* StoreAccess;

    const feed = (caller: CallerShape, q: { readonly after?: string; readonly limit?: number }) =>
      Effect.gen(function* () {
        yield* requirePermission(caller, "raw");
        const limit = q.limit ?? CHANGES_DEFAULT_LIMIT;
        const from = q.after === undefined ? undefined : cursorParts(q.after);
        const position = from ?? { seq: "0", row: 0 };
        // Rows looked at: a few pages' worth, never more than the bound.
        const bound = Math.min(CHANGES_SCAN_ROWS, Math.max(2_000, 4 * limit));
        const scan = yield* repo.changes(position, bound, limit, caller.storeIds);
        if (scan.generation === undefined) return yield* notReady("No data is loaded");
        if (from !== undefined && from.generation !== scan.generation) return yield* replaced();
        const full = scan.changes.length === limit;
        const lastChange = scan.changes.at(-1);
        const next = full && lastChange !== undefined
          ? { seq: lastChange.seq, row: lastChange.row }
          : scan.last ?? position;
        // The changes come as PostgreSQL made them (Change's fields in order): the page is
        // assembled as text, not decoded and encoded again (tests check it against ChangesPage).
        const tail = JSON.stringify(
          {
            next_cursor: cursorText({ ...next, generation: scan.generation }),
            has_more: full || scan.scanned === bound,
            scanned_rows: scan.scanned,
            head_seq: scan.headSeq,
          } satisfies Omit<ChangesPage, "changes">,
        );
        return JsonText(
          `{"changes":[${scan.changes.map((c) => c.json).join(",")}],${tail.slice(1)}`,
        );
      }).pipe(span("ChangesService.feed"));

    const batches = (
      caller: CallerShape,
      q: { readonly after?: number; readonly limit?: number; readonly status?: string },
    ) =>
      Effect.gen(function* () {
        yield* requirePermission(caller, "raw");
        const limit = q.limit ?? LIST_DEFAULT_LIMIT;
        const rows = yield* repo.batches(q.after ?? 0, limit, q.status ?? null, caller.storeIds);
        return {
          batches: rows,
          next_after: rows.length === limit ? Number(rows.at(-1)!.id) : null,
        };
      }).pipe(span("ChangesService.batches"));

    const audit = (
      caller: CallerShape,
      storeId: number,
      q: { readonly after?: number; readonly limit?: number },
    ) =>
      Effect.gen(function* () {
        yield* access.store(caller, storeId, "raw");
        const limit = q.limit ?? LIST_DEFAULT_LIMIT;
        const entries = yield* repo.audit(storeId, q.after ?? 0, limit);
        return {
          store_id: storeId,
          entries,
          next_after: entries.length === limit ? Number(entries.at(-1)!.id) : null,
        };
      }).pipe(span("ChangesService.audit"));

    return { feed, batches, audit } as const;
  }),
  dependencies: [ChangesRepo.Default, StoreAccess.Default],
}) {}
