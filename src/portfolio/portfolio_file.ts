// The portfolio as a file (CSV or XLSX): one row per store, then the roll-ups per brand, per city
// and for all, each with the figures of its JSON row (decimals as the exact strings the JSON
// gives). Column names are fixed, as every CSV/XLSX column name of the service is (docs/http.md,
// Language). Text from the catalog is protected against formula evaluation as the export's is: a
// CSV field by protectText, an XLSX cell by being an inline string.
import { Effect, Stream } from "effect";
import type {
  PortfolioBrand,
  PortfolioCity,
  PortfolioResponse,
  PortfolioStore,
  PortfolioTotal,
} from "../domain/portfolio.ts";
import { MetricSummary } from "../domain/metrics.ts";
import { protectText } from "../files/cell_text.ts";
import { CSV_BOM, CSV_MEDIA_TYPE, csvLine, XLSX_MEDIA_TYPE } from "../exports/layout.ts";
import { pagedBody, type PageWriter } from "../exports/paged_body.ts";
import { type TableCell, TableWriter } from "../exports/xlsx_stream.ts";

export type PortfolioFormat = "csv" | "xlsx";

type Summary = PortfolioStore["summary"];

// The summary's fields, in the JSON's order (the schema's).
const SUMMARY_FIELDS = Object.keys(MetricSummary.fields) as ReadonlyArray<keyof Summary>;

// `row` says what a row is: store, brand, city or all. The columns after `store_count` are the
// JSON row's `summary`, `provisional_days` and `data_quality.flagged_days`.
export const PORTFOLIO_COLUMNS: ReadonlyArray<string> = [
  "row",
  "store_id",
  "scope_id",
  "store_code",
  "store",
  "brand_id",
  "brand",
  "city",
  "store_count",
  ...SUMMARY_FIELDS,
  "provisional_days",
  "data_quality_flagged_days",
];

// Catalog text (store code, names, city): the cells protected in a CSV.
const FREE_TEXT = new Set([3, 4, 6, 7]);

const flag = (b: boolean | null): TableCell => b === null ? null : String(b);

const figures = (
  f: Pick<PortfolioTotal, "summary" | "provisional_days" | "data_quality">,
): Array<TableCell> => [
  ...SUMMARY_FIELDS.map((k): TableCell => {
    const v = f.summary[k];
    return typeof v === "boolean" || v === null ? flag(v) : v;
  }),
  f.provisional_days,
  f.data_quality.flagged_days,
];

// Every row of the file after the header, in order.
export const portfolioRows = (p: PortfolioResponse): Array<ReadonlyArray<TableCell>> => [
  ...p.stores.map((s) => [
    "store",
    s.store_id,
    s.scope_id,
    s.store_code,
    s.name,
    s.brand_id,
    s.brand_name,
    s.city,
    null,
    ...figures(s),
  ]),
  ...p.brands.map((b: PortfolioBrand) => [
    "brand",
    null,
    null,
    null,
    null,
    b.brand_id,
    b.brand_name,
    null,
    b.store_count,
    ...figures(b),
  ]),
  ...p.cities.map((c: PortfolioCity) => [
    "city",
    null,
    null,
    null,
    null,
    null,
    null,
    c.city,
    c.store_count,
    ...figures(c),
  ]),
  ["all", null, null, null, null, null, null, null, p.total.store_count, ...figures(p.total)],
];

export const csvRecord = (cells: ReadonlyArray<TableCell>): ReadonlyArray<string> =>
  cells.map((cell, i) =>
    cell === null
      ? ""
      : typeof cell === "number"
      ? String(cell)
      : FREE_TEXT.has(i)
      ? protectText(cell)
      : cell
  );

export interface PortfolioFile {
  readonly filename: string;
  readonly mediaType: string;
  readonly body: Stream.Stream<Uint8Array>;
}

// Rows written between two turns of the event loop (paged_body.ts lets it go between slices).
const SLICE_ROWS = 200;

const encoder = new TextEncoder();

type Rows = ReadonlyArray<ReadonlyArray<TableCell>>;

const csvWriter = (): PageWriter<Rows> => ({
  head: () => encoder.encode(CSV_BOM + csvLine(PORTFOLIO_COLUMNS)),
  slices: (rows) => Math.ceil(rows.length / SLICE_ROWS),
  slice: (rows, i) =>
    encoder.encode(
      rows.slice(i * SLICE_ROWS, (i + 1) * SLICE_ROWS).map((r) => csvLine(csvRecord(r))).join(""),
    ),
  tail: () => new Uint8Array(0),
});

const xlsxWriter = (): PageWriter<Rows> => {
  const table = new TableWriter("Portfolio", PORTFOLIO_COLUMNS);
  return {
    head: () => table.start(),
    slices: (rows) => Math.ceil(rows.length / SLICE_ROWS),
    slice: (rows, i) => table.rows(rows.slice(i * SLICE_ROWS, (i + 1) * SLICE_ROWS)),
    tail: () => table.finish(),
  };
};

// The range and the filters name the file: portfolio-2025-11-20-2026-11-20[-brand-3].csv. A city
// is not in the name (it may be any text; the header of a download holds ASCII only).
export const portfolioFilename = (p: PortfolioResponse, format: PortfolioFormat) =>
  `portfolio-${p.start}-${p.end}${p.brand_id === null ? "" : `-brand-${p.brand_id}`}.${format}`;

// The file, written a slice of rows at a time while it is sent.
export const portfolioFile = (p: PortfolioResponse, format: PortfolioFormat): PortfolioFile => ({
  filename: portfolioFilename(p, format),
  mediaType: format === "csv" ? CSV_MEDIA_TYPE : XLSX_MEDIA_TYPE,
  body: pagedBody<Rows, never>({
    first: portfolioRows(p),
    pageCount: 1,
    read: () => Effect.die(new Error("a portfolio file has one page")),
    writer: format === "csv" ? csvWriter : xlsxWriter,
    deadline: Number.POSITIVE_INFINITY,
    late: () => {
      throw new Error("a portfolio file has no deadline");
    },
  }),
});
