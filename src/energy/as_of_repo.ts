// Which commit a read as of an earlier instant shows (commits, commit_clock: migration 0008), and
// the refusals when that data is not known: an instant still to come, data of a replaced snapshot,
// data from before the history this database keeps.
import * as SqlClient from "@effect/sql/SqlClient";
import { Effect } from "effect";
import { dbBoundary } from "../db/errors.ts";
import { utcMicros } from "../db/sql_text.ts";
import { scopedSeqSql } from "./day_sql.ts";
import type { AsOf, ResolvedAsOf } from "../domain/as_of.ts";
import { badRequest, conflict, unavailable } from "../domain/errors.ts";
import { Messages } from "../domain/messages.ts";
import { span } from "../ops/span.ts";

interface Row {
  readonly clock_seq: string;
  readonly history_from: string;
  readonly generation: string;
  readonly future: boolean;
  readonly known_at: string | null;
  readonly seq: string | null;
  readonly committed_at: string | null;
  readonly kept_from: string | null;
}

// $1: the instant asked for (with $2 the key's stores), or $2: the commit number of a token.
const resolveSql = (pick: string) => `
SELECT k.seq::text AS clock_seq, k.history_from::text AS history_from,
  left(d.generation, 16) AS generation,
  coalesce($1::timestamptz > clock_timestamp(), false) AS future,
  ${utcMicros("$1::timestamptz")} AS known_at,
  c.seq::text AS seq, ${utcMicros("c.committed_at")} AS committed_at,
  (SELECT ${utcMicros("x.committed_at")} FROM commits x
   WHERE x.seq >= greatest(k.history_from, 1) ORDER BY x.seq LIMIT 1) AS kept_from
FROM commit_clock k
CROSS JOIN dataset d
LEFT JOIN LATERAL (${pick}) c ON true`;

// The last commit at the instant; for a key limited to some stores ($2), the commit its stores'
// data was at then (scopedSeqSql), so that a token of a read as of an instant changes only when its
// stores' data does.
const byInstant = resolveSql(`
  SELECT y.seq, y.committed_at
  FROM (SELECT x.seq FROM commits x
        WHERE x.committed_at <= $1::timestamptz
        ORDER BY x.committed_at DESC, x.seq DESC
        LIMIT 1) g
  JOIN commits y ON y.seq = ${scopedSeqSql("$2::int[]", "g.seq")}`);

const byToken = resolveSql(`
  SELECT x.seq, x.committed_at FROM commits x WHERE x.seq = $2::bigint`);

const notKept = (keptFrom: string | null) =>
  conflict(
    keptFrom === null ? Messages.nothingCommittedThen() : Messages.historyKeptFrom(keptFrom),
  );

export class AsOfRepo extends Effect.Service<AsOfRepo>()("Energy/AsOfRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient;

    // `storeIds`: the caller's stores (null: every store).
    const resolve = (
      asOf: Exclude<AsOf, { kind: "current" }>,
      storeIds: ReadonlyArray<number> | null,
    ) =>
      Effect.gen(function* () {
        const rows = yield* dbBoundary(sql.unsafe<Row>(
          asOf.kind === "instant" ? byInstant : byToken,
          asOf.kind === "instant" ? [asOf.at, storeIds] : [null, asOf.seq],
        ));
        const row = rows[0];
        if (row === undefined) return yield* unavailable(Messages.noData());
        if (asOf.kind === "token" && asOf.generation !== row.generation) {
          return yield* conflict(Messages.tokenReplaced());
        }
        if (asOf.kind === "instant" && row.future) {
          return yield* badRequest(Messages.knownAtFuture());
        }
        if (row.seq === null || row.committed_at === null) {
          if (asOf.kind === "token") {
            return yield* badRequest(Messages.tokenNamesNoCommit());
          }
          return yield* notKept(row.kept_from);
        }
        if (BigInt(row.seq) < BigInt(row.history_from)) return yield* notKept(row.kept_from);
        return {
          seq: row.seq,
          token: `${row.seq}.${row.generation}`,
          committedAt: row.committed_at,
          knownAt: row.known_at ?? (storeIds === null ? row.committed_at : undefined),
        } satisfies ResolvedAsOf;
      }).pipe(span("AsOfRepo.resolve"));

    return { resolve } as const;
  }),
}) {}
