// The log line's format: time, level and message, then the fields that are not undefined, in their
// order (text: name=value, a value quoted unless it is one plain word; JSON: one object).
import assert from "node:assert/strict";
import { Cause, Effect, FastCheck as fc, Layer, ManagedRuntime } from "effect";
import { SqlError } from "@effect/sql/SqlError";
import {
  effectLoggerLayer,
  failureReason,
  formatLine,
  type LogFields,
  type LogLevel,
  makeLog,
} from "../src/log.ts";

// The format stated plainly: entries, those defined, each written as the format says.
const model = (
  format: "text" | "json",
  level: LogLevel,
  message: string,
  fields: LogFields,
  time: Date,
) => {
  const present = Object.entries(fields).filter(([, v]) => v !== undefined);
  if (format === "json") {
    return JSON.stringify({
      time: time.toISOString(),
      level,
      msg: message,
      ...Object.fromEntries(present),
    });
  }
  const word = (v: unknown) =>
    typeof v === "string" && /^[\w./:@+-]{1,200}$/.test(v) ? v : JSON.stringify(v);
  return [
    `${time.toISOString()} ${level.toUpperCase().padEnd(5)} ${message}`,
    ...present.map(([k, v]) => `${k}=${word(v)}`),
  ].join(" ");
};

const fields = fc.dictionary(
  fc.stringMatching(/^[a-z_]{1,8}$/),
  fc.oneof(
    fc.string({ maxLength: 30 }),
    fc.stringMatching(/^[\w./:@+-]{1,12}$/),
    fc.integer(),
    fc.double({ noNaN: true }),
    fc.boolean(),
    fc.constant(null),
    fc.constant(undefined),
  ),
  { maxKeys: 8 },
);

Deno.test("a log line holds the defined fields in their order, as text or JSON", () => {
  fc.assert(
    fc.property(
      fc.constantFrom("text" as const, "json" as const),
      fc.constantFrom<LogLevel>("debug", "info", "warn", "error"),
      fc.string({ maxLength: 20 }),
      fields,
      fc.date({ min: new Date("2000-01-01"), max: new Date("2100-01-01"), noInvalidDate: true }),
      (format, level, message, record, time) => {
        assert.equal(
          formatLine(format, level, message, record, time),
          model(format, level, message, record, time),
        );
      },
    ),
    { numRuns: 500 },
  );
  // A request's line as the front door writes it.
  const time = new Date("2026-11-28T07:00:00.000Z");
  assert.equal(
    formatLine("text", "info", "request", {
      method: "GET",
      path: "/api/v1/stores",
      query: undefined,
      status: 200,
      member: null,
      note: "two words",
    }, time),
    '2026-11-28T07:00:00.000Z INFO  request method=GET path=/api/v1/stores status=200 member=null note="two words"',
  );
});

Deno.test("a failure's reason names the causes under it, never a URL", async () => {
  const runtime = ManagedRuntime.make(Layer.empty);
  const refused = new SqlError({
    cause: new Error('database "energy" does not exist'),
    message: "PgClient: Failed to connect",
  });
  const failure = await runtime.runPromise(Effect.fail(refused)).catch((e) => e);
  assert.equal(
    failureReason(failure),
    'PgClient: Failed to connect: database "energy" does not exist',
  );
  const url = new TypeError("Invalid URL: 'postgres://ops:s3cret@db:5432/energy'");
  const reason = failureReason(
    new SqlError({ cause: url, message: "PgClient: Failed to create pool" }),
  );
  assert.ok(!reason.includes("s3cret"), reason);
  assert.match(reason, /^PgClient: Failed to create pool: Invalid URL: '\(a URL\)$/);
  await runtime.dispose();
});

Deno.test("a failed request's log line names the database's own error and its SQLSTATE", async () => {
  const lines: Array<string> = [];
  const log = makeLog({ level: "info", format: "json", sink: (line) => lines.push(line) });
  const database = Object.assign(
    new Error('could not extend file "base/5/t0_17364": No space left on device'),
    { code: "53100" },
  );
  const failed = new SqlError({ cause: database, message: "Failed to execute statement" });
  await Effect.runPromise(
    Effect.logError("request failed", Cause.fail(failed)).pipe(
      Effect.annotateLogs("request_id", "r-1"),
      Effect.provide(effectLoggerLayer(log)),
    ),
  );
  const line = JSON.parse(lines.at(-1)!);
  assert.equal(line.msg, "request failed");
  assert.equal(line.request_id, "r-1");
  assert.equal(
    line.reason,
    'Failed to execute statement: could not extend file "base/5/t0_17364": No space left on ' +
      "device (SQLSTATE 53100)",
  );
});
