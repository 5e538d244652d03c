// Every error.code the service answers with, its HTTP status and meaning: the one list that the
// OpenAPI document's enum and README.md's "Error codes" table are made from.

export interface ErrorCodeEntry {
  readonly code: string;
  readonly status: number;
  readonly meaning: string;
}

export const ERROR_CODES = [
  {
    code: "INVALID_REQUEST",
    status: 400,
    meaning: "A path, query, header or body value does not match the contract, " +
      "or the body could not be read",
  },
  {
    code: "INVALID_JSON",
    status: 400,
    meaning: "The body is not well-formed JSON or is nested too deeply",
  },
  {
    code: "INVALID_SCOPE",
    status: 400,
    meaning: "scope_id is not a metering scope of the store",
  },
  {
    code: "INVALID_RANGE",
    status: 400,
    meaning: "start is after end (an export's range: not within the dataset's days)",
  },
  {
    code: "RANGE_TOO_LONG",
    status: 400,
    meaning: "The date range has more days than allowed (366 for energy, 731 for targets, " +
      "metrics)",
  },
  { code: "INVALID_BASE64", status: 400, meaning: "content_base64 is not valid base64" },
  { code: "FILE_TOO_LARGE", status: 400, meaning: "The import file is larger than 4 MiB" },
  {
    code: "INVALID_FILE",
    status: 400,
    meaning: "The import file's layout, stores, dates or values are not accepted; " +
      "the message lists the problems",
  },
  {
    code: "MISSING_CREDENTIAL",
    status: 401,
    meaning: "Neither a bearer key nor a session cookie was sent",
  },
  {
    code: "INVALID_CREDENTIAL",
    status: 401,
    meaning: "The key or session is invalid, expired or revoked",
  },
  {
    code: "PERMISSION_MISSING",
    status: 403,
    meaning: "The key lacks the read, write or raw permission the operation needs",
  },
  { code: "ROLE_READ_ONLY", status: 403, meaning: "The member's role does not allow writes" },
  {
    code: "STORE_FORBIDDEN",
    status: 403,
    meaning: "A store the request touches is outside the key's stores",
  },
  {
    code: "ORIGIN_REQUIRED",
    status: 403,
    meaning: "A same-origin Origin header is missing (session, logout, writes through the " +
      "session cookie)",
  },
  { code: "PROFILE_NOT_EDITABLE", status: 403, meaning: "The store's profile is not editable" },
  {
    code: "NOT_FOUND",
    status: 404,
    meaning: "No endpoint at this path, or the store, batch, import row or energy fact " +
      "does not exist",
  },
  {
    code: "METHOD_NOT_ALLOWED",
    status: 405,
    meaning: "The path exists but not for this method; the Allow header lists its methods",
  },
  {
    code: "REQUEST_TIMEOUT",
    status: 408,
    meaning: "The request body did not arrive in time",
  },
  {
    code: "STALE_VERSION",
    status: 409,
    meaning: "expected_version is not the profile's current version: read it again",
  },
  { code: "NAME_TAKEN", status: 409, meaning: "Another store of the brand has this name" },
  {
    code: "IDEMPOTENCY_KEY_REUSED",
    status: 409,
    meaning: "The Idempotency-Key was used for a different request",
  },
  {
    code: "NOT_COMMITTABLE",
    status: 409,
    meaning: "The batch is a sealed platform batch, not an upload",
  },
  { code: "ALREADY_COMMITTED", status: 409, meaning: "The batch is already committed" },
  {
    code: "BATCH_EXPIRED",
    status: 409,
    meaning: "The preview is too old to commit: preview the file again",
  },
  {
    code: "STALE_PREVIEW",
    status: 409,
    meaning: "Days changed since the preview: preview the file again",
  },
  {
    code: "HISTORY_NOT_KEPT",
    status: 409,
    meaning: "known_at or data_token names data from before the earliest commit this database " +
      "keeps the history of; the message names that commit's instant",
  },
  {
    code: "DATA_REPLACED",
    status: 409,
    meaning: "data_token names data of a snapshot that a later snapshot load replaced",
  },
  {
    code: "PAYLOAD_TOO_LARGE",
    status: 413,
    meaning: "The body is larger than the operation accepts, or was sent to one that takes none",
  },
  {
    code: "UNSUPPORTED_MEDIA_TYPE",
    status: 415,
    meaning: "The body is not sent as application/json (UTF-8)",
  },
  {
    code: "HEADERS_TOO_LARGE",
    status: 431,
    meaning: "The request's headers are larger than 16 KiB",
  },
  {
    code: "INTERNAL",
    status: 500,
    meaning: "The operation failed; the message and X-Request-ID name the server log entry",
  },
  {
    code: "NOT_READY",
    status: 503,
    meaning: "The database is not reachable, migrations are pending or no data is loaded",
  },
  {
    code: "BUSY",
    status: 503,
    meaning: "A lock or statement timeout fired, every database connection was in use past the " +
      "wait, or as many uploads, imports or exports as the service takes at once are under way: " +
      "retry after the Retry-After header's seconds",
  },
  {
    code: "TIMEOUT",
    status: 503,
    meaning: "The request took longer than the service allows; retry later",
  },
] as const satisfies ReadonlyArray<ErrorCodeEntry>;

export type ErrorCode = (typeof ERROR_CODES)[number]["code"];

export const errorCodesOf = (status: number): ReadonlyArray<ErrorCode> =>
  ERROR_CODES.filter((e) => e.status === status).map((e) => e.code);

export const statusOfCode = (code: ErrorCode): number =>
  ERROR_CODES.find((e) => e.code === code)!.status;

// The Retry-After seconds of a 503 BUSY that names no other wait (a lock or statement timeout,
// every database connection in use): such a wait is over within a statement's time. Every BUSY
// answer carries a Retry-After (the admission limits name their own).
export const BUSY_RETRY_S = 1;

// The Retry-After header a refusal of this code carries when it names no other wait.
export const retryAfterOf = (code: string): Record<string, string> =>
  code === "BUSY" ? { "retry-after": String(BUSY_RETRY_S) } : {};

// The README.md table, in the layout `deno fmt` gives it.
export const errorCodesTable = (): string => {
  const rows = [
    ["code", "HTTP", "meaning"],
    ...ERROR_CODES.map((e) => [`\`${e.code}\``, String(e.status), e.meaning]),
  ];
  const widths = rows[0].map((_, i) => Math.max(3, ...rows.map((r) => r[i].length)));
  const line = (cells: ReadonlyArray<string>) =>
    `| ${cells.map((c, i) => c.padEnd(widths[i])).join(" | ")} |`;
  return [line(rows[0]), line(widths.map((w) => "-".repeat(w))), ...rows.slice(1).map(line)]
    .join("\n");
};
