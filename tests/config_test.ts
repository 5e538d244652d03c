// The settings the service reads: a value it cannot use as the docs say is refused at start-up,
// naming the setting, before anything is opened; never a crash later, never a value read loosely.
import assert from "node:assert/strict";
import { ConfigProvider, Effect, Either, Option, Redacted } from "effect";
import { AppConfig, DEFAULT_REPLICA } from "../src/config.ts";

const configOf = (env: Record<string, string>) =>
  Effect.runPromise(
    Effect.either(
      Effect.withConfigProvider(
        AppConfig.fromEnv,
        ConfigProvider.fromMap(new Map(Object.entries(env))),
      ),
    ),
  );

const refused = async (env: Record<string, string>, names: string) => {
  const result = await configOf(env);
  assert.ok(Either.isLeft(result), `${JSON.stringify(env)} was accepted`);
  assert.match(String(result.left), new RegExp(names), JSON.stringify(env));
};

Deno.test("time limits: positive, within a timer's range, the headers' within the request's", async () => {
  await refused(
    { REQUEST_TIMEOUT_MS: "5000", HEADERS_TIMEOUT_MS: "6000" },
    "HEADERS_TIMEOUT_MS must be at most",
  );
  // A request time alone, shorter than the header time's default, shortens that default with it.
  const shorter = await configOf({ REQUEST_TIMEOUT_MS: "5000" });
  assert.ok(Either.isRight(shorter));
  assert.deepEqual([shorter.right.limits.requestMs, shorter.right.limits.headersMs], [5000, 5000]);
  await refused({ HEADERS_TIMEOUT_MS: "40000" }, "HEADERS_TIMEOUT_MS must be at most");
  await refused({ BODY_TIMEOUT_MS: "3000000000" }, "BODY_TIMEOUT_MS");
  await refused({ EXPORT_TIMEOUT_MS: "3000000000" }, "EXPORT_TIMEOUT_MS");
  await refused({ STATEMENT_TIMEOUT_MS: "0" }, "STATEMENT_TIMEOUT_MS");
  const fine = await configOf({ REQUEST_TIMEOUT_MS: "5000", HEADERS_TIMEOUT_MS: "5000" });
  assert.ok(Either.isRight(fine));
  assert.deepEqual([fine.right.limits.requestMs, fine.right.limits.headersMs], [5000, 5000]);
});

Deno.test("PORT and DB_POOL_MAX are whole numbers in digits, within their range", async () => {
  for (const port of ["1e3", "0x1F90", "8000.0", "", "-1", "70000"]) {
    await refused({ PORT: port }, "PORT must be a whole number from 0 to 65535");
  }
  for (const max of ["0", "-1", "1e1", ""]) {
    await refused({ DB_POOL_MAX: max }, "DB_POOL_MAX");
  }
  // Every whole-number setting reads digits only.
  for (
    const name of ["HEAVY_MAX", "BODY_BUDGET_MB", "ANSWER_CACHE_MB", "REQUEST_TIMEOUT_MS"]
  ) {
    for (const loose of ["1e1", "0x10", "12.0", ""]) await refused({ [name]: loose }, name);
  }
  const fine = await configOf({ PORT: "0", DB_POOL_MAX: "4" });
  assert.ok(Either.isRight(fine));
  assert.deepEqual([fine.right.port, fine.right.dbPoolMax], [0, 4]);
  const defaults = await configOf({});
  assert.ok(Either.isRight(defaults));
  assert.deepEqual([defaults.right.port, defaults.right.dbPoolMax], [8000, 10]);
});

Deno.test("DATA_DIR names a folder: blank or with spaces at its ends is refused, unset is .data", async () => {
  for (const dir of ["", "  ", "/srv/energy ", " data"]) {
    await refused({ DATA_DIR: dir }, "DATA_DIR must name a folder");
  }
  const unset = await configOf({});
  assert.ok(Either.isRight(unset));
  assert.equal(unset.right.dataDir, ".data");
  const named = await configOf({ DATA_DIR: "/srv/energy" });
  assert.ok(Either.isRight(named));
  assert.equal(named.right.dataDir, "/srv/energy");
});

Deno.test("DATABASE_URL is a postgres URL that parses, its ends' spaces dropped; blank is unset", async () => {
  const urlOf = async (url: string) => {
    const result = await configOf({ DATABASE_URL: url, DATABASE_READ_URL: url });
    assert.ok(Either.isRight(result), url);
    return [result.right.databaseUrl, result.right.databaseReadUrl].map((u) =>
      Option.map(u, Redacted.value)
    );
  };
  assert.deepEqual(await urlOf(" postgres://u@db:5432/energy "), [
    Option.some("postgres://u@db:5432/energy"),
    Option.some("postgres://u@db:5432/energy"),
  ]);
  assert.deepEqual(await urlOf("   "), [Option.none(), Option.none()]);
  for (const good of ["postgresql://u:p%23w@db/e", "postgres:///e?host=/var/run/postgresql"]) {
    assert.deepEqual(await urlOf(good), [Option.some(good), Option.some(good)]);
  }
  for (const bad of ["db:5432/energy", "mysql://u@db/e", "postgres://u:pa#ss@db/e"]) {
    await refused({ DATABASE_URL: bad }, "DATABASE_URL must be a postgres:// URL");
    await refused({ DATABASE_READ_URL: bad }, "DATABASE_READ_URL must be a postgres:// URL");
  }
});

Deno.test("HOST: an IPv6 address in brackets is the address, spaces dropped; blank is refused", async () => {
  const hostOf = async (host: string) => {
    const result = await configOf({ HOST: host });
    assert.ok(Either.isRight(result), host);
    return result.right.host;
  };
  assert.equal(await hostOf("[::1]"), "::1");
  assert.equal(await hostOf(" 127.0.0.1 "), "127.0.0.1");
  assert.equal(await hostOf("::"), "::");
  await refused({ HOST: " " }, "HOST must name an address");
});

Deno.test("tracing: a blank sampler argument is the default ratio 1; each endpoint named in its own refusal", async () => {
  const tracing = async (env: Record<string, string>) => {
    const result = await configOf({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318", ...env });
    assert.ok(Either.isRight(result), JSON.stringify(env));
    return Option.getOrThrow(result.right.tracing);
  };
  const sampler = { OTEL_TRACES_SAMPLER: "parentbased_traceidratio" };
  assert.equal((await tracing({ ...sampler, OTEL_TRACES_SAMPLER_ARG: "" })).ratio, 1);
  assert.equal((await tracing({ ...sampler, OTEL_TRACES_SAMPLER_ARG: " 0.25 " })).ratio, 0.25);
  await refused(
    { OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318", ...sampler, OTEL_TRACES_SAMPLER_ARG: "half" },
    "OTEL_TRACES_SAMPLER_ARG must be between 0 and 1",
  );
  await refused(
    { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "collector:4318" },
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT must be an http",
  );
  await refused(
    { OTEL_EXPORTER_OTLP_ENDPOINT: "collector:4318" },
    "OTEL_EXPORTER_OTLP_ENDPOINT must",
  );
});

Deno.test("PUBLIC_ORIGIN is an http(s) origin, kept as browsers send it", async () => {
  for (
    const origin of ["energy.example.com", "ftp://energy.example.com", "https://x.example/app"]
  ) {
    await refused({ PUBLIC_ORIGIN: origin }, "PUBLIC_ORIGIN must be an http");
  }
  const upper = await configOf({ PUBLIC_ORIGIN: "HTTPS://Energy.Example.com:443/" });
  assert.ok(Either.isRight(upper));
  assert.deepEqual(upper.right.publicOrigin, Option.some("https://energy.example.com"));
  const blank = await configOf({ PUBLIC_ORIGIN: "  " });
  assert.ok(Either.isRight(blank) && Option.isNone(blank.right.publicOrigin));
});

Deno.test("an empty SESSION_SECRET is no secret (one is made and kept in the database), not an empty key", async () => {
  const empty = await configOf({ SESSION_SECRET: " " });
  assert.ok(Either.isRight(empty) && Option.isNone(empty.right.sessionSecret));
  const set = await configOf({ SESSION_SECRET: "a-secret-of-enough-length-0123456789" });
  assert.ok(Either.isRight(set));
  assert.equal(
    Redacted.value(Option.getOrThrow(set.right.sessionSecret)),
    "a-secret-of-enough-length-0123456789",
  );
});

Deno.test("a start with a bad LOG_LEVEL, LOG_FORMAT or time limit stops at once, naming it", async () => {
  for (
    const [name, value] of [["LOG_LEVEL", "verbose"], ["LOG_FORMAT", "xml"], [
      "REQUEST_TIMEOUT_MS",
      "0",
    ]]
  ) {
    const dataDir = await Deno.makeTempDir({ prefix: "config_start_" });
    try {
      const out = await new Deno.Command(Deno.execPath(), {
        args: ["run", "-A", "src/main.ts"],
        env: { DATA_DIR: dataDir, DATABASE_URL: "", PORT: "0", [name]: value },
        // A start that does not stop fails the test instead of hanging it.
        signal: AbortSignal.timeout(60_000),
        stdout: "piped",
        stderr: "piped",
      }).output();
      const text = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
      assert.equal(out.code, 1, text);
      assert.match(text, /start-up failed: bad configuration/);
      assert.match(text, new RegExp(name));
      // Nothing was opened: no database made in the data folder.
      assert.deepEqual([...Deno.readDirSync(dataDir)], [], text);
    } finally {
      await Deno.remove(dataDir, { recursive: true });
    }
  }
});

Deno.test("replica settings: optional URL, wait and lag limits checked", async () => {
  const none = await configOf({});
  assert.ok(none._tag === "Right");
  assert.ok(Option.isNone(none.right.databaseReadUrl));
  assert.deepEqual(none.right.replica, DEFAULT_REPLICA);
  const blank = await configOf({ DATABASE_READ_URL: "  " });
  assert.ok(blank._tag === "Right" && Option.isNone(blank.right.databaseReadUrl));
  const set = await configOf({
    DATABASE_READ_URL: "postgres://reader@standby/energy",
    DATABASE_READ_WAIT_MS: "0",
    DATABASE_READ_MAX_LAG_MS: "5000",
  });
  assert.ok(set._tag === "Right");
  assert.equal(
    Redacted.value(Option.getOrThrow(set.right.databaseReadUrl)),
    "postgres://reader@standby/energy",
  );
  assert.deepEqual(set.right.replica, { waitMs: 0, maxLagMs: 5000 });
  const refused: Array<Record<string, string>> = [
    { DATABASE_READ_WAIT_MS: "-1" },
    { DATABASE_READ_WAIT_MS: "10001" },
    { DATABASE_READ_MAX_LAG_MS: "999" },
  ];
  for (const bad of refused) {
    assert.equal((await configOf(bad))._tag, "Left", JSON.stringify(bad));
  }
});
