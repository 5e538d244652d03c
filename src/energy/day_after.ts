// A day's next state, stated once: the facts a day has right after a revision, from the facts it
// had before and the revision proposed (rules.md §8), and the id a day gets when it has no row yet.
// The import commit and the snapshot loader stage their revisions with these, as SQL over their own
// relations (one statement for all their rows), for the day writer (day_writer.ts) to apply; the
// same rule in TypeScript, `dayAfter`, states what the SQL computes.
import * as SqlClient from "@effect/sql/SqlClient";
import { Effect } from "effect";

// The facts of a day that a revision changes (energy_days' columns of the same names).
export interface DayFacts {
  readonly legacyKwh: string | null;
  readonly cleanedKwh: string | null;
  readonly cleanedSourceKind: string | null;
  readonly isVoid: boolean;
  // 1 while the day's legacy value is provisional, since `provisionalAt`.
  readonly provisional: number;
  readonly provisionalAt: string | null;
}

// The facts of a day that has no row yet.
export const NO_DAY: DayFacts = {
  legacyKwh: null,
  cleanedKwh: null,
  cleanedSourceKind: null,
  isVoid: false,
  provisional: 0,
  provisionalAt: null,
};

// A proposed revision.
// - legacy: the sealed legacy value arrives; the cleaned value and the void mark stay.
// - cleaned: a cleaned value from `sourceKind`, or (`void`) the day voided, which keeps the cleaned
//   value and its source as they were.
// A revision that carries a provisional mark (`provisionalAt`, null for none: a snapshot states it
// for each day) sets it; one that does not clears it with a value and keeps it with a void.
export type Revision =
  | {
    readonly kind: "legacy";
    readonly kwh: string | null;
    readonly provisionalAt?: string | null;
  }
  | {
    readonly kind: "cleaned";
    readonly void: boolean;
    readonly kwh: string | null;
    readonly sourceKind: string;
    readonly provisionalAt?: string | null;
  };

// The day's facts right after `revision`, from its facts before (NO_DAY for a day without a row).
export const dayAfter = (before: DayFacts, revision: Revision): DayFacts => {
  const marked = revision.provisionalAt === undefined ? undefined : {
    provisional: revision.provisionalAt === null ? 0 : 1,
    provisionalAt: revision.provisionalAt,
  };
  if (revision.kind === "legacy") {
    return {
      ...before,
      legacyKwh: revision.kwh,
      ...(marked ?? { provisional: before.provisional, provisionalAt: before.provisionalAt }),
    };
  }
  if (revision.void) {
    return {
      ...before,
      isVoid: true,
      ...(marked ?? { provisional: before.provisional, provisionalAt: before.provisionalAt }),
    };
  }
  return {
    legacyKwh: before.legacyKwh,
    cleanedKwh: revision.kwh,
    cleanedSourceKind: revision.sourceKind,
    isVoid: false,
    ...(marked ?? { provisional: 0, provisionalAt: null }),
  };
};

// The same, as SQL. Each field of a DayFactsSql or RevisionSql is an SQL expression over the
// caller's relation.
export type DayFactsSql = { readonly [K in keyof DayFacts]: string };

export type RevisionSql =
  | { readonly kind: "legacy"; readonly kwh: string; readonly provisionalAt?: string }
  | {
    readonly kind: "cleaned";
    // A boolean expression: whether the revision voids the day.
    readonly void: string;
    readonly kwh: string;
    readonly sourceKind: string;
    readonly provisionalAt?: string;
  };

export const NO_DAY_SQL: DayFactsSql = {
  legacyKwh: "NULL::numeric",
  cleanedKwh: "NULL::numeric",
  cleanedSourceKind: "NULL::text",
  isVoid: "false",
  provisional: "0::smallint",
  provisionalAt: "NULL::timestamptz",
};

// The facts as the columns of an alias (of energy_days, or a relation with the same columns). Where
// the relation holds NULLs for a day without a row, provisional is read as 0.
export const factsOf = (alias: string): DayFactsSql => ({
  legacyKwh: `${alias}.legacy_kwh`,
  cleanedKwh: `${alias}.cleaned_kwh`,
  cleanedSourceKind: `${alias}.cleaned_source_kind`,
  isVoid: `${alias}.is_void`,
  provisional: `coalesce(${alias}.provisional, 0)`,
  provisionalAt: `${alias}.provisional_at`,
});

// A text constant as SQL (a source kind named by the code).
export const sqlText = (text: string) => `'${text.replaceAll("'", "''")}'`;

// The day's facts after the revision as SQL expressions.
export const dayAfterFacts = (before: DayFactsSql, revision: RevisionSql): DayFactsSql => {
  const marked = revision.provisionalAt === undefined ? undefined : {
    provisional: `CASE WHEN ${revision.provisionalAt} IS NULL THEN 0 ELSE 1 END::smallint`,
    provisionalAt: revision.provisionalAt,
  };
  if (revision.kind === "legacy") {
    return {
      ...before,
      legacyKwh: revision.kwh,
      ...(marked ?? { provisional: before.provisional, provisionalAt: before.provisionalAt }),
    };
  }
  const voided = (kept: string, otherwise: string) =>
    `CASE WHEN ${revision.void} THEN ${kept} ELSE ${otherwise} END`;
  return {
    legacyKwh: before.legacyKwh,
    cleanedKwh: voided(before.cleanedKwh, revision.kwh),
    cleanedSourceKind: voided(before.cleanedSourceKind, revision.sourceKind),
    isVoid: revision.void,
    ...(marked ?? {
      provisional: `CASE WHEN ${revision.void} THEN ${before.provisional} ELSE 0 END`,
      provisionalAt: `CASE WHEN ${revision.void} THEN ${before.provisionalAt} END`,
    }),
  };
};

// The facts as a select list, in the day writer's column names and order (REVISION_COLUMNS).
export const dayAfterColumns = (before: DayFactsSql, revision: RevisionSql) => {
  const after = dayAfterFacts(before, revision);
  return `${after.legacyKwh} AS legacy_kwh, ${after.cleanedKwh} AS cleaned_kwh,
    ${after.cleanedSourceKind} AS cleaned_source_kind, ${after.isVoid} AS is_void,
    ${after.provisional} AS provisional, ${after.provisionalAt} AS provisional_at`;
};

// --- Ids: a day's id comes from energy_days' own sequence.

const DAY_SEQUENCE = "pg_get_serial_sequence('energy_days', 'id')";

// The id of the day a revision applies to: `existing` (an expression, NULL for a day without a
// row), else a new one drawn for it in the statement.
export const dayIdSql = (existing: string) =>
  `coalesce(${existing}, nextval(${DAY_SEQUENCE})::int)`;

// Reserves `n` consecutive ids for new days at once (a bulk load knows every day's id before it
// inserts); the first of them (1 when n is 0, nothing reserved).
export const reserveDayIds = (n: number) =>
  n === 0
    ? Effect.succeed(1)
    : Effect.flatMap(SqlClient.SqlClient, (sql) =>
      sql.unsafe<{ first: number }>(
        `SELECT (setval(${DAY_SEQUENCE}::regclass, nextval(${DAY_SEQUENCE}::regclass) + $1::int - 1)
               - $1::int + 1)::int AS first`,
        [n],
      ).pipe(Effect.map((rows) => rows[0].first)));
