// What a workbook's parts must say before either reader (xlsx_direct.ts, exceljs) reads them.
import { isDateFormat, NUMBER_TEXT } from "./xlsx_direct.ts";
import { unescapeXml } from "./xlsx_scan.ts";

export const STYLES_PART = "xl/styles.xml";
const SHARED_STRINGS_PART = "xl/sharedStrings.xml";

// Number formats 27-36 and 50-58 are the East Asian built-in dates and times (ECMA-376 18.8.30):
// Excel in a Chinese locale names them by id alone, with no code in styles.xml, and exceljs's table
// (which the direct reader follows) leaves them out, so a date typed as 2026年11月10日 or 11月10日
// would be read as its serial number: 46336 kWh. Their zh-CN codes, as exceljs lists them.
const EAST_ASIAN_FORMATS: Readonly<Record<number, string>> = {
  27: 'yyyy"年"m"月"',
  28: 'm"月"d"日"',
  29: 'm"月"d"日"',
  30: "m-d-yy",
  31: 'yyyy"年"m"月"d"日"',
  32: 'h"时"mm"分"',
  33: 'h"时"mm"分"ss"秒"',
  34: '上午/下午 h"时"mm"分"',
  35: '上午/下午 h"时"mm"分"ss"秒"',
  36: 'yyyy"年"m"月"',
  50: 'yyyy"年"m"月"',
  51: 'm"月"d"日"',
  52: 'yyyy"年"m"月"',
  53: 'm"月"d"日"',
  54: 'm"月"d"日"',
  55: '上午/下午 h"时"mm"分"',
  56: '上午/下午 h"时"mm"分"ss"秒"',
  57: 'yyyy"年"m"月"',
  58: 'm"月"d"日"',
};

const decoder = new TextDecoder();
const encoder = new TextEncoder();

const escapeAttribute = (text: string) =>
  text.replaceAll("&", "&amp;").replaceAll('"', "&quot;").replaceAll("<", "&lt;");

const numFmtIds = (xml: string, element: "xf" | "numFmt") =>
  Array.from(
    xml.matchAll(new RegExp(`<${element}\\b[^>]*?\\bnumFmtId\\s*=\\s*["'](\\d+)["']`, "g")),
    (m) => Number(m[1]),
  );

/**
 * The styles part with a code written for each East Asian built-in format its cell styles use and
 * it does not define, so that both readers read those cells as dates; undefined when it needs
 * none. Formats are defined in <numFmts>, made when the part has none.
 */
export const defineEastAsianFormats = (styles: Uint8Array): Uint8Array | undefined => {
  const xml = decoder.decode(styles);
  const block = /<numFmts\b[^>]*?(\/>|>([\s\S]*?)<\/numFmts>)/.exec(xml);
  const defined = new Set(block === null ? [] : numFmtIds(block[2] ?? "", "numFmt"));
  const missing = [...new Set(numFmtIds(xml, "xf"))].filter((id) =>
    EAST_ASIAN_FORMATS[id] !== undefined && !defined.has(id)
  );
  if (missing.length === 0) return undefined;
  const codes = missing.map((id) =>
    `<numFmt numFmtId="${id}" formatCode="${escapeAttribute(EAST_ASIAN_FORMATS[id])}"/>`
  ).join("");
  if (block !== null) {
    const open = block[0].slice(0, block[0].length - block[1].length);
    const inner = block[2] ?? "";
    const at = block.index;
    return encoder.encode(
      `${xml.slice(0, at)}${open}>${codes}${inner}</numFmts>${xml.slice(at + block[0].length)}`,
    );
  }
  const root = /<styleSheet\b[^>]*?>/.exec(xml);
  if (root === null || root[0].endsWith("/>")) return undefined;
  const end = root.index + root[0].length;
  return encoder.encode(`${xml.slice(0, end)}<numFmts>${codes}</numFmts>${xml.slice(end)}`);
};

// A format's code in either quote; nothing in it or before it runs past the next `<`.
const NUM_FMT_CODE = /(<numFmt\b[^<>]*?\bformatCode\s*=\s*)(?:"([^"<]*)"|'([^'<]*)')/g;

/**
 * The styles part with "0" for each format code that exceljs takes for a date only because it holds
 * a date letter written as a literal (`0.00\ \k\W\h`, isDateFormat), so that it reads such cells
 * as the numbers the direct reader reads; undefined when it has none.
 */
export const literalLetterFormats = (styles: Uint8Array): Uint8Array | undefined => {
  const xml = decoder.decode(styles);
  let changed = false;
  const fixed = xml.replace(NUM_FMT_CODE, (all, head: string, double?: string, single?: string) => {
    const quote = double === undefined ? "'" : '"';
    const text = unescapeXml(double ?? single ?? "");
    const excel = /[ymdhMsb]+/.test(text.replace(/\[[^\]]*]/g, "").replace(/"[^"]*"/g, ""));
    if (!excel || isDateFormat(text)) return all;
    changed = true;
    return `${head}${quote}0${quote}`;
  });
  return changed ? encoder.encode(fixed) : undefined;
};

// A cell of shared text (t="s"), whose value is an index into the shared strings.
const SHARED_CELL = /<c\b[^>]*?\bt\s*=\s*["']s["']/;

// Whether a worksheet has cells of shared text while the workbook has no shared strings: exceljs
// would read each such cell as its index, a number.
export const sharedStringsMissing = (entries: ReadonlyMap<string, Uint8Array>): boolean =>
  !entries.has(SHARED_STRINGS_PART) &&
  Array.from(entries).some(([name, bytes]) =>
    /^xl\/worksheets\/[^/]+\.xml$/.test(name) && SHARED_CELL.test(decoder.decode(bytes))
  );

const WORKSHEET_PART = /^xl\/worksheets\/[^/]+\.xml$/;

// An element's attributes, each value in either quote (a quote of the other kind, or `>`, may stand
// inside it), entities decoded. A name starts after white space, so that no text is scanned twice.
const ATTRIBUTE = /(?:^|\s)([A-Za-z_][\w.:-]*)\s*=\s*(?:"([^"]*)"|'([^']*)')/g;
const attributesOf = (tag: string) =>
  new Map(
    Array.from(tag.matchAll(ATTRIBUTE), (m) => [m[1], unescapeXml(m[2] ?? m[3])] as const),
  );
// A start tag's attributes as written: a quoted `>` does not end it, and none holds a `<` (XML
// allows none), so that a tag left open is given up at the next `<`, not scanned to the end.
const TAG_BODY = `((?:[^<>"']|"[^"<]*"|'[^'<]*')*)`;
// The start tags of one element name, by their attributes.
const startTags = (xml: string, name: string) =>
  Array.from(
    xml.matchAll(new RegExp(`<${name}\\b${TAG_BODY}>`, "g")),
    (m) => attributesOf(m[1]),
  );

// The worksheets' names by part, as far as the workbook and its relationships say them.
const sheetNames = (entries: ReadonlyMap<string, Uint8Array>) => {
  const part = (name: string) => decoder.decode(entries.get(name) ?? new Uint8Array());
  const targets = new Map<string, string>();
  for (const rel of startTags(part("xl/_rels/workbook.xml.rels"), "Relationship")) {
    const id = rel.get("Id");
    const target = rel.get("Target");
    if (id !== undefined && target !== undefined) {
      targets.set(id, `xl/${target.replace(/^(\s|\/xl\/)+/, "")}`);
    }
  }
  const names = new Map<string, string>();
  for (const sheet of startTags(part("xl/workbook.xml"), "sheet")) {
    const id = sheet.get("r:id");
    const name = sheet.get("name");
    const target = id === undefined ? undefined : targets.get(id);
    if (target !== undefined && name !== undefined) names.set(target, name);
  }
  return names;
};

// A cell's start tag at the scan's place (its attributes, and `/` when it has no content).
const CELL_START = new RegExp(`<c((?:\\s${TAG_BODY})?)>`, "y");
const CELL_END = /<\/c\s*>/g;
// What `<!--`, `<![CDATA[`, `<?` and `<!` open ends with: the scan passes over it whole.
const SKIPPED: ReadonlyArray<readonly [string, string]> = [
  ["<!--", "-->"],
  ["<![CDATA[", "]]>"],
  ["<?", "?>"],
  ["<!", ">"],
];

/**
 * The cells of a worksheet's XML, in one pass: each cell's attributes and its content (undefined
 * for an empty element). Comments, CDATA sections and declarations outside cells are passed over as
 * an XML parser passes them; the scan stops where the part stops being well-formed (an unclosed
 * cell, comment or tag), which exceljs then refuses in its own words.
 */
function* cellsOf(xml: string): Generator<{
  readonly attributes: ReadonlyMap<string, string>;
  readonly content: string | undefined;
}> {
  let at = 0;
  for (;;) {
    const lt = xml.indexOf("<", at);
    if (lt < 0) return;
    const skipped = SKIPPED.find(([open]) => xml.startsWith(open, lt));
    if (skipped !== undefined) {
      const end = xml.indexOf(skipped[1], lt + skipped[0].length);
      if (end < 0) return;
      at = end + skipped[1].length;
      continue;
    }
    CELL_START.lastIndex = lt;
    const start = CELL_START.exec(xml);
    if (start === null) {
      at = lt + 1;
      continue;
    }
    const head = start[1];
    if (head.endsWith("/")) {
      yield { attributes: attributesOf(head.slice(0, -1)), content: undefined };
      at = CELL_START.lastIndex;
      continue;
    }
    CELL_END.lastIndex = CELL_START.lastIndex;
    const end = CELL_END.exec(xml);
    if (end === null) return;
    yield { attributes: attributesOf(head), content: xml.slice(CELL_START.lastIndex, end.index) };
    at = CELL_END.lastIndex;
  }
}

// A cell's content as spreadsheet programs write it: a formula (empty or of plain text), then one
// value of plain text. exceljs joins every text inside a cell (around a comment, across two values),
// so any other content is not read as written.
// (Matched on the trimmed content, so that no run of blanks can be split in more than one way.)
const PLAIN_CONTENT =
  /^(?:(<f\b[^<>]*\/>|<f\b[^<>]*>[^<]*<\/f\s*>)\s*)?(?:<v\b[^<>]*>([^<]*)<\/v\s*>)?$/;
// The types whose value exceljs reads as written (as text, an index, a boolean or an error); a
// formula's result only as text, a boolean or an error, else as a number.
const TYPES_READ = new Set(["s", "str", "b", "e"]);
const RESULT_TYPES_READ = new Set(["str", "b", "e"]);

/**
 * The first cell that exceljs would read as another value than the one it holds: a number's text
 * that is not a number ("1,5", "12.5kWh", of which it reads the number the text begins with), a date
 * cell (t="d", whose ISO text it reads as its year), a type it does not know, a formula of shared
 * text (whose index it reads as the result), or content other than a formula and one value (text
 * around a comment, two values, which it joins). The direct reader reads none of these as a
 * number; a workbook it leaves to exceljs is refused for them. One pass over each worksheet.
 */
export const misreadCell = (
  entries: ReadonlyMap<string, Uint8Array>,
):
  | { readonly sheet: string | null; readonly cell: string | null; readonly raw: string }
  | undefined => {
  for (const [name, bytes] of entries) {
    if (!WORKSHEET_PART.test(name)) continue;
    for (const { attributes, content } of cellsOf(decoder.decode(bytes))) {
      const type = attributes.get("t") || undefined;
      if (content === undefined || type === "inlineStr") continue;
      const trimmed = content.trim();
      const plain = PLAIN_CONTENT.exec(trimmed);
      let misread: string | undefined;
      if (plain === null) {
        misread = trimmed;
      } else if (plain[2] !== undefined) {
        const text = unescapeXml(plain[2]);
        const read = type === undefined || type === "n"
          ? text.trim() === "" || NUMBER_TEXT.test(text)
          : (plain[1] === undefined ? TYPES_READ : RESULT_TYPES_READ).has(type);
        if (!read) misread = text;
      }
      if (misread !== undefined) {
        return {
          sheet: sheetNames(entries).get(name) ?? null,
          cell: attributes.get("r") ?? null,
          raw: misread,
        };
      }
    }
  }
  return undefined;
};
