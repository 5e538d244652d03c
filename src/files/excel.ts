// exceljs, loaded on the first template written: a process that only serves reads never pays for
// it. The import readers load it through imports/excel.ts; the runtime holds one copy of the module.
import type ExcelJS from "exceljs";

let module: Promise<typeof ExcelJS> | undefined;

export const loadExcel = (): Promise<typeof ExcelJS> =>
  module ??= import("exceljs").then((m) => m.default);
