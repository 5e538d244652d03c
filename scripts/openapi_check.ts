// Builds /openapi.json in process and checks it with Redocly's recommended rules, the OpenAPI
// schema validator and swagger-parser; prints every problem and exits non-zero on any error.
import SwaggerParser from "@apidevtools/swagger-parser";
import { OpenApi } from "@effect/platform";
import { createConfig, lintFromString } from "@redocly/openapi-core";
import { Validator } from "@seriousme/openapi-schema-validator";
import { Api } from "../src/api/api.ts";

export interface CheckResult {
  readonly tool: string;
  readonly errors: ReadonlyArray<string>;
  readonly warnings: ReadonlyArray<string>;
}

const redocly = async (text: string): Promise<CheckResult> => {
  const config = await createConfig({ extends: ["recommended"] });
  const problems = await lintFromString({ source: text, absoluteRef: "openapi.json", config });
  const describe = (p: (typeof problems)[number]) =>
    `${p.ruleId}: ${p.message} (${p.location.map((l) => l.pointer).join(", ")})`;
  return {
    tool: "redocly lint (recommended)",
    errors: problems.filter((p) => p.severity === "error").map(describe),
    warnings: problems.filter((p) => p.severity === "warn").map(describe),
  };
};

const schemaValidator = async (text: string): Promise<CheckResult> => {
  const result = await new Validator().validate(JSON.parse(text));
  return {
    tool: "@seriousme/openapi-schema-validator",
    errors: result.valid ? [] : [JSON.stringify(result.errors, null, 2)],
    warnings: [],
  };
};

const swaggerParser = async (text: string): Promise<CheckResult> => {
  const tool = "@apidevtools/swagger-parser";
  try {
    await SwaggerParser.validate(JSON.parse(text));
    return { tool, errors: [], warnings: [] };
  } catch (error) {
    return { tool, errors: [error instanceof Error ? error.message : String(error)], warnings: [] };
  }
};

// Each tool gets its own copy of the document as the service serves it (JSON text).
export const checkDocument = async (document: object): Promise<ReadonlyArray<CheckResult>> => {
  const text = JSON.stringify(document);
  return [await redocly(text), await schemaValidator(text), await swaggerParser(text)];
};

if (import.meta.main) {
  const results = await checkDocument(OpenApi.fromApi(Api));
  let errors = 0;
  for (const { tool, errors: e, warnings: w } of results) {
    console.log(`${tool}: ${e.length} error(s), ${w.length} warning(s)`);
    for (const error of e) console.log(`  error: ${error}`);
    for (const warning of w) console.log(`  warning: ${warning}`);
    errors += e.length;
  }
  Deno.exit(errors === 0 ? 0 : 1);
}
