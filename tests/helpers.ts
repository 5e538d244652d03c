// Builds the service's web handler in process over a fresh test database, with helpers to call it.
import { SqlClient } from "@effect/sql";
import { Effect, Layer, Option, Schema } from "effect";
import { type HandlerOptions, makeHandler } from "../src/app.ts";
import { issueKey } from "../src/auth/keys.ts";
import { AppConfig } from "../src/config.ts";
import type { Permission } from "../src/domain/auth.ts";
import { makeLog } from "../src/log.ts";
import { makeTestDatabase, type TestDatabase } from "./db.ts";
import type { Incoming } from "../src/http/incoming.ts";

export interface CallOptions {
  readonly key?: string;
  readonly body?: unknown;
  readonly headers?: Record<string, string>;
}

export interface Answer {
  readonly status: number;
  readonly headers: Headers;
  // deno-lint-ignore no-explicit-any
  readonly body: any;
}

export interface TestApp {
  readonly db: TestDatabase;
  readonly handler: (request: Incoming, controller?: AbortController) => Promise<Response>;
  readonly call: (method: string, path: string, options?: CallOptions) => Promise<Answer>;
  readonly key: (
    permissions: ReadonlyArray<Permission>,
    options?: { stores?: ReadonlyArray<number>; member?: string; seconds?: number },
  ) => Promise<{ id: number; key: string }>;
  readonly close: () => Promise<void>;
}

export const BASE = "http://service.test";

let members = 0;

// Tests see warnings and errors (5xx answers among them), not one access line per request.
// An answer with its body parsed as JSON when it is JSON, else as text.
export const readAnswer = async (response: Response): Promise<Answer> => {
  const text = await response.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // not JSON
  }
  return { status: response.status, headers: response.headers, body };
};

// Sends a GET of /health/live on a loopback connection and reads its whole answer (headers and a
// JSON body), leaving the connection open.
export const askLive = async (conn: Deno.Conn): Promise<string> => {
  await conn.write(new TextEncoder().encode("GET /health/live HTTP/1.1\r\nHost: x\r\n\r\n"));
  const buffer = new Uint8Array(4096);
  let text = "";
  while (!/\r\n\r\n[\s\S]*\}$/.test(text)) {
    const n = await conn.read(buffer);
    if (n === null) throw new Error(`closed after ${JSON.stringify(text)}`);
    text += new TextDecoder().decode(buffer.subarray(0, n));
  }
  return text;
};

export const quietLog = makeLog({ level: "warn", format: "text" });

export interface TestAppOptions extends HandlerOptions {
  readonly config?: Parameters<typeof AppConfig.make>[0];
  readonly lockMs?: number;
  // Wraps the service's database client (a test that watches the statements it runs).
  readonly wrapDatabase?: (
    layer: Layer.Layer<SqlClient.SqlClient>,
  ) => Layer.Layer<SqlClient.SqlClient>;
}

export const makeTestApp = async (
  prepare?: (db: TestDatabase) => Promise<void>,
  options: TestAppOptions = {},
): Promise<TestApp> => {
  const { config, lockMs, wrapDatabase, ...handlerOptions } = options;
  const db = await makeTestDatabase({ lockMs });
  if (prepare) await prepare(db);
  const { handler, dispose } = makeHandler(
    // Cookie writes come from the address the tests call (ownOrigin in src/auth/auth_http.ts).
    Layer.merge(
      wrapDatabase?.(db.layer) ?? db.layer,
      AppConfig.make({ publicOrigin: Option.some(BASE), ...config }),
    ),
    { ...handlerOptions, log: handlerOptions.log ?? quietLog },
  );
  const call = async (method: string, path: string, options: CallOptions = {}) => {
    const headers = new Headers(options.headers);
    if (options.key !== undefined) headers.set("authorization", `Bearer ${options.key}`);
    let body: string | undefined;
    if (options.body !== undefined) {
      headers.set("content-type", "application/json");
      body = typeof options.body === "string" ? options.body : JSON.stringify(options.body);
    }
    const response = await handler(new Request(BASE + path, { method, headers, body }));
    const text = await response.text();
    let parsed: unknown = text;
    try {
      parsed = text === "" ? null : JSON.parse(text);
    } catch {
      // not JSON: the docs page
    }
    return { status: response.status, headers: response.headers, body: parsed };
  };
  const key: TestApp["key"] = async (permissions, options = {}) => {
    const issued = await db.run(issueKey({
      member: options.member ?? `member-${++members}`,
      permissions,
      stores: options.stores ?? null,
      lifetime: null,
    }));
    if (options.seconds !== undefined) await db.run(setKeyExpiry(issued.id, options.seconds));
    return { id: issued.id, key: issued.key };
  };
  return {
    db,
    handler,
    call,
    key,
    close: async () => {
      await dispose();
      await db.close();
    },
  };
};

// Moves a key's expiry relative to now (negative: already expired).
export const setKeyExpiry = (keyId: number, seconds: number) =>
  Effect.flatMap(
    SqlClient.SqlClient,
    (sql) =>
      sql`UPDATE access_keys SET expires_at = now() + make_interval(secs => ${seconds}::float8)
        WHERE id = ${keyId}`,
  );

// Strict decode: every field present, no unknown field.
export const assertSchema = <A, I>(schema: Schema.Schema<A, I>, value: unknown): A =>
  Schema.decodeUnknownSync(schema, { onExcessProperty: "error", errors: "all" })(value);

export const assertErrorBody = (answer: Answer, status: number, code?: string) => {
  if (answer.status !== status) {
    throw new Error(`expected ${status}, got ${answer.status}: ${JSON.stringify(answer.body)}`);
  }
  const body = answer.body as { error?: { code?: unknown; message?: unknown } };
  if (
    typeof body !== "object" || body === null || Object.keys(body).length !== 1 ||
    typeof body.error?.code !== "string" || typeof body.error?.message !== "string" ||
    Object.keys(body.error).length !== 2
  ) {
    throw new Error(`not an Error body: ${JSON.stringify(answer.body)}`);
  }
  if (code !== undefined && body.error.code !== code) {
    throw new Error(`expected code ${code}, got ${body.error.code}`);
  }
};
