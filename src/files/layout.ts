// The parts of the file layout that are neither cells nor worksheets: the columns of the CSV long
// table (read by imports/csv_reader.ts, written by exports/layout.ts) and the headers a file is
// downloaded with (the template and the exports).

export const CSV_COLUMNS = ["品牌", "门店", "日期", "日能耗"] as const;
export const CSV_NOTE_COLUMN = "备注";

// The headers of a download (the names made here are ASCII without quotes): private to the
// caller's credential, never stored by a cache.
export const downloadHeaders = (filename: string) => ({
  "content-disposition": `attachment; filename="${filename}"`,
  "cache-control": "private, no-store",
});
