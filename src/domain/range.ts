// Date ranges of the read endpoints: inclusive at both ends, start <= end, bounded in length.
import { Effect } from "effect";
import { badRequest } from "./errors.ts";
import { Messages } from "./messages.ts";

const DAY_MS = 86_400_000;

// Days since 1970-01-01 of a valid YYYY-MM-DD date, and back. (Date.UTC is the faster reading, but
// it takes the years 0-99 for 1900-1999.)
export const dayIndex = (date: string) => {
  const year = Number(date.slice(0, 4));
  return (year < 100
    ? Date.parse(`${date}T00:00:00Z`)
    : Date.UTC(year, Number(date.slice(5, 7)) - 1, Number(date.slice(8, 10)))) / DAY_MS;
};

export const dateOfDay = (day: number) => new Date(day * DAY_MS).toISOString().slice(0, 10);

export const addDays = (date: string, days: number) => dateOfDay(dayIndex(date) + days);

// Every date of a range, in order. Counted, not compared as text: the day after 9999-12-31 is
// written "+010000-01-01", which sorts before it.
export const datesOf = (start: string, end: string): Array<string> =>
  Array.from(
    { length: Math.max(0, dayIndex(end) - dayIndex(start) + 1) },
    (_, i) => addDays(start, i),
  );

export const ENERGY_MAX_DAYS = 366;
// Targets and metrics allow two years, so a year can be compared with the one before it.
export const METRICS_MAX_DAYS = 731;

export const checkRange = (start: string, end: string, maxDays: number) => {
  const days = dayIndex(end) - dayIndex(start) + 1;
  if (days < 1) {
    return Effect.fail(badRequest(Messages.startAfterEnd(start, end)));
  }
  if (days > maxDays) {
    return Effect.fail(
      badRequest(Messages.rangeTooLong(start, end, days, maxDays)),
    );
  }
  return Effect.succeed(days);
};

export const isValidRange = (start: string, end: string, maxDays: number) => {
  const days = dayIndex(end) - dayIndex(start) + 1;
  return days >= 1 && days <= maxDays;
};

// A read over a store's metering scope and a date range (both ends inclusive).
export interface RangeRequest {
  readonly storeId: number;
  readonly scopeId: number;
  readonly start: string;
  readonly end: string;
}

export const rangeOf = (
  storeId: number,
  q: { readonly scope_id: number; readonly start: string; readonly end: string },
): RangeRequest => ({ storeId, scopeId: q.scope_id, start: q.start, end: q.end });
