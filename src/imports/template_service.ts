// The import template for a chosen range (ImportService's template lays out the last days of the
// dataset): the same workbook (files/template.ts), with one column per day of the range.
import { Effect } from "effect";
import { requirePermission } from "../auth/access.ts";
import { dbBoundary } from "../db/errors.ts";
import type { CallerShape } from "../domain/auth.ts";
import { badRequest } from "../domain/errors.ts";
import { MAX_IMPORT_ROWS } from "../domain/imports.ts";
import { Messages } from "../domain/messages.ts";
import { CatalogRepo } from "../files/catalog_repo.ts";
import { buildTemplate, type TemplateSheet } from "../files/template.ts";
import { span } from "../ops/span.ts";

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
        const brands = new Map<string, Array<string>>();
        for (const s of stores) {
          const list = brands.get(s.brandName) ?? [];
          list.push(s.storeName);
          brands.set(s.brandName, list);
        }
        // Worksheet names are made over every brand, as the resolver reads them back.
        const naming = caller.storeIds === null
          ? [...brands.keys()]
          : [...new Set((yield* catalog(null)).map((s) => s.brandName))];
        const built = yield* Effect.promise(() =>
          buildTemplate({
            brands: [...brands].map(([name, names]) => ({ name, stores: names })),
            days,
            namingBrands: naming,
          })
        );
        return {
          filename: `energy-import-template-${start}-${end}.xlsx`,
          bytes: built.bytes,
          sheets: built.sheets,
        } satisfies TemplateFile;
      }).pipe(span("TemplateService.ranged"));

    return { ranged } as const;
  }),
  dependencies: [CatalogRepo.Default],
}) {}
