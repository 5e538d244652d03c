// Pure data-quality rules (docs/quality.md): which days' energy disagrees with what the store's
// devices reported, with the evidence, a summary, and the same result as notes. No I/O: the days
// and the device reports come in, the flags go out.
import { Decimal } from "decimal.js";
import {
  type DeviceCase,
  type DeviceReport,
  type DeviceState,
  FLAG_KINDS,
  type FlagKind,
  type QualityFlag,
  type QualitySummary,
} from "../domain/quality.ts";
import { wallAt } from "../domain/wall_clock.ts";
import { type Language, pick, type Text, text as t } from "../domain/language.ts";

// The rule a quality answer states, in its language.
export const QUALITY_RULE: Text = t(
  "A device reported online on a calendar day of the store's time zone when it has an ONLINE " +
    "report during that day or its last report of an earlier day is ONLINE; it was offline the " +
    "whole day when its last report before the day is OFFLINE and every report during the day is " +
    "OFFLINE. Reports are the device events ONLINE and OFFLINE and the sealed device snapshot " +
    "(online_status at status_observed_at); a state carries into later days until the device's " +
    "next report, never past the dataset's last day. A day is flagged when it has no energy value " +
    "(NO_DATA_WHILE_ONLINE) or 0 kWh (ZERO_WHILE_ONLINE) while a device reported online, or energy " +
    "above 0 while every device of the store was offline the whole day " +
    "(POSITIVE_WHILE_ALL_OFFLINE). Void days are not checked. Values are never changed, only flagged.",
  "设备在门店时区的某个日历日报告在线，是指当日有 ONLINE 报告，或它在更早一日的最后一次报告为 " +
    "ONLINE；设备全天离线，是指它在当日之前的最后一次报告为 OFFLINE，且当日的每次报告均为 " +
    "OFFLINE。报告是设备事件 ONLINE 和 OFFLINE，以及封存的设备快照（status_observed_at 时的 " +
    "online_status）；一个状态延续到设备下一次报告之前的各日，但不超过数据集的最后一天。当有设备" +
    "报告在线时，当日没有能耗值（NO_DATA_WHILE_ONLINE）或为 0 kWh（ZERO_WHILE_ONLINE），或门店的" +
    "每台设备全天离线时能耗大于 0（POSITIVE_WHILE_ALL_OFFLINE），该日即被标记。作废日不核对。" +
    "数值从不更改，仅作标记。",
);

// Caps of one flag's evidence: a store with many devices or a chatty device still gives a
// bounded answer (device_count and report_count tell what was left out).
export const MAX_DEVICES_PER_FLAG = 20;
export const MAX_REPORTS_PER_DEVICE = 10;

export type EnergyStatus = "AVAILABLE" | "NO_DATA" | "VOID";

// One day of energy as the energy read serves it (served kWh: a decimal string, null when none).
export interface QualityDayInput {
  readonly date: string;
  readonly status: EnergyStatus;
  readonly servedKwh: string | null;
}

export interface DeviceInfo {
  readonly id: number;
  readonly name: string | null;
  readonly code: string;
}

export type ReportSource = "DEVICE_EVENT" | "DEVICE_SNAPSHOT";

// A device's state at an instant: a device event, or the snapshot's online_status.
export interface StateReport {
  readonly deviceId: number;
  readonly source: ReportSource;
  readonly eventId: number | null;
  readonly state: DeviceState;
  readonly at: string;
}

/**
 * What the devices of one store reported. `reports` must hold, for the days to check, every
 * report during those days and each device's last report before each of them (QualityRepo's
 * evidence gives exactly that for any list of days). `carryUntil`: the last day into which a
 * state may be carried (the dataset's last day); null carries nothing.
 */
export interface DeviceEvidence {
  readonly timezone: string;
  readonly carryUntil: string | null;
  readonly devices: ReadonlyArray<DeviceInfo>;
  readonly reports: ReadonlyArray<StateReport>;
}

export type DayVerdict =
  | FlagKind
  | "AGREES"
  | "NO_EVIDENCE"
  | "PARTIAL_EVIDENCE"
  | "VOID";

export interface QualityResult {
  readonly summary: QualitySummary;
  // Flagged days in the order of the input days.
  readonly flags: ReadonlyArray<QualityFlag>;
  // One verdict per input day, in the same order.
  readonly verdicts: ReadonlyArray<DayVerdict>;
}

// --- Instants and local calendar days.

const pad = (n: number, width: number) => String(n).padStart(width, "0");

// The local calendar day of an instant (whole seconds) and whether it is that day's first second.
const localOf = (ms: number, timezone: string) => {
  const parts = wallAt(ms, timezone);
  const midnight = Date.UTC(parts.year, parts.month - 1, parts.day);
  const wall = Date.UTC(
    parts.year,
    parts.month - 1,
    parts.day,
    parts.hour,
    parts.minute,
    parts.second,
  );
  return {
    day: `${pad(parts.year, 4)}-${pad(parts.month, 2)}-${pad(parts.day, 2)}`,
    atMidnight: wall === midnight,
  };
};

interface Placed {
  readonly report: StateReport;
  readonly ms: number;
  readonly day: string;
  readonly atMidnight: boolean;
}

// Reports are ordered to the second, the precision they are shown with; at the same second,
// events in id order, then the snapshot (read after the events).
const sourceRank = (r: StateReport) => (r.source === "DEVICE_SNAPSHOT" ? 1 : 0);

const byTime = (a: Placed, b: Placed) =>
  a.day < b.day ? -1 : a.day > b.day ? 1 : a.ms - b.ms ||
    sourceRank(a.report) - sourceRank(b.report) ||
    (a.report.eventId ?? 0) - (b.report.eventId ?? 0);

// Each device's reports in time order; reports of unknown devices or unreadable instants are left out.
const placeReports = (evidence: DeviceEvidence) => {
  const perDevice = new Map<number, Array<Placed>>(evidence.devices.map((d) => [d.id, []]));
  for (const report of evidence.reports) {
    const list = perDevice.get(report.deviceId);
    const ms = Math.floor(Date.parse(report.at) / 1000) * 1000;
    if (list === undefined || Number.isNaN(ms)) continue;
    list.push({ report, ms, ...localOf(ms, evidence.timezone) });
  }
  for (const list of perDevice.values()) list.sort(byTime);
  return perDevice;
};

// The index of the first report of a day on or after `day`.
const firstFrom = (list: ReadonlyArray<Placed>, day: string) => {
  let lo = 0;
  let hi = list.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (list[mid].day < day) lo = mid + 1;
    else hi = mid;
  }
  return lo;
};

// The same index found from `hint`, an index before which every report is of an earlier day than
// `day` (the answer for an earlier day): by stepping on, which over ascending days reads each
// report once; by bisection when the hint does not hold.
const nextFrom = (list: ReadonlyArray<Placed>, day: string, hint: number) => {
  if (hint > list.length || (hint > 0 && list[hint - 1].day >= day)) return firstFrom(list, day);
  let at = hint;
  while (at < list.length && list[at].day < day) at++;
  return at;
};

// --- One device on one day.

interface DeviceDay {
  readonly online: boolean;
  readonly offlineAllDay: boolean;
  readonly known: boolean;
  // The report carried in from an earlier day (when it decides the state at the day's start),
  // then the day's own reports: list[from] to list[to - 1].
  readonly carried: Placed | undefined;
  readonly list: ReadonlyArray<Placed>;
  readonly from: number;
  readonly to: number;
}

// Where one device's day stands after its reports are read: one is filled in place for every
// device and day of a check, so that a summary makes no object per device and day.
interface DayScan {
  // The day's own reports: list[from] to list[to - 1].
  from: number;
  to: number;
  // The report that decides the state at the day's first instant, when one does.
  start: Placed | undefined;
  // The report carried in from an earlier day, when it is that one.
  carried: Placed | undefined;
  anyOnline: boolean;
  allOffline: boolean;
}

// `from`: the index of the device's first report on or after `day`.
const scanDay = (
  list: ReadonlyArray<Placed>,
  from: number,
  day: string,
  carryAllowed: boolean,
  scan: DayScan,
): DayScan => {
  let to = from;
  // The state at the day's first instant: the last report at exactly that instant, else the last
  // report of an earlier day (when states may be carried into this day).
  let start: Placed | undefined;
  let anyOnline = false;
  let allOffline = true;
  for (; to < list.length && list[to].day === day; to++) {
    const p = list[to];
    if (p.atMidnight) start = p;
    if (p.report.state === "ONLINE") anyOnline = true;
    if (p.report.state !== "OFFLINE") allOffline = false;
  }
  scan.carried = start === undefined && carryAllowed && from > 0 ? list[from - 1] : undefined;
  scan.start = start ?? scan.carried;
  scan.from = from;
  scan.to = to;
  scan.anyOnline = anyOnline;
  scan.allOffline = allOffline;
  return scan;
};

const isOnline = (scan: DayScan) => scan.start?.report.state === "ONLINE" || scan.anyOnline;
const isOfflineAllDay = (scan: DayScan) =>
  scan.start?.report.state === "OFFLINE" && scan.allOffline;
const isKnown = (scan: DayScan) => scan.start !== undefined || scan.to > scan.from;

// The device's day as a flag's evidence keeps it (the scan's values copied out).
const deviceDay = (list: ReadonlyArray<Placed>, scan: DayScan): DeviceDay => ({
  online: isOnline(scan),
  offlineAllDay: isOfflineAllDay(scan),
  known: isKnown(scan),
  carried: scan.carried,
  list,
  from: scan.from,
  to: scan.to,
});

const reportOut = (p: Placed, carried: boolean): DeviceReport => ({
  source: p.report.source,
  event_id: p.report.eventId,
  state: p.report.state,
  occurred_at: p.report.at,
  carried,
});

// A device's part of a flag: its reports of the day (the carried one first), those that show the
// state the flag rests on kept first when there are too many, then listed in time order.
const deviceCase = (device: DeviceInfo, dd: DeviceDay, state: DeviceState): DeviceCase => {
  const all = [
    ...(dd.carried === undefined ? [] : [reportOut(dd.carried, true)]),
    ...dd.list.slice(dd.from, dd.to).map((p) => reportOut(p, false)),
  ];
  const kept = all
    .map((r, i) => ({ r, i, supports: r.state === state ? 0 : 1 }))
    .sort((a, b) => a.supports - b.supports || a.i - b.i)
    .slice(0, MAX_REPORTS_PER_DEVICE)
    .sort((a, b) => a.i - b.i)
    .map((x) => x.r);
  return {
    device_id: device.id,
    device_name: device.name,
    device_code: device.code,
    state,
    report_count: all.length,
    reports: kept,
  };
};

// --- Days.

type EnergyKind = "VOID" | "MISSING" | "ZERO" | "POSITIVE";

// A served value is a plain non-negative decimal text: zero when it has no other digit than 0
// (zeros around at most one point), read character by character.
const isZeroText = (text: string) => {
  let points = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 46) {
      if (++points > 1) return false;
    } else if (c !== 48) return false;
  }
  return true;
};

const energyKind = (day: QualityDayInput): EnergyKind => {
  if (day.status === "VOID") return "VOID";
  if (day.status === "NO_DATA" || day.servedKwh === null) return "MISSING";
  return isZeroText(day.servedKwh) ? "ZERO" : "POSITIVE";
};

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? "" : "s"}`;

/** A flag's message for people, from its kind, its value and its devices. */
export const flagMessage = (
  kind: FlagKind,
  kwh: string | null,
  cases: number,
  total: number,
): Text => {
  switch (kind) {
    case "NO_DATA_WHILE_ONLINE":
      return t(
        `No energy value, while ${cases} of ${plural(total, "device")} reported online`,
        `没有能耗值，而 ${total} 台设备中有 ${cases} 台报告在线`,
      );
    case "ZERO_WHILE_ONLINE":
      return t(
        `Energy ${kwh} kWh, while ${cases} of ${plural(total, "device")} reported online`,
        `能耗 ${kwh} kWh，而 ${total} 台设备中有 ${cases} 台报告在线`,
      );
    case "POSITIVE_WHILE_ALL_OFFLINE":
      return total === 1
        ? t(
          `Energy ${kwh} kWh, while the store's only device was offline the whole day`,
          `能耗 ${kwh} kWh，而门店唯一的设备全天离线`,
        )
        : t(
          `Energy ${kwh} kWh, while all ${total} devices were offline the whole day`,
          `能耗 ${kwh} kWh，而全部 ${total} 台设备全天离线`,
        );
  }
};

const emptyByKind = (): Record<FlagKind, number> =>
  Object.fromEntries(FLAG_KINDS.map((k) => [k, 0])) as Record<FlagKind, number>;

/**
 * The flags of the given days against the device evidence. Each day gets one verdict: VOID (never
 * checked), a flag kind, AGREES (device evidence confirms the value's kind), NO_EVIDENCE (no
 * device state known at any moment of the day) or PARTIAL_EVIDENCE (some state known, not enough
 * to decide). Values are only read, never changed.
 */
export const checkQuality = (
  days: ReadonlyArray<QualityDayInput>,
  evidence: DeviceEvidence,
): QualityResult => judgeDays(days, evidence, true);

/** The summary of checkQuality alone: the same verdicts, no flag or verdict list made. */
export const qualitySummary = (
  days: ReadonlyArray<QualityDayInput>,
  evidence: DeviceEvidence,
): QualitySummary => judgeDays(days, evidence, false).summary;

// After every date: no report of any device follows.
const NO_MORE_REPORTS = "\uffff";

// The devices' states on one day: how many were online, whether all were offline the whole day,
// whether any state was known, and (for the flags' evidence) each device's day.
interface DevicesOfDay {
  readonly online: number;
  readonly allOffline: boolean;
  readonly known: boolean;
  readonly states: Array<DeviceDay> | undefined;
}

const judgeDays = (
  days: ReadonlyArray<QualityDayInput>,
  evidence: DeviceEvidence,
  detailed: boolean,
): QualityResult => {
  const perDevice = placeReports(evidence);
  const devices = evidence.devices;
  // Each device's reports, and where the last day's search ended in them.
  const lists = devices.map((d) => perDevice.get(d.id)!);
  const cursors = devices.map(() => 0);
  const byKind = emptyByKind();
  const counts = { agrees: 0, none: 0, partial: 0, voids: 0, flagged: 0 };
  const flags: Array<QualityFlag> = [];
  const verdicts: Array<DayVerdict> = [];
  const scratch: DayScan = {
    from: 0,
    to: 0,
    start: undefined,
    carried: undefined,
    anyOnline: false,
    allOffline: true,
  };
  // The last day read without any report, and the first day after it with one.
  let quiet:
    | DevicesOfDay & {
      readonly day: string;
      readonly until: string;
      readonly carryAllowed: boolean;
    }
    | undefined;
  const readDevices = (date: string, carryAllowed: boolean): DevicesOfDay => {
    const states: Array<DeviceDay> | undefined = detailed ? [] : undefined;
    let online = 0;
    let allOffline = devices.length > 0;
    let known = false;
    let reported = false;
    let next = NO_MORE_REPORTS;
    for (let i = 0; i < lists.length; i++) {
      cursors[i] = nextFrom(lists[i], date, cursors[i]);
      const scan = scanDay(lists[i], cursors[i], date, carryAllowed, scratch);
      if (isOnline(scan)) online++;
      if (!isOfflineAllDay(scan)) allOffline = false;
      if (isKnown(scan)) known = true;
      if (scan.to > scan.from) reported = true;
      const after = lists[i][scan.to];
      if (after !== undefined && after.day < next) next = after.day;
      states?.push(deviceDay(lists[i], scan));
    }
    const read = { online, allOffline, known, states };
    // A day without any report is decided by the states carried into it alone: every later day
    // before the next report of any device reads the same (while states are carried into it as
    // they are into this one).
    quiet = reported ? undefined : { ...read, day: date, until: next, carryAllowed };
    return read;
  };
  for (const day of days) {
    const energy = energyKind(day);
    if (energy === "VOID") {
      counts.voids++;
      if (detailed) verdicts.push("VOID");
      continue;
    }
    const carryAllowed = evidence.carryUntil !== null && day.date <= evidence.carryUntil;
    const devicesOfDay = quiet !== undefined && quiet.day < day.date && day.date < quiet.until &&
        quiet.carryAllowed === carryAllowed
      ? quiet
      : readDevices(day.date, carryAllowed);
    const { online, allOffline, known, states } = devicesOfDay;
    let verdict: DayVerdict;
    if (online > 0) {
      verdict = energy === "MISSING"
        ? "NO_DATA_WHILE_ONLINE"
        : energy === "ZERO"
        ? "ZERO_WHILE_ONLINE"
        : "AGREES";
    } else if (allOffline) {
      verdict = energy === "POSITIVE" ? "POSITIVE_WHILE_ALL_OFFLINE" : "AGREES";
    } else {
      verdict = known ? "PARTIAL_EVIDENCE" : "NO_EVIDENCE";
    }
    if (detailed) verdicts.push(verdict);
    if (verdict === "AGREES") counts.agrees++;
    else if (verdict === "NO_EVIDENCE") counts.none++;
    else if (verdict === "PARTIAL_EVIDENCE") counts.partial++;
    else {
      byKind[verdict]++;
      counts.flagged++;
      if (states === undefined) continue;
      const state: DeviceState = verdict === "POSITIVE_WHILE_ALL_OFFLINE" ? "OFFLINE" : "ONLINE";
      const cases = devices
        .map((device, i) => ({ device, s: states[i] }))
        .filter(({ s }) => (state === "ONLINE" ? s.online : s.offlineAllDay));
      const kwh = energy === "MISSING" ? null : new Decimal(day.servedKwh!).toFixed(4);
      flags.push({
        business_date: day.date,
        kind: verdict,
        energy_status: energy === "MISSING" ? "NO_DATA" : "AVAILABLE",
        energy_kwh: kwh,
        message: flagMessage(verdict, kwh, cases.length, devices.length).en,
        device_count: cases.length,
        devices: cases.slice(0, MAX_DEVICES_PER_FLAG).map(({ device, s }) =>
          deviceCase(device, s, state)
        ),
      });
    }
  }
  return {
    summary: {
      requested_days: days.length,
      device_count: devices.length,
      checked_days: counts.agrees + counts.flagged,
      agreeing_days: counts.agrees,
      flagged_days: counts.flagged,
      flagged_by_kind: byKind,
      no_evidence_days: counts.none,
      partial_evidence_days: counts.partial,
      void_days: counts.voids,
    },
    flags,
    verdicts,
  };
};

// --- The result as notes.

const MAX_NOTE_DATES = 5;

const KIND_WORDS: Record<FlagKind, Text> = {
  NO_DATA_WHILE_ONLINE: t(
    "no energy value while a device reported online",
    "设备报告在线时没有能耗值",
  ),
  POSITIVE_WHILE_ALL_OFFLINE: t(
    "energy above 0 while every device was offline",
    "所有设备离线时能耗大于 0",
  ),
  ZERO_WHILE_ONLINE: t("0 kWh while a device reported online", "设备报告在线时能耗为 0 kWh"),
};

const datesOf = (flags: ReadonlyArray<QualityFlag>): Text => {
  const shown = flags.slice(0, MAX_NOTE_DATES).map((f) => f.business_date).join(", ");
  const more = flags.length - MAX_NOTE_DATES;
  return more > 0 ? t(`${shown} and ${more} more`, `${shown}，另有 ${more} 天`) : t(shown, shown);
};

// The result as short notes in the given language: the flagged days, what was not checked and why.
export const describeQuality = (
  result: QualityResult,
  language: Language = "en",
): Array<string> => {
  const s = result.summary;
  const notes: Array<Text> = [];
  if (s.device_count === 0) {
    notes.push(t(
      "Data quality: the store has no devices, so its energy was not checked against device " +
        "reports.",
      "数据质量：门店没有设备，因此其能耗未与设备报告核对。",
    ));
  } else {
    if (s.flagged_days > 0) {
      const flagged = FLAG_KINDS.filter((k) => s.flagged_by_kind[k] > 0);
      const dates = datesOf(result.flags);
      notes.push(t(
        `Data quality: ${s.flagged_days} of ${plural(s.requested_days, "day")} disagree with ` +
          `the device reports (${
            flagged.map((k) => `${s.flagged_by_kind[k]} with ${KIND_WORDS[k].en}`).join("; ")
          }): ${dates.en}. The values are kept as they are; only flagged.`,
        `数据质量：${s.requested_days} 天中有 ${s.flagged_days} 天与设备报告不一致（${
          flagged.map((k) => `${s.flagged_by_kind[k]} 天${KIND_WORDS[k].zh}`).join("；")
        }）：${dates.zh}。数值保持原样，仅作标记。`,
      ));
    } else if (s.checked_days > 0) {
      notes.push(t(
        `Data quality: the ${plural(s.checked_days, "day")} that device reports cover agree ` +
          "with them.",
        `数据质量：设备报告覆盖的 ${s.checked_days} 天均与其一致。`,
      ));
    }
    const unchecked = s.no_evidence_days + s.partial_evidence_days;
    if (unchecked > 0) {
      notes.push(t(
        `Data quality: ${plural(unchecked, "day")} had no conclusive device evidence and ` +
          "were not checked.",
        `数据质量：${unchecked} 天没有确定的设备证据，未核对。`,
      ));
    }
  }
  if (s.void_days > 0) {
    notes.push(t(
      `Data quality: ${plural(s.void_days, "void day")} not checked (a void is a reviewer's ` +
        "decision).",
      `数据质量：${s.void_days} 个作废日未核对（作废是审核人的决定）。`,
    ));
  }
  return notes.map((note) => pick(note, language));
};
