// The change feed, the batch list and the audit log for a caller: raw permission and store scope
// (access.ts), sealed cursors checked against the loaded snapshot, pages of bounded size; for a key
// limited to some stores, nothing that counts other stores' commits or rows.
import { Effect } from "effect";
import { requirePermission, StoreAccess } from "../auth/access.ts";
import { DataSeal } from "../auth/data_seal.ts";
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
import { badRequest, conflict, forbidden, unavailable } from "../domain/errors.ts";
import { Messages } from "../domain/messages.ts";
import { ChangesRepo } from "./changes_repo.ts";
import { span } from "../ops/span.ts";

const replaced = () => conflict(Messages.cursorReplaced());

export class ChangesService extends Effect.Service<ChangesService>()("Changes/ChangesService", {
  effect: Effect.gen(function* () {
    const repo = yield* ChangesRepo;
    const access = yield* StoreAccess;
    const seal = yield* DataSeal;

    const badCursor = badRequest(Messages.foreignCursor());

    // Where a request starts: after an opened cursor, at a commit (keys of every store: a key
    // limited to some stores could learn from the cursors how many commits there are), or at
    // the first commit.
    const startOf = (
      caller: CallerShape,
      q: { readonly after?: string; readonly from_seq?: number },
    ) =>
      Effect.gen(function* () {
        if (q.after !== undefined && q.from_seq !== undefined) {
          return yield* badRequest(Messages.bothCursors());
        }
        if (q.from_seq !== undefined) {
          if (caller.storeIds !== null) {
            return yield* forbidden(Messages.fromSeqAllStores());
          }
          return { seq: String(q.from_seq), row: 0, generation: undefined };
        }
        if (q.after === undefined) return { seq: "0", row: 0, generation: undefined };
        const text = yield* seal.open("change-cursor", q.after);
        const parts = text === undefined ? undefined : cursorParts(text);
        return parts ?? (yield* badCursor);
      });

    const feed = (
      caller: CallerShape,
      q: { readonly after?: string; readonly from_seq?: number; readonly limit?: number },
    ) =>
      Effect.gen(function* () {
        yield* requirePermission(caller, "raw");
        const limit = q.limit ?? CHANGES_DEFAULT_LIMIT;
        const from = yield* startOf(caller, q);
        // Rows looked at: a few pages' worth, never more than the bound.
        const bound = Math.min(CHANGES_SCAN_ROWS, Math.max(2_000, 4 * limit));
        const scan = yield* repo.changes(from, bound, limit, caller.storeIds);
        if (scan.generation === undefined) return yield* unavailable(Messages.noData());
        if (from.generation !== undefined && from.generation !== scan.generation) {
          return yield* replaced();
        }
        const full = scan.changes.length === limit;
        const lastChange = scan.changes.at(-1);
        const reached = full && lastChange !== undefined
          ? { seq: lastChange.seq, row: lastChange.row }
          : scan.last ?? from;
        // A start beyond the next commit to come (from_seq past the head) goes on from that commit:
        // a cursor further on would skip the commits made until then.
        const coming = BigInt(scan.headSeq) + 1n;
        const next = BigInt(reached.seq) > coming ? { seq: String(coming), row: 0 } : reached;
        const cursor = (p: { readonly seq: string; readonly row: number }) =>
          seal.seal("change-cursor", cursorText({ ...p, generation: scan.generation! }));
        // The changes come as PostgreSQL made them (Change's fields in order): the page is
        // assembled as text, not decoded and encoded again (tests check it against ChangesPage).
        const tail = JSON.stringify(
          {
            next_cursor: yield* cursor(next),
            has_more: full || scan.scanned === bound,
            scanned_rows: scan.scannedMine,
            head_seq: caller.storeIds === null ? scan.headSeq : null,
            head_cursor: yield* cursor({ seq: String(scan.headSeq), row: 0 }),
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
  // DataSeal comes from the services the whole app shares (app.ts): its key is read once.
  dependencies: [ChangesRepo.Default, StoreAccess.Default],
}) {}
