// The admission limits' defaults follow the database: one heavy task at a time on the embedded one
// (DATABASE_URL unset or blank), the shared defaults on PostgreSQL; any limit set wins either way.
import assert from "node:assert/strict";
import { ConfigProvider, Effect } from "effect";
import { AppConfig, DEFAULT_ADMISSION, EMBEDDED_ADMISSION } from "../src/config.ts";

const admissionOf = (env: Record<string, string>) =>
  Effect.runPromise(
    AppConfig.fromEnv.pipe(
      Effect.map((config) => config.admission),
      Effect.withConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(env)))),
    ),
  );

const URL = "postgres://service@db.example/energy";

Deno.test("the embedded database admits one heavy task at a time; PostgreSQL the shared defaults", async () => {
  assert.deepStrictEqual(await admissionOf({}), EMBEDDED_ADMISSION);
  assert.deepStrictEqual(await admissionOf({ DATABASE_URL: "  " }), EMBEDDED_ADMISSION);
  assert.deepStrictEqual(await admissionOf({ DATABASE_URL: URL }), DEFAULT_ADMISSION);
  assert.equal(EMBEDDED_ADMISSION.heavy, 1);
  assert.equal(EMBEDDED_ADMISSION.heavyPerKey, 1);
  assert.equal(EMBEDDED_ADMISSION.bodyBytes, DEFAULT_ADMISSION.bodyBytes);
});

Deno.test("a limit that is set wins over either default; the others keep theirs", async () => {
  assert.deepStrictEqual(await admissionOf({ HEAVY_MAX: "3" }), {
    ...EMBEDDED_ADMISSION,
    heavy: 3,
  });
  assert.deepStrictEqual(
    await admissionOf({ DATABASE_URL: URL, HEAVY_MAX_PER_KEY: "1", BODY_BUDGET_MB: "8" }),
    { ...DEFAULT_ADMISSION, heavyPerKey: 1, bodyBytes: 8 * 1024 * 1024 },
  );
  await assert.rejects(admissionOf({ HEAVY_MAX: "0" }));
  await assert.rejects(admissionOf({ HEAVY_MAX_PER_KEY: "two" }));
});
