// The workbook XML bounds: references read as exceljs reads them, and every cap on crafted XML.
import assert from "node:assert/strict";
import { FastCheck as fc } from "effect";
// exceljs's own readers, to compare against.
import colCache from "exceljs/lib/utils/col-cache.js";
import DefinedNamesXform from "exceljs/lib/xlsx/xform/book/defined-name-xform.js";
import Range from "exceljs/lib/doc/range.js";
import {
  decodeAddress,
  decodeRange,
  definedNameRanges,
  WorkbookScan,
  XLSX_LIMITS,
  type XlsxLimits,
} from "../src/imports/xlsx_scan.ts";
import { utf8 } from "./import_zip_fixtures.ts";

const scan = (xml: string, limits: Partial<XlsxLimits> = {}, name = "xl/worksheets/sheet1.xml") =>
  new WorkbookScan({ ...XLSX_LIMITS, ...limits }).check(name, utf8(xml))?.en;

const ok = (xml: string, limits: Partial<XlsxLimits> = {}) =>
  assert.equal(scan(xml, limits), undefined);

const refused = (xml: string, pattern: RegExp, limits: Partial<XlsxLimits> = {}) => {
  const problem = scan(xml, limits);
  assert.ok(problem !== undefined && pattern.test(problem), `expected ${pattern}, got ${problem}`);
};

const sheet = (inner: string) =>
  `<?xml version="1.0" encoding="UTF-8"?><worksheet xmlns="x">${inner}</worksheet>`;

// --- readings equal exceljs's --------------------------------------------------------------------

const referenceText = fc.string({
  unit: fc.constantFrom(..."ABCXYZabz0123456789$:!' ,".split("")),
  maxLength: 14,
});

Deno.test("property: decodeAddress reads a reference exactly as exceljs's colCache does", () => {
  fc.assert(
    fc.property(referenceText, (value) => {
      const ours = decodeAddress(value);
      let theirs: { col?: number; row?: number } | undefined;
      try {
        theirs = colCache.decodeAddress(value);
      } catch {
        // exceljs refuses columns past 16384.
        assert.ok((ours.col ?? 0) > 16_384, value);
        return;
      }
      assert.deepEqual([ours.col, ours.row], [theirs!.col, theirs!.row], value);
    }),
    { numRuns: 2000 },
  );
});

Deno.test("property: decodeRange counts the cells exceljs's Range visits", () => {
  const small = fc.tuple(
    fc.constantFrom("A", "B", "C", "D", "", "$C"),
    fc.constantFrom("1", "2", "5", "", "$3"),
  ).map(([c, r]) => c + r);
  fc.assert(
    fc.property(
      fc.option(fc.constantFrom("Sheet1!", "'a b'!", "'x,y'!"), { nil: "" }),
      small,
      fc.option(small, { nil: undefined }),
      (prefix, a, b) => {
        const value = prefix + (b === undefined ? a : `${a}:${b}`);
        let visited = 0;
        let range;
        try {
          range = new Range(value);
        } catch {
          return;
        }
        range.forEachAddress(() => visited++);
        const ours = decodeRange(value);
        // A single address is one cell to exceljs's data validations and defined names.
        assert.equal(ours.cells, b === undefined ? 1 : visited, value);
      },
    ),
    { numRuns: 1000 },
  );
});

Deno.test("property: definedNameRanges keeps the ranges exceljs keeps", () => {
  const piece = fc.string({
    unit: fc.constantFrom(..."AB1$:!',x Q9".split("")),
    maxLength: 10,
  });
  fc.assert(
    fc.property(fc.array(piece, { maxLength: 5 }).map((p) => p.join(",")), (text) => {
      const xform = new DefinedNamesXform();
      xform.parseOpen({ name: "definedName", attributes: { name: "n" } });
      xform.parseText(text);
      xform.parseClose("definedName");
      assert.deepEqual(definedNameRanges(text), xform.model.ranges, JSON.stringify(text));
    }),
    { numRuns: 2000 },
  );
});

// --- rows, columns, cells -------------------------------------------------------------------------

Deno.test("row numbers beyond the limit are refused, read as parseInt reads them", () => {
  ok(sheet(`<sheetData><row r="1"/><row r="20000"/></sheetData>`));
  refused(
    sheet(`<sheetData><row r="20001"/></sheetData>`),
    /row "20001" .* outside rows 1 to 20000/,
  );
  refused(sheet(`<sheetData><row r="1000000000"/></sheetData>`), /outside rows/);
  refused(sheet(`<sheetData><row r="1000000000abc"/></sheetData>`), /outside rows/);
  refused(sheet(`<sheetData><row r="0"/></sheetData>`), /outside rows/);
  // Character references are what the XML parser hands over: r="1000000000".
  refused(sheet(`<sheetData><row r="&#49;000000000"/></sheetData>`), /outside rows/);
  refused(sheet(`<sheetData><row r='1000000000'/></sheetData>`), /outside rows/);
  // A prefix does not hide a row from the check.
  refused(sheet(`<x:sheetData><x:row r="1000000000"/></x:sheetData>`), /outside rows/);
  // Markup inside comments and processing instructions is not markup.
  ok(sheet(`<!-- <row r="1000000000"/> --><?pi <row r="1000000000"/> ?><sheetData/>`));
  // An attribute value may hold ">": the tag goes on.
  refused(sheet(`<sheetData><row x="a>b" r="30000"/></sheetData>`), /outside rows/);
});

Deno.test("cell references beyond the row or column limit are refused", () => {
  ok(sheet(`<sheetData><row r="1"><c r="AMJ20000"/></row></sheetData>`)); // AMJ = 1024
  refused(sheet(`<sheetData><row r="1"><c r="AMK1"/></row></sheetData>`), /column 1025/);
  refused(sheet(`<sheetData><row r="1"><c r="A20001"/></row></sheetData>`), /row 20001/);
  refused(
    sheet(`<sheetData><row r="1"><c r="$B$1000000000"/></row></sheetData>`),
    /row 1000000000/,
  );
  // Cells without r are the next column: 1,025 of them pass the last column.
  const cells = (n: number) => `<c r="A1"/>` + "<c/>".repeat(n - 1);
  ok(sheet(`<sheetData><row r="1">${cells(1024)}</row></sheetData>`));
  refused(sheet(`<sheetData><row r="1">${cells(1025)}</row></sheetData>`), /column 1025/);
  // Each row starts again.
  ok(
    sheet(`<sheetData><row r="1">${cells(1000)}</row><row r="2">${cells(1000)}</row></sheetData>`),
  );
});

Deno.test("column definitions may reach Excel's last column, not beyond", () => {
  ok(sheet(`<cols><col min="33" max="16384" hidden="1"/></cols><sheetData/>`));
  refused(sheet(`<cols><col min="1" max="16385"/></cols><sheetData/>`), /column 16385/);
  refused(sheet(`<cols><col min="1000000000" max="1000000000"/></cols><sheetData/>`), /column/);
});

Deno.test("other references are bounded, except those exceljs never expands", () => {
  for (
    const xml of [
      `<dimension ref="A1:B30000"/>`,
      `<hyperlinks><hyperlink ref="A1000000000" r:id="rId1"/></hyperlinks>`,
      `<autoFilter ref="A1:XFD1"/>`,
      `<comment ref="A99999"/>`,
      `<table ref="A1:B99999"/>`,
    ]
  ) refused(sheet(xml), /reaches (row|column)/);
  // A selected column, whole-column conditional formats, DrawingML's r ("right") attribute.
  ok(sheet(
    `<sheetViews><sheetView><selection activeCell="B1" sqref="B1:B1048576"/></sheetView></sheetViews>` +
      `<conditionalFormatting sqref="B:B B2:B1048576"><cfRule type="expression"/></conditionalFormatting>` +
      `<ignoredErrors><ignoredError sqref="A1:XFD1048576" numberStoredAsText="1"/></ignoredErrors>`,
  ));
  ok(`<a:theme><a:fillToRect l="50000" t="50000" r="50000" b="50000"/></a:theme>`);
  ok(sheet(`<tableParts count="1"><tablePart r:id="rId99999999"/></tableParts>`));
});

Deno.test("merged ranges count their cells; too many merges are refused", () => {
  // The first cell of a merged range is its own <c>; the other three are made by exceljs.
  ok(sheet(`<mergeCells><mergeCell ref="B2:C3"/></mergeCells>`), { maxCells: 3 });
  refused(sheet(`<mergeCells><mergeCell ref="B2:C3"/></mergeCells>`), /more than 2 cells/, {
    maxCells: 2,
  });
  refused(sheet(`<mergeCells><mergeCell ref="A1:XFD1048576"/></mergeCells>`), /reaches/);
  refused(sheet(`<mergeCells><mergeCell ref="A1:A20001"/></mergeCells>`), /row 20001/);
  const merges = (n: number) =>
    sheet(
      `<mergeCells>${
        Array.from({ length: n }, (_, i) => `<mergeCell ref="A${i + 1}:B${i + 1}"/>`).join("")
      }</mergeCells>`,
    );
  ok(merges(1000));
  refused(merges(1001), /more than 1000 merged ranges/);
});

Deno.test("data validations and defined names share a budget of expanded cells", () => {
  const validation = (sqref: string) =>
    sheet(`<dataValidations><dataValidation type="decimal" sqref="${sqref}"/></dataValidations>`);
  ok(validation("B2:K10001")); // 100,000 cells
  refused(validation("B2:K10002"), /cover more than 100000 cells/);
  refused(validation("B2:B1048576"), /row 1048576/);
  refused(validation("A1 B2:C3 D4:D30000"), /row 30000/);
  const book = (names: string) =>
    `<workbook><sheets><sheet name="A" sheetId="1"/></sheets><definedNames>${names}</definedNames></workbook>`;
  const s = new WorkbookScan();
  assert.equal(s.check("xl/worksheets/sheet1.xml", utf8(validation("B2:K5001")))?.en, undefined);
  const names = book(`<definedName name="x">A!$B$2:$K$5001</definedName>`);
  assert.equal(s.check("xl/workbook.xml", utf8(names))?.en, undefined);
  const more = book(`<definedName name="y">'A,B'!$B$2:$B$2</definedName>`);
  assert.match(s.check("xl/workbook2.xml", utf8(more))?.en ?? "", /more than 100000 cells/);
  // Quoted sheet names may hold commas, ranges many cells; CDATA and entities are read too.
  refused(book(`<definedName name="p">'a,b'!$A$1:$A$30000</definedName>`), /row 30000/);
  refused(book(`<definedName name="p">A!$A$1:$AMK$2</definedName>`), /column 1025/);
  refused(book(`<definedName name="p">A!$A$1:$A$3&#48;000</definedName>`), /row 30000/);
  ok(
    book(
      `<definedName name="_xlnm.Print_Area" localSheetId="0">'品牌A'!$A$1:$AF$101</definedName>`,
    ),
  );
  ok(book(`<definedName name="whole">A!$A:$AF</definedName>`));
});

Deno.test("counts: cells, shared strings, sheets, elements, attributes, depth", () => {
  refused(
    sheet(`<sheetData><row r="1">${"<c/>".repeat(11)}</row></sheetData>`),
    /more than 10 cells/,
    {
      maxCells: 10,
    },
  );
  refused(`<sst>${"<si><t>x</t></si>".repeat(11)}</sst>`, /more than 10 shared strings/, {
    maxSharedStrings: 10,
  });
  refused(
    `<workbook><sheets>${"<sheet/>".repeat(65)}</sheets></workbook>`,
    /more than 64 worksheets/,
  );
  const s = new WorkbookScan({ ...XLSX_LIMITS, maxSheets: 2 });
  assert.equal(s.check("a", utf8(sheet("")))?.en, undefined);
  assert.equal(s.check("b", utf8(sheet("")))?.en, undefined);
  assert.match(s.check("c", utf8(sheet("")))?.en ?? "", /more than 2 worksheets/);
  refused(`<a>${"<b/>".repeat(100)}</a>`, /more than 100 elements/, { maxElements: 100 });
  refused(
    `<a ${Array.from({ length: 11 }, (_, i) => `x${i}="1"`).join(" ")}/>`,
    /more than 10 attributes/,
    {
      maxAttributes: 10,
    },
  );
  ok(`${"<a>".repeat(64)}${"</a>".repeat(64)}`);
  refused(`${"<a>".repeat(65)}${"</a>".repeat(65)}`, /nested more than 64 levels/);
  refused(`<!DOCTYPE a [<!ENTITY x "y">]><a/>`, /document type/);
});

Deno.test("non-XML bytes and broken markup are scanned without a throw", () => {
  fc.assert(
    fc.property(fc.uint8Array({ maxLength: 400 }), (bytes) => {
      const problem = new WorkbookScan().check("xl/printerSettings/printerSettings1.bin", bytes)
        ?.en;
      assert.ok(problem === undefined || typeof problem === "string");
    }),
    { numRuns: 500 },
  );
  ok(`<a b="unterminated <row r="1000000000"/>`);
  ok(`<a <b <c`);
});
