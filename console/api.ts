/// <reference lib="dom" />
// Calls to the service, same origin, with the session cookie. Every kWh stays the decimal string
// the service sent (JSON.parse keeps strings as strings): nothing is re-rounded through floats.

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

// A 401 on any call but the sign-in ends the session in the console.
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

const send = async <T>(
  method: string,
  path: string,
  options: CallOptions = {},
): Promise<Answer<T>> => {
  let response: Response;
  try {
    response = await fetch(path, {
      method,
      credentials: "same-origin",
      headers: {
        accept: "application/json",
        ...(options.body === undefined ? {} : { "content-type": "application/json" }),
        ...options.headers,
      },
      body: options.body === undefined ? undefined : JSON.stringify(options.body),
      signal: options.signal,
    });
  } catch (cause) {
    if ((cause as Error).name === "AbortError") throw cause;
    throw new ApiError(0, "NETWORK", "The connection failed");
  }
  const text = await response.text();
  let body: unknown = null;
  try {
    body = text === "" ? null : JSON.parse(text);
  } catch {
    body = null;
  }
  if (!response.ok) {
    const error = (body as { error?: { code?: string; message?: string } } | null)?.error;
    const failure = new ApiError(
      response.status,
      error?.code ?? "UNKNOWN",
      error?.message ?? response.statusText,
    );
    if (response.status === 401 && !(method === "POST" && path === "/auth/session")) {
      onUnauthorized(failure);
    }
    throw failure;
  }
  return {
    body: body as T,
    token: response.headers.get("data-token"),
    knownAt: response.headers.get("data-known-at"),
  };
};

export const get = <T>(path: string, signal?: AbortSignal) => call<T>("GET", path, { signal });

// --- The answers the console reads (contract part 2).

export type Permission = "read" | "write" | "raw";

export interface SessionInfo {
  readonly member: string;
  readonly name: string | null;
  readonly permissions: ReadonlyArray<Permission>;
  readonly store_ids: ReadonlyArray<number> | null;
  readonly can_write: boolean;
  readonly via: "session" | "key";
}

export interface Dataset {
  readonly label: string;
  readonly start: string;
  readonly end: string;
  readonly source_policy: string;
  readonly timezone: string;
  readonly unit: string;
}

export interface CatalogStore {
  readonly id: number;
  readonly name: string;
  readonly store_code: string;
  readonly brand_name: string;
  readonly scope_id: number;
  readonly city: string | null;
  readonly stage: string | null;
  readonly key_store_status: "MARKED" | "UNCONFIRMED";
  readonly device_count: number;
  readonly online_count: number;
  readonly offline_count: number;
  readonly unknown_count: number;
}

export interface DailyRow {
  readonly business_date: string;
  readonly energy_id: number | null;
  readonly energy_kwh: string | null;
  readonly status: "AVAILABLE" | "NO_DATA" | "VOID";
  readonly source_kind: string | null;
  readonly source_label: string;
  readonly quality_status: string | null;
  readonly quality_note: string | null;
  readonly revision_no: number | null;
  readonly import_row_id: number | null;
}

export interface EnergyResponse {
  readonly summary: {
    readonly requested_days: number;
    readonly available_days: number;
    readonly missing_days: number;
    readonly void_days: number;
    readonly available_energy_kwh: string | null;
    readonly complete: boolean;
  };
  readonly days: ReadonlyArray<DailyRow>;
}

export interface MetricDay {
  readonly business_date: string;
  readonly actual_kwh: string | null;
  readonly eba_kwh: string | null;
  readonly tes_threshold_kwh: string | null;
  readonly tes_180_threshold_kwh: string | null;
  readonly tes_210_threshold_kwh: string | null;
  readonly tev_threshold_kwh: string | null;
  readonly provisional: number;
  readonly provisional_at: string | null;
}

export interface MetricSummary {
  readonly requested_days: number;
  readonly actual_days: number;
  readonly matched_days: number;
  readonly actual_kwh: string | null;
  readonly matched_eba_kwh: string | null;
  readonly aes_kwh: string | null;
  readonly aer_percent: string | null;
  readonly tes_kwh: string | null;
  readonly tes_180_kwh: string | null;
  readonly tes_210_kwh: string | null;
  readonly eba_pass: boolean | null;
  readonly tes_pass: boolean | null;
  readonly tes_180_pass: boolean | null;
  readonly tes_210_pass: boolean | null;
  readonly tev_pass: boolean | null;
  readonly complete_for_savings: boolean;
}

export interface Availability {
  readonly metric: string;
  readonly label: string;
  readonly available_days: number;
  readonly requested_days: number;
  readonly status: "AVAILABLE" | "PARTIAL" | "UNAVAILABLE";
  readonly reasons: ReadonlyArray<string>;
}

export interface MetricsResponse {
  readonly summary: MetricSummary;
  readonly availability: ReadonlyArray<Availability>;
  readonly days: ReadonlyArray<MetricDay>;
  readonly notes: ReadonlyArray<string>;
}

export interface PeriodOverview {
  readonly as_of: string;
  readonly periods: ReadonlyArray<{
    readonly key: "day" | "week" | "month" | "year";
    readonly label: string;
    readonly start: string;
    readonly end: string;
    readonly summary: MetricSummary;
  }>;
}

export interface Hours {
  readonly start: string;
  readonly end: string;
  readonly next_day: boolean;
}

export interface StoreReference {
  readonly target_candidate: {
    readonly tes_180_kwh: string;
    readonly tes_210_kwh: string;
    readonly status: string;
  } | null;
  readonly profile: {
    readonly id: number;
    readonly name: string;
    readonly brand_name: string;
    readonly city: string | null;
    readonly address: string | null;
    readonly business_hours: ReadonlyArray<Hours> | null;
    readonly peak_hours: ReadonlyArray<Hours> | null;
    readonly business_mode: string | null;
    readonly settlement_mode: string | null;
    readonly version: number;
    readonly tags: ReadonlyArray<string> | null;
    readonly key_store_status: "MARKED" | "UNCONFIRMED";
  };
  readonly devices: ReadonlyArray<{
    readonly id: number;
    readonly device_name: string | null;
    readonly device_code: string;
    readonly device_type: string;
    readonly material_code: string | null;
    readonly online_status: string;
    readonly status_observed_at: string | null;
  }>;
  readonly strategy: {
    readonly configured_count: number | null;
    readonly dispatched_count: number | null;
    readonly execution_status: string;
  } | null;
  readonly strategy_items: ReadonlyArray<{
    readonly name: string;
    readonly date_category: string | null;
    readonly day_week: string | null;
    readonly publish_status: string | null;
    readonly issue_status: number | null;
  }>;
  readonly editable_fields: ReadonlyArray<"name" | "address">;
  readonly can_edit_profile: boolean;
  readonly stage_history: ReadonlyArray<{
    readonly stage: string;
    readonly valid_from: string;
    readonly valid_to: string | null;
    readonly change_reason: string;
  }>;
  readonly device_events: {
    readonly start: string;
    readonly end: string;
    readonly events: ReadonlyArray<{
      readonly id: number;
      readonly device_id: number;
      readonly event_type: string;
      readonly occurred_at: string;
      readonly note: string | null;
    }>;
  };
}

export interface EnergyVersion {
  readonly revision_no: number;
  readonly operation: string;
  readonly before_kwh: string | null;
  readonly after_kwh: string | null;
  readonly after_is_void: number;
  readonly change_reason: string | null;
  readonly committed_at: string;
  readonly import_row_id: number;
  readonly source_kind: string;
  readonly source_label: string;
  readonly quality_status: string | null;
  readonly quality_note: string | null;
  readonly actor: { readonly label: string | null };
  readonly batch: {
    readonly id: number;
    readonly batch_no: string;
    readonly filename: string | null;
  } | null;
}

export interface EnergyVersions {
  readonly scope_id: number | null;
  readonly current: {
    readonly energy_id: number;
    readonly energy_kwh: string | null;
    readonly source_label: string;
    readonly quality_status: string | null;
    readonly quality_note: string | null;
    readonly is_void: number;
    readonly provisional: number;
    readonly revision_no: number;
  } | null;
  readonly versions: ReadonlyArray<EnergyVersion>;
}

export interface Revision {
  readonly revision_no: number;
  readonly operation: string;
  readonly before_kwh: string | null;
  readonly after_kwh: string | null;
  readonly committed_at: string;
  readonly change_reason: string;
  readonly import_row_id: number;
  readonly source_kind: string;
}

export interface Lineage {
  readonly id: number;
  readonly batch_id: number;
  readonly raw_brand: string | null;
  readonly raw_store_name: string | null;
  readonly raw_date: string | null;
  readonly raw_energy: string | null;
  readonly action: string;
  readonly source_reference: Record<string, unknown> | null;
  readonly sources: ReadonlyArray<{
    readonly id: number;
    readonly source_kind: string;
    readonly source_table: string;
    readonly file_sha256: string;
    readonly explanation: string | null;
    readonly record: Record<string, unknown>;
  }>;
}

export interface ImportRow {
  readonly id: number;
  readonly row_number: number;
  readonly resolved_store_id: number;
  readonly business_date: string;
  readonly raw_energy: string | null;
  readonly proposed_energy_kwh: string | null;
  readonly before_energy_kwh: string | null;
  readonly action: string;
  readonly quality_note: string | null;
}

export interface ImportBatch {
  readonly id: number;
  readonly batch_no: string;
  readonly filename: string | null;
  readonly status: string;
  readonly total_rows: number;
  readonly uploaded_at: string;
  readonly committed_at: string | null;
  readonly change_reason: string | null;
  readonly action_counts: Readonly<Record<string, number>>;
  readonly rows: ReadonlyArray<ImportRow>;
}

export interface Template {
  readonly filename: string;
  readonly content_base64: string;
}
