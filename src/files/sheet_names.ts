// Excel worksheet names for brands: the deterministic brand -> sheet mapping and its inverse.

export const MAX_SHEET_NAME_CHARS = 31;

// Excel refuses this name in any letter case.
const RESERVED_SHEET_NAME = "History";

// The characters Excel forbids in a sheet name.
const FORBIDDEN = new Set([":", "\\", "/", "?", "*", "[", "]"]);

// Also replaced: control characters (not representable in an XLSX attribute, or turned into spaces
// when read back), lone surrogates and U+FFFE/U+FFFF (not valid XML).
const isUnsafe = (codePoint: string): boolean => {
  if (FORBIDDEN.has(codePoint)) return true;
  const c = codePoint.codePointAt(0)!;
  return c < 0x20 || c === 0x7f || (c >= 0xd800 && c <= 0xdfff) || c === 0xfffe || c === 0xffff;
};

// Excel compares sheet names without regard to case; folding through both cases is the cautious
// reading (an extra suffix is harmless, a missed clash makes the workbook unreadable).
const caseKey = (name: string): string => name.toUpperCase().toLowerCase();

// The longest prefix of whole code points whose UTF-16 length is at most `units`.
const takeUnits = (name: string, units: number): string => {
  let out = "";
  for (const codePoint of name) {
    if (out.length + codePoint.length > units) break;
    out += codePoint;
  }
  return out;
};

const stripApostrophes = (name: string): string => name.replace(/^'+/, "").replace(/'+$/, "");

// Code-unit order: the same on every machine and ICU version, unlike localeCompare.
export const compareNames = (a: string, b: string): number => a < b ? -1 : a > b ? 1 : 0;

// Whether Excel accepts `name` as a worksheet name on its own (uniqueness aside).
export const isValidSheetName = (name: string): boolean =>
  name.length > 0 &&
  name.length <= MAX_SHEET_NAME_CHARS &&
  !Array.from(name).some(isUnsafe) &&
  !name.startsWith("'") &&
  !name.endsWith("'") &&
  caseKey(name) !== caseKey(RESERVED_SHEET_NAME);

const sanitize = (brand: string): string => {
  const replaced = Array.from(brand, (c) => isUnsafe(c) ? "_" : c).join("");
  const cut = stripApostrophes(takeUnits(stripApostrophes(replaced), MAX_SHEET_NAME_CHARS));
  return cut === "" ? "Sheet" : cut;
};

const withSuffix = (base: string, n: number): string => {
  const suffix = `~${n}`;
  return takeUnits(base, MAX_SHEET_NAME_CHARS - suffix.length) + suffix;
};

/**
 * The worksheet name of each brand, in the order of `brandNames`.
 *
 * The mapping:
 * 1. A brand whose name is already a valid sheet name keeps it unchanged. Valid means: 1 to 31
 *    UTF-16 code units; none of `: \ / ? * [ ]`, no control character (U+0000-U+001F, U+007F), no
 *    lone surrogate, no U+FFFE/U+FFFF; not starting or ending with an apostrophe `'`; not
 *    `History` in any letter case.
 * 2. Any other brand gets its base name: each of the characters listed in 1 is replaced by `_`;
 *    leading and trailing apostrophes are removed; the name is cut to whole code points of at most
 *    31 UTF-16 code units (so at most 31 characters; an emoji counts as 2 units); apostrophes left
 *    at the end by the cut are removed; an empty result becomes `Sheet`.
 * 3. Sheet names are unique without regard to letter case, and `History` counts as taken. Brands
 *    are taken in code-unit order of their names (not the order of `brandNames`, so the result
 *    does not depend on how the caller sorted them). First, the brands of rule 1 claim their own
 *    names, a later brand losing to an earlier one that differs only in case. Then each remaining
 *    brand takes its base name if free, else the first free of `base~2`, `base~3`, …, where `base`
 *    is cut (as in 2) so that the whole name stays within 31 UTF-16 code units.
 *
 * Rule 1 going first guarantees that no produced name equals another brand's exact name, so
 * `brandForSheet` (exact brand name first, this mapping second) inverts it. The names of brands
 * that need rule 2 and clash depend on the other brands: a template and the file read back must be
 * mapped against the same set of brand names.
 */
export const sheetNamesFor = (
  brandNames: ReadonlyArray<string>,
): ReadonlyArray<{ brand: string; sheet: string }> => {
  const order = brandNames.map((_, i) => i).sort((a, b) =>
    compareNames(brandNames[a], brandNames[b]) || a - b
  );
  const taken = new Set([caseKey(RESERVED_SHEET_NAME)]);
  const sheets: Array<string | undefined> = brandNames.map(() => undefined);
  for (const i of order) {
    const name = brandNames[i];
    if (isValidSheetName(name) && !taken.has(caseKey(name))) {
      sheets[i] = name;
      taken.add(caseKey(name));
    }
  }
  for (const i of order) {
    if (sheets[i] !== undefined) continue;
    const base = sanitize(brandNames[i]);
    let sheet = base;
    for (let n = 2; taken.has(caseKey(sheet)); n++) sheet = withSuffix(base, n);
    sheets[i] = sheet;
    taken.add(caseKey(sheet));
  }
  return brandNames.map((brand, i) => ({ brand, sheet: sheets[i]! }));
};

/**
 * A lookup from worksheet name to brand, built once for many sheets: the brand whose name equals
 * the sheet name exactly, else the brand whose `sheetNamesFor` name equals it (exact, case
 * sensitive), else the same for the name trimmed (names are matched trimmed, rules.md §8, and a
 * spreadsheet program keeps spaces at the ends of a worksheet's name), else undefined.
 */
export const sheetLookup = (
  brandNames: ReadonlyArray<string>,
): (sheet: string) => string | undefined => {
  const exact = new Set(brandNames);
  const mapped = new Map<string, string>();
  for (const { brand, sheet } of sheetNamesFor(brandNames)) mapped.set(sheet, brand);
  const find = (name: string) => exact.has(name) ? name : mapped.get(name);
  return (sheet) => find(sheet) ?? (sheet.trim() === sheet ? undefined : find(sheet.trim()));
};

/**
 * The brand a worksheet belongs to, as `sheetLookup` finds it.
 */
export const brandForSheet = (
  sheet: string,
  brandNames: ReadonlyArray<string>,
): string | undefined => sheetLookup(brandNames)(sheet);
