// The OpenAPI document tells the truth: Error bodies and codes, X-Request-ID, integer ids, unique
// $ids, summaries and descriptions, each operation's statuses; the code list matches src/ and README.
import assert from "node:assert/strict";
import { OpenApi } from "@effect/platform";
import { Schema } from "effect";
import { Api } from "../src/api/api.ts";
import { IdFromString } from "../src/domain/common.ts";
import { Messages } from "../src/domain/messages.ts";
import { ERROR_CODES, errorCodesOf, errorCodesTable } from "../src/domain/error_codes.ts";
import { STATUS_OF_ERROR } from "../src/domain/errors.ts";
import { makeTestApp } from "./helpers.ts";

// deno-lint-ignore no-explicit-any
type Json = any;

const doc: Json = OpenApi.fromApi(Api);

const operations = (): Array<{ method: string; path: string; op: Json }> =>
  Object.entries(doc.paths as Record<string, Json>).flatMap(([path, item]) =>
    Object.entries(item as Record<string, Json>).map(([method, op]) => ({ method, path, op }))
  );

const resolve = (value: Json): Json => {
  if (value?.$ref === undefined) return value;
  const [, , kind, name] = (value.$ref as string).split("/");
  return resolve(doc.components[kind][name]);
};

const statuses = (op: Json) => Object.keys(op.responses).sort();

const allCodes = ERROR_CODES.map((e) => e.code);

const BODY_OPERATIONS = [
  "post /auth/session",
  "post /auth/logout",
  "patch /api/v1/stores/{store_id}/profile",
  "post /api/v1/imports/preview",
  "post /api/v1/imports/{batch_id}/commit",
  "post /api/v1/imports/{batch_id}/discard",
];

Deno.test("every error answer is the Error body, with the codes of its status", () => {
  const text = JSON.stringify(doc);
  assert.ok(!text.includes("HttpApiDecodeError"), "no HttpApiDecodeError anywhere");
  for (const { method, path, op } of operations()) {
    for (const [status, response] of Object.entries(op.responses as Record<string, Json>)) {
      if (Number(status) < 400) continue;
      const where = `${method} ${path} ${status}`;
      const body = resolve(response.content["application/json"].schema);
      assert.equal(body.type, "object", where);
      assert.deepEqual(body.required, ["error"], where);
      assert.equal(body.additionalProperties, false, where);
      const error = body.properties.error;
      assert.deepEqual(error.required, ["code", "message"], where);
      assert.deepEqual(Object.keys(error.properties).sort(), ["code", "message"], where);
      assert.equal(error.additionalProperties, false, where);
      assert.equal(error.properties.message.type, "string", where);
      const code = error.properties.code;
      assert.equal(code.allOf[0].$ref, "#/components/schemas/ErrorCode", where);
      assert.deepEqual(code.enum, errorCodesOf(Number(status)), where);
      // The description names the codes this operation gives with this status.
      const named = [...(response.description as string).matchAll(/`([A-Z][A-Z0-9_]+)`/g)]
        .map((m) => m[1]);
      assert.ok(named.length > 0, `${where} names its codes`);
      for (const c of named) assert.ok(code.enum.includes(c), `${where}: ${c}`);
    }
  }
});

Deno.test("the 400 answer is the Error body that is sent", () => {
  const op = doc.paths["/api/v1/stores/{store_id}/energy"].get;
  const body = resolve(op.responses["400"].content["application/json"].schema);
  assert.deepEqual(body.properties.error.properties.code.enum, errorCodesOf(400));
  assert.ok(body.properties.error.properties.code.enum.includes("INVALID_REQUEST"));
});

Deno.test("error.code is an enum of exactly the listed codes", () => {
  const schema = doc.components.schemas.ErrorCode;
  assert.equal(schema.type, "string");
  assert.deepEqual(schema.enum, allCodes);
  assert.equal(new Set(allCodes).size, allCodes.length, "no code is listed twice");
  for (const entry of ERROR_CODES) {
    assert.match(entry.code, /^[A-Z][A-Z0-9_]+$/);
    assert.ok(entry.meaning.length > 0 && !entry.meaning.includes("|"), entry.code);
  }
});

Deno.test("every answer declares X-Request-ID, 500 among them", () => {
  const header = doc.components.headers["X-Request-ID"];
  assert.equal(header.required, true);
  assert.equal(header.schema.type, "string");
  for (const { method, path, op } of operations()) {
    assert.ok(op.responses["500"], `${method} ${path} declares 500`);
    for (const [status, response] of Object.entries(op.responses as Record<string, Json>)) {
      assert.deepEqual(
        resolve(response.headers?.["X-Request-ID"]),
        header,
        `${method} ${path} ${status} declares X-Request-ID`,
      );
    }
  }
});

// The reads that answer 304 to a current If-None-Match.
const CONDITIONAL = [
  "get /api/v1/dataset",
  "get /api/v1/stores",
  "get /api/v1/catalog",
  "get /api/v1/stores/{store_id}/reference",
  "get /api/v1/stores/{store_id}/energy",
  "get /api/v1/stores/{store_id}/targets",
  "get /api/v1/stores/{store_id}/metrics",
  "get /api/v1/stores/{store_id}/periods",
  "get /api/v1/portfolio",
  "get /api/v1/stores/{store_id}/months",
];

Deno.test("each operation declares the statuses it can answer with", () => {
  for (const { method, path, op } of operations()) {
    const where = `${method} ${path}`;
    const got = statuses(op);
    for (const status of ["200", "413", "500", "503"]) assert.ok(got.includes(status), where);
    assert.ok(!got.includes("405"), `${where}: 405 belongs to no operation`);
    const health = path.startsWith("/health/");
    const auth = path.startsWith("/auth/");
    if (health) {
      assert.deepEqual(got, ["200", "413", "500", "503"], where);
    } else {
      assert.ok(got.includes("403"), where);
      if (!auth) assert.ok(got.includes("401"), where);
    }
    const takesBody = BODY_OPERATIONS.includes(where);
    for (const status of ["400", "408", "415"]) {
      if (takesBody) assert.ok(got.includes(status), `${where} declares ${status}`);
    }
    if (!takesBody) {
      assert.ok(!got.includes("408") && !got.includes("415"), `${where} reads no body`);
    }
    const hasPathId = /\{\w+_id\}/.test(path);
    // The export names stores in its query (store_ids): an unknown one is 404 there too.
    const namesIds = hasPathId || where === "get /api/v1/stores/export";
    assert.equal(got.includes("404"), namesIds, `${where}: 404 exactly where an id is named`);
    // A validator the client sends is never refused: any If-None-Match only decides 200 or 304.
    const decoded = (op.parameters as Array<Json>).filter((p) => p.name !== "If-None-Match");
    if (hasPathId || decoded.length > 0 || takesBody) {
      assert.ok(got.includes("400"), `${where} declares 400`);
    }
    if (CONDITIONAL.includes(where)) {
      assert.ok(got.includes("304"), `${where} declares 304`);
      assert.ok(op.responses["200"].headers.ETag, `${where}: 200 carries an ETag`);
    } else {
      assert.ok(!got.includes("304"), `${where} is not a conditional read`);
    }
  }
  const codes = (path: string, method: string, status: string) =>
    [...(doc.paths[path][method].responses[status].description as string).matchAll(/`(\w+)`/g)]
      .map((m) => m[1]);
  assert.deepEqual(codes("/health/ready", "get", "503"), ["NOT_READY", "BUSY", "TIMEOUT"]);
  assert.deepEqual(codes("/health/live", "get", "503"), ["NOT_READY", "TIMEOUT"]);
  assert.deepEqual(codes("/api/v1/stores/{store_id}/profile", "patch", "409"), [
    "STALE_VERSION",
    "NAME_TAKEN",
  ]);
});

Deno.test("path and query ids are integers; decoding them is unchanged", () => {
  let ids = 0;
  for (const { method, path, op } of operations()) {
    for (const parameter of op.parameters as Array<Json>) {
      if (!parameter.name.endsWith("_id")) continue;
      ids++;
      assert.deepEqual(
        parameter.schema,
        { type: "integer", minimum: 1, maximum: 2147483647 },
        `${method} ${path} ${parameter.name}`,
      );
    }
  }
  assert.ok(ids >= 15);
  const decode = Schema.decodeUnknownEither(IdFromString);
  assert.equal(Schema.decodeUnknownSync(IdFromString)("42"), 42);
  assert.equal(Schema.decodeUnknownSync(IdFromString)("2147483647"), 2147483647);
  for (const bad of ["0", "01", "-4", "1.5", "abc", "", "2147483648", " 1", 42]) {
    assert.ok(decode(bad)._tag === "Left", `${JSON.stringify(bad)} is refused`);
  }
});

Deno.test("no $id appears twice", () => {
  const ids: Array<string> = [];
  const walk = (value: Json) => {
    if (Array.isArray(value)) return value.forEach(walk);
    if (value === null || typeof value !== "object") return;
    if (typeof value.$id === "string") ids.push(value.$id);
    Object.values(value).forEach(walk);
  };
  walk(doc);
  assert.equal(new Set(ids).size, ids.length, `repeated: ${ids}`);
});

Deno.test("every operation has a summary and a description; every tag a description", () => {
  const tags = new Set<string>();
  for (const { method, path, op } of operations()) {
    assert.ok(op.summary?.trim(), `${method} ${path} has a summary`);
    assert.ok(op.description?.trim(), `${method} ${path} has a description`);
    for (const tag of op.tags) tags.add(tag);
  }
  const declared = doc.tags as Array<{ name: string; description?: string }>;
  assert.deepEqual([...tags].sort(), declared.map((t) => t.name).sort());
  for (const tag of declared) assert.ok(tag.description?.trim(), `tag ${tag.name}`);
  assert.ok(doc.info.description.includes("METHOD_NOT_ALLOWED"));
});

// --- The code list matches the source and README.md.

const sourceFiles = async (dir: string): Promise<Array<{ path: string; text: string }>> => {
  const out: Array<{ path: string; text: string }> = [];
  for await (const entry of Deno.readDir(dir)) {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory) out.push(...await sourceFiles(path));
    else if (entry.name.endsWith(".ts")) out.push({ path, text: await Deno.readTextFile(path) });
  }
  return out;
};

// The text between the parentheses of a call starting at `open`, strings skipped.
const callArguments = (text: string, open: number) => {
  let depth = 0;
  for (let i = open; i < text.length; i++) {
    const c = text[i];
    if (c === '"' || c === "'" || c === "`") {
      for (i++; i < text.length && text[i] !== c; i++) if (text[i] === "\\") i++;
    } else if (c === "(") depth++;
    else if (c === ")" && --depth === 0) return text.slice(open + 1, i);
  }
  return text.slice(open + 1);
};

const SRC = new URL("../src", import.meta.url).pathname;

Deno.test("the listed codes are exactly those src/ answers with, with their statuses", async () => {
  const files = await sourceFiles(SRC);
  const errorsTs = files.find((f) => f.path.endsWith("/domain/errors.ts"))!.text;
  const classStatus = STATUS_OF_ERROR;
  // Helpers such as `forbidden = (m: Message) => new Forbidden(props(m))`: the class gives the
  // status, the message of src/domain/messages.ts the code.
  const helpers = new Map<string, number>();
  for (const m of errorsTs.matchAll(/const (\w+) = \(m: Message\) => new (\w+)\(/g)) {
    helpers.set(m[1], classStatus[m[2]]);
  }
  assert.ok(helpers.size >= 5, "the helpers of errors.ts are found");
  const codeOf = (name: string) => {
    const make =
      (Messages as unknown as Record<string, (...a: Array<unknown>) => { code: string }>)[
        name
      ];
    assert.ok(make !== undefined, `Messages.${name} exists`);
    return make("1", "2", "3", "4").code;
  };
  const used: Array<{ code: string; status: number; where: string }> = [];
  for (const { path, text } of files) {
    const where = (index: number) =>
      `${path.slice(SRC.length + 1)}:${text.slice(0, index).split("\n").length}`;
    for (const [name, status] of helpers) {
      for (const m of text.matchAll(new RegExp(`\\b${name}\\(`, "g"))) {
        const args = callArguments(text, m.index + name.length);
        for (const c of args.matchAll(/Messages\.(\w+)/g)) {
          used.push({ code: codeOf(c[1]), status, where: where(m.index) });
        }
      }
    }
    // Every message named (the front door's and the contract middleware's answers take their
    // status from their code).
    for (const m of text.matchAll(/Messages\.(\w+)/g)) {
      const code = codeOf(m[1]);
      const entry = ERROR_CODES.find((e) => e.code === code);
      used.push({ code, status: entry?.status ?? 0, where: where(m.index) });
    }
    // Answers written directly: errorBody(404, "NOT_FOUND", ...).
    for (const m of text.matchAll(/\(\s*([1-5]\d\d)\s*,\s*"([A-Z][A-Z0-9_]+)"/g)) {
      used.push({ code: m[2], status: Number(m[1]), where: where(m.index) });
    }
  }
  for (const code of ["INTERNAL", "NOT_FOUND", "NOT_READY", "INVALID_REQUEST", "STALE_VERSION"]) {
    assert.ok(used.some((u) => u.code === code), `the search finds ${code}`);
  }
  for (const { code, status, where } of used) {
    const entry = ERROR_CODES.find((e) => e.code === code);
    assert.ok(entry, `${where} answers ${code}, which src/domain/error_codes.ts does not list`);
    assert.equal(entry.status, status, `${where} answers ${code} with ${status}`);
  }
  for (const { code } of ERROR_CODES) {
    assert.ok(used.some((u) => u.code === code), `${code} is listed but src/ never answers it`);
  }
});

Deno.test("README.md's Error codes table is the list", async () => {
  const readme = await Deno.readTextFile(new URL("../README.md", import.meta.url));
  const start = readme.indexOf("\n## Error codes\n");
  assert.ok(start >= 0, "README.md has a section ## Error codes");
  const end = readme.indexOf("\n## ", start + 1);
  const section = readme.slice(start, end < 0 ? undefined : end);
  const rows = section.split("\n").filter((l) => l.startsWith("|")).slice(2)
    .map((l) => l.slice(1, -1).split("|").map((c) => c.trim()));
  const expected = ERROR_CODES.map((e) => [`\`${e.code}\``, String(e.status), e.meaning]);
  assert.deepEqual(
    rows,
    expected,
    `README.md's table differs from src/domain/error_codes.ts; it should be:\n${errorCodesTable()}`,
  );
  const previous = readme.slice(0, start).lastIndexOf("\n## ");
  assert.ok(readme.slice(previous).startsWith("\n## Calling it\n"), "it follows ## Calling it");
});

Deno.test({
  name: "/openapi.json and /api-docs show this same document",
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    const app = await makeTestApp();
    try {
      const served = await app.call("GET", "/openapi.json");
      assert.equal(served.status, 200);
      assert.deepEqual(served.body, JSON.parse(JSON.stringify(doc)));
      const page = await app.call("GET", "/api-docs");
      assert.equal(page.status, 200);
      const m = /<script id="api-reference" type="application\/json">([\s\S]*?)<\/script>/.exec(
        page.body,
      );
      assert.ok(m, "the page embeds the document");
      assert.deepEqual(JSON.parse(m[1]), served.body);
    } finally {
      await app.close();
    }
  },
});
