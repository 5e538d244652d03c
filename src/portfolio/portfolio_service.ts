// The portfolio of a caller: every store the key sees (and the filters pick), each summarised by
// the metrics engine exactly as its metrics answer is, then rolled up per brand, per city and for
// all. Set-based reads of a page of stores each, the next page read while one is computed; the
// pure engine store by store, letting the event loop run between slices of stores.
import { Effect, Fiber } from "effect";
import { requirePermission, scopeDigest } from "../auth/access.ts";
import { DataSeal } from "../auth/data_seal.ts";
import type { Versioned } from "../domain/answers.ts";
import type { AsOf, ResolvedAsOf } from "../domain/as_of.ts";
import type { CallerShape } from "../domain/auth.ts";
import { MAX_ID } from "../domain/common.ts";
import type { ServiceUnavailable } from "../domain/errors.ts";
import {
  PORTFOLIO_MAX_DAYS,
  type PortfolioBrand,
  type PortfolioCity,
  type PortfolioResponse,
  type PortfolioStore,
  type PortfolioTotal,
} from "../domain/portfolio.ts";
import type { QualitySummary } from "../domain/quality.ts";
import { checkRange, datesOf } from "../domain/range.ts";
import { AsOfRepo } from "../energy/as_of_repo.ts";
import { yieldToEventLoop } from "../exports/paged_body.ts";
import { RULE_VERSION } from "../metrics/engine.ts";
import { span } from "../ops/span.ts";
import { computeStore, type StoreResult, type StoreRow } from "./portfolio_compute.ts";
import { type PortfolioQuery, PortfolioRepo } from "./portfolio_repo.ts";
import { addParts, NO_PARTS, summaryOf, type SummaryParts } from "../metrics/summary_parts.ts";
import { addQuality, NO_QUALITY } from "./portfolio_rollup.ts";

export interface PortfolioRequest {
  readonly start: string;
  readonly end: string;
  readonly brandId: number | null;
  readonly city: string | null;
}

export const PORTFOLIO_NOTES: ReadonlyArray<string> = [
  "Each store's summary is the summary of its metrics answer for the same range " +
  "(GET /api/v1/stores/{store_id}/metrics), computed by the same engine.",
  "A roll-up (per brand, per city, total) is the metrics summary of all its stores' days taken " +
  "together: requested_days and the other day counts are store-days; kWh values are exact sums " +
  "rounded once; aer_percent is the summed savings over the summed matched baseline, not an " +
  "average of the stores' rates; each pass flag compares the summed values of the settled " +
  "matched days, as a store's does over its own days.",
  "A sum over no contributing day is null, never 0.0000.",
  "data_quality is the cross-check of the days against the device reports, its counts summed in " +
  "a roll-up; it never changes a value.",
];

// Stores per statement: small enough that the first page is soon there to compute, large enough
// that a statement's fixed cost is spread.
const PAGE_STORES = 250;

// Starts of a current read after a commit landed between two of its pages, before it reads every
// store in one statement (consistent by construction, without the overlap of reads and work).
const ATTEMPTS = 3;

// Pages read at once, ahead of the one being computed: the statements of a large portfolio take
// about as long as computing its stores, and run on the database's cores.
const READ_AHEAD = 3;

// Stores are computed back to back for at most this long, then the event loop gets its turn, so
// other requests wait at most this long for a large portfolio.
const SLICE_MS = 10;

interface Group {
  readonly stores: number;
  readonly parts: SummaryParts;
  readonly provisional: number;
  readonly quality: QualitySummary;
}

const NO_GROUP: Group = { stores: 0, parts: NO_PARTS, provisional: 0, quality: NO_QUALITY };

const addToGroup = (g: Group | undefined, one: Group): Group =>
  g === undefined ? one : {
    stores: g.stores + one.stores,
    parts: addParts(g.parts, one.parts),
    provisional: g.provisional + one.provisional,
    quality: addQuality(g.quality, one.quality),
  };

const figuresOf = (g: Group): PortfolioTotal => ({
  store_count: g.stores,
  summary: summaryOf(g.parts),
  provisional_days: g.provisional,
  data_quality: g.quality,
});

// What a portfolio gathers as its stores are computed.
class Gathered {
  readonly stores: Array<PortfolioStore> = [];
  readonly brands = new Map<number, { readonly name: string; readonly group: Group }>();
  readonly cities = new Map<string | null, Group>();
  total: Group = NO_GROUP;

  // One store: its row, and its parts added to its brand's, its city's and the total.
  add(result: StoreResult) {
    const { row } = result;
    const one: Group = {
      stores: 1,
      parts: result.parts,
      provisional: result.provisionalDays,
      quality: result.quality,
    };
    this.stores.push(row);
    const brand = this.brands.get(row.brand_id);
    this.brands.set(row.brand_id, {
      name: row.brand_name,
      group: addToGroup(brand?.group, one),
    });
    this.cities.set(row.city, addToGroup(this.cities.get(row.city), one));
    this.total = addToGroup(this.total, one);
  }

  brandRows(): Array<PortfolioBrand> {
    return [...this.brands]
      .sort(([a], [b]) => a - b)
      .map(([id, b]) => ({ brand_id: id, brand_name: b.name, ...figuresOf(b.group) }));
  }

  // Cities by name, the stores without a city last.
  cityRows(): Array<PortfolioCity> {
    return [...this.cities]
      .sort(([a], [b]) => a === null ? 1 : b === null ? -1 : a < b ? -1 : a > b ? 1 : 0)
      .map(([city, g]) => ({ city, ...figuresOf(g) }));
  }
}

type PageFiber = Fiber.RuntimeFiber<ReadonlyArray<StoreRow>, ServiceUnavailable>;

export class PortfolioService extends Effect.Service<PortfolioService>()(
  "Portfolio/PortfolioService",
  {
    effect: Effect.gen(function* () {
      const repo = yield* PortfolioRepo;
      const asOfRepo = yield* AsOfRepo;
      const seal = yield* DataSeal;

      const queryOf = (caller: CallerShape, r: PortfolioRequest): PortfolioQuery => ({
        start: r.start,
        end: r.end,
        storeIds: caller.storeIds,
        brandId: r.brandId,
        city: r.city,
      });

      // 403 without the read permission, 400 for a range that is reversed or too long.
      const check = (caller: CallerShape, r: PortfolioRequest) =>
        Effect.zipRight(
          requirePermission(caller, "read"),
          checkRange(r.start, r.end, PORTFOLIO_MAX_DAYS),
        );

      // Keys limited to different stores see different portfolios at the same address: a digest
      // of the key's stores is part of every version. The version names the commit the data has
      // reached, so it leaves sealed (data_seal.ts): a key limited to some stores cannot count
      // other stores' commits from an ETag.
      const versionOf = (caller: CallerShape, version: string) =>
        seal.seal(
          "version",
          `${version}.${scopeDigest(caller.storeIds).slice(0, 12)}`,
        );

      // The version (and data token) of the current data of a portfolio: what a kept answer is
      // compared with.
      const currentVersion = (caller: CallerShape, r: PortfolioRequest) =>
        Effect.zipRight(check(caller, r), repo.version(queryOf(caller, r))).pipe(
          Effect.flatMap((now) =>
            Effect.map(versionOf(caller, now.version), (version) => ({ ...now, version }))
          ),
        );

      // One pass over the pages; undefined when a current read saw two commits (or a reload of
      // the stores between the pages' starts and their reads).
      const pass = (q: PortfolioQuery, seq: string | undefined, pageStores: number) =>
        Effect.gen(function* () {
          const dates = datesOf(q.start, q.end);
          const gathered = new Gathered();
          const plan = yield* repo.pageStarts(q, pageStores);
          const reading: Array<PageFiber> = [];
          let started = 0;
          const readAhead = Effect.gen(function* () {
            while (reading.length < READ_AHEAD && started < plan.starts.length) {
              reading.push(
                yield* Effect.fork(
                  repo.page(q, plan.starts[started++], pageStores, seq),
                ),
              );
            }
          });
          const stop = Effect.forEach(reading, Fiber.interrupt, { discard: true });
          let seen: StoreRow | undefined;
          let ranSince = performance.now();
          yield* readAhead;
          while (reading.length > 0) {
            const rows: ReadonlyArray<StoreRow> = yield* Fiber.join(reading.shift()!);
            yield* readAhead;
            const last = rows.at(-1);
            if (last === undefined) continue;
            seen ??= last;
            // A read as of a commit shows that commit whatever its statements' own moments.
            if (
              (seq === undefined && (last.version !== seen.version || last.token !== seen.token)) ||
              !last.version.startsWith(`${plan.version}.`)
            ) {
              yield* stop;
              return undefined;
            }
            for (const row of rows) {
              if (performance.now() - ranSince >= SLICE_MS) {
                yield* yieldToEventLoop;
                ranSince = performance.now();
              }
              gathered.add(computeStore(row, dates));
            }
          }
          const now = seen === undefined
            ? yield* repo.version(q)
            : { version: seen.version, token: seen.token ?? undefined };
          return { gathered, ...now };
        });

      const build = (q: PortfolioQuery, seq: string | undefined, pageStores: number) =>
        Effect.gen(function* () {
          for (let attempt = 1;; attempt++) {
            const built = yield* pass(q, seq, attempt > ATTEMPTS ? MAX_ID : pageStores);
            if (built !== undefined) return built;
          }
        });

      // A held version that is current builds nothing (a read as of an earlier instant is never
      // conditional). `pageStores`: stores per statement (the tests make pages small).
      const portfolio = (
        caller: CallerShape,
        r: PortfolioRequest,
        asOf: AsOf,
        held?: string,
        pageStores = PAGE_STORES,
      ) =>
        Effect.gen(function* () {
          yield* check(caller, r);
          const q = queryOf(caller, r);
          const at: ResolvedAsOf | undefined = asOf.kind === "current"
            ? undefined
            : yield* asOfRepo.resolve(asOf, caller.storeIds);
          if (at === undefined && held !== undefined) {
            const now = yield* repo.version(q);
            const version = yield* versionOf(caller, now.version);
            if (version === held) {
              return { version, token: now.token, value: undefined } satisfies Versioned<
                PortfolioResponse
              >;
            }
          }
          const { gathered, version, token } = yield* build(q, at?.seq, pageStores);
          return {
            version: yield* versionOf(caller, version),
            token: at?.token ?? token,
            asOf: at,
            value: {
              start: r.start,
              end: r.end,
              brand_id: r.brandId,
              city: r.city,
              rule_version: RULE_VERSION,
              stores: gathered.stores,
              brands: gathered.brandRows(),
              cities: gathered.cityRows(),
              total: figuresOf(gathered.total),
              notes: [...PORTFOLIO_NOTES],
            },
          } satisfies Versioned<PortfolioResponse>;
        }).pipe(span("PortfolioService.portfolio"));

      return { portfolio, currentVersion } as const;
    }),
    dependencies: [PortfolioRepo.Default, AsOfRepo.Default, DataSeal.Default],
  },
) {}
