// The texts of an import file's problems, in English and Chinese, each a function of what it names
// (the readers, the resolver and formatProblems use them; the request's language picks the form).
import { type Text, text as t } from "../domain/language.ts";
import { CSV_COLUMNS, CSV_NOTE_COLUMN } from "../files/layout.ts";
import { clip } from "../domain/messages.ts";

// A value of the file, quoted in a message: a long one only by its start (messages.ts).
export { clip };
export const q = (s: string) => JSON.stringify(clip(s));
// The name of an archive's entry, quoted: each part of its path shortened as a value is (a
// workbook's own names keep every part: "xl/worksheets/sheet1.xml"), the whole at most 100
// characters.
export const qPath = (name: string) =>
  JSON.stringify([...name.split("/").map(clip).join("/")].slice(0, 100).join(""));

// A library's message about the file (the CSV parser's, the workbook library's), which may quote
// the file's values or hold them unquoted: each quoted text shortened as q() shortens a value, then
// each run of characters without a space, and the whole at most 300 characters.
export const clipDetail = (message: string) =>
  [
    ...message.replace(/"(?:[^"\\]|\\.)*"/g, (literal) => {
      try {
        return q(JSON.parse(literal));
      } catch {
        return q(literal.slice(1, -1));
      }
    }).replace(/[^\s"]{21,}/gu, clip),
  ].slice(0, 300).join("");

const LAYOUT = t(
  `the header must be ${CSV_COLUMNS.join(", ")} and optionally ${CSV_NOTE_COLUMN}`,
  `表头须为 ${CSV_COLUMNS.join("、")}，可另加 ${CSV_NOTE_COLUMN}`,
);

const NOT_A_FILE = t(
  "not an XLSX workbook or a UTF-8 CSV file",
  "不是 XLSX 工作簿或 UTF-8 编码的 CSV 文件",
);
const NOT_READABLE = t("not a readable XLSX workbook", "不是可读取的 XLSX 工作簿");

const SEPARATOR_NAMES: Record<string, Text> = {
  ";": t("semicolons", "分号"),
  "\t": t("tabs", "制表符"),
  "|": t("vertical bars", "竖线"),
};

// A detail in both languages, or the workbook library's own words (kept as they are in both).
const asText = (detail: Text | string) => typeof detail === "string" ? t(detail, detail) : detail;

export const Problems = {
  // --- The file as a whole (readers.ts)
  oldXls: () =>
    t(
      `${NOT_A_FILE.en} (an old .xls workbook: save it as .xlsx)`,
      `${NOT_A_FILE.zh}（旧版 .xls 工作簿：请另存为 .xlsx）`,
    ),
  utf16: () =>
    t(
      `${NOT_A_FILE.en} (UTF-16 text: save the CSV as UTF-8)`,
      `${NOT_A_FILE.zh}（UTF-16 文本：请将 CSV 另存为 UTF-8）`,
    ),
  notUtf8: () =>
    t(
      `${NOT_A_FILE.en} (the text is not UTF-8: in Excel save as "CSV UTF-8", not as a CSV in ` +
        "the local encoding such as GBK)",
      `${NOT_A_FILE.zh}（文本不是 UTF-8：请在 Excel 中另存为“CSV UTF-8”，不要存为 GBK 等本地编码的 CSV）`,
    ),
  binary: () => t(`${NOT_A_FILE.en} (binary content)`, `${NOT_A_FILE.zh}（二进制内容）`),
  empty: () => t(`${NOT_A_FILE.en} (the file is empty)`, `${NOT_A_FILE.zh}（文件为空）`),
  // `detail`: what the archive or XML checks found, in both languages, or the workbook library's
  // own words (a string, kept as it is in both forms).
  notReadable: (detail: Text | string) => {
    const d = asText(detail);
    return t(`${NOT_READABLE.en}: ${d.en}`, `${NOT_READABLE.zh}：${d.zh}`);
  },
  noteTooLong: (max: number) =>
    t(`a note may be at most ${max} characters long`, `备注最多 ${max} 个字符`),
  noteUnprintable: (codePoint: string) =>
    t(
      `a note may not hold the control character ${codePoint}: remove it in the file`,
      `备注不能包含控制字符 ${codePoint}：请在文件中删除`,
    ),
  partMissing: () =>
    t(
      "a part of the workbook is missing or malformed (save it again from a spreadsheet program)",
      "工作簿的某个部分缺失或格式不正确（请用电子表格程序重新保存）",
    ),
  readingUnfinished: () =>
    t(`${NOT_READABLE.en}: reading it did not finish`, `${NOT_READABLE.zh}：读取未能完成`),
  noValues: () => t("the file holds no values to import", "文件中没有可导入的值"),
  tooManyValues: (max: number) =>
    t(
      `more than ${max} values: a file may hold at most ${max}; reading stopped here`,
      `超过 ${max} 个值：一个文件最多 ${max} 个；读取在此停止`,
    ),
  duplicateInFile: (brand: string, store: string, date: string, first: Text) =>
    t(
      `duplicate store-day: brand ${q(brand)}, store ${q(store)}, ${date} is already given at ` +
        first.en,
      `重复的门店日：品牌 ${q(brand)}、门店 ${q(store)}、${date} 已在${first.zh}给出`,
    ),
  // --- Cells (xlsx_reader.ts)
  notFinite: () => t("not a finite number", "不是有限的数字"),
  booleanCell: () => t("a TRUE/FALSE value is not allowed", "不允许 TRUE/FALSE 值"),
  invalidDate: () => t("an invalid date", "无效的日期"),
  unsupportedCell: () => t("unsupported cell content", "不支持的单元格内容"),
  notReadAsWritten: () =>
    t(
      "a cell this workbook's reader would read as another value (a date cell, a cell type it " +
        "does not know, a number's text that is not a number such as 1,5, or more than a formula " +
        "and one value in the cell): write the value as a plain number or as text",
      "此工作簿的读取器会把该单元格读成另一个值（日期型单元格、未知的单元格类型、不是数字的数字文本如 1,5，" +
        "或单元格中除一个公式和一个值之外还有其他内容）：请将值写成普通数字或文本",
    ),
  errorCell: () => t("the cell holds an error value", "单元格中是错误值"),
  formulaWithoutResult: () =>
    t(
      "a formula without a saved result: open the file in Excel and save it again",
      "公式没有保存的结果：请在 Excel 中打开文件并重新保存",
    ),
  mergedCell: (master: string) =>
    t(
      `part of the merged cell ${master}: give each cell its own value`,
      `属于合并单元格 ${master}：请为每个单元格单独填值`,
    ),
  // --- Worksheets (xlsx_reader.ts)
  a1Header: (header: string) => t(`cell A1 must be ${q(header)}`, `单元格 A1 必须是 ${q(header)}`),
  headerNotDate: () =>
    t(
      "the column header is not a date: write 2026-07-09 or 7月9日 (an XLSX wide table has only " +
        "门店名称 and day columns, no note column)",
      "列标题不是日期：请写作 2026-07-09 或 7月9日（XLSX 宽表只有 门店名称 列和日期列，没有备注列）",
    ),
  secondColumnForDate: (date: string, first: string) =>
    t(
      `a second column for ${date}: column ${first} is the first`,
      `${date} 的第二个列：第一个是 ${first} 列`,
    ),
  noDateColumns: () => t("row 1 has no date columns", "第 1 行没有日期列"),
  blankStoreName: () =>
    t("the store name is blank but the row has values", "门店名称为空，但该行有值"),
  storeNameDate: () => t("a store name must be text, not a date", "门店名称必须是文本，不能是日期"),
  storeRepeated: (store: string, row: number) =>
    t(`store ${q(store)} is already in row ${row}`, `门店 ${q(store)} 已在第 ${row} 行`),
  valueWithoutDate: () =>
    t("a value in a column without a date header", "值位于没有日期标题的列中"),
  dateNotEnergy: () => t("a date is not an energy value", "日期不是能耗值"),
  sheetUnreadable: (detail: Text | string) => {
    const d = asText(detail);
    return t(`the worksheet could not be read: ${d.en}`, `无法读取工作表：${d.zh}`);
  },
  noSheetWithData: () => t("the workbook has no worksheet with data", "工作簿中没有含数据的工作表"),
  // --- CSV (csv_reader.ts)
  separator: (separator: string) => {
    const name = SEPARATOR_NAMES[separator] ?? t(q(separator), q(separator));
    return t(
      `the columns are separated by ${name.en}: a CSV file separates them with commas (${LAYOUT.en})`,
      `列之间用${name.zh}分隔：CSV 文件应以逗号分隔（${LAYOUT.zh}）`,
    );
  },
  foreignCsv: () =>
    t(
      `not an XLSX workbook or a CSV table of energy: its first line names none of the columns ` +
        `(${LAYOUT.en})`,
      `不是 XLSX 工作簿或能耗 CSV 表：第一行没有任何所需的列名（${LAYOUT.zh}）`,
    ),
  unknownColumn: (name: string) =>
    t(`unknown column ${q(name)}: ${LAYOUT.en}`, `未知的列 ${q(name)}：${LAYOUT.zh}`),
  duplicatedColumn: (name: string) => t(`duplicated column ${q(name)}`, `重复的列 ${q(name)}`),
  missingColumn: (name: string) =>
    t(`missing column ${q(name)}: ${LAYOUT.en}`, `缺少列 ${q(name)}：${LAYOUT.zh}`),
  fieldCount: (fields: number, width: number) =>
    t(
      `the row has ${fields} fields, the header has ${width}`,
      `该行有 ${fields} 个字段，表头有 ${width} 个`,
    ),
  unnamedColumnValue: (column: number) =>
    t(
      `a value in column ${column}, which has no header name`,
      `第 ${column} 列没有列名，但有值`,
    ),
  blankBrand: () => t("the brand is blank", "品牌为空"),
  blankStore: () => t("the store is blank", "门店为空"),
  blankDate: () => t("the date is blank", "日期为空"),
  notADate: () =>
    t("not a date: write 2026-07-09 or 7月9日", "不是日期：请写作 2026-07-09 或 7月9日"),
  // `detail`: the CSV parser's own words (kept as they are).
  malformedCsv: (detail: string) => {
    const said = clipDetail(detail);
    return t(`malformed CSV: ${said}`, `CSV 格式错误：${said}`);
  },
  emptyFile: () =>
    t(
      "not an XLSX workbook or a UTF-8 CSV file (the file is empty)",
      "不是 XLSX 工作簿或 UTF-8 编码的 CSV 文件（文件为空）",
    ),
  // --- The resolver (resolver.ts); `rows` and `place` say where, in each language.
  dateProblem: (date: string, raw: string, why: Text, place: Text) =>
    t(
      `Date ${date} (written ${q(raw)}) ${why.en}: ${place.en}`,
      `日期 ${date}（写作 ${q(raw)}）${why.zh}：${place.zh}`,
    ),
  beforeStart: (start: string) =>
    t(
      `is outside the dataset, which starts on ${start}`,
      `不在数据集范围内，数据集始于 ${start}`,
    ),
  future: (today: string) =>
    t(`is in the future (today is ${today})`, `是将来的日期（今天是 ${today}）`),
  afterEnd: (end: string) =>
    t(
      `is outside the dataset, which ends on ${end} (new days come with a new snapshot)`,
      `不在数据集范围内，数据集止于 ${end}（新的日期随新的快照加入）`,
    ),
  unknownSheet: (sheet: string) =>
    t(
      `Worksheet ${q(sheet)} matches no brand: name each worksheet after its brand, as in the ` +
        "template",
      `工作表 ${q(sheet)} 不对应任何品牌：请按模板以品牌名称命名每个工作表`,
    ),
  unknownBrand: (brand: string, rows: Text) =>
    t(`Unknown brand ${q(brand)}: ${rows.en}`, `未知的品牌 ${q(brand)}：${rows.zh}`),
  unknownStore: (store: string, brand: string, place: Text) =>
    t(
      `Unknown store ${q(store)} of brand ${q(brand)}: ${place.en}`,
      `品牌 ${q(brand)} 下没有门店 ${q(store)}：${place.zh}`,
    ),
  ambiguousStore: (store: string, count: number, brand: string, place: Text) =>
    t(
      `Store name ${q(store)} matches ${count} stores of brand ${q(brand)} (rename them apart ` +
        `first): ${place.en}`,
      `门店名称 ${q(store)} 对应品牌 ${
        q(brand)
      } 的 ${count} 家门店（请先改名加以区分）：${place.zh}`,
    ),
  twoValues: (store: string, brand: string, date: string, first: Text, second: Text) =>
    t(
      `Store ${q(store)} of brand ${q(brand)} has two values for ${date}: ${first.en} and ` +
        second.en,
      `品牌 ${q(brand)} 的门店 ${q(store)} 在 ${date} 有两个值：${first.zh}和${second.zh}`,
    ),
  // --- Places, for the texts above
  rows: (en: string, zh: string) => t(en, zh),
  cell: (sheet: string | null, row: number, column: string) =>
    t(
      `${sheet === null ? "" : `sheet ${q(sheet)} `}row ${row} column ${column}`,
      `${sheet === null ? "" : `工作表 ${q(sheet)} `}第 ${row} 行 ${column} 列`,
    ),
  // --- formatProblems (readers.ts)
  rejected: (n: number) =>
    t(
      `The file was rejected with ${n} ${n === 1 ? "problem" : "problems"}:`,
      `文件被拒绝，共有 ${n} 个问题：`,
    ),
  more: (n: number) => t(`- … and ${n} more problems`, `- ……另有 ${n} 个问题`),
} as const;
