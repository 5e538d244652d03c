// MetricsRepo: the per-day inputs of the metrics engine for a range, in one round trip (with the
// credential's check in the same statement for a current read).
import * as SqlClient from "@effect/sql/SqlClient";
import { Effect } from "effect";
import { credentialParams, type CredentialRow } from "../auth/access.ts";
import { makeBatched, READS_AT_ONCE } from "../db/batched.ts";
import { makeConfirmedReads } from "../reads/confirmed_reads.ts";
import { dbBoundary } from "../db/errors.ts";
import type { Credential } from "../domain/auth.ts";
import type { RangeRequest } from "../domain/range.ts";
import type { EnergyStatus, QualityDayInput } from "../quality/quality_rules.ts";
import type { BaselineMonth, DayInput, Stage, TargetInput, TevInput } from "./engine.ts";
import { span } from "../ops/span.ts";
import { scopedDataTokenSql } from "../energy/day_sql.ts";

// The facts come from metric_inputs (metrics_sql.ts): the day facts as compact arrays; stages,
// target periods and TEV observations as the short lists that overlap the range, resolved per day in
// resolveDays (a linear merge is cheaper than a lateral lookup per day).
// The data token is the caller's ($6: its stores, null for every store; scopedDataTokenSql).
const inputsSql = `
SELECT out_days AS days, out_stages AS stages, out_periods AS periods, out_tev AS tev,
  out_baseline AS baseline, out_version AS version, ${scopedDataTokenSql("$6::int[]")} AS token
FROM metric_inputs($1::int, $2::int, $3::date, $4::date, $5::text)`;

// Their version alone (metric_version: the same relations and expression).
// The version and data token of a store, scope and range's inputs (metric_version), as a relation
// of columns version and token; the arguments are SQL expressions.
export const metricVersionFromSql = (store: string, scope: string, start: string, end: string) =>
  `(SELECT out_version AS version, out_token AS token
    FROM metric_version(${store}::int, ${scope}::int, ${start}::date, ${end}::date))`;

const versionSql = `SELECT v.version, ${scopedDataTokenSql("$5::int[]")} AS token
  FROM ${metricVersionFromSql("$1", "$2", "$3", "$4")} v`;

// The same inputs as they were once commit $6 was made.
const inputsAtSql = `
SELECT out_days AS days, out_stages AS stages, out_periods AS periods, out_tev AS tev,
  out_baseline AS baseline, out_version AS version, out_token AS token
FROM metric_inputs_at($1::int, $2::int, $3::date, $4::date, $5::text, $6::bigint)`;

// The credential check and the current inputs (or their version alone) in one statement
// (metric_read, metrics_sql.ts), for many reads at once: one call a read, numbered, its arguments
// one array each. A read alone goes through it too: called directly, a year's read cost the
// database more (docs/performance.md). Rows are placed by their number: no sort in the statement.
const readsSql = `
SELECT a.i::int AS i, r.credential, r.out_days AS days, r.out_stages AS stages,
  r.out_periods AS periods, r.out_tev AS tev, r.out_baseline AS baseline, r.out_version AS version,
  r.out_token AS token, r.out_timezone AS timezone, r.out_unit AS unit
FROM unnest($1::text[], $2::text[], $3::int[], $4::int[], $5::date[], $6::date[], $7::text[],
            $8::boolean[])
  WITH ORDINALITY AS a(key_hash, session_hash, store_id, scope_id, start_date, end_date,
                       if_version, version_only, i)
CROSS JOIN LATERAL metric_read(a.key_hash, a.session_hash, a.store_id, a.scope_id, a.start_date,
                               a.end_date, a.if_version, a.version_only) r`;

interface MetricReadRequest {
  readonly credential: Credential;
  readonly request: RangeRequest;
  readonly ifVersion: string | undefined;
  readonly versionOnly: boolean;
}

const readsParams = (reads: ReadonlyArray<MetricReadRequest>) => {
  const credentials = reads.map((r) => credentialParams(r.credential));
  return [
    credentials.map(([key]) => key),
    credentials.map(([, session]) => session),
    reads.map((r) => r.request.storeId),
    reads.map((r) => r.request.scopeId),
    reads.map((r) => r.request.start),
    reads.map((r) => r.request.end),
    reads.map((r) => r.ifVersion ?? null),
    reads.map((r) => r.versionOnly),
  ];
};

type DayRow = readonly [string, string | null, 0 | 1, string | null, EnergyStatus];
type StageRow = readonly [Stage, string, string | null];
type PeriodRow = TargetInput & { readonly from: string; readonly to: string | null };
type TevRow = readonly [string, string];

interface InputRows {
  readonly days: ReadonlyArray<DayRow>;
  readonly stages: ReadonlyArray<StageRow>;
  readonly periods: ReadonlyArray<PeriodRow>;
  readonly tev: ReadonlyArray<TevRow>;
  readonly baseline: ReadonlyArray<BaselineMonth>;
  readonly version: string;
  readonly token: string | null;
}

export interface MetricInputs {
  readonly days: ReadonlyArray<DayInput>;
  // Each day's energy as the energy read serves it (for the data-quality cross-check).
  readonly energy: ReadonlyArray<QualityDayInput>;
  readonly baseline: ReadonlyArray<BaselineMonth>;
  // Changes whenever the inputs may (the data generation and the revisions of the facts read).
  readonly version: string;
  // The data token of the commit the inputs were read at.
  readonly token: string | undefined;
}

// metric_read's answer: the credential's row; when that credential may read the store's scope, the
// version and data token of the inputs and the scope's time zone and unit; and the inputs unless
// only the version was asked for or the caller holds it.
export interface MetricRead {
  readonly credential: CredentialRow | undefined;
  readonly version: string | undefined;
  readonly token: string | undefined;
  readonly scope?: { readonly timezone: string; readonly unit: string };
  readonly inputs: MetricInputs | undefined;
}

type ReadRow =
  & { readonly credential: CredentialRow }
  & { readonly timezone: string | null; readonly unit: string | null }
  & {
    readonly [K in keyof InputRows]: InputRows[K] | null;
  };

const inputsOf = (rows: InputRows): MetricInputs => ({
  days: resolveDays(rows),
  energy: rows.days.map(([date, servedKwh, , , status]) => ({ date, status, servedKwh })),
  baseline: rows.baseline,
  version: rows.version,
  token: rows.token ?? undefined,
});

const readOf = (row: ReadRow | undefined): MetricRead => ({
  credential: row?.credential,
  version: row?.version ?? undefined,
  token: row?.token ?? undefined,
  scope: row === undefined || row.timezone === null || row.unit === null
    ? undefined
    : { timezone: row.timezone, unit: row.unit },
  inputs: row === undefined || row.days === null ? undefined : inputsOf(row as InputRows),
});

// One pass over ascending days with a cursor per list. Stage valid_to is exclusive (rules.md §3),
// a target period's valid_to inclusive (rules.md §5); TEV is the latest observation on or before.
export const resolveDays = (rows: InputRows): Array<DayInput> => {
  let s = 0, p = 0, t = -1;
  // One target and one TEV object each, shared by the days they cover (the target resolver
  // recognises a run of days with the same ones).
  const targets = rows.periods.map(({ from: _from, to: _to, ...input }): TargetInput => input);
  const tevs = rows.tev.map(([value, observedDate]): TevInput => ({ value, observedDate }));
  return rows.days.map(([date, actual, provisional, provisionalAt]) => {
    while (s < rows.stages.length && rows.stages[s][2] !== null && rows.stages[s][2]! <= date) s++;
    const stageRow = rows.stages[s];
    const stage = stageRow !== undefined && stageRow[1] <= date ? stageRow[0] : null;
    while (p < rows.periods.length && rows.periods[p].to !== null && rows.periods[p].to! < date) {
      p++;
    }
    const period = rows.periods[p];
    const target = period !== undefined && period.from <= date ? targets[p] : null;
    while (t + 1 < rows.tev.length && rows.tev[t + 1][1] <= date) t++;
    const tev = t >= 0 ? tevs[t] : null;
    return { date, actual, provisional, provisionalAt, stage, target, tev };
  });
};

export class MetricsRepo extends Effect.Service<MetricsRepo>()("Metrics/MetricsRepo", {
  scoped: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient;

    // `seq`: the commit to read the inputs at (a read as of an earlier instant: its token is the
    // instant's); else now, with the data token of the caller's stores (`storeIds`, null: every
    // store).
    const inputs = (
      storeId: number,
      scopeId: number,
      start: string,
      end: string,
      tz: string,
      storeIds: ReadonlyArray<number> | null,
      seq?: string,
    ) =>
      dbBoundary(
        seq === undefined
          ? sql.unsafe<InputRows>(inputsSql, [storeId, scopeId, start, end, tz, storeIds])
          : sql.unsafe<InputRows>(inputsAtSql, [storeId, scopeId, start, end, tz, seq]),
      ).pipe(Effect.map(([rows]) => inputsOf(rows)), span("MetricsRepo.inputs"));

    // The credential's row and the current inputs in one round trip (metric_read): only their
    // version when `versionOnly`, or when it is `ifVersion` (the version the caller holds).
    const runReads = (reads: ReadonlyArray<MetricReadRequest>) =>
      dbBoundary(sql.unsafe<ReadRow & { readonly i: number }>(readsSql, readsParams(reads))).pipe(
        Effect.map((rows) => {
          const each: Array<ReadRow | undefined> = reads.map(() => undefined);
          for (const row of rows) each[row.i - 1] = row;
          return each.map(readOf);
        }),
      );
    // The checks of kept answers (the version alone) asked for at once share a statement
    // (db/batched.ts). A read of the inputs goes alone: the database computes them, and a
    // statement of many would compute them one after another on one connection.
    const checkMany = yield* makeBatched(runReads, READS_AT_ONCE);
    // A check is confirmed from what an earlier statement found, while nothing has changed since
    // (reads/confirmed_reads.ts).
    const confirmed = yield* makeConfirmedReads;
    const read = (
      credential: Credential,
      request: RangeRequest,
      ifVersion: string | undefined,
      versionOnly: boolean,
    ) => {
      const item = { credential, request, ifVersion, versionOnly };
      const { storeId, scopeId, start, end } = request;
      return confirmed(
        versionOnly || ifVersion !== undefined
          ? { credential, range: `${storeId}|${scopeId}|${start}|${end}`, held: ifVersion }
          : undefined,
        versionOnly ? checkMany(item) : Effect.map(runReads([item]), ([one]) => one),
      ).pipe(
        Effect.map((answer): MetricRead =>
          "inputs" in answer ? answer : { ...answer, inputs: undefined }
        ),
        span("MetricsRepo.read"),
      );
    };

    // The version (and data token) `inputs` would give now, without the inputs.
    const version = (
      storeId: number,
      scopeId: number,
      start: string,
      end: string,
      storeIds: ReadonlyArray<number> | null,
    ) =>
      dbBoundary(
        sql.unsafe<{ version: string; token: string | null }>(versionSql, [
          storeId,
          scopeId,
          start,
          end,
          storeIds,
        ]),
      ).pipe(
        Effect.map(([row]) => ({ version: row.version, token: row.token ?? undefined })),
        span("MetricsRepo.version"),
      );

    return { inputs, version, read } as const;
  }),
}) {}
