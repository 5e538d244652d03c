// The workbook reader that reads plain workbooks from their XML gives what exceljs gives: the same
// rows and the same problems, over generated workbooks and hand-written XML of what spreadsheet
// programs write; workbooks with anything else are left to exceljs.
import assert from "node:assert/strict";
import ExcelJS from "exceljs";
import { Effect, FastCheck as fc } from "effect";
import { readPlainWorkbook } from "../src/imports/xlsx_direct.ts";
import { readXlsx, readXlsxWithExcel } from "../src/imports/xlsx_reader.ts";
import { buildZip, sheetXml, unzipped, utf8, workbookEntries } from "./import_zip_fixtures.ts";

const CTX = { datasetEnd: "2026-08-31" };

// Both readings, a refusal as its problems: the error objects themselves differ in their stacks.
const both = (bytes: Uint8Array) =>
  Promise.all([readXlsx(bytes, CTX), readXlsxWithExcel(bytes, CTX)].map((read) =>
    Effect.runPromise(
      Effect.either(Effect.mapError(read, (rejected) => ({ problems: rejected.problems }))),
    )
  ));

const isPlain = (bytes: Uint8Array) => readPlainWorkbook(unzipped(bytes)) !== undefined;

// Asserts both readings agree and which one read the workbook.
const agree = async (bytes: Uint8Array, plain: boolean) => {
  assert.equal(isPlain(bytes), plain, plain ? "read from its XML" : "left to exceljs");
  const [direct, excel] = await both(bytes);
  assert.deepStrictEqual(direct, excel);
  return direct;
};

const texts = fc.constantFrom(
  "店1",
  " 店 2 ",
  "A&B <店>",
  "quote \" and ' apostrophe",
  "line\nbreak",
  "tab\there",
  "_x000D_ escaped",
  "12.5",
  "VOID",
  "",
  "2026-07-09",
  "7月9日",
  "  ",
  "🙂 wide",
);

type Value = string | number | Date | null;

const values: fc.Arbitrary<Value> = fc.oneof(
  texts,
  fc.double({ noNaN: true, min: -1e6, max: 1e9 }),
  fc.integer({ min: 0, max: 100_000 }),
  fc.constant(null),
  fc.date({ min: new Date("1990-01-01T00:00:00Z"), max: new Date("2030-12-31T00:00:00Z") }),
);

const headers = fc.oneof(
  fc.constantFrom("2026-07-09", "2026-07-10", "7月9日", "8月1日", "not a date", ""),
  fc.date({ min: new Date("2026-06-01T00:00:00Z"), max: new Date("2026-08-31T00:00:00Z") }),
);

const sheetSpecs = fc.array(
  fc.record({
    name: fc.constantFrom("品牌A", "Brand & Co", "品牌<B>", "x", "Sheet 2", "品牌C"),
    a1: fc.constantFrom("门店名称", "门店名称", "门店名称", "店名"),
    headers: fc.array(headers, { minLength: 0, maxLength: 4 }),
    rows: fc.array(fc.array(values, { minLength: 1, maxLength: 5 }), { maxLength: 6 }),
    // A number format on the value columns: none, a number's, a date's (custom or built in).
    format: fc.constantFrom(undefined, "0.0000", "yyyy-mm-dd", "mm-dd-yy", '0"天"'),
    blankRows: fc.boolean(),
  }),
  { minLength: 1, maxLength: 3 },
);

const workbookOf = async (sheets: ReadonlyArray<SheetSpec>) => {
  const workbook = new ExcelJS.Workbook();
  const names = new Set<string>();
  for (const spec of sheets) {
    if (names.has(spec.name.toLowerCase())) continue;
    names.add(spec.name.toLowerCase());
    const ws = workbook.addWorksheet(spec.name);
    ws.getCell(1, 1).value = spec.a1;
    spec.headers.forEach((h, i) => ws.getCell(1, i + 2).value = h);
    spec.rows.forEach((cells, r) => {
      const rn = r + 2 + (spec.blankRows ? r : 0);
      cells.forEach((v, c) => {
        const cell = ws.getCell(rn, c + 1);
        cell.value = v;
        if (spec.format !== undefined && c > 0) cell.numFmt = spec.format;
      });
    });
  }
  return new Uint8Array(await workbook.xlsx.writeBuffer());
};

type SheetSpec = {
  name: string;
  a1: string;
  headers: Array<string | Date>;
  rows: Array<Array<Value>>;
  format: string | undefined;
  blankRows: boolean;
};

Deno.test("plain XLSX: workbooks written by exceljs read as exceljs reads them", async () => {
  await fc.assert(
    fc.asyncProperty(sheetSpecs, async (sheets) => {
      await agree(await workbookOf(sheets), true);
    }),
    { numRuns: 60 },
  );
});

Deno.test("XLSX: a number format with a literal date letter (0.00 kWh) is a number's, in both readers", async () => {
  const bytes = await workbookOf([{
    name: "品牌A",
    a1: "门店名称",
    headers: ["2026-08-10"],
    rows: [["店1", 12.5]],
    format: "0.00\\ \\k\\W\\h",
    blankRows: false,
  }]);
  const read = await agree(bytes, true);
  assert.equal(read._tag, "Right");
  if (read._tag === "Right") assert.deepEqual(read.right.rows.map((r) => r.rawEnergy), ["12.5"]);
});

Deno.test("plain XLSX: a filled template of many values is read from its XML", async () => {
  const days = Array.from({ length: 10 }, (_, i) => `2026-08-${String(i + 10).padStart(2, "0")}`);
  const rows: Array<Array<Value>> = Array.from(
    { length: 50 },
    (_, r) => [`店${r}`, ...days.map((_, d) => (r * 10 + d) / 8)],
  );
  const bytes = await workbookOf([{
    name: "品牌A",
    a1: "门店名称",
    headers: days,
    rows,
    format: undefined,
    blankRows: false,
  }]);
  const read = await agree(bytes, true);
  assert.equal(read._tag, "Right");
  if (read._tag === "Right") assert.equal(read.right.rows.length, 500);
});

// What Excel writes that exceljs never does: phonetic runs and properties in shared strings,
// prefixed attributes and extension elements, styles with built-in date formats, numbers as text.
const EXCEL_STRINGS = `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<sst xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" count="5" uniqueCount="5">
<si><t>门店名称</t><phoneticPr fontId="1" type="noConversion"/></si>
<si><t xml:space="preserve"> 店&amp;1 </t><rPh sb="0" eb="1"><t>ミセ</t></rPh><phoneticPr fontId="1"/></si>
<si><t>2026-07-09</t></si>
<si><t>line_x000A_break</t></si>
<si><t/></si>
</sst>`;

const EXCEL_STYLES = `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<styleSheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" xmlns:mc="http://schemas.openxmlformats.org/markup-compatibility/2006">
<numFmts count="2"><numFmt numFmtId="176" formatCode="0.0000"/><numFmt numFmtId="177" formatCode="yyyy&quot;年&quot;m&quot;月&quot;d&quot;日&quot;"/></numFmts>
<fonts count="1"><font><sz val="11"/><name val="等线"/></font></fonts>
<cellStyleXfs count="1"><xf numFmtId="14" fontId="0"/></cellStyleXfs>
<cellXfs count="5"><xf numFmtId="0" fontId="0" xfId="0"/><xf numFmtId="14" fontId="0" xfId="0" applyNumberFormat="1"/><xf numFmtId="176" fontId="0" xfId="0" applyNumberFormat="1"><alignment horizontal="center"/></xf><xf numFmtId="177" fontId="0" xfId="0"/><xf numFmtId="31" fontId="0" xfId="0"/></cellXfs>
<dxfs count="1"><dxf><numFmt numFmtId="178" formatCode="yyyy-mm-dd"/></dxf></dxfs>
</styleSheet>`;

const excelLike = (
  rows: string,
  options: { after?: string; strings?: string; styles?: string } = {},
) => {
  const entries = workbookEntries([{
    name: "品牌A",
    xml: sheetXml(rows, options.after ?? "").replace(
      "<worksheet ",
      '<worksheet xmlns:x14ac="http://schemas.microsoft.com/office/spreadsheetml/2009/9/ac" ',
    ),
  }], { sharedStrings: options.strings ?? EXCEL_STRINGS });
  entries.push({ name: "xl/styles.xml", data: utf8(options.styles ?? EXCEL_STYLES) });
  return buildZip(entries);
};

const EXCEL_ROWS = `<row r="1" spans="1:3" x14ac:dyDescent="0.25"><c r="A1" t="s"><v>0</v></c>` +
  `<c r="B1" t="s"><v>2</v></c><c r="C1" s="1"><v>46213</v></c><c r="D1" s="3"><v>46214</v></c>` +
  `<c r="E1" s="4"><v>46215</v></c></row>
  <row r="2" spans="1:3"><c r="A2" t="s"><v>1</v></c><c r="B2" s="2"><v>12.5</v></c>` +
  `<c r="C2" t="n"><v>3</v></c><c r="D2" s="1"/><c r="E2"><v></v></c></row>
  <row r="4"><c r="A4" t="s"><v>3</v></c><c r="B4" t="inlineStr"><is><t>4</t><t>.5</t></is></c>` +
  `<c r="C4" t="s"><v>4</v></c><c r="D4" s="3"><v>1.5</v></c></row>`;

Deno.test("plain XLSX: what Excel writes is read from its XML as exceljs reads it", async () => {
  const read = await agree(excelLike(EXCEL_ROWS), true);
  assert.equal(read._tag, "Left"); // D4 is a date in a value column, C4's text a value, and so on
});

Deno.test("plain XLSX: a workbook with anything else is left to exceljs", async () => {
  const cases: Array<[string, Uint8Array]> = [
    ["a formula", excelLike(EXCEL_ROWS.replace("<v>3</v>", "<f>1+2</f><v>3</v>"))],
    [
      "merged cells",
      excelLike(EXCEL_ROWS, {
        after: '<mergeCells count="1"><mergeCell ref="B2:C2"/></mergeCells>',
      }),
    ],
    ["a boolean", excelLike(EXCEL_ROWS.replace('t="n"><v>3', 't="b"><v>1'))],
    ["an error", excelLike(EXCEL_ROWS.replace('t="n"><v>3', 't="e"><v>#DIV/0!'))],
    ["a formula's text", excelLike(EXCEL_ROWS.replace('t="n"><v>3', 't="str"><v>3'))],
    [
      "rich text",
      excelLike(EXCEL_ROWS, {
        strings: EXCEL_STRINGS.replace("<si><t/></si>", "<si><r><t>a</t></r><r><t>b</t></r></si>"),
      }),
    ],
    ["a comment in the XML", excelLike(EXCEL_ROWS.replace('<row r="4">', '<!-- x --><row r="4">'))],
    ["a character reference", excelLike(EXCEL_ROWS.replace("<v>12.5</v>", "<v>&#49;2.5</v>"))],
    ["a cell without its address", excelLike(EXCEL_ROWS.replace('<c r="C2" t="n">', '<c t="n">'))],
    ["cells out of order", excelLike(EXCEL_ROWS.replace('r="C2"', 'r="A2"'))],
    [
      "an element left open",
      excelLike(EXCEL_ROWS.replace('<c r="C2" t="n"><v>3</v></c>', '<c r="C2" t="n"><v>3</v>')),
    ],
    [
      "tags closed out of order outside the cells",
      excelLike(EXCEL_ROWS, { after: "<pageMargins><x></pageMargins></x>" }),
    ],
    [
      "a shared item without a text",
      excelLike(EXCEL_ROWS, { strings: EXCEL_STRINGS.replace("<si><t/></si>", "<si></si>") }),
    ],
    [
      "a number format without its code",
      excelLike(EXCEL_ROWS, { styles: EXCEL_STYLES.replace(' formatCode="yyyy-mm-dd"', "") }),
    ],
    ["a control character", excelLike(EXCEL_ROWS.replace("<v>12.5</v>", "<v>12.5\u0001</v>"))],
    [
      "a shared string that is not there",
      excelLike(EXCEL_ROWS.replace('<v>4</v></c><c r="D4"', '<v>9</v></c><c r="D4"')),
    ],
  ];
  for (const [label, bytes] of cases) {
    try {
      await agree(bytes, false);
    } catch (e) {
      throw new Error(`${label}: ${e instanceof Error ? e.message : e}`);
    }
  }
});

Deno.test("plain XLSX: 1904 dates and sheet names exceljs changes are left to it", async () => {
  const sheet = sheetXml(
    `<row r="1"><c r="A1" t="inlineStr"><is><t>门店名称</t></is></c></row>`,
  );
  const long = buildZip(workbookEntries([{ name: "品".repeat(32), xml: sheet }]));
  await agree(long, false);
  const history = buildZip(workbookEntries([{ name: "History", xml: sheet }]));
  await agree(history, false);
  const twice = buildZip(workbookEntries([{ name: "a", xml: sheet }, { name: "A", xml: sheet }]));
  await agree(twice, false);
  const entries = workbookEntries([{ name: "a", xml: sheet }]);
  entries[0] = {
    ...entries[0],
    data: utf8(
      new TextDecoder().decode(entries[0].data).replace(
        "<sheets>",
        '<workbookPr date1904="1"/><sheets>',
      ),
    ),
  };
  await agree(buildZip(entries), false);
});

Deno.test("plain XLSX: a bare & in an attribute no reader uses is left to exceljs", async () => {
  const styles = EXCEL_STYLES.replace('<styleSheet xmlns="http', '<styleSheet xmlns="&ttp');
  await agree(excelLike(EXCEL_ROWS, { styles }), false);
});

Deno.test("plain XLSX: damaged XML reads as exceljs reads it (or is left to it)", async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.constantFrom("cells", "strings", "styles"),
      fc.double({ min: 0, max: 1, noNaN: true }),
      fc.integer({ min: 1, max: 12 }),
      fc.constantFrom("", "<", ">", "/", '"', "&", "<v>", "</c>", "<t>", "</si>", '<row r="3">'),
      async (part, where, length, insert) => {
        const text = part === "cells"
          ? EXCEL_ROWS
          : part === "strings"
          ? EXCEL_STRINGS
          : EXCEL_STYLES;
        const at = Math.floor(where * (text.length - 1));
        const damaged = text.slice(0, at) + insert + text.slice(at + length);
        const bytes = part === "cells"
          ? excelLike(damaged)
          : excelLike(EXCEL_ROWS, part === "strings" ? { strings: damaged } : { styles: damaged });
        const [direct, excel] = await both(bytes);
        assert.deepStrictEqual(direct, excel);
      },
    ),
    { numRuns: 150 },
  );
});

Deno.test("plain XLSX: a number cell whose text is not a number is refused, not read as another number", async () => {
  for (const text of ["1,5", "1 234.5", "12.5kWh", "1.2.3", "0x1A"]) {
    const bytes = excelLike(EXCEL_ROWS.replace("<v>12.5</v>", `<v>${text}</v>`));
    assert.ok(isPlain(bytes), text);
    const read = await Effect.runPromise(Effect.either(readXlsx(bytes, CTX)));
    assert.equal(read._tag, "Left", text);
    const problems = read._tag === "Left" ? read.left.problems : [];
    const atB2 = problems.find((p) => p.row === 2 && p.column === "B");
    assert.ok(atB2 !== undefined, `${text}: no problem at B2 in ${JSON.stringify(problems)}`);
    assert.equal(atB2.raw, text.trim());
    assert.match(atB2.message.en, /not a number/, text);
  }
  // A number's text as OOXML writes it is still read as that number.
  const plain = excelLike(EXCEL_ROWS.replace("<v>12.5</v>", "<v>1.25E1</v>"));
  const [direct, excel] = await both(plain);
  assert.deepStrictEqual(direct, excel);
});

Deno.test("a workbook the library fails on in its own code is refused in words a user can act on", async () => {
  // A shared string that does not exist: exceljs fails with a TypeError of its own code.
  const bytes = excelLike(
    EXCEL_ROWS.replace('<c r="A2" t="s"><v>1</v>', '<c r="A2" t="s"><v>99</v>'),
  );
  const read = await Effect.runPromise(Effect.either(readXlsx(bytes, CTX)));
  assert.equal(read._tag, "Left");
  const texts = read._tag === "Left" ? read.left.problems.map((p) => p.message.en) : [];
  assert.ok(
    texts.some((t) => /part of the workbook is missing or malformed/.test(t)),
    texts.join("\n"),
  );
  assert.ok(!texts.some((t) => /Cannot read|undefined/.test(t)), texts.join("\n"));
});

// Styles of a workbook saved by Excel in a Chinese locale: built-in East Asian date formats named
// by id alone (31: 2026年11月10日, 58: 11月10日), with no <numFmts> at all.
const CHINESE_STYLES = `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<styleSheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main">
<fonts count="1"><font><sz val="11"/><name val="等线"/></font></fonts>
<cellXfs count="3"><xf numFmtId="0" fontId="0" xfId="0"/><xf numFmtId="31" fontId="0" xfId="0" applyNumberFormat="1"/><xf numFmtId="58" fontId="0" xfId="0" applyNumberFormat="1"/></cellXfs>
</styleSheet>`;

Deno.test("XLSX: dates in a Chinese locale's built-in formats are dates to both readers", async () => {
  // B1 and C1: day headers typed as 2026年7月11日 and 7月12日; B2 a date typed where a value goes.
  const rows = `<row r="1"><c r="A1" t="s"><v>0</v></c><c r="B1" s="1"><v>46214</v></c>` +
    `<c r="C1" s="2"><v>46215</v></c></row>` +
    `<row r="2"><c r="A2" t="s"><v>1</v></c><c r="B2" s="1"><v>46336</v></c>` +
    `<c r="C2"><v>7.25</v></c></row>`;
  // Without <numFmts>, and with one that defines other formats.
  const withNumFmts = CHINESE_STYLES.replace(
    "<fonts",
    '<numFmts count="1"><numFmt numFmtId="176" formatCode="0.0000"/></numFmts><fonts',
  );
  for (const styles of [CHINESE_STYLES, withNumFmts]) {
    const read = await agree(excelLike(rows, { styles }), true);
    assert.equal(read._tag, "Left");
    const problems = read._tag === "Left" ? read.left.problems : [];
    assert.deepStrictEqual(
      problems.map((p) => [p.row, p.column, p.message.en]),
      [[2, "B", "a date is not an energy value"]],
    );
  }
  // With a formula, which only exceljs reads, the same.
  const formula = rows.replace(
    '<c r="C2"><v>7.25</v></c>',
    '<c r="C2"><f>7+0.25</f><v>7.25</v></c>',
  );
  const read = await agree(excelLike(formula, { styles: CHINESE_STYLES }), false);
  const problems = read._tag === "Left" ? read.left.problems : [];
  assert.deepStrictEqual(problems.map((p) => [p.row, p.column, p.message.en]), [
    [2, "B", "a date is not an energy value"],
  ]);
  // The headers are the days 2026-07-11 and 2026-07-12: C2's value is read for the second.
  const good = await agree(
    excelLike(rows.replace('s="1"><v>46336', "><v>3"), {
      styles: CHINESE_STYLES,
    }),
    true,
  );
  assert.equal(good._tag, "Right");
  if (good._tag === "Right") {
    assert.deepStrictEqual(
      good.right.rows.map((r) => [r.date, r.rawEnergy]),
      [["2026-07-11", "3"], ["2026-07-12", "7.25"]],
    );
  }
});

Deno.test("XLSX: cells of shared text in a workbook without shared strings are refused", async () => {
  const rows = `<row r="1">${'<c r="A1" t="inlineStr"><is><t>门店名称</t></is></c>'}` +
    `<c r="B1" t="inlineStr"><is><t>2026-07-09</t></is></c></row>` +
    `<row r="2"><c r="A2" t="inlineStr"><is><t>店1</t></is></c><c r="B2" t="s"><v>3</v></c></row>`;
  const bytes = buildZip(workbookEntries([{ name: "品牌A", xml: sheetXml(rows) }]));
  for (const read of await both(bytes)) {
    assert.equal(read._tag, "Left");
    const texts = read._tag === "Left" ? read.left.problems.map((p) => p.message.en) : [];
    assert.ok(
      texts.some((t) => /part of the workbook is missing or malformed/.test(t)),
      texts.join("\n"),
    );
  }
});
