// What imports and exports share of the file layout besides cells and worksheet names: the columns
// of the CSV long table (read by imports/csv_reader.ts, written by exports/layout.ts), the headers
// a file is downloaded with (the template and the exports) and a worksheet column's letters.

export const CSV_COLUMNS = ["品牌", "门店", "日期", "日能耗"] as const;
export const CSV_NOTE_COLUMN = "备注";

// The headers of a download (the names made here are ASCII without quotes): private to the
// caller's credential, never stored by a cache.
export const downloadHeaders = (filename: string) => ({
  "content-disposition": `attachment; filename="${filename}"`,
  "cache-control": "private, no-store",
});

// A worksheet column's letters: 1 is A, 27 is AA.
export const columnLetter = (col: number): string => {
  let s = "";
  for (let n = col; n > 0; n = Math.floor((n - 1) / 26)) {
    s = String.fromCharCode(65 + ((n - 1) % 26)) + s;
  }
  return s;
};
