// What the OpenAPI document says beyond the endpoint schemas: each operation's error answers (most
// come from the request front door, not the HttpApi), the error-code enum, X-Request-ID, and the
// clean-up validators need. /openapi.json and /api-docs both show the finished document.
import * as OpenApi from "@effect/platform/OpenApi";
import { ERROR_CODES, type ErrorCode, errorCodesOf } from "../domain/error_codes.ts";

type Json = Record<string, unknown>;
type Codes = ReadonlyArray<ErrorCode>;

// Answers any operation can give: a failure, the request time limit, a body it does not take.
const ANY_OPERATION: Codes = ["INTERNAL", "TIMEOUT", "PAYLOAD_TOO_LARGE"];
// An operation that reads or writes the database.
export const DATABASE: Codes = ["NOT_READY", "BUSY"];
// A business endpoint: a credential checked against the database and a permission.
export const CALLER: Codes = [
  "MISSING_CREDENTIAL",
  "INVALID_CREDENTIAL",
  "PERMISSION_MISSING",
  ...DATABASE,
];
// An operation that takes a JSON body (read by the front door, then decoded by the contract).
export const JSON_BODY: Codes = [
  "INVALID_JSON",
  "INVALID_REQUEST",
  "UNSUPPORTED_MEDIA_TYPE",
  "REQUEST_TIMEOUT",
];
// A read that can be made as of an earlier instant (known_at, data_token).
export const AS_OF: Codes = ["INVALID_REQUEST", "HISTORY_NOT_KEPT", "DATA_REPLACED"];
export const AS_OF_NOTE = "Every answer names the data it was made from in its `Data-Token` " +
  "header; with `data_token` set to it, or `known_at` set to an instant, the answer is the " +
  "one the service gave (or would have given) then: commits made later are not seen.";
// A write: the write permission needs a role that allows writes; a session cookie needs Origin.
export const WRITE: Codes = ["ROLE_READ_ONLY", "ORIGIN_REQUIRED"];
// An object named by a path id that belongs to a store.
export const STORE_OBJECT: Codes = ["INVALID_REQUEST", "NOT_FOUND", "STORE_FORBIDDEN"];
// A store's metering scope and a date range in the query.
export const SCOPE_RANGE: Codes = [
  "INVALID_REQUEST",
  "INVALID_SCOPE",
  "INVALID_RANGE",
  "RANGE_TOO_LONG",
];

const STATUS: Record<number, { readonly name: string; readonly reason: string }> = {
  400: { name: "BadRequest", reason: "Bad request" },
  401: { name: "Unauthorized", reason: "No valid credential" },
  403: { name: "Forbidden", reason: "Not allowed" },
  404: { name: "NotFound", reason: "Not found" },
  405: { name: "MethodNotAllowed", reason: "Method not allowed" },
  408: { name: "RequestTimeout", reason: "Request body too slow" },
  409: { name: "Conflict", reason: "Conflict" },
  413: { name: "PayloadTooLarge", reason: "Request body too large" },
  415: { name: "UnsupportedMediaType", reason: "Request body not JSON" },
  431: { name: "HeadersTooLarge", reason: "Request headers too large" },
  500: { name: "InternalError", reason: "Operation failed" },
  503: { name: "ServiceUnavailable", reason: "Not available now" },
};

const SCHEMAS = "#/components/schemas/";
const REQUEST_ID = "X-Request-ID";
const ETAG = "ETag";
const DATA_TOKEN = "Data-Token";
const DATA_KNOWN_AT = "Data-Known-At";

// The error answers of one operation: for each status, the Error body and the codes it may carry.
const withErrorAnswers = (op: Json, codes: Codes): Json => {
  const all = [...new Set([...codes, ...ANY_OPERATION])];
  const responses: Record<string, unknown> = {};
  for (const [status, value] of Object.entries(op.responses as Json)) {
    if (Number(status) < 400) responses[status] = value;
  }
  const statuses = [...new Set(all.map((c) => ERROR_CODES.find((e) => e.code === c)!.status))];
  for (const status of statuses.sort((a, b) => a - b)) {
    const here = ERROR_CODES.filter((e) => e.status === status && all.includes(e.code));
    responses[String(status)] = {
      description: `${STATUS[status].reason}. error.code is one of:\n\n` +
        here.map((e) => `- \`${e.code}\`: ${e.meaning}`).join("\n"),
      content: { "application/json": { schema: { $ref: SCHEMAS + STATUS[status].name } } },
    };
  }
  return { ...op, responses };
};

// A conditional read: the 200 answer carries an ETag; If-None-Match with it answers 304.
const withConditional = (op: Json): Json => {
  const responses = op.responses as Record<string, Json>;
  const ok = responses["200"];
  return {
    ...op,
    parameters: [
      ...((op.parameters as Array<unknown> | undefined) ?? []),
      {
        name: "If-None-Match",
        in: "header",
        required: false,
        description: "The ETag of an answer the client holds: 304 when it is still current",
        schema: { type: "string" },
      },
    ],
    responses: {
      ...responses,
      "200": { ...ok, headers: { ETag: { $ref: `#/components/headers/${ETAG}` } } },
      "304": {
        description: "Not modified: the answer whose ETag was sent is still current (no body)",
        headers: { ETag: { $ref: `#/components/headers/${ETAG}` } },
      },
    },
  };
};

// A read that names its data: every answer (200, 304) carries Data-Token, and one made as of an
// earlier instant Data-Known-At.
const withDataHeaders = (op: Json): Json => {
  const responses = { ...(op.responses as Record<string, Json>) };
  for (const status of ["200", "304"]) {
    const answer = responses[status];
    if (answer === undefined) continue;
    responses[status] = {
      ...answer,
      headers: {
        ...(answer.headers as Json | undefined),
        [DATA_TOKEN]: { $ref: `#/components/headers/${DATA_TOKEN}` },
        ...(status === "200"
          ? { [DATA_KNOWN_AT]: { $ref: `#/components/headers/${DATA_KNOWN_AT}` } }
          : {}),
      },
    };
  }
  return { ...op, responses };
};

// A write whose 200 answer names, in Data-Token, the data its commit made.
const withCommitToken = (op: Json): Json => {
  const responses = { ...(op.responses as Record<string, Json>) };
  const ok = responses["200"];
  responses["200"] = {
    ...ok,
    headers: {
      ...(ok.headers as Json | undefined),
      [DATA_TOKEN]: { $ref: `#/components/headers/${DATA_TOKEN}` },
    },
  };
  return { ...op, responses };
};

// Summary, description and the error codes of one operation.
export const operation = (doc: {
  readonly summary: string;
  readonly description: string;
  readonly errors: Codes;
  readonly conditional?: boolean;
  readonly asOf?: boolean;
  readonly commitToken?: boolean;
}) =>
  OpenApi.annotations({
    summary: doc.summary,
    description: doc.description,
    transform: (op) => {
      const answered = withErrorAnswers(op, doc.errors);
      const conditional = doc.conditional === true ? withConditional(answered) : answered;
      const asOf = doc.asOf === true ? withDataHeaders(conditional) : conditional;
      return doc.commitToken === true ? withCommitToken(asOf) : asOf;
    },
  });

const errorBody = (status: number): Json => ({
  type: "object",
  description: `The Error body of a ${status} answer`,
  required: ["error"],
  properties: {
    error: {
      type: "object",
      required: ["code", "message"],
      properties: {
        code: {
          type: "string",
          allOf: [{ $ref: `${SCHEMAS}ErrorCode` }],
          enum: errorCodesOf(status),
        },
        message: { type: "string", description: "For people; the wording may change" },
      },
      additionalProperties: false,
    },
  },
  additionalProperties: false,
});

const errorCodeSchema = (): Json => ({
  type: "string",
  description: "Every error.code the service answers with (HTTP status: meaning):\n\n" +
    ERROR_CODES.map((e) => `- \`${e.code}\` (${e.status}): ${e.meaning}`).join("\n"),
  enum: ERROR_CODES.map((e) => e.code),
});

const isObject = (value: unknown): value is Json =>
  typeof value === "object" && value !== null && !Array.isArray(value);

// The schema generator names its built-in schemas with `$id`s such as "/schemas/unknown"; one
// used in several places repeats the `$id`, which JSON Schema validators reject.
const dropGeneratedIds = (value: unknown): void => {
  if (Array.isArray(value)) return value.forEach(dropGeneratedIds);
  if (!isObject(value)) return;
  const id = value.$id;
  if (typeof id === "string" && id.startsWith("/schemas/")) {
    delete value.$id;
    if (value.title === id.slice("/schemas/".length)) delete value.title;
  }
  Object.values(value).forEach(dropGeneratedIds);
};

const refsIn = (value: unknown, found: Set<string>): Set<string> => {
  if (Array.isArray(value)) value.forEach((v) => refsIn(v, found));
  else if (isObject(value)) {
    if (typeof value.$ref === "string") found.add(value.$ref);
    Object.values(value).forEach((v) => refsIn(v, found));
  }
  return found;
};

// Keeps the components something refers to (the error schemas the HttpApi generated are replaced).
const dropUnusedComponents = (spec: Json) => {
  const components = spec.components as Record<string, Json>;
  const used = new Set<string>();
  let pending = [...refsIn(spec.paths, new Set())];
  while (pending.length > 0) {
    const next: Array<string> = [];
    for (const ref of pending) {
      if (used.has(ref)) continue;
      used.add(ref);
      const [, , kind, name] = ref.split("/");
      next.push(...refsIn(components[kind]?.[name], new Set()));
    }
    pending = next;
  }
  for (const kind of ["schemas", "headers"]) {
    for (const name of Object.keys(components[kind] ?? {})) {
      if (!used.has(`#/components/${kind}/${name}`)) delete components[kind][name];
    }
  }
};

// The whole document's finishing step (the Api's OpenApi.Transform).
export const finishDocument = (spec: Json): Json => {
  dropGeneratedIds(spec);
  const components = spec.components as Record<string, Json>;
  const schemas = components.schemas;
  schemas.ErrorCode = errorCodeSchema();
  for (const status of new Set(ERROR_CODES.map((e) => e.status))) {
    schemas[STATUS[status].name] = errorBody(status);
  }
  components.headers = {
    [REQUEST_ID]: {
      description: "The request's id; the server log records the request, and a failure's " +
        "cause, under it",
      required: true,
      schema: { type: "string", format: "uuid" },
    },
  };
  components.headers[ETAG] = {
    description: "A strong validator of this answer, made of the data's version (the loaded " +
      "snapshot and the revisions the answer covers) and the service's rules: it changes " +
      "whenever the answer may",
    required: true,
    schema: { type: "string" },
  };
  components.headers[DATA_TOKEN] = {
    description: "The commit the answer's data had reached, as an opaque token (sealed by the " +
      "service: it tells nothing and cannot be made): sent back as the `data_token` query " +
      "parameter, it reads the same data again, byte for byte, whatever was committed since (as " +
      "long as the loaded snapshot is not replaced)",
    required: false,
    schema: { type: "string" },
  };
  components.headers[DATA_KNOWN_AT] = {
    description: "On a read as of an earlier instant only: the instant it shows (the " +
      "`known_at` asked for, or the instant of the commit a `data_token` names, not told to a " +
      "key limited to some stores), UTC with microseconds",
    required: false,
    schema: { type: "string", format: "date-time" },
  };
  for (const item of Object.values(spec.paths as Record<string, Json>)) {
    for (const op of Object.values(item) as Array<Json>) {
      for (const response of Object.values(op.responses as Record<string, Json>)) {
        response.headers = {
          ...(response.headers as Json | undefined),
          [REQUEST_ID]: { $ref: `#/components/headers/${REQUEST_ID}` },
        };
      }
    }
  }
  dropUnusedComponents(spec);
  return spec;
};
