// The import pipeline's shared vocabulary: what readers produce, what the resolver matches, what
// the planner decides. Readers: bytes -> FileRow[] with located problems. Resolver: FileRow[] ->
// ResolvedRow[] against current stores and the dataset's dates. Planner: (ResolvedRow[], current
// days) -> PlannedRow[] with the actions of rules.md §8. Committer: PlannedRow[] -> revisions.
import type { Text } from "../domain/language.ts";
import { Data } from "effect";
import type { ImportAction } from "../domain/imports.ts";
import type { CellValue } from "../files/cell_text.ts";
import type { CatalogStore } from "../files/catalog_repo.ts";

// One cell of energy as the file gives it, and a store as files name it: the file layout's
// (files/), which the pipeline's modules also find here.
export type { CatalogStore, CellValue };

// Where a value sits in the file, for messages and lineage.
export interface CellLocation {
  // XLSX: the worksheet's name as in the file; CSV: null.
  readonly sheet: string | null;
  // 1-based row of the worksheet or of the CSV file (the header is row 1).
  readonly row: number;
  // XLSX: the column letter ("C"); CSV: the header name ("日能耗").
  readonly column: string;
}

export interface FileRow {
  // 1-based position of the value among the file's values, in reading order (import_rows.row_number).
  readonly rowNumber: number;
  // XLSX: the worksheet name as in the file; CSV: the 品牌 cell, trimmed.
  readonly brand: string;
  // Trimmed store name.
  readonly storeName: string;
  // The resolved calendar date, YYYY-MM-DD.
  readonly date: string;
  // The date as the file wrote it (XLSX header text, CSV 日期 cell).
  readonly rawDate: string;
  // The energy cell's text as read, trimmed; null for a blank cell.
  readonly rawEnergy: string | null;
  readonly value: CellValue;
  // The 备注 cell (trimmed; "" when empty); undefined when the file has no note column.
  readonly note: string | undefined;
  readonly location: CellLocation;
}

// A row the reader could not take (its energy cell or its date is refused) whose brand, store and
// date the resolver still checks, so that one answer names every problem of the file. Never
// planned or stored. `rowNumber` orders it among the file's rows for messages only.
export interface CheckRow {
  readonly rowNumber: number;
  readonly brand: string;
  readonly storeName: string;
  // null: the date itself was refused.
  readonly date: string | null;
  readonly rawDate: string;
  readonly location: CellLocation;
}

export type NoteField = "ABSENT_WIDE_TABLE" | "ABSENT_NO_COLUMN";

export interface ReadFile {
  readonly format: "XLSX" | "CSV";
  // ABSENT_WIDE_TABLE for XLSX (it never has a note column), ABSENT_NO_COLUMN for a CSV without
  // 备注, null for a CSV with it.
  readonly noteField: NoteField | null;
  readonly rows: ReadonlyArray<FileRow>;
  // Worksheets in workbook order (XLSX); empty for CSV.
  readonly sheets: ReadonlyArray<string>;
}

// One problem of a file, located as precisely as the file allows.
export interface FileProblem {
  readonly sheet: string | null;
  readonly row: number | null;
  readonly column: string | null;
  readonly date: string | null;
  readonly raw: string | null;
  // What is wrong, in each language (problem_texts.ts).
  readonly message: Text;
}

// The whole file is refused: nothing is stored. Besides its problems it carries what could be read
// (rows and check rows, worksheets in workbook order) for the resolver to find the rest.
export class FileRejected extends Data.TaggedError("FileRejected")<{
  readonly problems: ReadonlyArray<FileProblem>;
  readonly rows?: ReadonlyArray<FileRow>;
  readonly checks?: ReadonlyArray<CheckRow>;
  readonly sheets?: ReadonlyArray<string>;
}> {}

// What a reader needs to know about the dataset.
export interface ReadContext {
  // A month-day header (7月9日) means the most recent such date on or before this date.
  readonly datasetEnd: string;
}

export interface ResolveContext {
  // The stores the caller may see: no other store or brand is matched.
  readonly stores: ReadonlyArray<CatalogStore>;
  // Every brand's name, as the template names worksheets (sheetNamesFor depends on the whole set);
  // absent: the brands of `stores`.
  readonly namingBrands?: ReadonlyArray<string>;
  readonly datasetStart: string;
  readonly datasetEnd: string;
  // Today's date in the dataset's time zone: later dates are refused.
  readonly today: string;
}

export interface ResolvedRow extends FileRow {
  readonly storeId: number;
  readonly scopeId: number;
}

// The current fact of a store-day, as the planner sees it (absent: no row at all).
export interface CurrentDay {
  readonly energyId: number;
  readonly legacyKwh: string | null;
  readonly cleanedKwh: string | null;
  // The value the day serves now (energy_days.served_kwh): null when void or empty.
  readonly servedKwh: string | null;
  readonly isVoid: boolean;
  readonly revisionNo: number;
  readonly qualityStatus: string | null;
  readonly qualityNote: string | null;
}

export interface PlannedRow {
  readonly row: ResolvedRow;
  readonly action: ImportAction;
  // The day before the commit: its effective value (cleaned, else legacy; null when void or none).
  readonly beforeKwh: string | null;
  // null when there is no row for the day.
  readonly beforeIsVoid: boolean | null;
  // The revision the plan was made against; null when there is no row. Commit refuses (409) when
  // the day's revision is no longer this one.
  readonly beforeRevisionNo: number | null;
  readonly energyId: number | null;
  // The value the commit writes (NUMBER cells), else null.
  readonly proposedKwh: string | null;
  readonly proposedVoid: boolean;
  // The quality status and note the day has after the commit (for rows without effect: as now).
  readonly qualityStatus: string;
  readonly qualityNote: string | null;
  readonly noteField: NoteField | null;
}
