// ImportPipeline: preview (read -> resolve -> plan -> store), commit, batch, lineage, review, discard.
import * as SqlClient from "@effect/sql/SqlClient";
import { createHash } from "node:crypto";
import { Decimal } from "decimal.js";
import { Array as Arr, Effect, Either, Fiber, Option, Stream } from "effect";
import { JsonText } from "../domain/answers.ts";
import { dbBoundary, onSqlState } from "../db/errors.ts";
import { type CallerShape } from "../domain/auth.ts";
import {
  badRequest,
  conflict,
  forbidden,
  notFound,
  type ServiceUnavailable,
} from "../domain/errors.ts";
import {
  ImportAction,
  type ImportReview,
  MAX_FILE_BYTES,
  MAX_IMPORT_ROWS,
  type ReviewRow,
  type UploadedFile,
} from "../domain/imports.ts";
import { inScope, mayReview, requirePermission } from "../auth/access.ts";
import { Messages } from "../domain/messages.ts";
import {
  type ImportHead,
  ImportRepo,
  type ImportRowOut,
  LINEAGE_SEALED,
  PREVIEW_HOURS,
  type SavedPreview,
} from "./import_repo.ts";
import type { CurrentDay, FileProblem, PlannedRow } from "./model.ts";
import { countActions, planImport, SOURCE_KIND_UPLOAD } from "./planner.ts";
import { CHANGING_ACTIONS } from "../domain/imports.ts";
import { isChecked, plausibility, type PlausibilityFacts, warningText } from "./plausibility.ts";
import { currentLanguage, pick } from "../domain/language.ts";
import { formatProblems, readImportFile, sortProblems } from "./readers.ts";
import { resolveRows } from "./resolver.ts";
import { CatalogRepo } from "../files/catalog_repo.ts";
import { span } from "../ops/span.ts";

const sha256 = (data: Uint8Array | string) => createHash("sha256").update(data).digest("hex");

// The file's bytes, or its problem as the contract answers it.
const fileBytes = (file: UploadedFile) =>
  file._tag === "File" ? Effect.succeed(file.bytes) : Effect.fail(
    file._tag === "NotBase64"
      ? badRequest(Messages.invalidBase64())
      : badRequest(Messages.fileTooLarge(file.size, MAX_FILE_BYTES)),
  );

const rejectFile = (problems: ReadonlyArray<FileProblem>) =>
  badRequest(
    Messages.fileRefused(formatProblems(problems, "en"), formatProblems(problems, "zh-CN")),
  );

const batchForbidden = forbidden(Messages.batchOutside());

const keyReused = conflict(Messages.keyReused());

// A kWh text with at most 4 decimals (the reader's canonical form, or a stored numeric) printed as
// PostgreSQL's round(x, 4)::text prints it.
const fixed4 = (value: string | null) => {
  if (value === null) return null;
  const [whole, fraction = ""] = value.split(".");
  return fraction.length <= 4
    ? `${whole}.${fraction.padEnd(4, "0")}`
    : new Decimal(value).toFixed(4, Decimal.ROUND_HALF_UP);
};

// Rows per page of an Import answer: the rows are read (or encoded) as the answer is sent.
export const IMPORT_PAGE_ROWS = 2_000;

// An Import answer (contract part 2): the batch's head, its counts per action (of every row, also
// when only a page of rows is sent), and its rows in file order, page by page.
export interface ImportAnswer {
  readonly head: ImportHead;
  readonly counts: Record<ImportAction, number>;
  readonly rows: Stream.Stream<ReadonlyArray<ImportRowOut>, ServiceUnavailable>;
  // A commit's answer: the data token of the data it made (unsealed).
  readonly token?: string;
}

// Every action, 0 when no row has it.
const allCounts = (counts: Partial<Record<ImportAction, number>>) =>
  Object.fromEntries(ImportAction.literals.map((a) => [a, counts[a] ?? 0])) as Record<
    ImportAction,
    number
  >;

// Rows read early (while the batch was a preview) answer for the batch only when they are all of
// them: a concurrent commit of the same batch ends the early read part way (its pages are read
// while the batch is PREVIEWED), and a part must not pass for the whole.
export const wholeBatch = (
  rowsRead: ReadonlyArray<unknown> | undefined,
  counts: Partial<Record<ImportAction, number>>,
) =>
  rowsRead !== undefined && rowsRead.length > 0 &&
  rowsRead.length === Object.values(allCounts(counts)).reduce((sum, n) => sum + n, 0);

// Rows in memory as the pages of an answer.
const inPages = (rows: ReadonlyArray<ImportRowOut>) =>
  Stream.fromIterable(Arr.chunksOf(rows, IMPORT_PAGE_ROWS));

// Which rows of a batch an answer sends: those after `offset` in file order, at most `limit`.
export interface RowPage {
  readonly offset: number;
  readonly limit: number | undefined;
}
const WHOLE: RowPage = { offset: 0, limit: undefined };

// A row of a batch just saved, from the plan in memory (no read back).
const plannedRow = (id: number, p: PlannedRow): ImportRowOut => ({
  id,
  row_number: p.row.rowNumber,
  resolved_store_id: p.row.storeId,
  business_date: p.row.date,
  raw_energy: p.row.rawEnergy,
  proposed_energy_kwh: fixed4(p.proposedKwh),
  before_energy_kwh: fixed4(p.beforeKwh),
  action: p.action,
  source_kind: SOURCE_KIND_UPLOAD,
  quality_status: p.qualityStatus,
  quality_note: p.qualityNote,
  lineage_status: LINEAGE_SEALED,
  note_field: p.noteField,
});

// The rows of a batch just saved, made a page at a time as the answer is sent.
const plannedPages = (saved: SavedPreview, planned: ReadonlyArray<PlannedRow>) =>
  Stream.range(0, Math.ceil(planned.length / IMPORT_PAGE_ROWS) - 1).pipe(
    Stream.map((page) => {
      const from = page * IMPORT_PAGE_ROWS;
      return planned.slice(from, from + IMPORT_PAGE_ROWS).map((p, i) =>
        plannedRow(saved.rowIds[from + i], p)
      );
    }),
  );

// Which rows of a batch its review sends: those of some actions (null: any), only those with a
// warning, `limit` of them after the first `offset` (in file order, among those that match).
export interface ReviewFilter {
  readonly actions: ReadonlyArray<ImportAction> | null;
  readonly warnedOnly: boolean;
  readonly offset: number;
  readonly limit: number;
}

export interface PreviewRequest {
  readonly filename: string;
  readonly file: UploadedFile;
  readonly reason: string;
}

export class ImportService extends Effect.Service<ImportService>()("Imports/ImportService", {
  effect: Effect.gen(function* () {
    const repo = yield* ImportRepo;
    const files = yield* CatalogRepo;
    const sql = yield* SqlClient.SqlClient;

    // A batch as stored: its head and counts now, its rows read page by page as they are sent
    // (or all of them, when they were read already).
    const body = (
      batchId: number,
      page: RowPage = WHOLE,
      rowsRead?: ReadonlyArray<ImportRowOut>,
    ) =>
      Effect.gen(function* () {
        const head = yield* dbBoundary(repo.importHead(batchId));
        if (head === undefined) return yield* notFound(Messages.batchMissing(batchId));
        const { action_counts, batch_kind: _kind, ...rest } = head;
        if (rowsRead !== undefined && wholeBatch(rowsRead, action_counts)) {
          return { head: rest, counts: allCounts(action_counts), rows: inPages(rowsRead) };
        }
        // The first page now (a failure is an error answer), the others as the answer is sent.
        const end = page.limit === undefined ? Infinity : page.offset + page.limit;
        const read = (after: number) => {
          const take = Math.min(IMPORT_PAGE_ROWS, end - after);
          return Effect.map(dbBoundary(repo.importRows(batchId, after, take)), (found) => ({
            found,
            next: found.length < take || after + take >= end
              ? Option.none<number>()
              : Option.some(found[found.length - 1].row_number),
          }));
        };
        const first = yield* read(page.offset);
        const rows = Stream.make(first.found).pipe(
          Stream.concat(Option.match(first.next, {
            onNone: () => Stream.empty,
            onSome: (after) =>
              Stream.paginateEffect(after, (from) =>
                Effect.map(read(from), (p) => [p.found, p.next] as const)),
          })),
          Stream.filter((found) =>
            found.length > 0
          ),
        );
        return { head: rest, counts: allCounts(action_counts), rows } satisfies ImportAnswer;
      });

    // Every row of a previewed upload batch (at most MAX_IMPORT_ROWS, as its preview allowed),
    // read page by page as an answer would read them.
    const previewedRows = (batchId: number) =>
      Effect.gen(function* () {
        const rows: Array<ImportRowOut> = [];
        for (let after = 0; rows.length < MAX_IMPORT_ROWS;) {
          const page = yield* repo.importRows(batchId, after, IMPORT_PAGE_ROWS, true);
          rows.push(...page);
          if (page.length < IMPORT_PAGE_ROWS) break;
          after = page[page.length - 1].row_number;
        }
        return rows;
      });

    // A replayed answer is still subject to the caller's stores: keys are remembered per member,
    // and a member's keys may cover different stores.
    const replay = (
      caller: CallerShape,
      batchId: number,
      rowsRead?: ReadonlyArray<ImportRowOut>,
    ) =>
      Effect.gen(function* () {
        if ((yield* dbBoundary(repo.batchScope(batchId, caller.storeIds)))?.outside) {
          return yield* batchForbidden;
        }
        return yield* body(batchId, WHOLE, rowsRead);
      });

    const preview = (caller: CallerShape, key: string, request: PreviewRequest) =>
      Effect.gen(function* () {
        yield* requirePermission(caller, "write");
        const bytes = yield* fileBytes(request.file);
        const fileSha = sha256(bytes);
        const requestHash = sha256(
          JSON.stringify(["preview", request.filename, request.reason, fileSha]),
        );
        // A retry is answered before any work; the claim below settles races.
        const earlier = yield* dbBoundary(repo.idempotencyRecord(caller.memberId, key));
        if (earlier !== undefined) {
          if (earlier.request_hash !== requestHash) return yield* keyReused;
          if (earlier.batch_id !== null) return yield* replay(caller, earlier.batch_id);
        }

        const facts = yield* files.dataset;
        const read = yield* Effect.either(
          readImportFile(request.filename, bytes, { datasetEnd: facts.end }),
        );
        // Rows and rows the reader refused are resolved either way: one answer names every problem.
        // Only the caller's stores are matched: a row of another store reads as an unknown store.
        const catalog = yield* dbBoundary(files.catalog(caller.storeIds));
        const naming = caller.storeIds === null ? undefined : yield* files.namingBrands;
        const resolved = yield* Effect.sync(() =>
          resolveRows(
            Either.isRight(read) ? read.right.rows : read.left.rows ?? [],
            {
              stores: catalog,
              namingBrands: naming,
              datasetStart: facts.start,
              datasetEnd: facts.end,
              today: facts.today,
            },
            Either.isLeft(read) ? read.left.checks : undefined,
          )
        ).pipe(span("Imports.resolveRows"));
        if (Either.isLeft(read) || resolved.problems.length > 0) {
          const readProblems = Either.isLeft(read) ? read.left.problems : [];
          const sheets = Either.isLeft(read) ? read.left.sheets ?? [] : read.right.sheets;
          return yield* rejectFile(sortProblems([...readProblems, ...resolved.problems], sheets));
        }
        const file = read.right;

        const current = yield* dbBoundary(
          repo.currentDays(resolved.rows.map((r) => ({ scopeId: r.scopeId, date: r.date }))),
        );
        const planned = yield* Effect.sync(() => {
          // By store, then date: no key text is made per lookup.
          const days = new Map<number, Map<string, CurrentDay>>();
          for (const day of current) {
            const ofScope = days.get(day.scopeId);
            if (ofScope === undefined) days.set(day.scopeId, new Map([[day.date, day]]));
            else ofScope.set(day.date, day);
          }
          return planImport(
            file.noteField,
            resolved.rows,
            (scopeId, date) => days.get(scopeId)?.get(date),
          );
        }).pipe(span("Imports.plan"));

        // Plausibility warnings (plausibility.ts) against the store's recent days as served now.
        const checked = planned.filter(isChecked);
        const levels = checked.length === 0 ? [] : yield* dbBoundary(
          repo.recentLevels(checked.map((p) => ({ scopeId: p.row.scopeId, date: p.row.date }))),
        );
        const warnings = yield* Effect.sync(() => {
          const byScope = new Map<number, Map<string, (typeof levels)[number]>>();
          for (const level of levels) {
            const ofScope = byScope.get(level.scopeId);
            if (ofScope === undefined) byScope.set(level.scopeId, new Map([[level.date, level]]));
            else ofScope.set(level.date, level);
          }
          return planned.map((p): ReadonlyArray<PlausibilityFacts> =>
            isChecked(p) ? plausibility(p, byScope.get(p.row.scopeId)?.get(p.row.date)) : []
          );
        }).pipe(span("Imports.plausibility"));

        const outcome = yield* dbBoundary(sql.withTransaction(Effect.gen(function* () {
          const taken = yield* repo.claim(caller.memberId, key, "PREVIEW", requestHash);
          if (taken !== undefined) {
            if (taken.request_hash !== requestHash || taken.batch_id === null) {
              return yield* keyReused;
            }
            return { replay: taken.batch_id, saved: undefined } as const;
          }
          const saved = yield* repo.savePreview({
            memberId: caller.memberId,
            filename: request.filename,
            reason: request.reason,
            bytes,
            sha256: fileSha,
            format: file.format,
            rows: planned,
            warnings,
          });
          yield* repo.completeClaim(caller.memberId, key, saved.batchId);
          return { replay: undefined, saved } as const;
        })));
        if (outcome.saved === undefined) return yield* replay(caller, outcome.replay);
        return {
          head: {
            id: outcome.saved.batchId,
            batch_no: outcome.saved.batchNo,
            filename: request.filename,
            status: "PREVIEWED",
            uploaded_at: outcome.saved.uploadedAt,
            committed_at: null,
            change_reason: request.reason,
          },
          counts: countActions(planned),
          rows: plannedPages(outcome.saved, planned),
        } satisfies ImportAnswer;
      }).pipe(span("ImportService.preview"));

    // One transaction: claim the key, lock the batch, check it, lock and check its days, apply.
    // Gives the batch committed and the data token of its commit (of a retry: the data now).
    const commitTransaction = (caller: CallerShape, key: string, batchId: number) =>
      Effect.gen(function* () {
        const requestHash = sha256(JSON.stringify(["commit", batchId]));
        const taken = yield* repo.claim(caller.memberId, key, "COMMIT", requestHash);
        if (taken !== undefined) {
          if (taken.request_hash !== requestHash || taken.batch_id === null) {
            return yield* keyReused;
          }
          return { batchId: taken.batch_id, token: yield* repo.dataToken(caller.storeIds) };
        }
        const head = yield* repo.lockBatch(batchId);
        if (head === undefined) return yield* notFound(Messages.batchMissing(batchId));
        if ((yield* repo.batchScope(batchId, caller.storeIds))?.outside) {
          return yield* batchForbidden;
        }
        if (head.batch_kind !== "UPLOAD") {
          return yield* conflict(Messages.sealedBatch(head.batch_no));
        }
        if (head.status === "COMMITTED") {
          return yield* conflict(Messages.alreadyCommitted(head.batch_no));
        }
        if (head.discarded) {
          return yield* conflict(Messages.batchDiscarded(head.batch_no));
        }
        if (head.expired) {
          return yield* conflict(
            Messages.batchExpired(head.batch_no, PREVIEW_HOURS),
          );
        }
        const stale = yield* repo.lockAndStage(
          batchId,
          caller.memberId,
          head.change_reason ?? "",
        );
        if (stale.stale > 0) {
          return yield* conflict(
            Messages.daysChanged(stale.stale, stale.first),
          );
        }
        const appeared = yield* repo.applyRows(batchId, caller.memberId);
        if (appeared > 0) {
          return yield* conflict(Messages.daysCreated(appeared));
        }
        yield* repo.completeClaim(caller.memberId, key, batchId);
        return { batchId, token: yield* repo.dataToken(caller.storeIds) };
      });

    const commit = (caller: CallerShape, key: string, batchId: number) =>
      Effect.gen(function* () {
        yield* requirePermission(caller, "write");
        // The answer's rows are read on another connection while the commit runs (a previewed
        // upload batch's rows never change); they are sent only once the commit is done and the
        // caller's stores are checked. Without them (a read that failed, a batch of another kind
        // or state) the answer reads its rows as it is sent.
        const early = yield* Effect.fork(Effect.option(dbBoundary(previewedRows(batchId))));
        const committed = yield* dbBoundary(
          onSqlState(
            sql.withTransaction(commitTransaction(caller, key, batchId)),
            ["23505", "40001", "40P01"],
            () => conflict(Messages.concurrentChange()),
          ),
        );
        const rowsRead = Option.getOrUndefined(yield* Fiber.join(early));
        const answer = yield* replay(
          caller,
          committed.batchId,
          committed.batchId === batchId ? rowsRead : undefined,
        );
        return { ...answer, token: committed.token } satisfies ImportAnswer;
      }).pipe(span("ImportService.commit"));

    const batch = (caller: CallerShape, batchId: number, page: RowPage = WHOLE) =>
      Effect.gen(function* () {
        yield* requirePermission(caller, "raw");
        const scope = yield* dbBoundary(repo.batchScope(batchId, caller.storeIds));
        if (scope === undefined) return yield* notFound(Messages.batchMissing(batchId));
        if (scope.outside) return yield* batchForbidden;
        return yield* body(batchId, page);
      }).pipe(span("ImportService.batch"));

    const lineage = (caller: CallerShape, importRowId: number) =>
      Effect.gen(function* () {
        yield* requirePermission(caller, "raw");
        const found = yield* dbBoundary(repo.lineageBody(importRowId, caller.storeIds));
        if (found === undefined) return yield* notFound(Messages.importRowMissing(importRowId));
        if (!inScope(caller, found.store_id)) {
          return yield* forbidden(Messages.importRowOutside());
        }
        return JsonText(found.body);
      }).pipe(span("ImportService.lineage"));

    // The review of an upload batch (write permission, as its preview: the clerk who previewed
    // it reads it again, before and after its commit; anyone else's batch is import detail, which
    // needs raw). Its rows carry their place in the file and their warnings.
    const review = (caller: CallerShape, batchId: number, filter: ReviewFilter) =>
      Effect.gen(function* () {
        yield* requirePermission(caller, "write");
        const scope = yield* dbBoundary(repo.batchScope(batchId, caller.storeIds));
        if (scope === undefined) return yield* notFound(Messages.batchMissing(batchId));
        if (scope.outside) return yield* batchForbidden;
        yield* mayReview(caller, scope.previewedBy);
        const head = yield* dbBoundary(repo.importHead(batchId));
        if (head === undefined) return yield* notFound(Messages.batchMissing(batchId));
        if (head.batch_kind !== "UPLOAD") {
          return yield* conflict(Messages.sealedBatchNoReview(head.batch_no));
        }
        const language = yield* currentLanguage;
        const counts = allCounts(head.action_counts);
        const tally = yield* dbBoundary(
          repo.reviewCounts(batchId, filter.actions, filter.warnedOnly),
        );
        const found = yield* dbBoundary(
          repo.reviewRows(batchId, filter.actions, filter.warnedOnly, filter.offset, filter.limit),
        );
        const rows = found.map((r): ReviewRow => ({
          ...r,
          warnings: r.warnings === null
            ? []
            : (JSON.parse(r.warnings) as Array<PlausibilityFacts>).map((w) => ({
              ...w,
              message: pick(warningText(w, r.business_date), language),
            })),
        }));
        const codes = JSON.parse(tally.codes) as Record<string, number>;
        return {
          id: head.id,
          batch_no: head.batch_no,
          filename: head.filename,
          status: head.status,
          uploaded_at: head.uploaded_at,
          total_rows: Object.values(counts).reduce((sum, n) => sum + n, 0),
          changing_rows: [...CHANGING_ACTIONS].reduce((sum, a) => sum + counts[a], 0),
          action_counts: counts,
          warned_rows: tally.warned,
          warning_counts: {
            FAR_ABOVE_RECENT: codes.FAR_ABOVE_RECENT ?? 0,
            FAR_BELOW_RECENT: codes.FAR_BELOW_RECENT ?? 0,
            DROP_TO_ZERO: codes.DROP_TO_ZERO ?? 0,
          },
          matched_rows: tally.matched,
          row_offset: filter.offset,
          rows,
        } satisfies ImportReview;
      }).pipe(span("ImportService.review"));

    // Discards a previewed upload batch: it expires now and can never be committed. Discarding it
    // again, or once it expired, answers it as it is; a committed batch is 409.
    const discard = (caller: CallerShape, batchId: number) =>
      Effect.gen(function* () {
        yield* requirePermission(caller, "write");
        return yield* dbBoundary(sql.withTransaction(Effect.gen(function* () {
          // The batch's lock orders a discard and a commit of it: one of them sees the other.
          const head = yield* repo.lockBatch(batchId);
          if (head === undefined) return yield* notFound(Messages.batchMissing(batchId));
          if ((yield* repo.batchScope(batchId, caller.storeIds))?.outside) {
            return yield* batchForbidden;
          }
          if (head.batch_kind !== "UPLOAD") {
            return yield* conflict(Messages.sealedBatchNoDiscard(head.batch_no));
          }
          if (head.status === "COMMITTED") {
            return yield* conflict(Messages.alreadyCommitted(head.batch_no));
          }
          const discardedAt = yield* repo.discard(batchId, caller.memberId);
          return {
            id: head.id,
            batch_no: head.batch_no,
            status: "EXPIRED",
            discarded_at: discardedAt,
          };
        })));
      }).pipe(span("ImportService.discard"));

    return { preview, commit, batch, lineage, review, discard } as const;
  }),
  dependencies: [ImportRepo.Default, CatalogRepo.Default],
}) {}
