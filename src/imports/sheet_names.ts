// The worksheet names of brands belong to the file layout imports and exports share
// (files/sheet_names.ts); re-exported for the import modules that name this path.
export {
  brandForSheet,
  compareNames,
  isValidSheetName,
  MAX_SHEET_NAME_CHARS,
  sheetLookup,
  sheetNamesFor,
} from "../files/sheet_names.ts";
