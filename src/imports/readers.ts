// Import file readers: bytes -> ReadFile (XLSX wide table or CSV long table) or FileRejected.
import { isUtf8 } from "node:buffer";
import { Effect } from "effect";
import type { FileProblem, FileRejected, ReadContext, ReadFile } from "./model.ts";
import { reject } from "./cell_values.ts";
import { readCsv } from "./csv_reader.ts";
import { readXlsx } from "./xlsx_reader.ts";

export { energyFromXlsxNumber, parseEnergyText, resolveHeaderDate } from "./cell_values.ts";
import { span } from "../ops/span.ts";
import { type Language, pick, type Text } from "../domain/language.ts";
import { clip, Problems, q as quote } from "./problem_texts.ts";
export { CSV_COLUMNS, CSV_NOTE_COLUMN } from "./csv_reader.ts";
export { STORE_NAME_HEADER } from "../files/template.ts";

const MAX_LISTED_PROBLEMS = 1000;

const startsWith = (bytes: Uint8Array, signature: ReadonlyArray<number>) =>
  bytes.length >= signature.length && signature.every((b, i) => bytes[i] === b);

const ZIP = [0x50, 0x4b, 0x03, 0x04];
// The OLE2 container of a pre-2007 .xls workbook.
const OLE2 = [0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1];
const UTF16_LE = [0xff, 0xfe];
const UTF16_BE = [0xfe, 0xff];

const UTF8_BOM = [0xef, 0xbb, 0xbf];

const asciiSpace = (b: number) => b === 0x20 || (b >= 0x09 && b <= 0x0d);

// The bytes of UTF-8 text without its BOM, checked whole without making a string of them (the CSV
// reader decodes them a field at a time); or the problem that makes them no CSV.
const checkText = (bytes: Uint8Array): Uint8Array | { problem: Text } => {
  if (startsWith(bytes, OLE2)) {
    return { problem: Problems.oldXls() };
  }
  if (startsWith(bytes, UTF16_LE) || startsWith(bytes, UTF16_BE)) {
    return { problem: Problems.utf16() };
  }
  if (!isUtf8(bytes)) return { problem: Problems.notUtf8() };
  // In valid UTF-8 a zero byte is U+0000 and nothing else.
  if (bytes.includes(0)) return { problem: Problems.binary() };
  const text = startsWith(bytes, UTF8_BOM) ? bytes.subarray(UTF8_BOM.length) : bytes;
  // Text with a byte of ASCII other than white space is not blank; only other text is decoded to
  // see (white space beyond ASCII counts, as String.prototype.trim sees it).
  const blank = text.every((b) => b >= 0x80 || asciiSpace(b)) &&
    new TextDecoder().decode(text).trim() === "";
  return blank ? { problem: Problems.empty() } : text;
};

// Format by content, not by filename: a ZIP is read as XLSX, anything else must be UTF-8 CSV.
// Every problem the file has is collected before it is rejected.
export const readImportFile = (
  filename: string,
  bytes: Uint8Array,
  context: ReadContext,
): Effect.Effect<ReadFile, FileRejected> =>
  Effect.suspend(() => {
    if (startsWith(bytes, ZIP)) return readXlsx(bytes, context);
    const text = checkText(bytes);
    return text instanceof Uint8Array ? readCsv(text, context) : reject(text.problem);
  }).pipe(
    span("Imports.readImportFile", { filename, bytes: bytes.length }),
  );

const locate = (p: FileProblem, language: Language): string => {
  const zh = language === "zh-CN";
  const parts = [
    p.sheet === null ? null : zh ? `工作表 ${quote(p.sheet)}` : `sheet ${quote(p.sheet)}`,
    p.row === null ? null : zh ? `第 ${p.row} 行` : `row ${p.row}`,
    p.column === null ? null : zh ? `${clip(p.column)} 列` : `column ${clip(p.column)}`,
    p.date === null ? null : zh ? `日期 ${p.date}` : `date ${p.date}`,
    p.raw === null ? null : zh ? `值 ${quote(p.raw)}` : `value ${quote(p.raw)}`,
  ].filter((s) => s !== null);
  return parts.length === 0 ? (zh ? "文件" : "file") : parts.join(zh ? "，" : ", ");
};

// The problems of the reader and of the resolver as one list, in the order of the file: worksheet
// by worksheet (workbook order), then by row; problems of one row keep their order, the reader's
// first. A problem of the whole file comes first.
export const sortProblems = (
  problems: ReadonlyArray<FileProblem>,
  sheets: ReadonlyArray<string>,
): ReadonlyArray<FileProblem> => {
  const sheetIndex = new Map(sheets.map((name, i) => [name, i]));
  const rank = (p: FileProblem) => p.sheet === null ? -1 : sheetIndex.get(p.sheet) ?? sheets.length;
  return problems
    .map((p, i) => ({ p, i }))
    .sort((a, b) => rank(a.p) - rank(b.p) || (a.p.row ?? 0) - (b.p.row ?? 0) || a.i - b.i)
    .map(({ p }) => p);
};

// One message for a rejected file in a language, one line per problem (the first 1000).
export const formatProblems = (
  problems: ReadonlyArray<FileProblem>,
  language: Language = "en",
): string => {
  const n = problems.length;
  const colon = language === "zh-CN" ? "：" : ": ";
  const lines = problems.slice(0, MAX_LISTED_PROBLEMS).map((p) =>
    `- ${locate(p, language)}${colon}${pick(p.message, language)}`
  );
  if (n > MAX_LISTED_PROBLEMS) lines.push(pick(Problems.more(n - MAX_LISTED_PROBLEMS), language));
  return [pick(Problems.rejected(n), language), ...lines].join("\n");
};
