// The CSV reader's records: a file without quotes or lone carriage returns is split by the reader
// itself, a field at a time, any other file by csv-parse; both must give the records csv-parse
// gives (and, for text whose lines end in line feeds, its lines).
import assert from "node:assert/strict";
import { FastCheck as fc } from "effect";
// @ts-types="../src/imports/csv_parse_sync.d.ts"
import { parse } from "csv-parse/sync";
import { forEachRecord } from "../src/imports/csv_reader.ts";

const encoder = new TextEncoder();

const records = (text: string) => {
  const out: Array<[Array<string>, number]> = [];
  forEachRecord(encoder.encode(text), (record, lines) => out.push([record, lines]));
  return out;
};

const byCsvParse = (text: string, lineEnds?: Array<string>) => {
  const out: Array<[Array<string>, number]> = [];
  parse(text, {
    relax_column_count: true,
    ...(lineEnds === undefined ? {} : { record_delimiter: lineEnds }),
    on_record: (record: Array<string>, info: { lines: number }) => {
      out.push([record, info.lines]);
      return null;
    },
  });
  return out;
};

const quoteFree = fc.array(
  fc.constantFrom("a", "品牌", "12.5", ",", "\n", " ", "\t", "'=1", "\u2028", "", "备注"),
  { maxLength: 40 },
).map((parts) => parts.join(""));

Deno.test("quote-free text reads as csv-parse reads it: records, fields and lines", () => {
  fc.assert(
    fc.property(quoteFree, (text) => {
      assert.deepEqual(records(text), byCsvParse(text));
    }),
    { numRuns: 2_000 },
  );
});

// As a spreadsheet on Windows writes it: each line ends in CRLF, which is one line end, not a
// carriage return kept at the end of the line's last field.
Deno.test("text with CRLF line ends reads as csv-parse reads it: records and fields", () => {
  const lines = fc.array(quoteFree.map((text) => text.replaceAll("\n", "\r\n")), {
    maxLength: 4,
  }).map((parts) => parts.join("\r\n"));
  fc.assert(
    fc.property(lines, (text) => {
      assert.deepEqual(
        records(text).map(([record]) => record),
        byCsvParse(text, ["\r\n", "\n", "\r"]).map(([record]) => record),
      );
    }),
    { numRuns: 1_000 },
  );
  assert.deepEqual(records("品牌,门店\r\n1,2\r\n").map(([record]) => record), [
    ["品牌", "门店"],
    ["1", "2"],
  ]);
});

Deno.test("the edges: empty text, empty lines, a final line feed, a lone carriage return", () => {
  for (
    const text of ["", "\n", "a", "a\n", "a\n\n", "\n\na", "a,\n,b\n", "x\r", "a\rb", '"a,b"\nc']
  ) {
    assert.deepEqual(records(text), byCsvParse(text), JSON.stringify(text));
  }
  assert.deepEqual(records("品牌,门店\n\n1,2"), [[["品牌", "门店"], 1], [[""], 2], [
    ["1", "2"],
    3,
  ]]);
});
