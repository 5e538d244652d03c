// Service configuration, read from the environment once.
import { Config, ConfigError, Context, Effect, Either, Layer, Option, Redacted } from "effect";

export interface AppConfigShape {
  readonly port: number;
  readonly host: string;
  readonly databaseUrl: Option.Option<Redacted.Redacted<string>>;
  // A streaming standby of DATABASE_URL that reads of current data go to (src/db/read_replica.ts);
  // ignored on the embedded database.
  readonly databaseReadUrl: Option.Option<Redacted.Redacted<string>>;
  readonly replica: ReplicaSettings;
  readonly dataDir: string;
  readonly dbPoolMax: number;
  readonly sessionSecret: Option.Option<Redacted.Redacted<string>>;
  readonly seedDemo: boolean;
  // Build the browser console on start when its bundle is missing or stale.
  readonly buildConsole: boolean;
  // Session-cookie writes must come from this origin (scheme, host, port); unset: the request's own.
  readonly publicOrigin: Option.Option<string>;
  readonly limits: ServiceLimits;
  readonly admission: AdmissionLimits;
  // MiB of recent answers of current reads a process keeps, to answer again while their data is
  // unchanged (src/reads/read_cache.ts); 0 keeps none.
  readonly answerCacheMb: number;
  // Listen for the notices of changes on PostgreSQL (src/db/change_notices.ts): off behind a pooler
  // that hands out server connections per transaction.
  readonly changeNotices: boolean;
  // GET /metrics answers only with this bearer token; none: there is no /metrics.
  readonly metricsToken: Option.Option<Redacted.Redacted<string>>;
  // OpenTelemetry traces; none (the default): nothing is traced nor loaded for it.
  readonly tracing: Option.Option<TracingSettings>;
}

export const SERVICE_NAME = "energy-saving-service";

// From the standard OTEL_* variables.
export interface TracingSettings {
  // Where spans are POSTed (OTLP/HTTP, JSON).
  readonly tracesUrl: string;
  readonly serviceName: string;
  // OTEL_EXPORTER_OTLP_HEADERS ("name=value,..."): often a collector's API key.
  readonly headers: Redacted.Redacted<Readonly<Record<string, string>>>;
  // The share of new traces kept (a request whose caller sent a sampled traceparent is kept).
  readonly ratio: number;
  readonly exportIntervalMs: number;
}

// How reads use the replica of DATABASE_READ_URL (milliseconds).
export interface ReplicaSettings {
  // A read as of a commit the replica has not replayed waits this long for it, then reads the
  // primary; 0: the primary at once.
  readonly waitMs: number;
  // A replica that has not replayed what the primary had written this long ago is not read.
  readonly maxLagMs: number;
}

export const DEFAULT_REPLICA: ReplicaSettings = { waitMs: 250, maxLagMs: 10_000 };

// Time limits against clients and statements that hold the service (milliseconds).
export interface ServiceLimits {
  // The whole request, from its first byte to its answer: past it, 503 TIMEOUT.
  readonly requestMs: number;
  // A request body must arrive within this: past it, 408 REQUEST_TIMEOUT.
  readonly bodyMs: number;
  // The request line and headers must arrive within this, else the connection is closed.
  readonly headersMs: number;
  // A connection with no traffic for this long is closed.
  readonly idleMs: number;
  // PostgreSQL statement_timeout and lock_timeout of every pooled connection.
  readonly statementMs: number;
  readonly lockMs: number;
  // An export (or a template with days) must be sent within this: past it, the answer is cut.
  readonly exportMs: number;
}

// What all clients together may make the service hold or do at once (src/http/admission.ts).
export interface AdmissionLimits {
  // Request bytes in flight across all requests, and for one credential (or one client address
  // when there is none): past either, 503 BUSY with Retry-After and the body unread.
  readonly bodyBytes: number;
  readonly bodyBytesPerKey: number;
  // Heavy work (previews, commits, exports, templates with days) running at once, in all and for
  // one credential: past either, 503 BUSY with Retry-After.
  readonly heavy: number;
  readonly heavyPerKey: number;
}

export const DEFAULT_ADMISSION: AdmissionLimits = {
  bodyBytes: 32 * 1024 * 1024,
  bodyBytesPerKey: 12 * 1024 * 1024,
  heavy: 4,
  heavyPerKey: 2,
};

// The defaults on the embedded database (DATABASE_URL unset): one heavy task at a time. Its one
// connection runs one statement at a time, so a second task at once adds no throughput, only the
// memory of a second file, its rows and its answer. HEAVY_MAX and HEAVY_MAX_PER_KEY still override.
export const EMBEDDED_ADMISSION: AdmissionLimits = {
  ...DEFAULT_ADMISSION,
  heavy: 1,
  heavyPerKey: 1,
};

export const DEFAULT_LIMITS: ServiceLimits = {
  requestMs: 30_000,
  bodyMs: 10_000,
  headersMs: 10_000,
  idleMs: 30_000,
  statementMs: 15_000,
  lockMs: 3_000,
  exportMs: 120_000,
};

// The longest delay a timer takes (a longer one fires at once).
export const MAX_MILLIS = 2_147_483_647;

// Every whole-number setting: its text in digits only (Config.integer also takes "1e3", "0x10",
// "12.0", and an empty text as 0), within what `valid` accepts, else `message`.
const wholeNumber = (name: string, message: string, valid: (n: number) => boolean) =>
  Config.string(name).pipe(
    Config.mapOrFail((text) => {
      const n = /^\d{1,16}$/.test(text.trim()) ? Number(text.trim()) : NaN;
      return valid(n) ? Either.right(n) : Either.left(ConfigError.InvalidData([name], message));
    }),
  );

const givenMillis = (name: string) =>
  wholeNumber(
    name,
    `${name} must be a positive number of milliseconds, at most ${MAX_MILLIS}`,
    (n) => n > 0 && n <= MAX_MILLIS,
  );
const millis = (name: string, fallback: number) =>
  givenMillis(name).pipe(Config.withDefault(fallback));

// A database URL: blank is unset; else a postgres:// (or postgresql://, socket:) URL that parses,
// its spaces at the ends dropped. A password with "#", "/" or "?" must be percent-encoded, or the
// driver reads another host and fails with a message that names no setting.
const databaseUrlConfig = (name: string) =>
  Config.option(Config.string(name)).pipe(
    Config.mapOrFail((given) => {
      const url = Option.filter(Option.map(given, (text) => text.trim()), (text) => text !== "");
      if (Option.isNone(url)) return Either.right(Option.none<Redacted.Redacted<string>>());
      let parsed: URL | undefined;
      try {
        parsed = new URL(url.value);
      } catch {
        parsed = undefined;
      }
      return parsed !== undefined &&
          ["postgres:", "postgresql:", "socket:"].includes(parsed.protocol)
        ? Either.right(Option.some(Redacted.make(url.value)))
        : Either.left(
          ConfigError.InvalidData(
            [name],
            `${name} must be a postgres:// URL (percent-encode a password's "#", "/", "?" or "@")`,
          ),
        );
    }),
  );

// A whole number from min to max.
const inRange = (name: string, min: number, max: number, unit = "") =>
  wholeNumber(
    name,
    `${name} must be a whole number${unit} from ${min} to ${max}`,
    (n) => n >= min && n <= max,
  );

// PUBLIC_ORIGIN: an http(s) origin (scheme, host, optional port; no path), kept in its normal
// form, so that comparisons and the HTTPS check see it as browsers send it.
const publicOriginConfig = Config.option(Config.string("PUBLIC_ORIGIN")).pipe(
  Config.map(Option.filter((origin) => origin.trim() !== "")),
  Config.mapOrFail((given) => {
    if (Option.isNone(given)) return Either.right(given);
    const url = URL.parse(given.value.trim());
    return url !== null && (url.protocol === "https:" || url.protocol === "http:") &&
        (url.pathname === "/" || url.pathname === "") && url.search === "" && url.hash === "" &&
        url.username === "" && url.password === ""
      ? Either.right(Option.some(url.origin))
      : Either.left(
        ConfigError.InvalidData(
          ["PUBLIC_ORIGIN"],
          "PUBLIC_ORIGIN must be an http(s) origin such as https://energy.example.com",
        ),
      );
  }),
);

// Unset: none (the caller's default applies).
const count = (name: string) => Config.option(inRange(name, 1, 10_000));

// A size given in MiB, kept in bytes; unset: none.
const mebibytes = (name: string) =>
  Config.option(inRange(name, 1, 4096, " of MiB").pipe(Config.map((n) => n * 1024 * 1024)));

export const DEFAULT_ANSWER_CACHE_MB = 32;
const MAX_ANSWER_CACHE_MB = 4096;

const MAX_OTEL_HEADERS = 32;

// "name=value,name2=value2", values percent-encoded (the OpenTelemetry convention).
const parseOtelHeaders = (text: string): Record<string, string> | undefined => {
  const headers: Record<string, string> = {};
  const parts = text.split(",").filter((p) => p.trim() !== "");
  if (parts.length > MAX_OTEL_HEADERS) return undefined;
  for (const part of parts) {
    const eq = part.indexOf("=");
    if (eq <= 0) return undefined;
    const name = part.slice(0, eq).trim().toLowerCase();
    if (!/^[a-z0-9!#$%&'*+.^_`|~-]{1,64}$/.test(name)) return undefined;
    try {
      headers[name] = decodeURIComponent(part.slice(eq + 1).trim());
    } catch {
      return undefined;
    }
  }
  return headers;
};

const httpUrl = (text: string) => {
  try {
    const url = new URL(text);
    return url.protocol === "http:" || url.protocol === "https:" ? url : undefined;
  } catch {
    return undefined;
  }
};

// The OpenTelemetry samplers the service follows (the SDK's names); a ratio sampler takes
// OTEL_TRACES_SAMPLER_ARG.
const SAMPLERS = [
  "always_on",
  "always_off",
  "traceidratio",
  "parentbased_always_on",
  "parentbased_always_off",
  "parentbased_traceidratio",
];

const tracingConfig = Config.all({
  endpoint: Config.option(Config.string("OTEL_EXPORTER_OTLP_ENDPOINT")),
  tracesEndpoint: Config.option(Config.string("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")),
  serviceName: Config.string("OTEL_SERVICE_NAME").pipe(Config.withDefault(SERVICE_NAME)),
  headers: Config.redacted("OTEL_EXPORTER_OTLP_HEADERS").pipe(
    Config.withDefault(Redacted.make("")),
  ),
  disabled: Config.boolean("OTEL_SDK_DISABLED").pipe(Config.withDefault(false)),
  sampler: Config.string("OTEL_TRACES_SAMPLER").pipe(Config.withDefault("parentbased_always_on")),
  samplerArg: Config.option(Config.string("OTEL_TRACES_SAMPLER_ARG")),
  exportIntervalMs: millis("OTEL_BSP_SCHEDULE_DELAY", 5_000),
}).pipe(Config.mapOrFail((c) => {
  const fail = (message: string) => Either.left(ConfigError.InvalidData([], message));
  const given = (o: Option.Option<string>) => Option.filter(o, (v) => v.trim() !== "");
  const traces = given(c.tracesEndpoint);
  const base = given(c.endpoint);
  if (c.disabled || (Option.isNone(traces) && Option.isNone(base))) {
    return Either.right(Option.none<TracingSettings>());
  }
  // The base endpoint gets the signal's path; the traces endpoint is used as it is.
  const url = Option.isSome(traces)
    ? httpUrl(traces.value.trim())
    : httpUrl(`${Option.getOrThrow(base).trim().replace(/\/+$/, "")}/v1/traces`);
  if (url === undefined) {
    return fail(
      `${
        Option.isSome(traces) ? "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT" : "OTEL_EXPORTER_OTLP_ENDPOINT"
      } must be an http(s) URL`,
    );
  }
  const headers = parseOtelHeaders(Redacted.value(c.headers));
  if (headers === undefined) {
    return fail("OTEL_EXPORTER_OTLP_HEADERS must be name=value pairs separated by commas");
  }
  const sampler = c.sampler.trim().toLowerCase();
  if (!SAMPLERS.includes(sampler)) {
    return fail(`OTEL_TRACES_SAMPLER must be one of ${SAMPLERS.join(", ")}`);
  }
  // Unset or blank: 1 (the SDK's default), not the 0 an empty number reads as.
  const samplerArg = Option.match(given(c.samplerArg), {
    onNone: () => 1,
    onSome: (text) => /^\s*[0-9.eE+-]+\s*$/.test(text) ? Number(text) : NaN,
  });
  const ratio = sampler === "always_off" || sampler === "parentbased_always_off"
    ? 0
    : sampler.endsWith("traceidratio")
    ? samplerArg
    : 1;
  if (!(ratio >= 0 && ratio <= 1)) return fail("OTEL_TRACES_SAMPLER_ARG must be between 0 and 1");
  const serviceName = c.serviceName.trim().slice(0, 100) || SERVICE_NAME;
  return Either.right(Option.some<TracingSettings>({
    tracesUrl: url.toString(),
    serviceName,
    headers: Redacted.make(headers),
    ratio,
    exportIntervalMs: c.exportIntervalMs,
  }));
}));

// The admission limits: each one set, or the default of the database the service runs on (the
// embedded one when DATABASE_URL is unset or blank, as for `databaseUrl` below).
const admissionConfig = Config.all({
  databaseUrl: Config.option(Config.string("DATABASE_URL")).pipe(
    Config.map(Option.filter((url) => url.trim() !== "")),
  ),
  bodyBytes: mebibytes("BODY_BUDGET_MB"),
  bodyBytesPerKey: mebibytes("BODY_BUDGET_PER_KEY_MB"),
  heavy: count("HEAVY_MAX"),
  heavyPerKey: count("HEAVY_MAX_PER_KEY"),
}).pipe(Config.map(({ databaseUrl, ...given }): AdmissionLimits => {
  const defaults = Option.isSome(databaseUrl) ? DEFAULT_ADMISSION : EMBEDDED_ADMISSION;
  return {
    bodyBytes: Option.getOrElse(given.bodyBytes, () => defaults.bodyBytes),
    bodyBytesPerKey: Option.getOrElse(given.bodyBytesPerKey, () => defaults.bodyBytesPerKey),
    heavy: Option.getOrElse(given.heavy, () => defaults.heavy),
    heavyPerKey: Option.getOrElse(given.heavyPerKey, () => defaults.heavyPerKey),
  };
}));

export class AppConfig extends Context.Tag("App/Config")<AppConfig, AppConfigShape>() {
  static readonly fromEnv = Config.all({
    port: inRange("PORT", 0, 65_535).pipe(Config.withDefault(8000)),
    // An IPv6 address as a URL writes it ("[::1]") is the address itself.
    host: Config.string("HOST").pipe(
      Config.map((host) => host.trim().replace(/^\[(.*)\]$/, "$1")),
      Config.validate({ message: "HOST must name an address", validation: (h) => h !== "" }),
      Config.withDefault("0.0.0.0"),
    ),
    databaseUrl: databaseUrlConfig("DATABASE_URL"),
    databaseReadUrl: databaseUrlConfig("DATABASE_READ_URL"),
    replica: Config.all({
      waitMs: inRange("DATABASE_READ_WAIT_MS", 0, 10_000, " of milliseconds").pipe(
        Config.withDefault(DEFAULT_REPLICA.waitMs),
      ),
      maxLagMs: inRange("DATABASE_READ_MAX_LAG_MS", 1_000, 3_600_000, " of milliseconds").pipe(
        Config.withDefault(DEFAULT_REPLICA.maxLagMs),
      ),
    }),
    // A blank folder would put the embedded database in memory, a new empty one at each open; a
    // space at an end names another folder than the one meant, a new and empty one.
    dataDir: Config.string("DATA_DIR").pipe(
      Config.validate({
        message: "DATA_DIR must name a folder, without spaces at its ends (unset: .data)",
        validation: (dir) => dir.trim() !== "" && dir.trim() === dir,
      }),
      Config.withDefault(".data"),
    ),
    dbPoolMax: inRange("DB_POOL_MAX", 1, 1_000).pipe(Config.withDefault(10)),
    sessionSecret: Config.option(Config.redacted("SESSION_SECRET")).pipe(
      Config.map(Option.filter((secret) => Redacted.value(secret).trim() !== "")),
    ),
    seedDemo: Config.boolean("SEED_DEMO").pipe(Config.withDefault(true)),
    buildConsole: Config.boolean("BUILD_CONSOLE").pipe(Config.withDefault(true)),
    publicOrigin: publicOriginConfig,
    limits: Config.all({
      requestMs: millis("REQUEST_TIMEOUT_MS", DEFAULT_LIMITS.requestMs),
      bodyMs: millis("BODY_TIMEOUT_MS", DEFAULT_LIMITS.bodyMs),
      headersMs: Config.option(givenMillis("HEADERS_TIMEOUT_MS")),
      idleMs: millis("IDLE_TIMEOUT_MS", DEFAULT_LIMITS.idleMs),
      statementMs: millis("STATEMENT_TIMEOUT_MS", DEFAULT_LIMITS.statementMs),
      lockMs: millis("LOCK_TIMEOUT_MS", DEFAULT_LIMITS.lockMs),
      exportMs: millis("EXPORT_TIMEOUT_MS", DEFAULT_LIMITS.exportMs),
    }).pipe(
      // The headers are part of the request: node:http refuses a longer header time. Unset, the
      // header time is its default or the request's, whichever is shorter.
      Config.mapOrFail(({ headersMs, ...limits }) => {
        const headers = Option.getOrElse(
          headersMs,
          () => Math.min(DEFAULT_LIMITS.headersMs, limits.requestMs),
        );
        return headers <= limits.requestMs
          ? Either.right({ ...limits, headersMs: headers })
          : Either.left(
            ConfigError.InvalidData(
              ["HEADERS_TIMEOUT_MS"],
              "HEADERS_TIMEOUT_MS must be at most REQUEST_TIMEOUT_MS",
            ),
          );
      }),
    ),
    admission: admissionConfig,
    answerCacheMb: inRange("ANSWER_CACHE_MB", 0, MAX_ANSWER_CACHE_MB, " of MiB").pipe(
      Config.withDefault(DEFAULT_ANSWER_CACHE_MB),
    ),
    changeNotices: Config.boolean("CHANGE_NOTICES").pipe(Config.withDefault(true)),
    metricsToken: Config.option(Config.redacted("METRICS_TOKEN")).pipe(
      Config.map(Option.filter((token) => Redacted.value(token).trim() !== "")),
    ),
    tracing: tracingConfig,
  });

  static readonly layer = Layer.effect(AppConfig, AppConfig.fromEnv);
  static readonly make = (overrides: Partial<AppConfigShape> = {}) =>
    Layer.effect(AppConfig, Effect.map(AppConfig.fromEnv, (c) => ({ ...c, ...overrides })));
}
