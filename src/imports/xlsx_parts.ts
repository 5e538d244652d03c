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

const NUM_FMT_CODE = /(<numFmt\b[^>]*?\bformatCode\s*=\s*)(["'])(.*?)\2/g;

/**
 * The styles part with "0" for each format code that exceljs takes for a date only because it holds
 * a date letter written as a literal (`0.00\ \k\W\h`, isDateFormat), so that it reads such cells
 * as the numbers the direct reader reads; undefined when it has none.
 */
export const literalLetterFormats = (styles: Uint8Array): Uint8Array | undefined => {
  const xml = decoder.decode(styles);
  let changed = false;
  const fixed = xml.replace(NUM_FMT_CODE, (all, head: string, quote: string, code: string) => {
    const text = unescapeXml(code);
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
const CELL = /<c\b([^>]*?)(?:\/>|>([\s\S]*?)<\/c>)/g;
const VALUE = /<v\b[^>]*>([^<]*)<\/v>/;
const TYPES_READ = new Set(["n", "s", "str", "inlineStr", "b", "e"]);
const attribute = (attributes: string, name: string) =>
  new RegExp(`(?:^|\\s)${name}\\s*=\\s*["']([^"']*)["']`).exec(attributes)?.[1];

// The worksheets' names by part, as far as the workbook and its relationships say them plainly.
const sheetNames = (entries: ReadonlyMap<string, Uint8Array>) => {
  const part = (name: string) => entries.get(name) ?? new Uint8Array();
  const targets = new Map<string, string>();
  for (
    const [, raw] of decoder.decode(part("xl/_rels/workbook.xml.rels")).matchAll(
      /<Relationship\b([^>]*)>/g,
    )
  ) {
    const id = attribute(raw, "Id");
    const target = attribute(raw, "Target");
    if (id !== undefined && target !== undefined) {
      targets.set(id, `xl/${target.replace(/^(\s|\/xl\/)+/, "")}`);
    }
  }
  const names = new Map<string, string>();
  for (const [, raw] of decoder.decode(part("xl/workbook.xml")).matchAll(/<sheet\b([^>]*)>/g)) {
    const id = attribute(raw, "r:id");
    const name = attribute(raw, "name");
    const target = id === undefined ? undefined : targets.get(id);
    if (target !== undefined && name !== undefined) names.set(target, unescapeXml(name));
  }
  return names;
};

/**
 * The first cell that exceljs would read as a number other than what it holds: a date cell
 * (t="d", whose ISO text it reads as its year), a type it does not know, or a number's text that is
 * not a number ("1,5", "12.5kWh"), of which it reads the number the text begins with. The direct
 * reader reads none of these as a number; a workbook it leaves to exceljs is refused for them.
 */
export const misreadCell = (
  entries: ReadonlyMap<string, Uint8Array>,
):
  | { readonly sheet: string | null; readonly cell: string | null; readonly raw: string }
  | undefined => {
  for (const [name, bytes] of entries) {
    if (!WORKSHEET_PART.test(name)) continue;
    for (const [, attributes, inner] of decoder.decode(bytes).matchAll(CELL)) {
      const type = attribute(attributes, "t");
      const value = inner === undefined ? undefined : VALUE.exec(inner)?.[1];
      if (value === undefined) continue;
      const text = unescapeXml(value);
      const misread = type === undefined || type === "n"
        ? text.trim() !== "" && !NUMBER_TEXT.test(text)
        : !TYPES_READ.has(type);
      if (misread) {
        return {
          sheet: sheetNames(entries).get(name) ?? null,
          cell: attribute(attributes, "r") ?? null,
          raw: text,
        };
      }
    }
  }
  return undefined;
};
