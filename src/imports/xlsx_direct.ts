// The cells of a plain workbook read straight from its XML, as exceljs 4.4 reads them: shared,
// inline and numeric cells, number formats that make a number a date, any number of worksheets. A
// filled template, an export of the service and a workbook saved by a spreadsheet program without
// formulas are read here faster than exceljs reads them, and without loading it.
//
// Only what is known to read exactly as exceljs reads it is read here; for anything else
// (formulas, merged cells, hyperlinks, rich text, booleans, errors, 1904 dates, comments, CDATA or
// character references in the XML, XML a parser would refuse, prefixed elements where cells are,
// worksheet names exceljs refuses or changes) `readPlainWorkbook` answers undefined and the caller
// asks exceljs. tests/xlsx_direct_test.ts compares both readings. One difference is kept on purpose:
// an inline string's _xHHHH_ escapes are decoded, as the format and Excel read them (exceljs leaves
// them), since the service's own export writes them there.
import { decodeAddress, unescapeXml } from "./xlsx_scan.ts";

// A text's _xHHHH_ escapes (the format's way to write a character XML cannot hold, and _x005F_ for
// an underscore that would start one), as exceljs decodes them in shared strings.
const unescapeText = (text: string) =>
  text.replace(/_x([0-9A-F]{4})_/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)));

// A cell's value as exceljs gives it for these cells: shared text, a number, or a date (a number
// whose format is a date format).
export type PlainValue = string | number | Date;

// A numeric cell's text as OOXML writes a number (XML Schema's double, without INF and NaN).
export const NUMBER_TEXT = /^\s*[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?\s*$/;

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
const DECLARATION =
  /^<\?xml version=(?:"1\.0"|'1\.0')(?: encoding=(?:"UTF-8"|'UTF-8'|"utf-8"|'utf-8'))?(?: standalone=(?:"yes"|'yes'|"no"|'no'))? ?\?>/;

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
  // The declaration as spreadsheet programs write it; any other is left to exceljs's parser.
  const declaration = DECLARATION.exec(xml);
  if (declaration !== null) xml = xml.slice(declaration[0].length);
  if (xml.includes("<!") || xml.includes("<?") || xml.includes("&#")) bail();
  // Characters XML 1.0 does not allow.
  // deno-lint-ignore no-control-regex
  if (/[\x00-\x08\x0B\x0C\x0E-\x1F\uFFFE\uFFFF]/.test(xml)) bail();
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

// Walks a whole document, tag by tag, as an XML parser would accept it: tags closed in order, one
// root element, only white space outside it; anything else bails.
const walk = (xml: string, visitor: Visitor) => {
  const open: Array<string> = [];
  let roots = 0;
  let at = 0;
  while (at < xml.length) {
    if (xml.charCodeAt(at) === 0x3c) {
      TAG.lastIndex = at;
      const m = TAG.exec(xml);
      if (m === null) return bail();
      at = TAG.lastIndex;
      const name = m[2];
      // Every tag's attributes, read or not, must be XML an XML parser accepts.
      if (m[3].includes("&") && UNKNOWN_ENTITY.test(m[3])) bail();
      if (m[1] === "/") {
        if (m[3] !== "" || m[4] !== "" || open.pop() !== name) bail();
        visitor.close(name);
      } else {
        if (open.length === 0 && ++roots > 1) bail();
        visitor.open(name, m[3], m[4] === "/");
        if (m[4] === "/") visitor.close(name);
        else open.push(name);
      }
    } else {
      TEXT.lastIndex = at;
      const m = TEXT.exec(xml);
      if (m === null) return bail();
      at = TEXT.lastIndex;
      if (open.length === 0) {
        if (m[0].trim() !== "") bail();
      } else visitor.text(m[0]);
    }
  }
  if (open.length !== 0 || roots !== 1) bail();
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

// Whether a number format shows a date: exceljs's utils.isDateFmt, which looks for date letters
// outside brackets and quotes, and here outside `\x`, `_x` and `*x` too (a literal letter, a space
// as wide as it, the letter repeated: `0.00\ \k\W\h` is a number's format).
export const isDateFormat = (format: string | undefined): boolean => {
  if (!format) return false;
  const bare = format.replace(/\[[^\]]*]/g, "").replace(/"[^"]*"/g, "").replace(/[\\_*]./g, "");
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
      else if (name === "numFmt") {
        // exceljs reads every format's code (here and in <dxfs>), and fails without one.
        const a = attributesOf(raw);
        const code = a.get("formatCode");
        if (code === undefined) bail();
        const id = parseInt(a.get("numFmtId") ?? "", 10);
        // As exceljs: a backslash keeps the character after it, and goes.
        if (inNumFmts && !Number.isNaN(id)) custom.set(id, code!.replace(/[\\](.)/g, "$1"));
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
        // exceljs gives an item without a text as an empty object, not a string.
        if (texts === 0) bail();
        strings.push(unescapeText(item!));
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

// One worksheet's cells from its <sheetData> (the whole document is walked, the rest skipped).
const sheetRows = (
  bytes: Uint8Array,
  strings: ReadonlyArray<string>,
  dates: ReadonlySet<number>,
): Array<PlainRow> => {
  const xml = xmlText(bytes);
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
      // Decoded as a shared string is (and as the format and Excel read it; exceljs does not):
      // the export writes the escapes into its inline strings.
      value = unescapeText(c.value);
    } else if (c.inline) {
      return bail();
    } else if (c.type === "s") {
      const index = parseInt(c.value, 10);
      const text = strings[index];
      if (text === undefined) return bail();
      value = text;
    } else if (c.type === undefined || c.type === "n") {
      // A number's text that is not a number (a writer's "1,5" or "12.5kWh") reads as that text,
      // which the reader refuses: exceljs would read the number its text begins with (1, 12.5).
      if (c.value.trim() !== "" && !NUMBER_TEXT.test(c.value)) {
        value = c.value;
      } else {
        const n = parseFloat(c.value);
        value = c.style && dates.has(c.style) ? excelDate(n) : n;
      }
    } else return bail();
    row!.cells.push([c.col, value]);
  };
  // Elements open around the tag being read; whether it is inside <sheetData>.
  let level = 0;
  let inSheetData = false;
  let seenSheetData = false;
  walk(
    xml,
    {
      open(name, raw, empty) {
        if (!inSheetData) {
          if (level === 0 && name !== "worksheet") bail();
          if (level === 1 && name === "sheetData") {
            if (seenSheetData) bail();
            seenSheetData = inSheetData = true;
          }
          level++;
          return;
        }
        level++;
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
        level--;
        if (!inSheetData) return;
        if (level === 1 && name === "sheetData") {
          if (row !== undefined) bail();
          inSheetData = false;
          return;
        }
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
          if (cell === undefined) bail();
          finishCell();
        } else if (name === "row") {
          const current = row;
          if (current === undefined || cell !== undefined) return bail();
          if (current.cells.length > 0) rows.push(current);
          row = undefined;
        } else bail();
      },
      text(raw) {
        if (!inSheetData) return;
        if (inValue || inInlineText) cell!.value = (cell!.value ?? "") + textOf(raw);
        else if (raw.trim() !== "") bail();
      },
    },
  );
  if (!seenSheetData) bail();
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
  } catch {
    // NotPlain, or anything this reader did not foresee in a hostile file: exceljs reads it.
    return undefined;
  }
};
