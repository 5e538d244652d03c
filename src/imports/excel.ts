// exceljs, loaded on the first workbook read or written: a process that only serves reads never
// pays for it (importing it adds ~40 MiB to a process).
import type ExcelJS from "exceljs";

let module: Promise<typeof ExcelJS> | undefined;

export const loadExcel = (): Promise<typeof ExcelJS> =>
  module ??= import("exceljs").then((m) => m.default);
