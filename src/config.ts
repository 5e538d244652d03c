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
}

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
  });

  static readonly layer = Layer.effect(AppConfig, AppConfig.fromEnv);
  static readonly make = (overrides: Partial<AppConfigShape> = {}) =>
    Layer.effect(AppConfig, Effect.map(AppConfig.fromEnv, (c) => ({ ...c, ...overrides })));
}
