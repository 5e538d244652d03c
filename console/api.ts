/// <reference lib="dom" />
// Calls to the service, same origin, with the session cookie. Every kWh stays the decimal string
// the service sent (JSON.parse keeps strings as strings): nothing is re-rounded through floats.
import type * as auth from "../src/domain/auth.ts";
import type * as changes from "../src/domain/changes.ts";
import type * as common from "../src/domain/common.ts";
import type * as energy from "../src/domain/energy.ts";
import type { ErrorCode } from "../src/domain/error_codes.ts";
import type * as errors from "../src/domain/errors.ts";
import type * as imports from "../src/domain/imports.ts";
import type * as metrics from "../src/domain/metrics.ts";
import type * as months from "../src/domain/months.ts";
import type * as portfolio from "../src/domain/portfolio.ts";
import type * as quality from "../src/domain/quality.ts";
import type * as stores from "../src/domain/stores.ts";
import { language, t } from "./i18n.ts";

// A code of the service's list, or the console's own for a call that got no answer (NETWORK) or an
// answer without a code (UNKNOWN).
export type FailureCode = ErrorCode | "NETWORK" | "UNKNOWN";

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: FailureCode,
    message: string,
    // A 503's Retry-After, in whole seconds.
    readonly retryAfterS?: number,
  ) {
    super(message);
  }
}

// A 401 on any call but the sign-in goes to the console, which ends a session that was in use.
let onUnauthorized: (error: ApiError) => void = () => {};
export const whenUnauthorized = (handler: (error: ApiError) => void) => {
  onUnauthorized = handler;
};

export interface CallOptions {
  readonly body?: unknown;
  readonly headers?: Record<string, string>;
  readonly signal?: AbortSignal;
}

// An answer with the headers that name its data (reads as of an earlier instant).
export interface Answer<T> {
  readonly body: T;
  readonly token: string | null;
  readonly knownAt: string | null;
}

export const call = async <T>(method: string, path: string, options: CallOptions = {}) =>
  (await send<T>(method, path, options)).body;

export const getAnswer = <T>(path: string, signal?: AbortSignal) =>
  send<T>("GET", path, { signal });

// A read answered 503 BUSY (the service at its limits: for the portfolio, often the console's
// own earlier read of it, given up when the page changed, whose work still holds its place) is
// sent again after the wait the answer's Retry-After names, at most this many times and only for
// a wait this short. Writes are never sent again on their own.
const BUSY_RETRIES = 2;
const BUSY_WAIT_MAX_S = 10;

// The wait a 503 BUSY answer to a read asks for, in ms; undefined: no second try.
const busyWait = (method: string, error: unknown) =>
  method === "GET" && error instanceof ApiError && error.status === 503 &&
    error.code === "BUSY" && error.retryAfterS !== undefined &&
    error.retryAfterS <= BUSY_WAIT_MAX_S
    ? error.retryAfterS * 1000
    : undefined;

// Resolves after `ms`, or rejects as fetch does once `signal` is aborted.
const pause = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    const aborted = () => {
      clearTimeout(timer);
      reject(new DOMException("The read was given up", "AbortError"));
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", aborted);
      resolve();
    }, ms);
    if (signal?.aborted) aborted();
    else signal?.addEventListener("abort", aborted, { once: true });
  });

const send = async <T>(
  method: string,
  path: string,
  options: CallOptions = {},
): Promise<Answer<T>> => {
  for (let retries = 0;; retries++) {
    try {
      return await sendOnce<T>(method, path, options);
    } catch (error) {
      const wait = retries < BUSY_RETRIES ? busyWait(method, error) : undefined;
      if (wait === undefined) throw error;
      await pause(wait, options.signal);
    }
  }
};

const jsonOf = (text: string): unknown => {
  try {
    return text === "" ? null : JSON.parse(text);
  } catch {
    return null;
  }
};

// The failure an answer that is not 2xx says (a 401 also ends the session in use).
const refusal = (response: Response, body: unknown, method: string, path: string) => {
  // The contract's error body; anything else (a proxy's page, no body) falls back below.
  const error = (body as { error?: Partial<ErrorBody["error"]> } | null)?.error;
  const retryAfter = response.headers.get("retry-after")?.trim() ?? "";
  const failure = new ApiError(
    response.status,
    // The body's code is read as the service's list says its codes are; it is not checked.
    (error?.code ?? "UNKNOWN") as FailureCode,
    error?.message ?? t("answeredWithout", { status: response.status }),
    response.status === 503 && /^\d{1,6}$/.test(retryAfter) ? Number(retryAfter) : undefined,
  );
  if (response.status === 401 && !(method === "POST" && path === "/auth/session")) {
    onUnauthorized(failure);
  }
  return failure;
};

// A file the service makes (an export, a review's rows), read with the page's language, as the
// service writes the texts inside it, and the name the service gives it.
export const fetchFile = async (path: string) => {
  let response: Response;
  try {
    response = await fetch(path, {
      credentials: "same-origin",
      headers: { "accept-language": language() },
    });
  } catch {
    throw new ApiError(0, "NETWORK", t("connectionFailed"));
  }
  if (!response.ok) throw refusal(response, jsonOf(await response.text()), "GET", path);
  const disposition = response.headers.get("content-disposition") ?? "";
  const encoded = /filename\*=UTF-8''([^;]+)/i.exec(disposition)?.[1];
  const plain = /filename="([^"]+)"/i.exec(disposition)?.[1];
  const name = encoded !== undefined
    ? decodeURIComponent(encoded)
    : plain ?? new URL(path, location.href).pathname.split("/").at(-1) ?? "download";
  return { blob: await response.blob(), name };
};

const sendOnce = async <T>(
  method: string,
  path: string,
  options: CallOptions,
): Promise<Answer<T>> => {
  let response: Response;
  try {
    response = await fetch(path, {
      method,
      credentials: "same-origin",
      headers: {
        accept: "application/json",
        // The service writes its texts for people (messages, labels, notes, import problems) in
        // the language the person chose here, not the browser's.
        "accept-language": language(),
        ...(options.body === undefined ? {} : { "content-type": "application/json" }),
        ...options.headers,
      },
      body: options.body === undefined ? undefined : JSON.stringify(options.body),
      signal: options.signal,
    });
  } catch (cause) {
    if ((cause as Error).name === "AbortError") throw cause;
    throw new ApiError(0, "NETWORK", t("connectionFailed"));
  }
  const text = await response.text();
  const body = jsonOf(text);
  if (!response.ok) throw refusal(response, body, method, path);
  return {
    body: body as T,
    token: response.headers.get("data-token"),
    knownAt: response.headers.get("data-known-at"),
  };
};

export const get = <T>(path: string, signal?: AbortSignal) => call<T>("GET", path, { signal });

// --- The answers the console reads and the bodies it sends: the service's own schemas, as types
// only. `import type` is erased by the bundler, so none of effect reaches the browser. Each is
// the schema's Encoded side, the JSON as it crosses the wire: a schema that decodes text into
// something else differs there from its Type, and the console only ever holds the JSON.

export type Wire<S extends { readonly Encoded: unknown }> = S["Encoded"];

export type ErrorBody = Wire<typeof errors.ErrorBody>;
export type Permission = Wire<typeof auth.Permission>;
export type SessionInfo = Wire<typeof auth.SessionInfo>;
export type SessionRequest = Wire<typeof auth.SessionRequest>;
export type Dataset = Wire<typeof stores.Dataset>;
export type CatalogStore = Wire<typeof stores.CatalogStore>;
export type CatalogResponse = Wire<typeof stores.CatalogResponse>;
export type StoresResponse = Wire<typeof stores.StoresResponse>;
export type StoreReference = Wire<typeof stores.StoreReference>;
export type ProfileUpdate = Wire<typeof stores.ProfileUpdate>;
export type ProfileResult = Wire<typeof stores.ProfileResult>;
export type Hours = Wire<typeof common.Hours>[number];
export type DailyRow = Wire<typeof energy.DailyRow>;
export type EnergyResponse = Wire<typeof energy.EnergyResponse>;
export type EnergyVersions = Wire<typeof energy.EnergyVersions>;
export type HistoryResponse = Wire<typeof energy.HistoryResponse>;
export type MetricDay = Wire<typeof metrics.MetricDay>;
export type MetricSummary = Wire<typeof metrics.MetricSummary>;
export type MetricsResponse = Wire<typeof metrics.MetricsResponse>;
export type PeriodOverview = Wire<typeof metrics.PeriodOverview>;
export type MonthRow = Wire<typeof months.MonthRow>;
export type MonthsResponse = Wire<typeof months.MonthsResponse>;
export type QualityResponse = Wire<typeof quality.QualityResponse>;
export type QualitySummary = Wire<typeof quality.QualitySummary>;
export type QualityFlag = Wire<typeof quality.QualityFlag>;
export type PortfolioStore = Wire<typeof portfolio.PortfolioStore>;
export type PortfolioResponse = Wire<typeof portfolio.PortfolioResponse>;
export type Lineage = Wire<typeof imports.Lineage>;
export type ImportRow = Wire<typeof imports.ImportRow>;
export type ImportBatch = Wire<typeof imports.Import>;
export type ImportReview = Wire<typeof imports.ImportReview>;
export type ReviewRow = Wire<typeof imports.ReviewRow>;
export type PlausibilityWarning = Wire<typeof imports.PlausibilityWarning>;
export type DiscardResult = Wire<typeof imports.DiscardResult>;
export type PreviewInput = Wire<typeof imports.PreviewInput>;
export type Template = Wire<typeof imports.Template>;
export type Actor = Wire<typeof changes.Actor>;
export type Change = Wire<typeof changes.Change>;
export type ChangesPage = Wire<typeof changes.ChangesPage>;
export type BatchList = Wire<typeof changes.BatchList>;
export type AuditLog = Wire<typeof changes.AuditLog>;
