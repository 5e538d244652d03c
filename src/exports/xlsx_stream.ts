// The export workbook, written while it is sent: the parts of an XLSX file (SpreadsheetML) made
// directly, each worksheet zipped run of rows by run of rows (zip_stream.ts), so that memory holds
// one run whatever the workbook's size. The layout is the template's (files/template.ts): A1
// 门店名称, B1.. the days as text, column A the store names in text format, row 1 and column A
// frozen. Cell text is written as inline strings: a string cell is never a formula, whatever it
// begins with. TableWriter writes a plain one-sheet table (the portfolio file) the same way.
import { Effect, Stream } from "effect";
import {
  STORE_NAME_HEADER,
  storeColumnWidth,
  TEMPLATE_DAY_COLUMN_WIDTH,
} from "../files/template.ts";
import { cellText, type ExportCell, xlsxNumber } from "./layout.ts";
import { concat, ZipStream } from "../files/zip_stream.ts";
import { columnLetter } from "../files/layout.ts";

export interface XlsxSheet {
  readonly name: string;
  // The store names of the sheet (for the width of column A).
  readonly stores: ReadonlyArray<string>;
}

// One store row: the index of its sheet in `sheets`, its name and one cell per day.
export interface XlsxRow {
  readonly sheet: number;
  readonly store: string;
  readonly cells: ReadonlyArray<ExportCell>;
}

const MAIN = "http://schemas.openxmlformats.org/spreadsheetml/2006/main";
const REL = "http://schemas.openxmlformats.org/officeDocument/2006/relationships";
const PACKAGE_REL = "http://schemas.openxmlformats.org/package/2006/relationships";
const XML = '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n';

// Cell styles (cellXfs of styles.xml): 1 text format "@" (numFmtId 49), 2 the same in bold.
const TEXT_STYLE = 1;
const HEADER_STYLE = 2;

const STYLES = `${XML}<styleSheet xmlns="${MAIN}">` +
  '<fonts count="2"><font><sz val="11"/><name val="Calibri"/></font>' +
  '<font><b/><sz val="11"/><name val="Calibri"/></font></fonts>' +
  '<fills count="2"><fill><patternFill patternType="none"/></fill>' +
  '<fill><patternFill patternType="gray125"/></fill></fills>' +
  '<borders count="1"><border><left/><right/><top/><bottom/><diagonal/></border></borders>' +
  '<cellStyleXfs count="1"><xf numFmtId="0" fontId="0" fillId="0" borderId="0"/></cellStyleXfs>' +
  '<cellXfs count="3"><xf numFmtId="0" fontId="0" fillId="0" borderId="0" xfId="0"/>' +
  '<xf numFmtId="49" fontId="0" fillId="0" borderId="0" xfId="0" applyNumberFormat="1"/>' +
  '<xf numFmtId="49" fontId="1" fillId="0" borderId="0" xfId="0" applyNumberFormat="1" ' +
  'applyFont="1"/></cellXfs>' +
  '<cellStyles count="1"><cellStyle name="Normal" xfId="0" builtinId="0"/></cellStyles>' +
  "</styleSheet>";

// XML 1.0 cannot hold control characters (other than tab, line feed, carriage return), lone
// surrogates or U+FFFE/U+FFFF: SpreadsheetML writes them _xHHHH_, and writes the underscore of
// a text that already reads like such an escape as _x005F_ (exceljs and Excel decode both).
const UNWRITABLE =
  // deno-lint-ignore no-control-regex
  /[\u0000-\u0008\u000B\u000C\u000E-\u001F\uFFFE\uFFFF]|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]|_(?=x[0-9A-F]{4}_)/g;
const ENTITIES: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" };

export const xmlText = (text: string): string =>
  text
    .replace(/[&<>"]/g, (c) => ENTITIES[c])
    .replace(
      UNWRITABLE,
      (c) => `_x${c.charCodeAt(0).toString(16).toUpperCase().padStart(4, "0")}_`,
    );

const inline = (ref: string, text: string, style?: number) =>
  `<c r="${ref}"${style === undefined ? "" : ` s="${style}"`} t="inlineStr"><is><t${
    text.trim() === text ? "" : ' xml:space="preserve"'
  }>${xmlText(text)}</t></is></c>`;

const sheetPath = (i: number) => `xl/worksheets/sheet${i + 1}.xml`;

const encoder = new TextEncoder();

// The parts of a workbook besides its worksheets: content types, relationships, the workbook
// naming `names` (sheet1.xml, sheet2.xml, ... in order) and the styles.
const packageParts = (zip: ZipStream, names: ReadonlyArray<string>): Uint8Array => {
  const n = names.length;
  const overrides = names.map((_, i) =>
    `<Override PartName="/${
      sheetPath(i)
    }" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/>`
  ).join("");
  const parts: Array<[string, string]> = [
    [
      "[Content_Types].xml",
      `${XML}<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">` +
      '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>' +
      '<Default Extension="xml" ContentType="application/xml"/>' +
      '<Override PartName="/xl/workbook.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/>' +
      '<Override PartName="/xl/styles.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.styles+xml"/>' +
      `${overrides}</Types>`,
    ],
    [
      "_rels/.rels",
      `${XML}<Relationships xmlns="${PACKAGE_REL}">` +
      `<Relationship Id="rId1" Type="${REL}/officeDocument" Target="xl/workbook.xml"/>` +
      "</Relationships>",
    ],
    [
      "xl/workbook.xml",
      `${XML}<workbook xmlns="${MAIN}" xmlns:r="${REL}"><bookViews><workbookView/></bookViews>` +
      `<sheets>${
        names.map((name, i) =>
          `<sheet name="${xmlText(name)}" sheetId="${i + 1}" r:id="rId${i + 1}"/>`
        ).join("")
      }</sheets></workbook>`,
    ],
    [
      "xl/_rels/workbook.xml.rels",
      `${XML}<Relationships xmlns="${PACKAGE_REL}">${
        names.map((_, i) =>
          `<Relationship Id="rId${i + 1}" Type="${REL}/worksheet" Target="worksheets/sheet${
            i + 1
          }.xml"/>`
        ).join("")
      }<Relationship Id="rId${n + 1}" Type="${REL}/styles" Target="styles.xml"/>` +
      "</Relationships>",
    ],
    ["xl/styles.xml", STYLES],
  ];
  return concat(parts.map(([path, xml]) => zip.file(path, encoder.encode(xml))));
};

// The workbook's bytes in order: start(), then rows() for each run of store rows (in sheet order),
// then finish(). Each call returns the bytes it adds; the caller decides how many rows a call
// writes (and so how long it holds the event loop).
export class WorkbookWriter {
  private readonly zip = new ZipStream();
  private readonly letters: ReadonlyArray<string>;
  // The sheet being written (-1 before the first), and its next row number.
  private sheet = -1;
  private row = 0;

  constructor(
    private readonly sheets: ReadonlyArray<XlsxSheet>,
    private readonly days: ReadonlyArray<string>,
  ) {
    this.letters = Array.from({ length: days.length + 1 }, (_, i) => columnLetter(i + 1));
  }

  start(): Uint8Array {
    return packageParts(this.zip, this.sheets.map((s) => s.name));
  }

  // Opens worksheet `index`: its view, columns and header row.
  private open(index: number): Uint8Array {
    const plan = this.sheets[index];
    this.sheet = index;
    this.row = 2;
    const header = [
      inline("A1", STORE_NAME_HEADER, HEADER_STYLE),
      ...this.days.map((day, d) => inline(`${this.letters[d + 1]}1`, day, HEADER_STYLE)),
    ].join("");
    const dayColumns = this.days.length === 0
      ? ""
      : `<col min="2" max="${this.days.length + 1}" width="${TEMPLATE_DAY_COLUMN_WIDTH}" ` +
        'customWidth="1"/>';
    const xml = `${XML}<worksheet xmlns="${MAIN}" xmlns:r="${REL}">` +
      '<sheetViews><sheetView workbookViewId="0">' +
      '<pane xSplit="1" ySplit="1" topLeftCell="B2" activePane="bottomRight" state="frozen"/>' +
      '<selection pane="bottomRight" activeCell="B2" sqref="B2"/></sheetView></sheetViews>' +
      '<sheetFormatPr defaultRowHeight="15"/>' +
      `<cols><col min="1" max="1" width="${storeColumnWidth(plan.stores)}" customWidth="1" ` +
      `style="${TEXT_STYLE}"/>${dayColumns}</cols>` +
      `<sheetData><row r="1">${header}</row>`;
    return concat([this.zip.begin(sheetPath(index)), this.zip.write(encoder.encode(xml))]);
  }

  private close(): Uint8Array {
    return concat([this.zip.write(encoder.encode("</sheetData></worksheet>")), this.zip.end()]);
  }

  // Moves on to worksheet `index`, closing the sheets before it (an empty one is still written).
  private moveTo(index: number): Uint8Array {
    const parts: Array<Uint8Array> = [];
    while (this.sheet < index) {
      if (this.sheet >= 0) parts.push(this.close());
      parts.push(this.open(this.sheet + 1));
    }
    return concat(parts);
  }

  private rowXml(row: XlsxRow): string {
    const r = this.row++;
    let xml = `<row r="${r}">${inline(`A${r}`, row.store, TEXT_STYLE)}`;
    row.cells.forEach((cell, d) => {
      if (cell.kind === "blank") return;
      const ref = `${this.letters[d + 1]}${r}`;
      const n = cell.kind === "number" ? xlsxNumber(cell.kwh) : undefined;
      xml += n === undefined ? inline(ref, cellText(cell)) : `<c r="${ref}"><v>${n}</v></c>`;
    });
    return `${xml}</row>`;
  }

  // The bytes of a page of rows (rows in sheet order, pages in order).
  rows(page: ReadonlyArray<XlsxRow>): Uint8Array {
    const parts: Array<Uint8Array> = [];
    let xml = "";
    const flush = () => {
      if (xml !== "") parts.push(this.zip.write(encoder.encode(xml)));
      xml = "";
    };
    for (const row of page) {
      if (row.sheet !== this.sheet) {
        if (row.sheet < this.sheet) throw new Error("rows out of sheet order");
        flush();
        parts.push(this.moveTo(row.sheet));
      }
      xml += this.rowXml(row);
    }
    flush();
    return concat(parts);
  }

  finish(): Uint8Array {
    const parts = [this.moveTo(this.sheets.length - 1)];
    if (this.sheet >= 0) parts.push(this.close());
    parts.push(this.zip.finish());
    return concat(parts);
  }
}

/**
 * The workbook of `sheets` (in order) with `rows` (store rows in sheet order, page by page) as a
 * stream of bytes, pulled: a page is read when the bytes before it have been taken. A failure of
 * `rows` fails the stream (after the first bytes the client sees a connection cut short).
 */
export const xlsxStream = <E>(
  sheets: ReadonlyArray<XlsxSheet>,
  days: ReadonlyArray<string>,
  rows: Stream.Stream<ReadonlyArray<XlsxRow>, E>,
): Stream.Stream<Uint8Array, E> =>
  Stream.suspend(() => {
    const writer = new WorkbookWriter(sheets, days);
    return Stream.fromEffect(Effect.sync(() => writer.start())).pipe(
      Stream.concat(Stream.map(rows, (page) => writer.rows(page))),
      Stream.concat(Stream.fromEffect(Effect.sync(() => writer.finish()))),
      Stream.filter((bytes) => bytes.length > 0),
    );
  });

// A cell of a plain table: text (an inline string, never a formula), a number, or none.
export type TableCell = string | number | null;

/**
 * A workbook of one worksheet holding a table: a bold header row (frozen) and rows of cells, in
 * order. Used like WorkbookWriter: start(), rows() for each run of rows, finish().
 */
export class TableWriter {
  private readonly zip = new ZipStream();
  private readonly letters: ReadonlyArray<string>;
  private row = 2;

  constructor(private readonly sheet: string, private readonly header: ReadonlyArray<string>) {
    this.letters = header.map((_, i) => columnLetter(i + 1));
  }

  start(): Uint8Array {
    const head = this.header.map((name, c) => inline(`${this.letters[c]}1`, name, HEADER_STYLE))
      .join("");
    const xml = `${XML}<worksheet xmlns="${MAIN}" xmlns:r="${REL}">` +
      '<sheetViews><sheetView workbookViewId="0">' +
      '<pane ySplit="1" topLeftCell="A2" activePane="bottomLeft" state="frozen"/>' +
      '<selection pane="bottomLeft" activeCell="A2" sqref="A2"/></sheetView></sheetViews>' +
      '<sheetFormatPr defaultRowHeight="15"/>' +
      `<sheetData><row r="1">${head}</row>`;
    return concat([
      packageParts(this.zip, [this.sheet]),
      this.zip.begin(sheetPath(0)),
      this.zip.write(encoder.encode(xml)),
    ]);
  }

  rows(rows: ReadonlyArray<ReadonlyArray<TableCell>>): Uint8Array {
    let xml = "";
    for (const cells of rows) {
      const r = this.row++;
      xml += `<row r="${r}">`;
      cells.forEach((cell, c) => {
        if (cell === null) return;
        const ref = `${this.letters[c]}${r}`;
        xml += typeof cell === "number" ? `<c r="${ref}"><v>${cell}</v></c>` : inline(ref, cell);
      });
      xml += "</row>";
    }
    return xml === "" ? new Uint8Array(0) : this.zip.write(encoder.encode(xml));
  }

  finish(): Uint8Array {
    return concat([
      this.zip.write(encoder.encode("</sheetData></worksheet>")),
      this.zip.end(),
      this.zip.finish(),
    ]);
  }
}
