// Service configuration, read from the environment once.
import { Config, Context, Effect, Layer, Option, Redacted } from "effect";

export interface AppConfigShape {
  readonly port: number;
  readonly host: string;
  readonly databaseUrl: Option.Option<Redacted.Redacted<string>>;
  readonly dataDir: string;
  readonly dbPoolMax: number;
  readonly sessionSecret: Option.Option<Redacted.Redacted<string>>;
  readonly seedDemo: boolean;
  // Build the browser console on start when its bundle is missing or stale.
  readonly buildConsole: boolean;
  // Session-cookie writes must come from this origin (scheme, host, port); unset: the request's own.
  readonly publicOrigin: Option.Option<string>;
  readonly limits: ServiceLimits;
}

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
}

export const DEFAULT_LIMITS: ServiceLimits = {
  requestMs: 30_000,
  bodyMs: 10_000,
  headersMs: 10_000,
  idleMs: 30_000,
  statementMs: 15_000,
  lockMs: 3_000,
};

const millis = (name: string, fallback: number) =>
  Config.integer(name).pipe(
    Config.validate({
      message: `${name} must be a positive number of milliseconds`,
      validation: (n) => n > 0,
    }),
    Config.withDefault(fallback),
  );

export class AppConfig extends Context.Tag("App/Config")<AppConfig, AppConfigShape>() {
  static readonly fromEnv = Config.all({
    port: Config.integer("PORT").pipe(Config.withDefault(8000)),
    host: Config.string("HOST").pipe(Config.withDefault("0.0.0.0")),
    databaseUrl: Config.option(Config.redacted("DATABASE_URL")).pipe(
      Config.map(Option.filter((url) => Redacted.value(url).trim() !== "")),
    ),
    dataDir: Config.string("DATA_DIR").pipe(Config.withDefault(".data")),
    dbPoolMax: Config.integer("DB_POOL_MAX").pipe(Config.withDefault(10)),
    sessionSecret: Config.option(Config.redacted("SESSION_SECRET")),
    seedDemo: Config.boolean("SEED_DEMO").pipe(Config.withDefault(true)),
    buildConsole: Config.boolean("BUILD_CONSOLE").pipe(Config.withDefault(true)),
    publicOrigin: Config.option(Config.string("PUBLIC_ORIGIN")).pipe(
      Config.map(Option.filter((origin) => origin.trim() !== "")),
    ),
    limits: Config.all({
      requestMs: millis("REQUEST_TIMEOUT_MS", DEFAULT_LIMITS.requestMs),
      bodyMs: millis("BODY_TIMEOUT_MS", DEFAULT_LIMITS.bodyMs),
      headersMs: millis("HEADERS_TIMEOUT_MS", DEFAULT_LIMITS.headersMs),
      idleMs: millis("IDLE_TIMEOUT_MS", DEFAULT_LIMITS.idleMs),
      statementMs: millis("STATEMENT_TIMEOUT_MS", DEFAULT_LIMITS.statementMs),
      lockMs: millis("LOCK_TIMEOUT_MS", DEFAULT_LIMITS.lockMs),
    }),
  });

  static readonly layer = Layer.effect(AppConfig, AppConfig.fromEnv);
  static readonly make = (overrides: Partial<AppConfigShape> = {}) =>
    Layer.effect(AppConfig, Effect.map(AppConfig.fromEnv, (c) => ({ ...c, ...overrides })));
}
