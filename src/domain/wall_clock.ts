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

// The wall clock of `zone` at the instant `ms` (milliseconds since the epoch).
export const wallAt = (ms: number, zone: string): Wall => {
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
