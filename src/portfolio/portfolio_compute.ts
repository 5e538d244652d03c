// One store of a portfolio, computed: its row of the inputs statement decoded into what the
// metrics engine and the data-quality rules take (as metrics_repo.ts decodes one store's inputs),
// then its summary by the engine, the exact parts of that summary for the roll-ups, and its
// data-quality summary. Pure: no I/O.
import type { PortfolioStore } from "../domain/portfolio.ts";
import type { QualitySummary } from "../domain/quality.ts";
import {
  type BaselineMonth,
  computeDays,
  type DayInput,
  type Stage,
  type TargetInput,
} from "../metrics/engine.ts";
import { resolveDays } from "../metrics/metrics_repo.ts";
import {
  type DeviceEvidence,
  type EnergyStatus,
  type QualityDayInput,
  qualitySummary,
} from "../quality/quality_rules.ts";
import { partsOf, summaryOf, type SummaryParts } from "../metrics/summary_parts.ts";

// One store and scope as the inputs statement returns it.
export interface StoreRow {
  readonly store_id: number;
  readonly scope_id: number;
  readonly name: string;
  readonly store_code: string;
  readonly brand_id: number;
  readonly brand_name: string;
  readonly city: string | null;
  readonly timezone: string;
  readonly months: string | null;
  readonly days: string | null;
  readonly facts: string;
  // The device evidence as JSON text; null when the store has no device.
  readonly evidence: string | null;
  readonly version: string;
  readonly token: string | null;
  readonly carry_until: string | null;
}

// One store's inputs, ready for the engine and the quality rules.
export interface StoreInputs {
  readonly days: Array<DayInput>;
  readonly baseline: ReadonlyArray<BaselineMonth>;
  readonly energy: Array<QualityDayInput>;
  readonly evidence: DeviceEvidence;
  readonly provisionalDays: number;
}

interface Facts {
  readonly stages: ReadonlyArray<readonly [Stage, string, string | null]>;
  readonly periods: ReadonlyArray<
    TargetInput & { readonly from: string; readonly to: string | null }
  >;
  readonly tev: ReadonlyArray<readonly [string, string]>;
  readonly baseline: ReadonlyArray<BaselineMonth>;
}

type DayRow = [string, string | null, 0 | 1, string | null, EnergyStatus];

interface EvidenceJson {
  readonly devices: ReadonlyArray<readonly [number, string | null, string]>;
  readonly reports: ReadonlyArray<
    readonly [
      number,
      "DEVICE_EVENT" | "DEVICE_SNAPSHOT",
      number | null,
      "ONLINE" | "OFFLINE",
      string,
    ]
  >;
}

// The month chunks of a current read (portfolio_sql.ts) into the rows of the range's days: each
// day's status from its letter, and its served value when available. Days outside the range (a
// chunk's month may start before it or end after it) are skipped.
const applyMonths = (rows: Array<DayRow>, text: string) => {
  for (let at = 0; at < text.length;) {
    let end = text.indexOf(";", at);
    if (end < 0) end = text.length;
    const bar = text.indexOf("|", at);
    const second = text.indexOf("|", bar + 1);
    const first = Number(text.slice(at, bar));
    // One letter per day of the month, and as many values (the last ends the item).
    const count = second - bar - 1;
    let value = second + 1;
    for (let i = 0; i < count; i++) {
      const comma = i === count - 1 ? end : text.indexOf(",", value);
      const day = rows[first + i];
      if (day !== undefined) {
        const letter = text.charCodeAt(bar + 1 + i);
        if (letter === 65) {
          day[4] = "AVAILABLE";
          day[1] = text.slice(value, comma);
        } else if (letter === 86) day[4] = "VOID";
      }
      value = comma + 1;
    }
    at = end + 1;
  }
};

// A store's days, facts and evidence as the metrics read and the quality check take them: each day
// of the range its served value, provisional state and status (NO_DATA without a stored fact),
// resolved against the store's stages, periods and TEV as metrics_repo.ts resolves one store's.
export const decodeStore = (row: StoreRow, dates: ReadonlyArray<string>): StoreInputs => {
  const rows: Array<DayRow> = dates.map((date) => [date, null, 0, null, "NO_DATA"]);
  applyMonths(rows, row.months ?? "");
  let provisionalDays = 0;
  // Read in place, item by item: only a value and a provisional instant are cut out of the text.
  const text = row.days ?? "";
  for (let at = 0; at < text.length;) {
    let end = text.indexOf(";", at);
    if (end < 0) end = text.length;
    const bar = text.indexOf("|", at);
    const last = text.lastIndexOf("|", end - 1);
    let index = 0;
    for (let i = at; i < bar; i++) index = index * 10 + text.charCodeAt(i) - 48;
    const day = rows[index];
    const mark = last === bar + 2 ? text[bar + 1] : "";
    if (mark === "V") day[4] = "VOID";
    else if (mark === "N") day[4] = "NO_DATA";
    else {
      day[4] = "AVAILABLE";
      day[1] = text.slice(bar + 1, last);
    }
    if (last + 1 < end) {
      day[2] = 1;
      day[3] = text.slice(last + 1, end);
      provisionalDays++;
    }
    at = end + 1;
  }
  const facts = JSON.parse(row.facts) as Facts;
  const found: EvidenceJson = row.evidence === null
    ? { devices: [], reports: [] }
    : JSON.parse(row.evidence);
  return {
    days: resolveDays({ days: rows, ...facts, version: "", token: null }),
    baseline: facts.baseline,
    energy: rows.map(([date, servedKwh, , , status]) => ({ date, status, servedKwh })),
    evidence: {
      timezone: row.timezone,
      carryUntil: row.carry_until,
      devices: found.devices.map(([id, name, code]) => ({ id, name, code })),
      reports: found.reports.map(([deviceId, source, eventId, state, at]) => ({
        deviceId,
        source,
        eventId,
        state,
        at,
      })),
    },
    provisionalDays,
  };
};

// What a store adds to a portfolio: its row, and its parts for the roll-ups.
export interface StoreResult {
  readonly row: PortfolioStore;
  readonly parts: SummaryParts;
  readonly provisionalDays: number;
  readonly quality: QualitySummary;
}

// The row's summary is the engine's summary of the store's days (summarize is summaryOf of partsOf),
// as its metrics answer has it.
export const computeStore = (row: StoreRow, dates: ReadonlyArray<string>): StoreResult => {
  const input = decodeStore(row, dates);
  const days = computeDays(input.days, input.baseline);
  const parts = partsOf(days);
  const quality = qualitySummary(input.energy, input.evidence);
  return {
    row: {
      store_id: row.store_id,
      scope_id: row.scope_id,
      name: row.name,
      store_code: row.store_code,
      brand_id: row.brand_id,
      brand_name: row.brand_name,
      city: row.city,
      summary: summaryOf(parts),
      provisional_days: input.provisionalDays,
      data_quality: quality,
    },
    parts,
    provisionalDays: input.provisionalDays,
    quality,
  };
};
