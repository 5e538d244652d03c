// Monthly totals, pure: the calendar months a range touches, the same days a year earlier, and
// each span's summary folded from the computed days by the metrics summary itself (exact sums,
// rounded once), so a month's figures are the metrics read's for that month's days.
import type { MonthRow, MonthSpan } from "../domain/months.ts";
import { dayIndex } from "../domain/range.ts";
import { type ComputedDay, summarize } from "./engine.ts";

const pad = (n: number, width: number) => String(n).padStart(width, "0");

const daysInMonth = (year: number, month: number) =>
  month === 2
    ? (year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0) ? 29 : 28)
    : [4, 6, 9, 11].includes(month)
    ? 30
    : 31;

// The same calendar day a year earlier; 29 February becomes 28 February. Null in the year 0001.
export const yearBefore = (date: string): string | null => {
  const year = Number(date.slice(0, 4)) - 1;
  if (year < 1) return null;
  const monthDay = date.slice(5) === "02-29" ? "02-28" : date.slice(5);
  return `${pad(year, 4)}-${monthDay}`;
};

interface Span {
  readonly month: string | null;
  readonly start: string;
  readonly end: string;
}

interface PlannedRow extends Span {
  readonly earlier: Span | null;
}

export interface MonthPlan {
  // The first day to read: the year-earlier start of the range (else the range's start).
  readonly readStart: string;
  readonly months: ReadonlyArray<PlannedRow>;
  readonly total: PlannedRow;
}

const lastOfMonth = (date: string) =>
  `${date.slice(0, 8)}${pad(daysInMonth(Number(date.slice(0, 4)), Number(date.slice(5, 7))), 2)}`;

// A span's days a year earlier: from the same day to the same day, except that a span ending on a
// month's last day ends on that month's last day (February 2025's year earlier is all of February
// 2024), so that the months' year-earlier spans together are the total's, leap day included.
const withEarlier = (span: Span): PlannedRow => {
  const start = yearBefore(span.start);
  const sameDay = yearBefore(span.end);
  const end = sameDay !== null && span.end === lastOfMonth(span.end)
    ? lastOfMonth(sameDay)
    : sameDay;
  return {
    ...span,
    earlier: start === null || end === null
      ? null
      : { month: span.month === null ? null : start.slice(0, 7), start, end },
  };
};

// The months of start..end (inclusive), each cut to the range.
export const monthPlan = (start: string, end: string): MonthPlan => {
  const months: Array<PlannedRow> = [];
  let from = start;
  for (;;) {
    const year = Number(from.slice(0, 4));
    const month = Number(from.slice(5, 7));
    const last = `${from.slice(0, 7)}-${pad(daysInMonth(year, month), 2)}`;
    const to = last < end ? last : end;
    months.push(withEarlier({ month: from.slice(0, 7), start: from, end: to }));
    // Stops on the range's last month (never steps past 9999-12).
    if (to === end) break;
    from = month === 12 ? `${pad(year + 1, 4)}-01-01` : `${pad(year, 4)}-${pad(month + 1, 2)}-01`;
  }
  const total = withEarlier({ month: null, start, end });
  // The earliest day any row reads: the range's year earlier, or a month's when the range's has
  // none (a range starting in year 0001 has no year earlier, its months of year 0002 do).
  const readStart = [total, ...months].reduce(
    (first, r) => r.earlier !== null && r.earlier.start < first ? r.earlier.start : first,
    start,
  );
  return { readStart, months, total };
};

// The rows of a plan from the computed days of readStart..end (one per day, ascending).
export const monthRows = (plan: MonthPlan, days: ReadonlyArray<ComputedDay>) => {
  const first = dayIndex(plan.readStart);
  const span = (s: Span): MonthSpan => ({
    month: s.month,
    start: s.start,
    end: s.end,
    summary: summarize(days.slice(dayIndex(s.start) - first, dayIndex(s.end) - first + 1)),
  });
  const row = (r: PlannedRow): MonthRow => ({
    ...span(r),
    year_earlier: r.earlier === null ? null : span(r.earlier),
  });
  return { months: plan.months.map(row), total: row(plan.total) };
};
