// The part of csv-parse/sync this project uses. csv-parse's own declarations reference
// types="node", which resolves here to the old @types/node that exceljs pulls in; loaded, it
// replaces Deno's node types for the whole program (node:assert/strict stops type-checking).
export declare class CsvError extends Error {
  readonly code: string;
  readonly lines?: number;
}

export declare function parse(
  input: string,
  options: {
    relax_column_count?: boolean;
    record_delimiter?: string | ReadonlyArray<string>;
    on_record?: (record: Array<string>, info: { lines: number }) => unknown;
  },
): unknown;
