// The ZIP and workbook XML checks' problems in both languages: each crafted archive or XML gives
// its problem with the English wording unchanged and a Chinese form free of English prose, and an
// unreadable .xlsx upload is refused with a Chinese problem.
import assert from "node:assert/strict";
import { Effect, Either } from "effect";
import type { Text } from "../src/domain/language.ts";
import { Problems } from "../src/imports/problem_texts.ts";
import { readImportFile } from "../src/imports/readers.ts";
import { WorkbookScan, XLSX_LIMITS, type XlsxLimits } from "../src/imports/xlsx_scan.ts";
import { readZip, type ZipLimits } from "../src/imports/zip.ts";
import {
  buildZip,
  concat,
  handXlsx,
  sheetXml,
  smallSheetRows,
  utf8,
} from "./import_zip_fixtures.ts";

const CJK = /[\u4e00-\u9fff]/;

// Words a Chinese text may hold: technical names, not English prose.
const IDENTIFIERS = new Set(["Excel"]);

// The English words (3+ letters, not all capitals) left once quoted names, XML element names and
// the identifiers above are taken out.
const englishWords = (text: string) =>
  (text.replace(/"(?:[^"\\]|\\.)*"/g, " ").replace(/<[^>]*>/g, " ").match(/[A-Za-z]{3,}/g) ?? [])
    .filter((w) => w !== w.toUpperCase() && !IDENTIFIERS.has(w));

const assertBoth = (problem: Text | undefined, en: string | RegExp) => {
  assert.ok(problem !== undefined, `expected a problem like ${en}`);
  if (typeof en === "string") assert.equal(problem.en, en);
  else assert.match(problem.en, en);
  assert.ok(CJK.test(problem.zh), `no Chinese in ${JSON.stringify(problem.zh)}`);
  const words = englishWords(problem.zh);
  assert.deepEqual(words, [], `English words ${words} in ${JSON.stringify(problem.zh)}`);
};

Deno.test("the English word check finds English prose, not names or codes", () => {
  assert.deepEqual(englishWords('ZIP 条目 "a.xml" is damaged（CRC）<hyperlink> Excel'), [
    "damaged",
  ]);
});

Deno.test("a library's own message is kept as it is in both forms", () => {
  const problem = Problems.notReadable("Corrupted zip: can't find end of central directory");
  assert.equal(
    problem.en,
    "not a readable XLSX workbook: Corrupted zip: can't find end of central directory",
  );
  assert.equal(
    problem.zh,
    "不是可读取的 XLSX 工作簿：Corrupted zip: can't find end of central directory",
  );
});

// --- the ZIP check --------------------------------------------------------------------------------

const LIMITS: ZipLimits = { maxEntries: 5, maxUnpackedBytes: 1 << 16 };
const zip = (bytes: Uint8Array, limits = LIMITS) => readZip(bytes, limits, () => undefined);

const A = { name: "a.xml", data: utf8("<a>" + "x".repeat(100) + "</a>") };
const B = { name: "b.xml", data: utf8("<b/>") };
const valid = buildZip([A, B]);

// The archive with the EOCD field at `offset` (from the EOCD's start) set to `value`.
const withEocd = (bytes: Uint8Array, offset: number, value: number, size: 2 | 4) => {
  const copy = Uint8Array.from(bytes);
  const view = new DataView(copy.buffer);
  const at = copy.length - 22 + offset;
  if (size === 2) view.setUint16(at, value, true);
  else view.setUint32(at, value, true);
  return copy;
};

// The archive with bytes that are no directory header between its directory and its EOCD, which
// still declares where the directory is.
const junkInDirectory = (bytes: Uint8Array) => {
  const eocd = bytes.length - 22;
  const out = concat([bytes.subarray(0, eocd), utf8("junk"), bytes.subarray(eocd)]);
  const view = new DataView(out.buffer);
  view.setUint32(out.length - 22 + 12, view.getUint32(out.length - 22 + 12, true) + 4, true);
  return out;
};

// B's local header and data stored inside A's data, and B's directory header pointing there.
const overlapping = () => {
  const alone = buildZip([B]);
  const local = alone.subarray(0, new DataView(alone.buffer).getUint32(alone.length - 6, true));
  return buildZip([{ name: "a.xml", data: local, method: 0 }, B], {
    offsets: [undefined, 30 + "a.xml".length],
  });
};

Deno.test("a valid archive gives no problem", () => {
  assert.equal(zip(valid), undefined);
});

const ZIP_CASES: ReadonlyArray<readonly [string, () => Uint8Array, string | RegExp]> = [
  [
    "truncated",
    () => valid.subarray(0, valid.length - 10),
    "the ZIP directory is missing (the file is damaged or truncated)",
  ],
  [
    "a ZIP64 marker",
    () => withEocd(valid, 10, 0xffff, 2),
    "ZIP64 archives are not supported",
  ],
  [
    "a ZIP64 size in the directory",
    () => buildZip([{ ...A, size: 0xffffffff }]),
    "ZIP64 archives are not supported",
  ],
  ["multi-part", () => buildZip([A], { disk: 1 }), "multi-part ZIP archives are not supported"],
  [
    "bytes after the archive",
    () => buildZip([A], { trailing: utf8("tail") }),
    "the file has bytes after the end of the ZIP archive",
  ],
  [
    "a misplaced directory",
    () => buildZip([A], { directoryOffset: 1 }),
    "the ZIP directory is not where the archive declares it",
  ],
  ["no files", () => buildZip([]), "the ZIP archive holds no files"],
  [
    "too many entries",
    () => buildZip(Array.from({ length: 6 }, (_, i) => ({ name: `${i}.xml`, data: utf8("<a/>") }))),
    "the ZIP archive holds 6 files; at most 5 are read",
  ],
  [
    "more directory headers than declared",
    () => buildZip([A, B], { count: 1 }),
    "the ZIP directory holds more entries than the archive declares",
  ],
  [
    "fewer directory headers than declared",
    () => buildZip([A], { count: 2 }),
    "the ZIP directory holds 1 entries, the archive declares 2",
  ],
  ["a damaged directory", () => junkInDirectory(buildZip([A])), "the ZIP directory is damaged"],
  [
    "an encrypted entry",
    () => buildZip([{ ...A, flags: 0x0001 }]),
    "encrypted files are not supported: save the workbook without a password",
  ],
  [
    "an unsupported flag",
    () => buildZip([{ ...A, flags: 0x0020 }]),
    'the ZIP entry "a.xml" uses an unsupported feature',
  ],
  [
    "an unsupported method",
    () => buildZip([{ ...A, method: 12 }]),
    'the ZIP entry "a.xml" uses an unsupported compression method',
  ],
  [
    "stored sizes that disagree",
    () => buildZip([{ ...A, method: 0, compressedSize: 5 }]),
    'the sizes of the ZIP entry "a.xml" disagree',
  ],
  [
    "too large once unpacked",
    () => buildZip([{ ...A, size: 1 << 20 }]),
    "it is too large once unpacked (more than 65536 bytes)",
  ],
  [
    "a duplicate entry",
    () => buildZip([A, { ...A, data: utf8("<c/>") }]),
    'the ZIP entry "a.xml" appears twice',
  ],
  [
    "a local header out of place",
    () => buildZip([A], { offsets: [3] }),
    'the ZIP entry "a.xml" is damaged',
  ],
  [
    "a local header that disagrees",
    () => buildZip([{ ...A, local: { name: "z.xml" } }]),
    'the local header of the ZIP entry "a.xml" disagrees with the ZIP directory',
  ],
  [
    "a data descriptor that disagrees",
    () => buildZip([{ ...A, flags: 0x0008, descriptor: { crc: 1 } }]),
    'the data descriptor of the ZIP entry "a.xml" does not match the ZIP directory',
  ],
  [
    "bytes before the first entry",
    () => buildZip([A], { prefix: utf8("junk") }),
    "the file has bytes before the first ZIP entry",
  ],
  [
    "bytes between entries",
    () =>
      buildZip([{
        ...A,
        method: 0,
        body: concat([A.data, utf8("xx")]),
        compressedSize: A.data.length,
      }, B]),
    "the file has bytes between ZIP entries",
  ],
  [
    "bytes between the entries and the directory",
    () => buildZip([A], { gap: utf8("gap") }),
    "the file has bytes between the ZIP entries and the directory",
  ],
  [
    "a CRC mismatch",
    () => buildZip([{ ...A, crc: 12345 }]),
    'the ZIP entry "a.xml" is damaged (CRC mismatch)',
  ],
  [
    "an entry smaller than declared",
    () => buildZip([{ ...A, size: A.data.length + 10 }]),
    'the ZIP entry "a.xml" is smaller than it declares',
  ],
  [
    "an entry larger than declared",
    () => buildZip([{ ...A, size: 10 }]),
    'the ZIP entry "a.xml" is damaged or larger than it declares',
  ],
  ["entries that overlap", () => overlapping(), "ZIP entries overlap"],
];

for (const [what, bytes, en] of ZIP_CASES) {
  Deno.test(`ZIP: ${what} gives its problem in English and Chinese`, () => {
    assertBoth(zip(bytes()), en);
  });
}

Deno.test("ZIP: the cases above give distinct problems", () => {
  const distinct = new Set(ZIP_CASES.map(([, bytes]) => zip(bytes())?.en));
  assert.ok(distinct.size >= 20, `${distinct.size} distinct problems`);
});

Deno.test("ZIP: a visitor's problem is returned as it is", () => {
  const mine: Text = { en: "mine", zh: "我的" };
  assert.equal(readZip(valid, LIMITS, (f) => f.name === "b.xml" ? mine : undefined), mine);
});

// --- the workbook XML check -----------------------------------------------------------------------

const SHEET = "xl/worksheets/sheet1.xml";
const scan = (xml: string, limits: Partial<XlsxLimits> = {}, name = SHEET) =>
  new WorkbookScan({ ...XLSX_LIMITS, ...limits }).check(name, utf8(xml));

const sheet = (inner: string) => `<worksheet xmlns="x">${inner}</worksheet>`;

const XML_CASES: ReadonlyArray<
  readonly [string, string, Partial<XlsxLimits>, string | RegExp, string?]
> = [
  [
    "a document type",
    '<!DOCTYPE x [<!ENTITY a "b">]><worksheet/>',
    {},
    `"${SHEET}" declares a document type, which a workbook never does`,
  ],
  [
    "too many attributes",
    sheet('<a p="1" q="2" s="3"/>'),
    { maxAttributes: 2 },
    "the workbook's XML has more than 2 attributes",
  ],
  [
    "too many elements",
    sheet("<a/><b/><c/>"),
    { maxElements: 2 },
    "the workbook's XML has more than 2 elements",
  ],
  [
    "nested too deep",
    sheet("<a><b><c></c></b></a>"),
    { maxDepth: 2 },
    `the XML of "${SHEET}" is nested more than 2 levels deep`,
  ],
  [
    "a cell beyond the last row",
    sheet('<sheetData><row><c r="A20001"/></row></sheetData>'),
    {},
    `the cell "A20001" in "${SHEET}" reaches row 20001; a file may use rows 1 to 20000`,
  ],
  [
    "a cell beyond the last column",
    sheet('<sheetData><row><c r="AMK1"/></row></sheetData>'),
    {},
    `the cell "AMK1" in "${SHEET}" reaches column 1025; a file may use columns 1 to 1024`,
  ],
  [
    "a cell without a reference beyond the last column",
    sheet('<sheetData><row r="1"><c r="B1"/><c/><c/></row></sheetData>'),
    { maxColumn: 3 },
    `a cell in "${SHEET}" reaches column 4; a file may use columns 1 to 3`,
  ],
  [
    "a row outside the rows",
    sheet('<sheetData><row r="0"/></sheetData>'),
    {},
    `row "0" in "${SHEET}" is outside rows 1 to 20000`,
  ],
  [
    "a column definition beyond Excel's",
    sheet('<cols><col min="1" max="16385"/></cols>'),
    {},
    `a column definition in "${SHEET}" reaches column 16385; Excel has 16384`,
  ],
  [
    "too many merged ranges",
    sheet('<mergeCells><mergeCell ref="A1:B1"/><mergeCell ref="A2:B2"/></mergeCells>'),
    { maxMerges: 1 },
    "the workbook has more than 1 merged ranges",
  ],
  [
    "a merged range beyond the last row",
    sheet('<mergeCells><mergeCell ref="A1:A30000"/></mergeCells>'),
    {},
    `the merged range "A1:A30000" in "${SHEET}" reaches row 30000; a file may use rows 1 to 20000`,
  ],
  [
    "a data validation beyond the last column",
    sheet('<dataValidations><dataValidation sqref="A1:AMZ2"/></dataValidations>'),
    {},
    `the data validation "A1:AMZ2" in "${SHEET}" reaches column 1040; a file may use columns 1 to 1024`,
  ],
  [
    "a reference of another element beyond the last row",
    sheet('<hyperlinks><hyperlink ref="A99999"/></hyperlinks>'),
    {},
    `the reference of <hyperlink> "A99999" in "${SHEET}" reaches row 99999; a file may use rows 1 to 20000`,
  ],
  [
    "a defined name beyond the last row",
    '<workbook><definedNames><definedName name="n">S!$A$1:$A$50000</definedName></definedNames></workbook>',
    {},
    `the defined name "S!$A$1:$A$50000" in "xl/workbook.xml" reaches row 50000; a file may use rows 1 to 20000`,
    "xl/workbook.xml",
  ],
  [
    "data validations over too many cells",
    sheet('<dataValidations><dataValidation sqref="A1:J100"/></dataValidations>'),
    { maxExpandedCells: 999 },
    `data validations and defined names in "${SHEET}" cover more than 999 cells: limit them to the cells in use`,
  ],
  [
    "too many cells",
    sheet('<sheetData><row r="1"><c r="A1"/><c r="B1"/><c r="C1"/></row></sheetData>'),
    { maxCells: 2 },
    "the workbook has more than 2 cells (a file holds at most 10,000 values)",
  ],
  [
    "too many shared strings",
    "<sst><si><t>a</t></si><si><t>b</t></si></sst>",
    { maxSharedStrings: 1 },
    "the workbook has more than 1 shared strings",
    "xl/sharedStrings.xml",
  ],
  [
    "too many worksheets",
    '<workbook><sheets><sheet name="a"/><sheet name="b"/></sheets></workbook>',
    { maxSheets: 1 },
    "the workbook has more than 1 worksheets",
    "xl/workbook.xml",
  ],
];

for (const [what, xml, limits, en, name] of XML_CASES) {
  Deno.test(`workbook XML: ${what} gives its problem in English and Chinese`, () => {
    assertBoth(scan(xml, limits, name), en);
  });
}

// --- through the import readers -------------------------------------------------------------------

const rejected = async (bytes: Uint8Array) => {
  const result = await Effect.runPromise(
    Effect.either(readImportFile("upload.xlsx", bytes, { datasetEnd: "2026-08-31" })),
  );
  if (Either.isRight(result)) assert.fail("expected the file to be refused");
  return result.left.problems;
};

Deno.test("an upload that is not a readable workbook: its problem is Chinese in zh", async () => {
  const good = handXlsx([{ name: "A", xml: sheetXml(smallSheetRows()) }]);
  const cases: ReadonlyArray<readonly [Uint8Array, RegExp]> = [
    [good.subarray(0, good.length - 30), /the ZIP directory is missing/],
    [
      buildZip([{ name: "xl/workbook.xml", data: utf8("<workbook/>"), flags: 0x0001 }]),
      /encrypted files are not supported/,
    ],
    [
      handXlsx([{ name: "A", xml: sheetXml('<row r="0"/>') }]),
      /row "0" in "xl\/worksheets\/sheet1\.xml" is outside rows/,
    ],
  ];
  for (const [bytes, en] of cases) {
    const problems = await rejected(bytes);
    assert.equal(problems.length, 1);
    const { message } = problems[0];
    assert.match(message.en, /^not a readable XLSX workbook: /);
    assert.match(message.en, en);
    assert.match(message.zh, /^不是可读取的 XLSX 工作簿：/);
    assertBoth(message, message.en);
  }
});
