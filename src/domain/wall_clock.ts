// The wall clock of a time zone at an instant, from the platform's time zone data (Intl): used by
// the service (a device report's local day) and by the console (instants shown in the dataset's
// zone), so both read a zone's clock the same way.

export interface Wall {
  readonly year: number;
  readonly month: number;
  readonly day: number;
  readonly hour: number;
  readonly minute: number;
  readonly second: number;
}

// One formatter per zone: making one costs far more than using it.
const formats = new Map<string, Intl.DateTimeFormat>();
const formatOf = (zone: string) => {
  let format = formats.get(zone);
  if (format === undefined) {
    format = new Intl.DateTimeFormat("en-US", {
      timeZone: zone,
      hourCycle: "h23",
      year: "numeric",
      month: "2-digit",
      day: "2-digit",
      hour: "2-digit",
      minute: "2-digit",
      second: "2-digit",
    });
    formats.set(zone, format);
  }
  return format;
};

// The wall clock as Intl reads it (slow: a formatter call and its parts per instant).
const intlWallAt = (ms: number, zone: string): Wall => {
  const parts: Record<string, number> = {};
  for (const p of formatOf(zone).formatToParts(ms)) {
    if (p.type !== "literal") parts[p.type] = Number(p.value);
  }
  return {
    year: parts.year,
    month: parts.month,
    day: parts.day,
    hour: parts.hour === 24 ? 0 : parts.hour,
    minute: parts.minute,
    second: parts.second,
  };
};

// A zone's offset from UTC (ms) at a whole second, as Intl reads its wall clock there.
const offsetAt = (second: number, zone: string) => {
  const w = intlWallAt(second, zone);
  const asUtc = new Date(0);
  asUtc.setUTCFullYear(w.year, w.month - 1, w.day);
  asUtc.setUTCHours(w.hour, w.minute, w.second);
  return asUtc.getTime() - second;
};

// Offsets by zone and quarter hour: a quarter hour whose first and last seconds have the same
// offset has it throughout (no zone changes its offset twice within a quarter hour); one that
// holds a transition is null, and its instants are read from Intl one by one. Bounded: a zone's
// table starts again once it holds MAX_QUARTERS.
const QUARTER_MS = 15 * 60_000;
const MAX_QUARTERS = 100_000;
const offsets = new Map<string, Map<number, number | null>>();

const quarterOffset = (quarter: number, zone: string): number | null => {
  let table = offsets.get(zone);
  if (table === undefined || table.size >= MAX_QUARTERS) {
    table = new Map();
    offsets.set(zone, table);
  }
  let offset = table.get(quarter);
  if (offset === undefined) {
    const first = offsetAt(quarter * QUARTER_MS, zone);
    offset = first === offsetAt((quarter + 1) * QUARTER_MS - 1000, zone) ? first : null;
    table.set(quarter, offset);
  }
  return offset;
};

// The wall clock of `zone` at the instant `ms` (milliseconds since the epoch), to the second.
export const wallAt = (ms: number, zone: string): Wall => {
  const second = Math.floor(ms / 1000) * 1000;
  const offset = quarterOffset(Math.floor(second / QUARTER_MS), zone);
  if (offset === null) return intlWallAt(second, zone);
  const wall = new Date(second + offset);
  return {
    year: wall.getUTCFullYear(),
    month: wall.getUTCMonth() + 1,
    day: wall.getUTCDate(),
    hour: wall.getUTCHours(),
    minute: wall.getUTCMinutes(),
    second: wall.getUTCSeconds(),
  };
};
