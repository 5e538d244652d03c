// The import template (files/template.ts): the workbook of the caller's stores, one column per day,
// over the last days of the dataset or over a chosen range of its days.
import { Effect } from "effect";
import { requirePermission } from "../auth/access.ts";
import { dbBoundary } from "../db/errors.ts";
import type { CallerShape } from "../domain/auth.ts";
import { badRequest } from "../domain/errors.ts";
import { MAX_IMPORT_ROWS } from "../domain/imports.ts";
import { Messages } from "../domain/messages.ts";
import { addDays } from "../domain/range.ts";
import { CatalogRepo, type CatalogStore } from "../files/catalog_repo.ts";
import { buildTemplate, type TemplateSheet } from "../files/template.ts";
import { span } from "../ops/span.ts";

// The template of the last days has at most 31 day columns, fewer when stores x days would exceed
// the row limit.
export const TEMPLATE_MAX_DAYS = 31;

export interface TemplateFile {
  readonly filename: string;
  readonly bytes: Uint8Array;
  readonly sheets: ReadonlyArray<TemplateSheet>;
}

export class TemplateService extends Effect.Service<TemplateService>()("Imports/TemplateService", {
  effect: Effect.gen(function* () {
    const catalogRepo = yield* CatalogRepo;

    const catalog = (storeIds: ReadonlyArray<number> | null) =>
      dbBoundary(catalogRepo.catalog(storeIds));

    const workbook = (
      caller: CallerShape,
      stores: ReadonlyArray<CatalogStore>,
      days: Array<string>,
    ) =>
      Effect.gen(function* () {
        const brands = new Map<string, Array<string>>();
        for (const s of stores) {
          const list = brands.get(s.brandName) ?? [];
          list.push(s.storeName);
          brands.set(s.brandName, list);
        }
        const naming = caller.storeIds === null
          ? [...brands.keys()]
          : yield* catalogRepo.namingBrands;
        const built = yield* Effect.promise(() =>
          buildTemplate({
            brands: [...brands].map(([name, names]) => ({ name, stores: names })),
            days,
            namingBrands: naming,
          })
        );
        return {
          filename: `energy-import-template-${days[0]}-${days[days.length - 1]}.xlsx`,
          bytes: built.bytes,
          sheets: built.sheets,
        } satisfies TemplateFile;
      });

    // The last days of the dataset, as many as the caller's stores fill without exceeding a file's
    // rows.
    const latest = (caller: CallerShape) =>
      Effect.gen(function* () {
        yield* requirePermission(caller, "write");
        const { end } = yield* catalogRepo.dataset;
        const stores = yield* catalog(caller.storeIds);
        const dayCount = Math.max(
          1,
          Math.min(TEMPLATE_MAX_DAYS, Math.floor(MAX_IMPORT_ROWS / Math.max(1, stores.length))),
        );
        const days = Array.from({ length: dayCount }, (_, i) => addDays(end, i - dayCount + 1));
        return yield* workbook(caller, stores, days);
      }).pipe(span("TemplateService.latest"));

    const ranged = (caller: CallerShape, start: string, end: string) =>
      Effect.gen(function* () {
        yield* requirePermission(caller, "write");
        const days = yield* catalogRepo.datasetDays(start, end);
        const stores = yield* catalog(caller.storeIds);
        // A template its own preview would refuse (one value a cell, blank or not) is not made.
        const values = stores.length * days.length;
        if (values > MAX_IMPORT_ROWS) {
          return yield* badRequest(
            Messages.templateTooLarge(stores.length, days.length, values, MAX_IMPORT_ROWS),
          );
        }
        return yield* workbook(caller, stores, days);
      }).pipe(span("TemplateService.ranged"));

    return { latest, ranged } as const;
  }),
  dependencies: [CatalogRepo.Default],
}) {}
