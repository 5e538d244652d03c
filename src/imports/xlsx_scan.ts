// Bounds on a workbook's XML, checked on the inflated bytes before exceljs builds anything from them.
import { type Text, text as t } from "../domain/language.ts";
import { q, qPath } from "./problem_texts.ts";

/**
 * exceljs builds a workbook in memory and expands several things cell by cell: rows sit in an
 * array indexed by row number that it walks whole, merged ranges and data validations become one
 * object per cell, defined names one per cell of their ranges, and `<col min max>` one column
 * object per column. So every number that sizes such work is bounded here, on the bytes, with the
 * same readings exceljs 4.4 makes of them (`parseInt` for row numbers and column bounds, its
 * address decoder for references).
 */
export interface XlsxLimits {
  // A file holds at most 10,000 values; the template puts one store per row, so a worksheet of one
  // day column uses up to 10,001 rows. Twice that leaves room for blank rows.
  readonly maxRow: number;
  // The template has at most 31 day columns after the store column; 1,024 leaves room for any
  // spare columns a spreadsheet program keeps.
  readonly maxColumn: number;
  // `<col min max>` only sets widths and styles, and Excel writes max="16384" when every column to
  // the sheet's end is hidden or formatted: allowed up to Excel's own last column (exceljs makes
  // one small object per column).
  readonly maxColumnDefinition: number;
  // One worksheet per brand.
  readonly maxSheets: number;
  // `<c>` elements plus the cells merged ranges add: a full 10,000-value file has about 20,000
  // (values, store names, headers).
  readonly maxCells: number;
  readonly maxSharedStrings: number;
  readonly maxMerges: number;
  // Cells that data validations and defined names expand to.
  readonly maxExpandedCells: number;
  readonly maxElements: number;
  readonly maxAttributes: number;
  readonly maxDepth: number;
}

export const XLSX_LIMITS: XlsxLimits = {
  maxRow: 20_000,
  maxColumn: 1_024,
  maxColumnDefinition: 16_384,
  maxSheets: 64,
  maxCells: 60_000,
  maxSharedStrings: 60_000,
  maxMerges: 1_000,
  maxExpandedCells: 100_000,
  maxElements: 500_000,
  maxAttributes: 1_000_000,
  maxDepth: 64,
};

// References exceljs keeps as text or ignores, and which Excel writes over whole columns or the
// whole sheet (a selected column is sqref="B1:B1048576"): never expanded, so not bounded.
const UNBOUNDED_REFERENCES = new Set([
  "selection",
  "conditionalFormatting",
  "ignoredError",
  "protectedRange",
]);

interface Address {
  readonly col: number | undefined;
  readonly row: number | undefined;
}

// exceljs's colCache.decodeAddress: A-Z before any digit are the column, every digit up to the
// first other character (once both are seen, `$` aside) is the row.
export const decodeAddress = (value: string): Address => {
  let hasCol = false;
  let hasRow = false;
  let col = 0;
  let row = 0;
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if (!hasRow && c >= 65 && c <= 90) {
      hasCol = true;
      col = col * 26 + c - 64;
    } else if (c >= 48 && c <= 57) {
      hasRow = true;
      row = row * 10 + c - 48;
    } else if (hasRow && hasCol && c !== 36) {
      break;
    }
  }
  return { col: hasCol ? col : undefined, row: hasRow ? row : undefined };
};

const EXCEL_COLUMNS = 16_384;
const SHEET_PREFIX = /(?:(?:(?:'((?:[^']|'')*)')|([^'^ !]*))!)?(.*)/;

interface Span {
  // Every address the reference names (exceljs reads the first two of a:b:c).
  readonly addresses: ReadonlyArray<Address>;
  // Cells exceljs visits when it expands the range.
  readonly cells: number;
  // exceljs's decodeEx would throw on it.
  readonly invalid: boolean;
}

// exceljs's colCache.decodeEx of `[sheet!]a[:b]`, reduced to what sizes its work. The cell count
// is its Range's (merges, data validations): without a top row one cell, else every missing or
// zero bound reads as 1. Defined names visit no more than that.
export const decodeRange = (value: string): Span => {
  const reference = SHEET_PREFIX.exec(value)?.[3] ?? "";
  const parts = reference.split(":");
  const addresses = parts.map(decodeAddress);
  const invalid = addresses.slice(0, 2).some((a) => a.col !== undefined && a.col > EXCEL_COLUMNS);
  if (parts.length === 1) return { addresses, cells: 1, invalid };
  const [tl, br] = addresses;
  const top = Math.min(tl.row ?? NaN, br.row ?? NaN);
  if (!top) return { addresses, cells: 1, invalid };
  const bottom = Math.max(tl.row ?? NaN, br.row ?? NaN);
  const left = Math.min(tl.col ?? NaN, br.col ?? NaN) || 1;
  const right = Math.max(tl.col ?? NaN, br.col ?? NaN) || 1;
  return { addresses, cells: (bottom - top + 1) * (right - left + 1), invalid };
};

// exceljs's extractRanges of a defined name's text: comma-separated ranges, quoted sheet names
// may hold commas, and only ranges decodeEx accepts are kept.
export const definedNameRanges = (text: string): ReadonlyArray<string> => {
  const ranges: Array<string> = [];
  const valid = (range: string) => !decodeRange(range).invalid;
  let quotesOpened = false;
  let last = "";
  for (const item of text.split(",")) {
    if (item === "") continue;
    const quotes = (item.match(/'/g) ?? []).length;
    if (quotes === 0) {
      if (quotesOpened) last += `${item},`;
      else if (valid(item)) ranges.push(item);
      continue;
    }
    const even = quotes % 2 === 0;
    if (!quotesOpened && even && valid(item)) {
      ranges.push(item);
    } else if (quotesOpened && !even) {
      quotesOpened = false;
      if (valid(last + item)) ranges.push(last + item);
      last = "";
    } else {
      quotesOpened = true;
      last += `${item},`;
    }
  }
  return ranges;
};

const ENTITY = /&(#x[0-9a-fA-F]+|#[0-9]+|amp|lt|gt|quot|apos);/g;
const NAMED: Record<string, string> = { amp: "&", lt: "<", gt: ">", quot: '"', apos: "'" };

// XML text with its predefined entities and character references replaced, as saxes reads it.
export const unescapeXml = (text: string) =>
  text.includes("&")
    ? text.replace(ENTITY, (all, e: string) => {
      if (e[0] !== "#") return NAMED[e];
      const code = e[1] === "x" ? parseInt(e.slice(2), 16) : parseInt(e.slice(1), 10);
      return code <= 0x10ffff ? String.fromCodePoint(code) : all;
    })
    : text;

const decoder = new TextDecoder();

// Bytes as text: a loop for short ASCII (most names and references), TextDecoder otherwise.
const text = (bytes: Uint8Array, start: number, end: number): string => {
  if (end - start > 64) return decoder.decode(bytes.subarray(start, end));
  let s = "";
  for (let k = start; k < end; k++) {
    const b = bytes[k];
    if (b >= 0x80) return decoder.decode(bytes.subarray(start, end));
    s += String.fromCharCode(b);
  }
  return s;
};

const LT = 0x3c;
const GT = 0x3e;
const SLASH = 0x2f;
const BANG = 0x21;
const QUESTION = 0x3f;
const EQUALS = 0x3d;
const COLON = 0x3a;

const isSpace = (b: number) => b === 0x20 || b === 0x09 || b === 0x0a || b === 0x0d;
// Bytes that end an element or attribute name.
const endsName = (b: number) => isSpace(b) || b === GT || b === SLASH || b === EQUALS;
const startsName = (b: number) =>
  (b >= 0x41 && b <= 0x5a) || (b >= 0x61 && b <= 0x7a) || b === 0x5f || b === COLON || b >= 0x80;

const ascii = (s: string) => Uint8Array.from(s, (c) => c.charCodeAt(0));
const COMMENT = ascii("<!--");
const COMMENT_END = ascii("-->");
const CDATA = ascii("<![CDATA[");
const CDATA_END = ascii("]]>");
const DOCTYPE = ascii("<!DOCTYPE");
const ENTITY_DECLARATION = ascii("<!ENTITY");
const PI_END = ascii("?>");

const startsAt = (bytes: Uint8Array, at: number, seq: Uint8Array) => {
  if (at + seq.length > bytes.length) return false;
  for (let k = 0; k < seq.length; k++) if (bytes[at + k] !== seq[k]) return false;
  return true;
};

// The first index >= from where seq starts, else -1.
const find = (bytes: Uint8Array, seq: Uint8Array, from: number) => {
  for (let at = bytes.indexOf(seq[0], from); at >= 0; at = bytes.indexOf(seq[0], at + 1)) {
    if (startsAt(bytes, at, seq)) return at;
  }
  return -1;
};

// The attributes a check reads; any other attribute is only counted.
const READ_ATTRIBUTES = new Set(["r", "ref", "sqref", "min", "max"]);

/**
 * Tallies and bounds the XML entries of one workbook. `check` is given every entry of the ZIP (the
 * names exceljs matches are not relied on: any entry might be parsed, so every one is scanned);
 * non-XML bytes pass through as text. Each check returns a problem (in both languages) or
 * undefined.
 */
export class WorkbookScan {
  private cells = 0;
  private sharedStrings = 0;
  private merges = 0;
  private expanded = 0;
  private elements = 0;
  private attributes = 0;
  private sheets = 0;
  private worksheets = 0;

  constructor(private readonly limits: XlsxLimits = XLSX_LIMITS) {}

  private checkAddress(a: Address, what: Text, where: string): Text | undefined {
    const { maxRow, maxColumn } = this.limits;
    if (a.row !== undefined && a.row > maxRow) {
      return t(
        `${what.en} in ${where} reaches row ${a.row}; a file may use rows 1 to ${maxRow}`,
        `${where} 中的${what.zh} 到达第 ${a.row} 行；文件只能使用第 1 至 ${maxRow} 行`,
      );
    }
    if (a.col !== undefined && a.col > maxColumn) {
      return t(
        `${what.en} in ${where} reaches column ${a.col}; a file may use columns 1 to ${maxColumn}`,
        `${where} 中的${what.zh} 到达第 ${a.col} 列；文件只能使用第 1 至 ${maxColumn} 列`,
      );
    }
    return undefined;
  }

  // Each address of a (possibly space-separated) reference; returns the cells it expands to.
  private checkReference(
    value: string,
    what: Text,
    where: string,
  ): { problem: Text } | { cells: number } {
    let cells = 0;
    for (const token of value.split(/\s+/)) {
      if (token === "") continue;
      const span = decodeRange(token);
      for (const a of span.addresses) {
        const quoted = q(token);
        const problem = this.checkAddress(
          a,
          t(`${what.en} ${quoted}`, `${what.zh} ${quoted}`),
          where,
        );
        if (problem !== undefined) return { problem };
      }
      cells += span.cells;
    }
    return { cells };
  }

  private expand(cells: number, where: string): Text | undefined {
    this.expanded += cells;
    const max = this.limits.maxExpandedCells;
    return this.expanded > max
      ? t(
        `data validations and defined names in ${where} cover more than ${max} cells: limit them to the cells in use`,
        `${where} 中的数据验证和定义名称覆盖了超过 ${max} 个单元格：请只让它们覆盖实际使用的单元格`,
      )
      : undefined;
  }

  check(name: string, bytes: Uint8Array): Text | undefined {
    const limits = this.limits;
    const where = qPath(name);
    const n = bytes.length;
    let depth = 0;
    // Column of the previous <c> of the current row: a <c> without r is the next column.
    let column: number | undefined;
    // The text of an open <definedName>.
    let definedName: Array<string> | undefined;
    let i = 0;
    while (i < n) {
      const lt = bytes.indexOf(LT, i);
      if (lt < 0) break;
      if (definedName !== undefined && lt > i) definedName.push(text(bytes, i, lt));
      const next = bytes[lt + 1];
      if (next === BANG) {
        if (startsAt(bytes, lt, COMMENT)) {
          const end = find(bytes, COMMENT_END, lt + COMMENT.length);
          i = end < 0 ? n : end + COMMENT_END.length;
        } else if (startsAt(bytes, lt, CDATA)) {
          const end = find(bytes, CDATA_END, lt + CDATA.length);
          const stop = end < 0 ? n : end;
          definedName?.push(text(bytes, lt + CDATA.length, stop));
          i = end < 0 ? n : end + CDATA_END.length;
        } else if (startsAt(bytes, lt, DOCTYPE) || startsAt(bytes, lt, ENTITY_DECLARATION)) {
          return t(
            `${where} declares a document type, which a workbook never does`,
            `${where} 声明了文档类型，而工作簿从不这样做`,
          );
        } else {
          i = lt + 1;
        }
        continue;
      }
      if (next === QUESTION) {
        const end = find(bytes, PI_END, lt + 2);
        i = end < 0 ? n : end + PI_END.length;
        continue;
      }
      if (next === SLASH) {
        let j = lt + 2;
        while (j < n && !endsName(bytes[j])) j++;
        const local = localName(bytes, lt + 2, j).local;
        if (local === "definedName" && definedName !== undefined) {
          const problem = this.checkDefinedName(definedName.join(""), where);
          if (problem !== undefined) return problem;
          definedName = undefined;
        }
        depth--;
        const gt = bytes.indexOf(GT, j);
        i = gt < 0 ? n : gt + 1;
        continue;
      }
      if (next === undefined || !startsName(next)) {
        i = lt + 1;
        continue;
      }

      // A start tag: its name, then attributes until > or />.
      let j = lt + 1;
      while (j < n && !endsName(bytes[j])) j++;
      const { local, prefixed } = localName(bytes, lt + 1, j);
      let read: Map<string, string> | undefined;
      let selfClosing = false;
      let ended = false;
      while (j < n) {
        while (j < n && isSpace(bytes[j])) j++;
        const b = bytes[j];
        if (b === GT) {
          ended = true;
          j++;
          break;
        }
        if (b === SLASH && bytes[j + 1] === GT) {
          ended = selfClosing = true;
          j += 2;
          break;
        }
        const nameStart = j;
        while (j < n && !endsName(bytes[j])) j++;
        const nameEnd = j;
        while (j < n && isSpace(bytes[j])) j++;
        if (nameEnd === nameStart || bytes[j] !== EQUALS) break;
        j++;
        while (j < n && isSpace(bytes[j])) j++;
        const quote = bytes[j];
        if (quote !== 0x22 && quote !== 0x27) break;
        const close = bytes.indexOf(quote, j + 1);
        if (close < 0) break;
        if (++this.attributes > limits.maxAttributes) {
          return t(
            `the workbook's XML has more than ${limits.maxAttributes} attributes`,
            `工作簿的 XML 中有超过 ${limits.maxAttributes} 个属性`,
          );
        }
        const attribute = nameEnd - nameStart <= 5 ? text(bytes, nameStart, nameEnd) : undefined;
        if (attribute !== undefined && READ_ATTRIBUTES.has(attribute)) {
          read ??= new Map();
          // A repeated attribute makes the XML invalid; the larger reading is kept, to be safe.
          const value = unescapeXml(text(bytes, j + 1, close));
          read.set(attribute, (read.get(attribute) ?? "") + " " + value);
        }
        j = close + 1;
      }
      // Malformed markup: the XML parser stops there, and nothing after it is used.
      if (!ended) {
        i = j + 1;
        continue;
      }
      i = j;
      if (++this.elements > limits.maxElements) {
        return t(
          `the workbook's XML has more than ${limits.maxElements} elements`,
          `工作簿的 XML 中有超过 ${limits.maxElements} 个元素`,
        );
      }
      if (!selfClosing && ++depth > limits.maxDepth) {
        return t(
          `the XML of ${where} is nested more than ${limits.maxDepth} levels deep`,
          `${where} 的 XML 嵌套超过 ${limits.maxDepth} 层`,
        );
      }
      const problem = this.element(local, prefixed, read, where, column);
      if (typeof problem === "object") return problem;
      if (local === "row") column = 0;
      else if (local === "c") column = problem;
      if (local === "definedName" && !selfClosing) definedName = [];
    }
    return undefined;
  }

  // Checks one start tag; for a <c>, returns its column.
  private element(
    local: string,
    prefixed: boolean,
    read: Map<string, string> | undefined,
    where: string,
    previousColumn: number | undefined,
  ): Text | number | undefined {
    const limits = this.limits;
    switch (local) {
      case "c": {
        if (++this.cells > limits.maxCells) return this.tooManyCells();
        const r = read?.get("r");
        if (r === undefined) {
          const col = previousColumn === undefined ? undefined : previousColumn + 1;
          if (col !== undefined && col > limits.maxColumn) {
            return t(
              `a cell in ${where} reaches column ${col}; a file may use columns 1 to ${limits.maxColumn}`,
              `${where} 中的一个单元格到达第 ${col} 列；文件只能使用第 1 至 ${limits.maxColumn} 列`,
            );
          }
          return col;
        }
        let col: number | undefined;
        for (const ref of r.split(" ")) {
          if (ref === "") continue;
          const a = decodeAddress(ref);
          const quoted = q(ref);
          const problem = this.checkAddress(a, t(`the cell ${quoted}`, `单元格 ${quoted}`), where);
          if (problem !== undefined) return problem;
          col = Math.max(col ?? 0, a.col ?? 0);
        }
        return col;
      }
      case "row": {
        for (const r of (read?.get("r") ?? "").split(" ")) {
          if (r === "") continue;
          const row = parseInt(r, 10);
          if (row < 1 || row > limits.maxRow) {
            const quoted = q(r);
            return t(
              `row ${quoted} in ${where} is outside rows 1 to ${limits.maxRow}`,
              `${where} 中的行 ${quoted} 超出第 1 至 ${limits.maxRow} 行的范围`,
            );
          }
        }
        return undefined;
      }
      case "col": {
        for (const bound of ["min", "max"]) {
          for (const v of (read?.get(bound) ?? "").split(" ")) {
            if (v === "") continue;
            const n = parseInt(v, 10);
            if (n > limits.maxColumnDefinition) {
              return t(
                `a column definition in ${where} reaches column ${n}; Excel has ${limits.maxColumnDefinition}`,
                `${where} 中的列定义到达第 ${n} 列；Excel 只有 ${limits.maxColumnDefinition} 列`,
              );
            }
          }
        }
        return undefined;
      }
      case "mergeCell": {
        if (++this.merges > limits.maxMerges) {
          return t(
            `the workbook has more than ${limits.maxMerges} merged ranges`,
            `工作簿中有超过 ${limits.maxMerges} 个合并区域`,
          );
        }
        const checked = this.checkReference(
          read?.get("ref") ?? "",
          t("the merged range", "合并区域"),
          where,
        );
        if ("problem" in checked) return checked.problem;
        this.cells += Math.max(0, checked.cells - 1);
        return this.cells > limits.maxCells ? this.tooManyCells() : undefined;
      }
      case "dataValidation": {
        const checked = this.checkReference(
          read?.get("sqref") ?? "",
          t("the data validation", "数据验证"),
          where,
        );
        if ("problem" in checked) return checked.problem;
        return this.expand(checked.cells, where);
      }
      case "si":
        return ++this.sharedStrings > limits.maxSharedStrings
          ? t(
            `the workbook has more than ${limits.maxSharedStrings} shared strings`,
            `工作簿中有超过 ${limits.maxSharedStrings} 个共享字符串`,
          )
          : undefined;
      case "sheet":
        return ++this.sheets > limits.maxSheets ? this.tooManySheets() : undefined;
      case "worksheet":
        return ++this.worksheets > limits.maxSheets ? this.tooManySheets() : undefined;
    }
    // Prefixed elements (DrawingML's <a:fillToRect r="50000">, where r is "right") are never
    // SpreadsheetML cells to exceljs, which matches names with their prefix.
    if (read === undefined || prefixed || UNBOUNDED_REFERENCES.has(local)) return undefined;
    for (const attribute of ["r", "ref", "sqref"]) {
      const value = read.get(attribute);
      if (value === undefined) continue;
      const checked = this.checkReference(
        value,
        t(`the reference of <${local}>`, `元素 <${local}> 的引用`),
        where,
      );
      if ("problem" in checked) return checked.problem;
    }
    return undefined;
  }

  private tooManyCells(): Text {
    const max = this.limits.maxCells;
    return t(
      `the workbook has more than ${max} cells (a file holds at most 10,000 values)`,
      `工作簿中有超过 ${max} 个单元格（一个文件最多包含 10,000 个值）`,
    );
  }

  private tooManySheets(): Text {
    const max = this.limits.maxSheets;
    return t(`the workbook has more than ${max} worksheets`, `工作簿中有超过 ${max} 个工作表`);
  }

  private checkDefinedName(text: string, where: string): Text | undefined {
    const value = unescapeXml(text);
    let cells = 0;
    for (const range of definedNameRanges(value)) {
      const span = decodeRange(range);
      for (const a of span.addresses) {
        const quoted = q(range);
        const problem = this.checkAddress(
          a,
          t(`the defined name ${quoted}`, `定义名称 ${quoted}`),
          where,
        );
        if (problem !== undefined) return problem;
      }
      cells += span.cells;
    }
    return this.expand(cells, where);
  }
}

// An element's name without its prefix ("" when longer than any name checked here).
const localName = (bytes: Uint8Array, start: number, end: number) => {
  let from = start;
  for (let k = start; k < end; k++) if (bytes[k] === COLON) from = k + 1;
  return { local: end - from > 40 ? "" : text(bytes, from, end), prefixed: from !== start };
};
