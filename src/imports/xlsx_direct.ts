// The cells of a plain workbook read straight from its XML, as exceljs 4.4 reads them: shared and
// numeric cells, number formats that make a number a date, any number of worksheets. A filled
// template and a workbook saved by a spreadsheet program without formulas are read here in a
// tenth of exceljs's time and without its object model (docs/performance.md, The write path).
//
// Only what is known to read exactly as exceljs reads it is read here; for anything else
// (formulas, merged cells, hyperlinks, inline or rich text, booleans, errors, 1904 dates, comments
// or CDATA in the XML, character references, prefixed elements where cells are, worksheet names
// exceljs refuses or changes) `readPlainWorkbook` answers undefined and the caller asks exceljs.
// tests/xlsx_direct_test.ts compares both readings over generated workbooks.
import { decodeAddress, unescapeXml } from "./xlsx_scan.ts";

// A cell's value as exceljs gives it for these cells: shared text, a number, or a date (a number
// whose format is a date format).
export type PlainValue = string | number | Date;

export interface PlainRow {
  readonly rn: number;
  // Cells by column, in column order; blank cells are left out.
  readonly cells: ReadonlyArray<readonly [number, PlainValue]>;
}

export interface PlainSheet {
  readonly name: string;
  readonly rows: ReadonlyArray<PlainRow>;
}

// Thrown inside the reader when the workbook holds something only exceljs reads.
class NotPlain {}
const notPlain = new NotPlain();
const bail = (): never => {
  throw notPlain;
};

const decoder = new TextDecoder("utf-8", { fatal: true });

// An entry's XML text without its declaration; comments, CDATA, document types, processing
// instructions and character references are left to exceljs.
const xmlText = (bytes: Uint8Array): string => {
  if (bytes[0] === 0xfe || bytes[0] === 0xff) bail(); // UTF-16
  let xml: string;
  try {
    xml = decoder.decode(bytes);
  } catch {
    return bail();
  }
  const declaration = /^\s*<\?xml[^?]*\?>/.exec(xml);
  if (declaration !== null) xml = xml.slice(declaration[0].length);
  if (xml.includes("<!") || xml.includes("<?") || xml.includes("&#")) bail();
  return xml;
};

// Entities exceljs's parser (saxes) knows without a document type.
const UNKNOWN_ENTITY = /&(?!(?:amp|lt|gt|quot|apos);)/;

const textOf = (raw: string): string => {
  if (raw.includes("&")) {
    if (UNKNOWN_ENTITY.test(raw)) bail();
    return unescapeXml(raw);
  }
  return raw;
};

// A tag: `close` for </name>, `empty` for <name/>; its attributes unparsed.
const TAG =
  /<(\/?)([A-Za-z_][\w.-]*(?::[A-Za-z_][\w.-]*)?)((?:\s+[A-Za-z_][\w.:-]*\s*=\s*(?:"[^"<]*"|'[^'<]*'))*)\s*(\/?)>/y;
const TEXT = /[^<]+/y;
const ATTRIBUTE = /([A-Za-z_][\w.:-]*)\s*=\s*(?:"([^"<]*)"|'([^'<]*)')/g;

const attributesOf = (raw: string): Map<string, string> => {
  const attributes = new Map<string, string>();
  if (raw === "") return attributes;
  for (const m of raw.matchAll(ATTRIBUTE)) {
    const value = m[2] ?? m[3];
    // Attribute values with tabs or line breaks are normalized by an XML parser.
    if (/[\t\n\r]/.test(value)) bail();
    if (attributes.has(m[1])) bail();
    attributes.set(m[1], textOf(value));
  }
  return attributes;
};

interface Visitor {
  open(name: string, attributes: string, empty: boolean): void;
  close(name: string): void;
  text(raw: string): void;
}

// Walks `xml` from `start` to `end`, tag by tag; anything that is neither a tag nor text bails.
const walk = (xml: string, visitor: Visitor, start = 0, end = xml.length) => {
  let at = start;
  while (at < end) {
    if (xml.charCodeAt(at) === 0x3c) {
      TAG.lastIndex = at;
      const m = TAG.exec(xml);
      if (m === null || TAG.lastIndex > end) return bail();
      at = TAG.lastIndex;
      if (m[1] === "/") {
        if (m[3] !== "" || m[4] !== "") bail();
        visitor.close(m[2]);
      } else {
        visitor.open(m[2], m[3], m[4] === "/");
        if (m[4] === "/") visitor.close(m[2]);
      }
    } else {
      TEXT.lastIndex = at;
      const m = TEXT.exec(xml);
      if (m === null) return bail();
      const stop = Math.min(TEXT.lastIndex, end);
      visitor.text(xml.slice(at, stop));
      at = stop;
    }
  }
};

// Built-in number formats exceljs knows by id (the others it reads as no format).
const BUILT_IN_FORMATS: Readonly<Record<number, string>> = {
  0: "General",
  1: "0",
  2: "0.00",
  3: "#,##0",
  4: "#,##0.00",
  9: "0%",
  10: "0.00%",
  11: "0.00E+00",
  12: "# ?/?",
  13: "# ??/??",
  14: "mm-dd-yy",
  15: "d-mmm-yy",
  16: "d-mmm",
  17: "mmm-yy",
  18: "h:mm AM/PM",
  19: "h:mm:ss AM/PM",
  20: "h:mm",
  21: "h:mm:ss",
  22: 'm/d/yy "h":mm',
  37: "#,##0 ;(#,##0)",
  38: "#,##0 ;[Red](#,##0)",
  39: "#,##0.00 ;(#,##0.00)",
  40: "#,##0.00 ;[Red](#,##0.00)",
  45: "mm:ss",
  46: "[h]:mm:ss",
  47: "mmss.0",
  48: "##0.0E+0",
  49: "@",
};

// exceljs's utils.isDateFmt.
export const isDateFormat = (format: string | undefined): boolean => {
  if (!format) return false;
  const bare = format.replace(/\[[^\]]*]/g, "").replace(/"[^"]*"/g, "");
  return /[ymdhMsb]+/.test(bare);
};

// exceljs's utils.excelToDate (1900 dates).
const excelDate = (v: number) => new Date(Math.round((v - 25569) * 24 * 3600 * 1000));

// Which cell styles (indexes of cellXfs) make a number a date.
const dateStyles = (bytes: Uint8Array | undefined): Set<number> => {
  const dates = new Set<number>();
  if (bytes === undefined) return dates;
  const xml = xmlText(bytes);
  const custom = new Map<number, string>();
  const xfs: Array<number> = [];
  let inCellXfs = false;
  let inNumFmts = false;
  walk(xml, {
    open(name, raw) {
      if (name === "numFmts") inNumFmts = true;
      else if (name === "cellXfs") inCellXfs = true;
      else if (inNumFmts && name === "numFmt") {
        const a = attributesOf(raw);
        const id = parseInt(a.get("numFmtId") ?? "", 10);
        const code = a.get("formatCode");
        if (!Number.isNaN(id) && code !== undefined) custom.set(id, code);
      } else if (inCellXfs && name === "xf") {
        xfs.push(parseInt(attributesOf(raw).get("numFmtId") ?? "", 10));
      } else if ((inCellXfs || inNumFmts) && name.includes(":")) bail();
    },
    close(name) {
      if (name === "numFmts") inNumFmts = false;
      else if (name === "cellXfs") inCellXfs = false;
    },
    text() {},
  });
  xfs.forEach((id, index) => {
    // As exceljs: an empty custom code falls back to the built-in one.
    if (id && isDateFormat(custom.get(id) || BUILT_IN_FORMATS[id])) dates.add(index);
  });
  return dates;
};

// The shared strings: plain <t> texts; phonetic runs and properties are skipped, as exceljs does;
// rich text (runs) is left to exceljs.
const sharedStrings = (bytes: Uint8Array | undefined): Array<string> => {
  const strings: Array<string> = [];
  if (bytes === undefined) return strings;
  const xml = xmlText(bytes);
  let item: string | undefined;
  let texts = 0;
  let depth = 0; // inside <si>: 1; inside its <t>: 2; inside a phonetic run: skipped
  let phonetic = 0;
  walk(xml, {
    open(name, _raw, empty) {
      // Inside a phonetic run every tag is skipped (a self-closing one is closed right after).
      if (phonetic > 0) {
        phonetic++;
        return;
      }
      if (depth === 0) {
        if (name === "si") {
          depth = 1;
          item = "";
          texts = 0;
        } else if (name !== "sst") bail();
      } else if (depth === 1) {
        if (name === "t") {
          if (++texts > 1) bail();
          depth = 2;
        } else if (name === "rPh") {
          if (!empty) phonetic = 1;
        } else if (name !== "phoneticPr") bail();
      } else bail();
    },
    close(name) {
      if (phonetic > 0) {
        phonetic--;
        return;
      }
      if (depth === 2 && name === "t") depth = 1;
      else if (depth === 1 && name === "si") {
        strings.push(
          item!.replace(
            /_x([0-9A-F]{4})_/g,
            (_, hex: string) => String.fromCharCode(parseInt(hex, 16)),
          ),
        );
        depth = 0;
      } else if (depth === 1 && (name === "t" || name === "phoneticPr" || name === "rPh")) {
        return;
      } else if (depth !== 0 || name !== "sst") bail();
    },
    text(raw) {
      if (phonetic > 0) return;
      if (depth === 2) item += textOf(raw);
      else if (raw.trim() !== "") bail();
    },
  });
  if (depth !== 0) bail();
  return strings;
};

const CELL_REFERENCE = /^([A-Z]{1,3})([1-9][0-9]{0,6})$/;

// One worksheet's cells from its <sheetData>.
const sheetRows = (
  bytes: Uint8Array,
  strings: ReadonlyArray<string>,
  dates: ReadonlySet<number>,
): Array<PlainRow> => {
  const xml = xmlText(bytes);
  const open = /<sheetData(\s[^>]*)?>/.exec(xml);
  if (open === null) {
    if (/<sheetData(\s[^>]*)?\/>/.test(xml)) return [];
    return bail();
  }
  const start = open.index + open[0].length;
  const end = xml.indexOf("</sheetData>", start);
  if (end < 0 || xml.indexOf("<sheetData", start) >= 0) bail();
  // Parts of a sheet that change what exceljs gives as a cell's value.
  if (/<(mergeCell|hyperlink)[\s/>]/.test(xml)) bail();

  const rows: Array<PlainRow> = [];
  let row: { rn: number; cells: Array<readonly [number, PlainValue]> } | undefined;
  let lastRow = 0;
  let lastCol = 0;
  let cell:
    | {
      col: number;
      type: string | undefined;
      style: number;
      value: string | undefined;
      inline: boolean;
    }
    | undefined;
  // Inside the cell's <v>, its inline string (<is>), or a <t> of that string.
  let inValue = false;
  let inInline = false;
  let inInlineText = false;
  const finishCell = () => {
    const c = cell!;
    cell = undefined;
    if (c.value === undefined) return; // no value: blank whatever its type
    let value: PlainValue;
    if (c.type === "inlineStr") {
      if (!c.inline) return bail();
      value = c.value;
    } else if (c.inline) {
      return bail();
    } else if (c.type === "s") {
      const index = parseInt(c.value, 10);
      const text = strings[index];
      if (text === undefined) return bail();
      value = text;
    } else if (c.type === undefined || c.type === "n") {
      const n = parseFloat(c.value);
      value = c.style && dates.has(c.style) ? excelDate(n) : n;
    } else return bail();
    row!.cells.push([c.col, value]);
  };
  walk(
    xml,
    {
      open(name, raw, empty) {
        if (inValue || inInlineText) bail();
        if (inInline) {
          // An inline string's texts, joined (exceljs reads them so; runs are left to it).
          if (name !== "t") bail();
          inInlineText = !empty;
          return;
        }
        if (name === "row") {
          if (row !== undefined || cell !== undefined) bail();
          const r = attributesOf(raw).get("r");
          const rn = parseInt(r ?? "", 10);
          if (!(rn > lastRow) || String(rn) !== r) bail();
          lastRow = rn;
          lastCol = 0;
          row = { rn, cells: [] };
        } else if (name === "c") {
          const current = row;
          if (current === undefined || cell !== undefined) return bail();
          const a = attributesOf(raw);
          const reference = CELL_REFERENCE.exec(a.get("r") ?? "");
          if (reference === null) return bail();
          const address = decodeAddress(reference[0]);
          if (address.row !== current.rn || !(address.col! > lastCol)) bail();
          lastCol = address.col!;
          for (const key of a.keys()) {
            if (key !== "r" && key !== "s" && key !== "t") bail();
          }
          const s = a.get("s");
          cell = {
            col: lastCol,
            type: a.get("t"),
            style: s === undefined ? 0 : parseInt(s, 10),
            value: undefined,
            inline: false,
          };
          if (s !== undefined && String(cell.style) !== s) bail();
        } else if (name === "v") {
          if (cell === undefined || cell.value !== undefined || cell.inline) return bail();
          if (!empty) inValue = true;
        } else if (name === "is") {
          if (cell === undefined || cell.value !== undefined || cell.inline) return bail();
          cell.inline = true;
          inInline = !empty;
        } else bail();
      },
      close(name) {
        if (inInlineText) {
          if (name !== "t") bail();
          inInlineText = false;
        } else if (inInline && name === "t") {
          return; // a self-closing <t/>
        } else if (name === "is") {
          inInline = false;
        } else if (name === "v") {
          inValue = false;
        } else if (name === "c") {
          finishCell();
        } else if (name === "row") {
          if (cell !== undefined) bail();
          if (row!.cells.length > 0) rows.push(row!);
          row = undefined;
        } else bail();
      },
      text(raw) {
        if (inValue || inInlineText) cell!.value = (cell!.value ?? "") + textOf(raw);
        else if (raw.trim() !== "") bail();
      },
    },
    start,
    end,
  );
  if (row !== undefined || cell !== undefined) bail();
  return rows;
};

// The attributes of the elements `name` directly under `parent` (unprefixed), in order.
const listed = (xml: string, parent: string, name: string) => {
  const items: Array<Map<string, string>> = [];
  let inside = false;
  walk(xml, {
    open(tag, raw) {
      if (tag === parent) inside = true;
      else if (inside) {
        if (tag !== name) bail();
        items.push(attributesOf(raw));
      }
    },
    close(tag) {
      if (tag === parent) inside = false;
    },
    text() {},
  });
  return items;
};

// A worksheet name exceljs keeps as it is (it refuses some and shortens long ones).
const plainName = (name: string) =>
  name !== "" && name !== "History" && !/[*?:/\\[\]]/.test(name) && !/(^')|('$)/.test(name) &&
  name.length <= 31;

const WORKSHEET_ENTRY = /xl\/worksheets\/sheet(\d+)[.]xml/;

/**
 * The worksheets of the workbook whose entries (name to inflated bytes) are given, in workbook
 * order, each with its non-blank cells; undefined when it holds anything read only by exceljs.
 */
export const readPlainWorkbook = (
  entries: ReadonlyMap<string, Uint8Array>,
): ReadonlyArray<PlainSheet> | undefined => {
  try {
    const workbookBytes = entries.get("xl/workbook.xml");
    const relsBytes = entries.get("xl/_rels/workbook.xml.rels");
    if (workbookBytes === undefined || relsBytes === undefined) return undefined;
    const workbook = xmlText(workbookBytes);
    if (/<workbookPr\s[^>]*date1904/.test(workbook)) return undefined;
    const targets = new Map<string, string>();
    for (const rel of listed(xmlText(relsBytes), "Relationships", "Relationship")) {
      const id = rel.get("Id");
      const target = rel.get("Target");
      if (id === undefined || target === undefined || targets.has(id)) return undefined;
      targets.set(id, target);
    }
    const strings = sharedStrings(entries.get("xl/sharedStrings.xml"));
    const dates = dateStyles(entries.get("xl/styles.xml"));
    const sheets: Array<PlainSheet> = [];
    const ids = new Set<number>();
    const names = new Set<string>();
    const used = new Set<string>();
    for (const sheet of listed(workbook, "sheets", "sheet")) {
      const rel = sheet.get("r:id");
      const target = rel === undefined ? undefined : targets.get(rel);
      if (target === undefined) return undefined;
      const path = `xl/${target.replace(/^(\s|\/xl\/)+/, "")}`;
      const bytes = entries.get(path);
      if (bytes === undefined || !WORKSHEET_ENTRY.test(path)) {
        // A chartsheet or a missing part: exceljs leaves it out; so is it here, unless it is odd.
        if (!/^xl\/chartsheets\/sheet\d+\.xml$/.test(path)) return undefined;
        continue;
      }
      const id = parseInt(sheet.get("sheetId") ?? "", 10);
      const name = sheet.get("name") ?? "";
      if (!(id > 0) || ids.has(id) || used.has(path)) return undefined;
      if (!plainName(name) || names.has(name.toLowerCase())) return undefined;
      ids.add(id);
      names.add(name.toLowerCase());
      used.add(path);
      sheets.push({ name, rows: sheetRows(bytes, strings, dates) });
    }
    return sheets;
  } catch (e) {
    if (e instanceof NotPlain) return undefined;
    throw e;
  }
};
