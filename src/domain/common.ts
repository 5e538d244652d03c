// Shared scalar schemas of the contract: decimal strings, dates, ids.
import { Schema } from "effect";

export const DecimalString = Schema.String.pipe(
  Schema.pattern(/^\d+(\.\d{1,4})?$/),
).annotations({ identifier: "DecimalString", description: "Exact decimal, up to 4 places" });

// Days of each month; February gains one in leap years (Gregorian rule).
const MONTH_DAYS = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
const isLeapYear = (y: number) => y % 4 === 0 && (y % 100 !== 0 || y % 400 === 0);

// Whether year, month and day name a real day of years 0001-9999 (PostgreSQL has no year 0000,
// and an answer's dates keep four digits).
export const isCalendarDay = (year: number, month: number, day: number) =>
  year >= 1 && year <= 9999 && month >= 1 && month <= 12 && day >= 1 &&
  day <= (month === 2 && isLeapYear(year) ? 29 : MONTH_DAYS[month - 1]);

// The first date a request may name.
export const FIRST_DATE = "0001-01-01";

// A date as the contract writes it: YYYY-MM-DD, a real day, computed without Date (whose
// two-digit years are of the 1900s and which rolls February 29 of a common year over to March).
export const isCalendarDate = (s: string) => {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(s);
  return m !== null && isCalendarDay(Number(m[1]), Number(m[2]), Number(m[3]));
};

export const DateString = Schema.String.pipe(
  Schema.filter(isCalendarDate, {
    message: () => "expected a calendar date YYYY-MM-DD (years 0001 to 9999)",
  }),
).annotations({
  identifier: "Date",
  description: "A calendar date YYYY-MM-DD, years 0001 to 9999",
  jsonSchema: { type: "string", format: "date" },
});

export const MAX_ID = 2147483647;
// An id as text: digits, no sign, no leading zero (at most MAX_ID once read).
export const ID_TEXT = /^[1-9]\d{0,9}$/;

export const Id = Schema.Int.pipe(Schema.between(1, MAX_ID)).annotations({
  identifier: "Id",
});

// An id decoded from text, shown in the OpenAPI document as the integer it is; `beyond`: what an
// integer past MAX_ID is told.
const idFromText = (beyond: string) =>
  Schema.String.pipe(
    Schema.pattern(/^[1-9]\d*$/, { message: () => "expected an integer id >= 1" }),
    Schema.filter((s) => ID_TEXT.test(s) && Number(s) <= MAX_ID, { message: () => beyond }),
    Schema.compose(Schema.NumberFromString),
    Schema.compose(Id),
  ).annotations({ jsonSchema: { type: "integer", minimum: 1, maximum: MAX_ID } });

// A query id.
export const IdFromString = idFromText(`expected an id of at most ${MAX_ID}`);

// A path's id. The contract's ids are integers >= 1 and an unknown one is 404: an integer past
// every id the database can hold names nothing (NO_SUCH_ID, which the contract middleware answers
// with 404) rather than a malformed request.
export const NO_SUCH_ID = "no object has an id beyond 2147483647";
export const PathId = idFromText(NO_SUCH_ID);

export const Count = Schema.Int.pipe(Schema.greaterThanOrEqualTo(0));

// A count in a query string: 0 .. 2147483647, digits only.
export const CountFromString = Schema.String.pipe(
  Schema.pattern(/^(0|[1-9]\d{0,9})$/, { message: () => "expected an integer >= 0" }),
  Schema.compose(Schema.NumberFromString),
  Schema.compose(Count.pipe(Schema.lessThanOrEqualTo(MAX_ID))),
).annotations({ jsonSchema: { type: "integer", minimum: 0, maximum: MAX_ID } });

export const Nullable = Schema.NullOr;

export const Hours = Schema.Array(
  Schema.Struct({ start: Schema.String, end: Schema.String, next_day: Schema.Boolean }),
);

export const FreeObject = Schema.Record({ key: Schema.String, value: Schema.Unknown });

export const KeyStoreStatus = Schema.Literal("MARKED", "UNCONFIRMED");

// Text a person typed: well-formed Unicode without NUL (PostgreSQL text cannot hold NUL, and a
// lone surrogate is not UTF-8), its length counted in characters (code points), as PostgreSQL's
// length() and JSON Schema's maxLength count it, not in UTF-16 units.
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

const characters = (s: string) => {
  let n = 0;
  for (const _ of s) n++;
  return n;
};

export const TextOfLength = (min: number, max: number) =>
  Schema.String.pipe(
    Schema.filter((s) => !s.includes("\u0000") && !LONE_SURROGATE.test(s), {
      message: () => "expected text without NUL characters or unpaired surrogates",
    }),
    Schema.filter((s) => {
      const n = characters(s);
      return n >= min && n <= max;
    }, {
      message: () => `expected ${min} to ${max} characters`,
      jsonSchema: { minLength: min, maxLength: max },
    }),
  );

// One line of such text (a store's name, an address): no control character, no line or paragraph
// separator. A name goes into files and comes back from them (exports, templates): a line break
// or a control character in it would not read back as written.
export const CONTROL = /[\p{Cc}\u2028\u2029]/u;
// Nor an invisible format character (a zero-width space, a right-to-left override): a name typed
// in the console must not show as another store's name, or reversed.
const INVISIBLE = /\p{Cf}/u;
export const OneLineText = (max: number) =>
  TrimmedText(max).pipe(
    Schema.filter((s) => !CONTROL.test(s) && !INVISIBLE.test(s), {
      message: () =>
        "expected one line of text without control characters or invisible format characters",
    }),
  );

// Text a person typed, trimmed of surrounding whitespace first: 1 to max characters remain.
export const TrimmedText = (max: number) =>
  Schema.compose(Schema.Trim, TextOfLength(1, max)).annotations({
    jsonSchema: {
      type: "string",
      minLength: 1,
      maxLength: max,
      description: `1 to ${max} characters after trimming surrounding whitespace`,
    },
  });
