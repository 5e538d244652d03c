// The service's one logger: access lines, start-up messages and Effect's own logs, as text or JSON.
import { Cause, HashMap, Layer, Logger, LogLevel as EffectLevel, Runtime } from "effect";

export const LOG_LEVELS = ["debug", "info", "warn", "error"] as const;
export type LogLevel = typeof LOG_LEVELS[number];
export type LogFormat = "text" | "json";

export type LogFields = Readonly<Record<string, string | number | boolean | null | undefined>>;

export interface Log {
  readonly level: LogLevel;
  readonly write: (level: LogLevel, message: string, fields?: LogFields) => void;
  readonly debug: (message: string, fields?: LogFields) => void;
  readonly info: (message: string, fields?: LogFields) => void;
  readonly warn: (message: string, fields?: LogFields) => void;
  readonly error: (message: string, fields?: LogFields) => void;
}

const rank: Record<LogLevel, number> = { debug: 0, info: 1, warn: 2, error: 3 };

// A field value in a text line: bare when it is one plain word, else JSON-quoted.
const textValue = (value: string | number | boolean | null) =>
  typeof value === "string" && /^[\w./:@+-]{1,200}$/.test(value) ? value : JSON.stringify(value);

const LEVEL_TEXT: Record<LogLevel, string> = {
  debug: "DEBUG",
  info: "INFO ",
  warn: "WARN ",
  error: "ERROR",
};

// The fields in their order, those undefined left out. Built field by field: a line is written for
// every request, and the arrays of entries, filtered and mapped, were a part of what every kept
// answer's request allocated.
export const formatLine = (
  format: LogFormat,
  level: LogLevel,
  message: string,
  fields: LogFields = {},
  time = new Date(),
): string => {
  if (format === "json") {
    const record: Record<string, string | number | boolean | null> = {
      time: time.toISOString(),
      level,
      msg: message,
    };
    for (const name in fields) {
      const value = fields[name];
      if (value !== undefined) record[name] = value;
    }
    return JSON.stringify(record);
  }
  let line = `${time.toISOString()} ${LEVEL_TEXT[level]} ${message}`;
  for (const name in fields) {
    const value = fields[name];
    if (value !== undefined) line += ` ${name}=${textValue(value)}`;
  }
  return line;
};

const encoder = new TextEncoder();
const FLUSH_MS = 20;
const FLUSH_BYTES = 32 * 1024;

// Standard output and error. Lines below warn are written in batches, at most FLUSH_MS after they
// were made (one write a request costs a tenth of a busy service's time); a warning or an error
// first writes what is waiting and then itself at once, and the process writes what is waiting
// when it exits.
const standardSink = () => {
  let waiting: Array<string> = [];
  let bytes = 0;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const flush = () => {
    if (timer !== undefined) clearTimeout(timer);
    timer = undefined;
    if (waiting.length === 0) return;
    const text = waiting.join("\n") + "\n";
    waiting = [];
    bytes = 0;
    writeAll(Deno.stdout, encoder.encode(text));
  };
  globalThis.addEventListener("unload", flush);
  return (line: string, level: LogLevel) => {
    if (rank[level] >= rank.warn) {
      flush();
      writeAll(Deno.stderr, encoder.encode(line + "\n"));
      return;
    }
    waiting.push(line);
    bytes += line.length;
    if (bytes >= FLUSH_BYTES) flush();
    else timer ??= setTimeout(flush, FLUSH_MS);
  };
};

const writeAll = (to: { writeSync(p: Uint8Array): number }, data: Uint8Array) => {
  try {
    for (let at = 0; at < data.length;) at += to.writeSync(data.subarray(at));
  } catch {
    // A closed stream (the reader went away) loses the log, not the service.
  }
};

export const makeLog = (options: {
  readonly level: LogLevel;
  readonly format: LogFormat;
  readonly sink?: (line: string, level: LogLevel) => void;
}): Log => {
  const sink = options.sink ?? standardSink();
  const write = (level: LogLevel, message: string, fields?: LogFields) => {
    if (rank[level] >= rank[options.level]) {
      sink(formatLine(options.format, level, message, fields), level);
    }
  };
  return {
    level: options.level,
    write,
    debug: (m, f) => write("debug", m, f),
    info: (m, f) => write("info", m, f),
    warn: (m, f) => write("warn", m, f),
    error: (m, f) => write("error", m, f),
  };
};

export const parseLogLevel = (text: string | undefined): LogLevel => {
  const value = (text ?? "info").trim().toLowerCase();
  return (LOG_LEVELS as ReadonlyArray<string>).includes(value) ? value as LogLevel : "info";
};

export const parseLogFormat = (text: string | undefined): LogFormat =>
  (text ?? "").trim().toLowerCase() === "json" ? "json" : "text";

// What is wrong with LOG_LEVEL or LOG_FORMAT, if anything: the start refuses a value it would
// otherwise read as the default without a word.
export const logSettingsProblem = (): string | undefined => {
  const level = (Deno.env.get("LOG_LEVEL") ?? "").trim().toLowerCase();
  if (level !== "" && !(LOG_LEVELS as ReadonlyArray<string>).includes(level)) {
    return `LOG_LEVEL must be one of ${LOG_LEVELS.join(", ")}`;
  }
  const format = (Deno.env.get("LOG_FORMAT") ?? "").trim().toLowerCase();
  if (format !== "" && format !== "text" && format !== "json") {
    return "LOG_FORMAT must be text or json";
  }
  return undefined;
};

// Why something failed, in words an operator can act on: the error's message and those of the
// errors under it ("PgClient: Failed to connect: connect ECONNREFUSED 127.0.0.1:5433", "database
// \"x\" does not exist"), without any URL (a database URL may hold a password), at most 500
// characters.
export const failureReason = (error: unknown): string => {
  let at: unknown = Runtime.isFiberFailure(error)
    ? Cause.squash(error[Runtime.FiberFailureCauseId])
    : error;
  const parts: Array<string> = [];
  for (let depth = 0; depth < 5 && at !== undefined && at !== null; depth++) {
    const message = at instanceof Error ? at.message : typeof at === "string" ? at : "";
    // A database's error names its condition by its SQLSTATE (53100: the disk is full).
    const code = (at as { code?: unknown }).code;
    const state = typeof code === "string" && /^[0-9A-Z]{5}$/.test(code)
      ? ` (SQLSTATE ${code})`
      : "";
    if (message !== "" && !parts.includes(message)) parts.push(message + state);
    at = (at as { cause?: unknown }).cause;
  }
  return (parts.length === 0 ? String(error) : parts.join(": "))
    .replace(/[a-z][a-z0-9+.-]*:\/\/\S*/gi, "(a URL)")
    .slice(0, 500);
};

// The logger of the process, configured from LOG_LEVEL and LOG_FORMAT.
export const processLog = (): Log =>
  makeLog({
    level: parseLogLevel(Deno.env.get("LOG_LEVEL")),
    format: parseLogFormat(Deno.env.get("LOG_FORMAT")),
  });

const levelOf = (level: EffectLevel.LogLevel): LogLevel =>
  level._tag === "Debug" || level._tag === "Trace" || level._tag === "All"
    ? "debug"
    : level._tag === "Info"
    ? "info"
    : level._tag === "Warning"
    ? "warn"
    : "error";

const effectLevel: Record<LogLevel, EffectLevel.LogLevel> = {
  debug: EffectLevel.Debug,
  info: EffectLevel.Info,
  warn: EffectLevel.Warning,
  error: EffectLevel.Error,
};

// Effect.log* calls go to the same log: message, annotations as fields, a failure's cause.
export const effectLoggerLayer = (log: Log) =>
  Layer.merge(
    Logger.replace(
      Logger.defaultLogger,
      Logger.make(({ logLevel, message, annotations, cause }) => {
        const parts = Array.isArray(message) ? message : [message];
        const text = parts.map((p) => (typeof p === "string" ? p : String(p))).join(" ");
        const fields: Record<string, string> = {};
        for (const [k, v] of HashMap.toEntries(annotations)) fields[k] = String(v);
        if (!Cause.isEmpty(cause)) {
          // The causes within the failure (a database's own message under the driver's), which
          // the rendering of the cause leaves out.
          fields.reason = failureReason(Cause.squash(cause));
          fields.cause = Cause.pretty(cause);
        }
        log.write(levelOf(logLevel), text, fields);
      }),
    ),
    Logger.minimumLogLevel(effectLevel[log.level]),
  );
