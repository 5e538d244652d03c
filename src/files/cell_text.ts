// An energy cell's text and its value (rules.md §1), read alike by the import readers and written
// alike by the exports (an export sent back untouched must read as the values it holds), and the
// text mark that keeps free text from being evaluated as a formula.
import { type Text, text as t } from "../domain/language.ts";

// One cell of energy as the file gives it.
export type CellValue =
  | { readonly kind: "BLANK" }
  // kwh: canonical decimal text without sign or exponent, at most 4 decimals ("12.5", "0", "3.1416").
  | { readonly kind: "NUMBER"; readonly kwh: string }
  // The cell says VOID or 作废.
  | { readonly kind: "VOID" };

export const BLANK: CellValue = { kind: "BLANK" };
export const VOID: CellValue = { kind: "VOID" };

// A daily energy above 10^15 kWh is not a meter reading; the bound also keeps "1e999999" from
// expanding into a huge string, and keeps values well inside the metrics engine's precision.
const MAX_INTEGER_DIGITS = 15;
const MAX_DECIMALS = 4;

const NOT_A_NUMBER = t(
  "not a number: write a decimal such as 12.5, VOID or 作废, or leave the cell blank",
  "不是数字：请填写小数（如 12.5）、VOID 或 作废，或留空",
);

const isDigit = (c: number) => c >= 48 && c <= 57;

// Decimal text -> canonical kwh. Accepted: an optional sign, digits with an optional fractional
// part where either side of the point may be empty but not both ("12", "12.5", ".5", "5."), and,
// only for the text of an XLSX number (String(n) writes very large or small doubles so), an
// exponent ("1.5e3"); a person's text with an exponent is not a plain decimal. Refused:
// thousands separators, spaces inside, NaN/Infinity, a negative value, more than 4 decimals.
// The decimal count is the value's, not the writing's: "12.50000" is 12.5 and accepted.
// Canonical form: no sign, no exponent, no leading zeros, no trailing fractional zeros and no
// trailing point ("0012.50" -> "12.5", "0.0000" -> "0", "-0" -> "0", "1.5e3" -> "1500"); it is
// what decimal.js's toFixed() prints for the same value, computed here with string operations.
const parseDecimal = (text: string, exponentAllowed: boolean): CellValue | { problem: Text } => {
  const n = text.length;
  let i = 0;
  let negative = false;
  if (text[0] === "+" || text[0] === "-") {
    negative = text[0] === "-";
    i = 1;
  }
  const intStart = i;
  while (i < n && isDigit(text.charCodeAt(i))) i++;
  const intDigits = text.slice(intStart, i);
  let fracDigits = "";
  if (text[i] === ".") {
    const fracStart = ++i;
    while (i < n && isDigit(text.charCodeAt(i))) i++;
    fracDigits = text.slice(fracStart, i);
  }
  if (intDigits === "" && fracDigits === "") return { problem: notANumber(text) };
  let exponent = 0;
  if ((text[i] === "e" || text[i] === "E") && exponentAllowed) {
    i++;
    let expNegative = false;
    if (text[i] === "+" || text[i] === "-") {
      expNegative = text[i] === "-";
      i++;
    }
    const expStart = i;
    while (i < n && isDigit(text.charCodeAt(i))) i++;
    if (i === expStart) return { problem: notANumber(text) };
    // Number() of a long digit run is huge or Infinity: either way it fails the bounds below.
    exponent = Number(text.slice(expStart, i)) * (expNegative ? -1 : 1);
  }
  if (i !== n) return { problem: notANumber(text) };

  // digits with the decimal point after `point` of them.
  let digits = intDigits + fracDigits;
  let point = intDigits.length + exponent;
  let lead = 0;
  while (lead < digits.length && digits.charCodeAt(lead) === 48) lead++;
  if (lead === digits.length) return { kind: "NUMBER", kwh: "0" };
  let trail = digits.length;
  while (digits.charCodeAt(trail - 1) === 48) trail--;
  digits = digits.slice(lead, trail);
  point -= lead;
  if (negative) return { problem: t("negative energy value", "能耗值为负") };
  if (digits.length - point > MAX_DECIMALS) {
    return { problem: t(`more than ${MAX_DECIMALS} decimals`, `小数超过 ${MAX_DECIMALS} 位`) };
  }
  if (point > MAX_INTEGER_DIGITS) {
    return {
      problem: t(
        `too large: at most ${MAX_INTEGER_DIGITS} digits before the decimal point`,
        `数值过大：小数点前最多 ${MAX_INTEGER_DIGITS} 位`,
      ),
    };
  }
  const kwh = point <= 0
    ? `0.${"0".repeat(-point)}${digits}`
    : point >= digits.length
    ? digits + "0".repeat(point - digits.length)
    : `${digits.slice(0, point)}.${digits.slice(point)}`;
  return { kind: "NUMBER", kwh };
};

const THOUSANDS = /^[+-]?\d{1,3}(,\d{3})+(\.\d*)?$/;

const EXPONENT = /^[+-]?(\d+\.?\d*|\.\d+)[eE][+-]?\d+$/;

// Only on the failure path: name the common mistake.
const notANumber = (text: string) =>
  THOUSANDS.test(text)
    ? t("thousands separators are not accepted: write 1234.5", "不接受千位分隔符：请写作 1234.5")
    : EXPONENT.test(text)
    ? t(
      "exponent notation is not accepted: write the plain decimal, such as 1500",
      "不接受科学计数法：请写普通小数，如 1500",
    )
    : NOT_A_NUMBER;

// An energy cell's text (CSV cell, XLSX text cell) -> BLANK, VOID, NUMBER or a problem.
export const parseEnergyText = (input: string): CellValue | { problem: Text } => {
  const text = input.trim();
  if (text === "") return BLANK;
  // VOID in ASCII letters of either case (toUpperCase would also take "voıd").
  if (text === "作废" || /^[Vv][Oo][Ii][Dd]$/.test(text)) return VOID;
  return parseDecimal(text, false);
};

// Spreadsheet formula injection: a CSV field beginning with =, +, - or @ (also after spaces), a
// tab or a carriage return is evaluated by spreadsheet programs that open the file. A writer puts
// an apostrophe before such a text, and before such a text already preceded by apostrophes, so
// that the mark is never ambiguous; spreadsheets show it as text, and the CSV reader drops that
// one apostrophe. Only fields that begin with apostrophes and then one of these are read
// differently from what they say (docs/imports.md).
const FORMULA_START = /^'*(\s*[=+\-@]|[\t\r])/;

export const protectText = (text: string): string => FORMULA_START.test(text) ? `'${text}` : text;

// The inverse of protectText for a field read back (already trimmed by the reader).
export const unprotectText = (field: string): string =>
  field.startsWith("'") && FORMULA_START.test(field.slice(1)) ? field.slice(1) : field;

// An XLSX numeric cell is a binary double: its shortest round-trip text is the value (rules.md §1).
export const energyFromXlsxNumber = (n: number): CellValue | { problem: Text } =>
  Number.isFinite(n) ? parseDecimal(String(n), true) : { problem: NOT_A_NUMBER };

export const isProblem = (v: CellValue | { problem: Text }): v is { problem: Text } =>
  "problem" in v;
