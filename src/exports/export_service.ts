// Exports: the current served values of stores in the import file's own layout (XLSX wide table,
// CSV long table, files/), sent while they are read (paged_body.ts). A file exported and sent back
// untouched previews as UNCHANGED and SKIP_MISSING rows only (layout.ts).
import { Array as Arr, Cause, Effect, Option, Stream } from "effect";
import { inScope, requirePermission } from "../auth/access.ts";
import type { CallerShape } from "../domain/auth.ts";
import { dbBoundary } from "../db/errors.ts";
import { keepTarget } from "../db/read_replica.ts";
import {
  badRequest,
  forbidden,
  notFound,
  type ServiceUnavailable,
  unavailable,
} from "../domain/errors.ts";
import { Messages } from "../domain/messages.ts";
import { RequestNote } from "../domain/request.ts";
import { AppConfig } from "../config.ts";
import { CatalogRepo, type CatalogStore } from "../files/catalog_repo.ts";
import { compareNames, sheetNamesFor } from "../files/sheet_names.ts";
import { type DataPosition, ExportRepo, type StoredDay } from "./export_repo.ts";
import {
  CSV_BOM,
  CSV_HEADER_FIELDS,
  CSV_MEDIA_TYPE,
  csvLine,
  csvRow,
  exportCell,
  type ExportDay,
  exportFilename,
  type ExportFormat,
  type LegacyCells,
  XLSX_MEDIA_TYPE,
} from "./layout.ts";
import { WorkbookWriter } from "./xlsx_stream.ts";
import { pagedBody, type PageWriter } from "./paged_body.ts";
import { span } from "../ops/span.ts";

// At most this many store-days (stores x days) per export: 2,732 stores for a whole year. An
// export is written while it is sent, so the bound is on the work of one request, not on memory.
export const EXPORT_MAX_VALUES = 1_000_000;
// Store-days read per statement (and held in memory at once): 5 stores of a year. The embedded
// database reads a statement's rows on the event loop, so a page is also a hold of the loop.
export const EXPORT_PAGE_VALUES = 2_048;
// Store-days written between two yields to the event loop: 2 stores of a year. Exports running at
// once each write a slice in turn before a timer, a socket or another request gets the loop.
export const EXPORT_SLICE_VALUES = 1_024;

// Whole stores in a run of at most `values` store-days (one at least).
const storesPer = (values: number, days: number) => Math.max(1, Math.floor(values / days));

// The stored days of a page of stores, in the page's order.
type Page = ReadonlyArray<{
  readonly store: CatalogStore;
  readonly days: ReadonlyArray<ExportDay | undefined>;
}>;

// 400 RANGE_TOO_LONG above EXPORT_MAX_VALUES store-days.
export const checkExportSize = (stores: number, days: number) => {
  const values = stores * days;
  return values <= EXPORT_MAX_VALUES ? Effect.void : Effect.fail(
    badRequest(Messages.exportTooLarge(stores, days, values, EXPORT_MAX_VALUES)),
  );
};

export interface ExportRequest {
  readonly start: string;
  readonly end: string;
  readonly format: ExportFormat;
  // undefined: every store the key may see.
  readonly storeIds: ReadonlyArray<number> | undefined;
  // How days served from their sealed legacy value are written (layout.ts).
  readonly legacy: LegacyCells;
}

export interface ExportFile {
  readonly filename: string;
  readonly mediaType: string;
  readonly body: Stream.Stream<Uint8Array, ServiceUnavailable>;
}

const encoder = new TextEncoder();

const byName = (a: CatalogStore, b: CatalogStore) =>
  compareNames(a.brandName, b.brandName) || compareNames(a.storeName, b.storeName) ||
  a.scopeId - b.scopeId;

const brandsOf = (stores: ReadonlyArray<CatalogStore>) => [
  ...new Set(stores.map((s) => s.brandName)),
];

export class ExportService extends Effect.Service<ExportService>()("Exports/ExportService", {
  effect: Effect.gen(function* () {
    const catalogRepo = yield* CatalogRepo;
    const repo = yield* ExportRepo;
    const config = yield* AppConfig;

    const catalog = (storeIds: ReadonlyArray<number> | null) =>
      dbBoundary(catalogRepo.catalog(storeIds));

    // The stores asked for: the listed ones (404 for an unknown store, 403 for one outside the
    // key's stores, as for a single store), else every store the key may see.
    const selectStores = (caller: CallerShape, storeIds: ReadonlyArray<number> | undefined) =>
      Effect.gen(function* () {
        if (storeIds === undefined) return yield* catalog(caller.storeIds);
        const ids = [...new Set(storeIds)];
        const found = yield* catalog(ids);
        const known = new Set(found.map((s) => s.storeId));
        const unknown = ids.find((id) => !known.has(id));
        if (unknown !== undefined) return yield* notFound(Messages.storeMissing(unknown));
        const outside = ids.find((id) => !inScope(caller, id));
        if (outside !== undefined) {
          return yield* forbidden(Messages.storeOutside(outside));
        }
        return found;
      });

    // Worksheet names are made over every brand, as the resolver reads them back.
    const sheetNames = (selected: ReadonlyArray<CatalogStore>, whole: boolean) =>
      Effect.map(
        whole ? Effect.succeed(brandsOf(selected)) : catalogRepo.namingBrands,
        (brands) => new Map(sheetNamesFor(brands).map((m) => [m.brand, m.sheet])),
      );

    // The days of a page of stores, one array per store (undefined: no stored day), as they were
    // at `at`: a page whose stores a commit changed since then (or a reload of the snapshot) fails
    // with 503 BUSY, so that a file never mixes data before and after a commit.
    const readPage = (
      page: ReadonlyArray<CatalogStore>,
      start: string,
      end: string,
      length: number,
      at: DataPosition,
    ): Effect.Effect<Page, ServiceUnavailable> =>
      Effect.gen(function* () {
        const found = yield* repo.days(page.map((s) => s.scopeId), start, end);
        if (yield* repo.changedSince(page.map((s) => s.storeId), at)) {
          return yield* unavailable(Messages.exportDataChanged());
        }
        const byScope = new Map<number, Array<ExportDay | undefined>>(
          page.map((s) => [s.scopeId, Array.from({ length })]),
        );
        for (const day of found as ReadonlyArray<StoredDay>) {
          byScope.get(day.scopeId)![day.offset] = day;
        }
        return page.map((store) => ({ store, days: byScope.get(store.scopeId)! }));
      });

    // The long table: one line per store-day, in store and date order.
    const csvWriter = (days: ReadonlyArray<string>, legacy: LegacyCells) => {
      const perSlice = storesPer(EXPORT_SLICE_VALUES, days.length);
      return (): PageWriter<Page> => ({
        head: () => encoder.encode(CSV_BOM + csvLine(CSV_HEADER_FIELDS)),
        slices: (page) => Math.ceil(page.length / perSlice),
        slice: (page, index) => {
          let text = "";
          for (
            const { store, days: stored } of page.slice(index * perSlice, (index + 1) * perSlice)
          ) {
            days.forEach((date, i) => {
              text += csvRow(store.brandName, store.storeName, date, stored[i], legacy);
            });
          }
          return encoder.encode(text);
        },
        tail: () => new Uint8Array(0),
      });
    };

    // The wide table: one worksheet per brand, one row per store.
    const xlsxWriter = (
      stores: ReadonlyArray<CatalogStore>,
      sheetOf: ReadonlyMap<string, string>,
      days: ReadonlyArray<string>,
      legacy: LegacyCells,
    ) => {
      const brands = brandsOf(stores);
      const index = new Map(brands.map((brand, i) => [brand, i]));
      const sheets = brands.map((brand) => ({
        name: sheetOf.get(brand)!,
        stores: stores.filter((s) => s.brandName === brand).map((s) => s.storeName),
      }));
      const perSlice = storesPer(EXPORT_SLICE_VALUES, days.length);
      return (): PageWriter<Page> => {
        const workbook = new WorkbookWriter(sheets, days);
        return {
          head: () => workbook.start(),
          slices: (page) => Math.ceil(page.length / perSlice),
          slice: (page, i) =>
            workbook.rows(
              page.slice(i * perSlice, (i + 1) * perSlice).map(({ store, days: stored }) => ({
                sheet: index.get(store.brandName)!,
                store: store.storeName,
                cells: stored.map((day) => exportCell(day, legacy)),
              })),
            ),
          tail: () => workbook.finish(),
        };
      };
    };

    // A failure while the file is sent cuts the answer (paged_body.ts); the log says why, with the
    // request's id (the access log marks the answer as cut).
    const logCut = (requestId: string | undefined) => (cause: Cause.Cause<ServiceUnavailable>) =>
      Cause.isInterruptedOnly(cause) ? Effect.void : Effect.gen(function* () {
        const failure = Cause.failureOption(cause);
        if (Option.isSome(failure)) {
          yield* Effect.logWarning(
            `export cut short: ${failure.value.code}: ${failure.value.message}`,
          );
        } else yield* Effect.logError("export cut short", cause);
      }).pipe(Effect.annotateLogs({ request_id: requestId ?? "" }));

    const exportFile = (caller: CallerShape, request: ExportRequest) =>
      Effect.gen(function* () {
        // The time limit runs from the export's start to the body's last byte.
        const deadline = performance.now() + config.limits.exportMs;
        yield* requirePermission(caller, "read");
        const days = yield* catalogRepo.datasetDays(request.start, request.end);
        const selected = [...yield* selectStores(caller, request.storeIds)].sort(byName);
        if (selected.length === 0) return yield* notFound(Messages.noStoreToExport());
        yield* checkExportSize(selected.length, days.length);
        const { start, end, format, legacy } = request;
        const writer = format === "csv" ? csvWriter(days, legacy) : xlsxWriter(
          selected,
          yield* sheetNames(selected, caller.storeIds === null && request.storeIds === undefined),
          days,
          legacy,
        );
        const pages = Arr.chunksOf(selected, storesPer(EXPORT_PAGE_VALUES, days.length));
        // Every page from the database the first came from (the body is sent outside this fiber),
        // and as the data stood before the first was read.
        const sameDatabase = yield* keepTarget;
        const at = yield* repo.position;
        const read = (i: number) => sameDatabase(readPage(pages[i], start, end, days.length, at));
        const late = () => unavailable(Messages.exportTooLong(config.limits.exportMs));
        // The first page is read before the answer starts: a database that fails it, or a limit
        // already passed, is an error answer, not a 200 cut short.
        const first = yield* read(0);
        if (performance.now() > deadline) return yield* late();
        const note = yield* Effect.serviceOption(RequestNote);
        const body = pagedBody({ first, pageCount: pages.length, read, writer, deadline, late })
          .pipe(
            Stream.tapErrorCause(logCut(Option.getOrUndefined(note)?.requestId)),
          );
        return {
          filename: exportFilename(start, end, format),
          mediaType: format === "csv" ? CSV_MEDIA_TYPE : XLSX_MEDIA_TYPE,
          body,
        } satisfies ExportFile;
      }).pipe(span("ExportService.exportFile"));

    return { exportFile } as const;
  }),
  dependencies: [CatalogRepo.Default, ExportRepo.Default],
}) {}
