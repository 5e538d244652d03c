// The import template belongs to the file layout imports and exports share (files/template.ts);
// re-exported for the import modules that name this path.
export {
  buildTemplate,
  type BuiltTemplate,
  STORE_NAME_HEADER,
  storeColumnWidth,
  TEMPLATE_COLUMNS,
  TEMPLATE_DAY_COLUMN_WIDTH,
  type TemplateInput,
  templateLimits,
  type TemplateSheet,
} from "../files/template.ts";
