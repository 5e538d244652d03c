// The CSV reader's records: text without quotes or carriage returns is split by the reader itself,
// any other text by csv-parse; both must give the records and lines csv-parse gives.
import assert from "node:assert/strict";
import { FastCheck as fc } from "effect";
// @ts-types="../src/imports/csv_parse_sync.d.ts"
import { parse } from "csv-parse/sync";
import { forEachRecord } from "../src/imports/csv_reader.ts";

const records = (text: string) => {
  const out: Array<[Array<string>, number]> = [];
  forEachRecord(text, (record, lines) => out.push([record, lines]));
  return out;
};

const byCsvParse = (text: string) => {
  const out: Array<[Array<string>, number]> = [];
  parse(text, {
    relax_column_count: true,
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
