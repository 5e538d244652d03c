// The portfolio over HTTP: each store's row against its own metrics, periods' and quality answers,
// roll-ups against the engine over all their stores' days, key scope, filters, refusals, ETags and
// reads as of an earlier commit; and the paged read against one statement.
import assert from "node:assert/strict";
import { Decimal } from "decimal.js";
import { SqlClient } from "@effect/sql";
import { Effect, Layer } from "effect";
import type { CallerShape } from "../src/domain/auth.ts";
import { MetricsResponse } from "../src/domain/metrics.ts";
import { PortfolioResponse, type PortfolioStore } from "../src/domain/portfolio.ts";
import { addDays } from "../src/domain/range.ts";
import { computeDays, type ComputedDay, summarize } from "../src/metrics/engine.ts";
import { MetricsRepo } from "../src/metrics/metrics_repo.ts";
import { PortfolioRepo } from "../src/portfolio/portfolio_repo.ts";
import { partsOf, summaryOf } from "../src/metrics/summary_parts.ts";
import { PortfolioService } from "../src/portfolio/portfolio_service.ts";
import { datesOf } from "../src/domain/range.ts";
import { DataSeal } from "../src/auth/data_seal.ts";
import { AppConfig } from "../src/config.ts";
import { AsOfRepo } from "../src/energy/as_of_repo.ts";
import { generateSnapshot } from "../src/seed/generate.ts";
import { loadSnapshot } from "../src/seed/load.ts";
import { assertErrorBody, assertSchema, makeTestApp } from "./helpers.ts";

// rules.md §7: the metrics answer's availability, one entry per metric, in this order.
const METRIC_CODES = ["actual", "eba", "aes", "aer", "tes", "tes_180", "tes_210", "tev"];
import { commitDay } from "./import_helpers.ts";

const snapshot = generateSnapshot({ stores: 12 });
const app = await makeTestApp((db) =>
  db.run(Effect.asVoid(loadSnapshot(snapshot, { reset: false })))
);
const { key } = await app.key(["read"]);
const end = snapshot.dataset.end;
// A year to the dataset's end: summer days with a baseline, and the provisional last day.
const start = addDays(end, -365);

type Portfolio = typeof PortfolioResponse.Type;

const portfolio = async (query: string, as = key): Promise<Portfolio> => {
  const answer = await app.call("GET", `/api/v1/portfolio?${query}`, { key: as });
  assert.equal(answer.status, 200, JSON.stringify(answer.body));
  return assertSchema(PortfolioResponse, answer.body);
};

const sql = (text: string) =>
  app.db.run(Effect.flatMap(SqlClient.SqlClient, (s) => s.unsafe(text)));

const get = async (path: string) => {
  const answer = await app.call("GET", path, { key });
  assert.equal(answer.status, 200, JSON.stringify(answer.body));
  return answer.body;
};

const brandOf = new Map(snapshot.stores.map((s) => [s.id, s.brand_id]));
const cityOf = new Map(snapshot.stores.map((s) => [s.id, s.city]));

// Every store's computed days of a range, by the engine, from the metrics read's own inputs.
const computedDays = async (from: string, to: string) => {
  const out = new Map<number, Array<ComputedDay>>();
  for (const store of snapshot.stores) {
    const inputs = await app.db.run(
      Effect.flatMap(
        MetricsRepo,
        (repo) => repo.inputs(store.id, store.scope.id, from, to, store.scope.timezone, null),
      ).pipe(
        Effect.provide(MetricsRepo.Default),
      ),
    );
    out.set(store.id, computeDays(inputs.days, inputs.baseline));
  }
  return out;
};

const sumOf = (values: ReadonlyArray<string | null>) => {
  const present = values.filter((v): v is string => v !== null);
  return present.length === 0
    ? null
    : present.reduce((s, v) => s.plus(v), new Decimal(0)).toFixed(4);
};

Deno.test("portfolio: each store's row is its metrics summary, provisional days and quality summary", async () => {
  for (
    const [from, to] of [[start, end], [`${end.slice(0, 4)}-06-01`, `${end.slice(0, 4)}-09-30`]]
  ) {
    const body = await portfolio(`start=${from}&end=${to}`);
    assert.deepEqual(
      body.stores.map((s) => s.store_id),
      snapshot.stores.map((s) => s.id).sort((a, b) => a - b),
    );
    let evaluated = 0;
    for (const row of body.stores) {
      const store = snapshot.stores.find((s) => s.id === row.store_id)!;
      assert.equal(row.scope_id, store.scope.id);
      assert.equal(row.brand_id, store.brand_id);
      assert.equal(row.city, store.city);
      const range = `scope_id=${row.scope_id}&start=${from}&end=${to}`;
      const metrics = assertSchema(
        MetricsResponse,
        await get(`/api/v1/stores/${row.store_id}/metrics?${range}`),
      );
      assert.deepEqual(row.summary, metrics.summary, `store ${row.store_id}`);
      assert.equal(row.provisional_days, metrics.days.filter((d) => d.provisional === 1).length);
      const quality = await get(`/api/v1/stores/${row.store_id}/quality?${range}`);
      assert.deepEqual(row.data_quality, quality.summary, `store ${row.store_id}`);
      // The metrics answer names flagged days in its notes.
      assert.equal(
        metrics.notes.some((n) => n.includes("disagree with the device reports")),
        row.data_quality.flagged_days > 0,
      );
      assert.deepEqual(metrics.availability.map((a) => a.metric), METRIC_CODES);
      if (row.summary.eba_pass !== null) evaluated++;
    }
    if (from === start) {
      assert.ok(evaluated > 0, "some stores have a summary pass flag");
      assert.ok(body.total.provisional_days > 0, "the last day is provisional");
      assert.ok(body.total.data_quality.flagged_days > 0, "some days disagree with devices");
    }
  }
});

Deno.test("portfolio: a month's stored baseline counts serve only while its days are the ones counted", async () => {
  // As a writer that does not keep the counts would leave every month: its days' revisions no
  // longer those the counts were made at, and the counts wrong.
  await sql(`CREATE TABLE saved_counts AS
    SELECT scope_id, month, settled_days, settled_kwh, settled_revisions FROM energy_months`);
  await sql(`UPDATE energy_months SET settled_days = 0, settled_kwh = NULL,
    settled_revisions = array_fill(0, ARRAY[cardinality(revisions)])`);
  try {
    // A range not read before, so that no kept answer serves it.
    const from = addDays(start, 1);
    const body = await portfolio(`start=${from}&end=${end}`);
    assert.ok(body.stores.some((s) => s.summary.matched_eba_kwh !== null), "some baseline is used");
    for (const row of body.stores) {
      const metrics = await get(
        `/api/v1/stores/${row.store_id}/metrics?scope_id=${row.scope_id}&start=${from}&end=${end}`,
      );
      assert.deepEqual(row.summary, metrics.summary, `store ${row.store_id}`);
    }
  } finally {
    await sql(`UPDATE energy_months m SET settled_days = c.settled_days,
        settled_kwh = c.settled_kwh, settled_revisions = c.settled_revisions
      FROM saved_counts c WHERE c.scope_id = m.scope_id AND c.month = m.month`);
    await sql("DROP TABLE saved_counts");
  }
});

Deno.test("portfolio: roll-ups are the engine's summary of all their stores' days together", async () => {
  const body = await portfolio(`start=${start}&end=${end}`);
  const days = await computedDays(start, end);
  // A store's parts make its own summary again.
  for (const [id, computed] of days) {
    assert.deepEqual(summaryOf(partsOf(computed)), summarize(computed), `store ${id}`);
  }
  const together = (ids: ReadonlyArray<number>) => summarize(ids.flatMap((id) => days.get(id)!));
  const rows = (pick: (row: PortfolioStore) => boolean) => body.stores.filter(pick);
  const check = (
    group: Portfolio["total"],
    members: ReadonlyArray<PortfolioStore>,
    what: string,
  ) => {
    assert.equal(group.store_count, members.length, what);
    assert.deepEqual(group.summary, together(members.map((m) => m.store_id)), what);
    // Day counts and kWh sums add up across the stores' own summaries (inputs have 4 decimals).
    for (
      const field of ["requested_days", "actual_days", "eba_days", "matched_days"] as const
    ) {
      assert.equal(group.summary[field], members.reduce((s, m) => s + m.summary[field], 0));
    }
    assert.equal(group.summary.actual_kwh, sumOf(members.map((m) => m.summary.actual_kwh)));
    assert.equal(group.provisional_days, members.reduce((s, m) => s + m.provisional_days, 0));
    assert.equal(
      group.data_quality.flagged_days,
      members.reduce((s, m) => s + m.data_quality.flagged_days, 0),
    );
    assert.equal(
      group.data_quality.flagged_by_kind.NO_DATA_WHILE_ONLINE,
      members.reduce((s, m) => s + m.data_quality.flagged_by_kind.NO_DATA_WHILE_ONLINE, 0),
    );
  };
  check(body.total, body.stores, "total");
  assert.deepEqual(
    body.brands.map((b) => b.brand_id),
    [...new Set(snapshot.stores.map((s) => s.brand_id))].sort((a, b) => a - b),
  );
  assert.ok(body.brands.some((b) => b.store_count > 1), "a brand has several stores");
  for (const brand of body.brands) {
    check(brand, rows((r) => r.brand_id === brand.brand_id), `brand ${brand.brand_id}`);
    assert.equal(brand.brand_name, rows((r) => r.brand_id === brand.brand_id)[0].brand_name);
  }
  assert.deepEqual(
    new Set(body.cities.map((c) => c.city)),
    new Set(snapshot.stores.map((s) => s.city)),
  );
  for (const city of body.cities) check(city, rows((r) => r.city === city.city), `${city.city}`);
  assert.ok(body.total.summary.matched_eba_kwh !== null, "the year has matched baseline days");
  assert.ok(body.total.summary.aer_percent !== null || body.total.summary.aes_kwh === null);
});

Deno.test("portfolio: a key limited to stores sees only those, in rows and in every roll-up", async () => {
  const mine = snapshot.stores.slice(2, 5).map((s) => s.id);
  const scoped = await app.key(["read"], { stores: mine });
  const body = await portfolio(`start=${start}&end=${end}`, scoped.key);
  assert.deepEqual(body.stores.map((s) => s.store_id), mine);
  assert.equal(body.total.store_count, mine.length);
  assert.equal(body.brands.reduce((s, b) => s + b.store_count, 0), mine.length);
  assert.equal(body.cities.reduce((s, c) => s + c.store_count, 0), mine.length);
  const days = await computedDays(start, end);
  assert.deepEqual(body.total.summary, summarize(mine.flatMap((id) => days.get(id)!)));
  // Its answer is not another key's, although the address is the same.
  const all = await app.call("GET", `/api/v1/portfolio?start=${start}&end=${end}`, { key });
  const own = await app.call("GET", `/api/v1/portfolio?start=${start}&end=${end}`, {
    key: scoped.key,
    headers: { "if-none-match": all.headers.get("etag")! },
  });
  assert.equal(own.status, 200);
});

Deno.test("portfolio: brand and city filters pick their stores; one that matches none is empty", async () => {
  const brand = snapshot.stores[0].brand_id;
  const byBrand = await portfolio(`start=${start}&end=${end}&brand_id=${brand}`);
  assert.equal(byBrand.brand_id, brand);
  assert.deepEqual(
    byBrand.stores.map((s) => s.store_id),
    snapshot.stores.filter((s) => s.brand_id === brand).map((s) => s.id),
  );
  assert.deepEqual(byBrand.brands.map((b) => b.brand_id), [brand]);
  const city = snapshot.stores[1].city!;
  const byCity = await portfolio(`start=${start}&end=${end}&city=${encodeURIComponent(city)}`);
  assert.equal(byCity.city, city);
  assert.deepEqual(
    byCity.stores.map((s) => s.store_id),
    snapshot.stores.filter((s) => s.city === city).map((s) => s.id),
  );
  assert.deepEqual(byCity.cities.map((c) => c.city), [city]);
  const both = await portfolio(
    `start=${start}&end=${end}&brand_id=${brand}&city=${encodeURIComponent(city)}`,
  );
  assert.deepEqual(
    both.stores.map((s) => s.store_id),
    snapshot.stores.filter((s) => s.brand_id === brand && s.city === city).map((s) => s.id),
  );
  // The rows of a filtered answer are the same rows as in the whole portfolio.
  const whole = await portfolio(`start=${start}&end=${end}`);
  for (const row of byCity.stores) {
    assert.deepEqual(row, whole.stores.find((s) => s.store_id === row.store_id));
  }
  const none = await portfolio(`start=${start}&end=${end}&brand_id=999999`);
  assert.deepEqual(none.stores, []);
  assert.deepEqual(none.brands, []);
  assert.deepEqual(none.cities, []);
  assert.equal(none.total.store_count, 0);
  assert.equal(none.total.summary.requested_days, 0);
  assert.equal(none.total.summary.actual_kwh, null);
  assert.equal(none.total.summary.eba_pass, null);
  for (const id of byBrand.stores.map((s) => s.store_id)) assert.equal(brandOf.get(id), brand);
  for (const id of byCity.stores.map((s) => s.store_id)) assert.equal(cityOf.get(id), city);
});

Deno.test("portfolio: bad ranges and parameters are 400", async () => {
  const cases: Array<[string, string]> = [
    [`start=${end}&end=${start}`, "INVALID_RANGE"],
    [`start=${addDays(end, -366)}&end=${end}`, "RANGE_TOO_LONG"],
    [`start=2026-02-30&end=${end}`, "INVALID_REQUEST"],
    [`end=${end}`, "INVALID_REQUEST"],
    [`start=${start}&end=${end}&brand_id=0`, "INVALID_REQUEST"],
    [`start=${start}&end=${end}&brand_id=abc`, "INVALID_REQUEST"],
    [`start=${start}&end=${end}&city=`, "INVALID_REQUEST"],
    [`start=${start}&end=${end}&known_at=yesterday`, "INVALID_REQUEST"],
  ];
  for (const [query, code] of cases) {
    const answer = await app.call("GET", `/api/v1/portfolio?${query}`, { key });
    assertErrorBody(answer, 400, code);
  }
  // 366 days is the longest range.
  await portfolio(`start=${addDays(end, -365)}&end=${end}`);
});

Deno.test("portfolio: 401 without a valid credential, 403 without the read permission", async () => {
  const path = `/api/v1/portfolio?start=${start}&end=${end}`;
  assertErrorBody(await app.call("GET", path), 401);
  assertErrorBody(await app.call("GET", path, { key: "esk_not_a_key" }), 401);
  const raw = await app.key(["raw"]);
  assertErrorBody(await app.call("GET", path, { key: raw.key }), 403, "PERMISSION_MISSING");
  const expired = await app.key(["read"], { seconds: -60 });
  assertErrorBody(await app.call("GET", path, { key: expired.key }), 401);
});

Deno.test("portfolio: a conditional read; a commit changes it; its data token reads it again", async () => {
  const writer = await app.key(["read", "write"]);
  const path = `/api/v1/portfolio?start=${start}&end=${end}`;
  const first = await app.call("GET", path, { key });
  const etag = first.headers.get("etag");
  const token = first.headers.get("data-token");
  assert.ok(etag !== null && token !== null);
  const again = await app.call("GET", path, { key, headers: { "if-none-match": etag } });
  assert.equal(again.status, 304);
  assert.equal(again.headers.get("etag"), etag);
  // Kept, then sent again while the data is unchanged.
  for (let i = 0; i < 2; i++) {
    const kept = await app.call("GET", path, { key });
    assert.deepEqual(kept.body, first.body);
    assert.equal(kept.headers.get("etag"), etag);
  }

  const store = snapshot.stores[0];
  const stores = (await app.call("GET", "/api/v1/stores", { key })).body.stores;
  const listed = stores.find((s: { id: number }) => s.id === store.id);
  const day = addDays(end, -3);
  await commitDay(app, writer.key, listed, day, "1234.5678");

  const after = await app.call("GET", path, { key, headers: { "if-none-match": etag } });
  assert.equal(after.status, 200);
  assert.notEqual(after.headers.get("etag"), etag);
  const row = (body: Portfolio) => body.stores.find((s) => s.store_id === store.id)!;
  const metrics = await get(
    `/api/v1/stores/${store.id}/metrics?scope_id=${store.scope.id}&start=${start}&end=${end}`,
  );
  assert.deepEqual(row(after.body).summary, metrics.summary);
  assert.notDeepEqual(row(after.body).summary, row(first.body).summary);

  // The first answer's token reads the data as it was then, rows and roll-ups alike.
  const then = await app.call("GET", `${path}&data_token=${encodeURIComponent(token)}`, { key });
  assert.equal(then.status, 200);
  assert.equal(then.headers.get("etag"), null);
  assert.deepEqual(then.body, first.body);
  assertErrorBody(
    await app.call(
      "GET",
      `${path}&data_token=${encodeURIComponent(token)}&known_at=${end}T00:00:00Z`,
      {
        key,
      },
    ),
    400,
    "INVALID_REQUEST",
  );
});

const caller = (storeIds: ReadonlyArray<number> | null): CallerShape => ({
  memberId: 1,
  keyId: 1,
  loginName: "test",
  displayName: null,
  dbRole: "READER",
  permissions: new Set(["read"]),
  storeIds,
  viaSession: false,
});

const request = { start, end, brandId: null, city: null };

Deno.test("portfolio: read a few stores per statement, the answer is the one of one statement", async () => {
  const run = (pageStores: number) =>
    app.db.run(
      Effect.flatMap(
        PortfolioService,
        (s) => s.portfolio(caller(null), request, { kind: "current" }, undefined, pageStores),
      ).pipe(Effect.provide(PortfolioService.Default), Effect.provide(AppConfig.make({}))),
    );
  const whole = await run(1_000_000);
  for (const pageStores of [1, 5, 11, 12]) {
    const paged = await run(pageStores);
    assert.deepEqual(paged.value, whole.value, `${pageStores} per page`);
    assert.equal(paged.version, whole.version);
  }
});

Deno.test("portfolio: a commit between two pages starts the read again", async () => {
  let pages = 0;
  // The second page of the first pass to be read says it saw another commit.
  const counting = Layer.effect(
    PortfolioRepo,
    Effect.map(PortfolioRepo, (real) =>
      PortfolioRepo.make({
        ...real,
        page: (q, after, limit, seq) =>
          Effect.map(real.page(q, after, limit, seq), (rows) =>
            ++pages === 2 ? rows.map((r) => ({ ...r, version: `${r.version}.later` })) : rows),
      })),
  ).pipe(Layer.provide(PortfolioRepo.Default));
  const run = app.db.run(
    Effect.flatMap(
      PortfolioService,
      (s) => s.portfolio(caller(null), request, { kind: "current" }, undefined, 5),
    ).pipe(
      Effect.provide(
        PortfolioService.DefaultWithoutDependencies.pipe(
          Layer.provide(Layer.mergeAll(counting, AsOfRepo.Default, DataSeal.Default)),
        ),
      ),
      Effect.provide(AppConfig.make({})),
    ),
  );
  const answer = await run;
  // Three pages of 12 stores in the second pass, after the first pass read two or three of its
  // pages (they are read ahead of the one computed, and it stopped at the changed one).
  assert.ok(pages === 5 || pages === 6, `${pages} pages read`);
  const whole = await portfolio(`start=${start}&end=${end}`);
  assert.deepEqual(JSON.parse(JSON.stringify(answer.value)), whole);
});

Deno.test("portfolio: the last days the calendar has are read like any others", async () => {
  assert.deepEqual(datesOf("9999-12-30", "9999-12-31"), ["9999-12-30", "9999-12-31"]);
  assert.deepEqual(datesOf("0001-01-01", "0001-01-02"), ["0001-01-01", "0001-01-02"]);
  for (const query of ["start=9999-12-31&end=9999-12-31", "start=9999-01-01&end=9999-12-31"]) {
    for (const format of ["", "&format=csv"]) {
      const answer = await app.call("GET", `/api/v1/portfolio?${query}${format}`, { key });
      assert.ok(answer.status < 500, `${query}${format}: ${answer.status}`);
    }
  }
});

Deno.test("portfolio: the ETag names no commit number, and a held one is still answered 304", async () => {
  const [{ seq }] = await sql("SELECT seq::text AS seq FROM commit_clock") as Array<
    { seq: string }
  >;
  const first = await app.call("GET", `/api/v1/portfolio?start=${start}&end=${end}`, { key });
  const etag = first.headers.get("etag") ?? "";
  assert.match(etag, /^"pf\./);
  assert.ok(!etag.includes(`.${seq}.`) && !etag.includes(`.${seq}"`), etag);
  const again = await app.call("GET", `/api/v1/portfolio?start=${start}&end=${end}`, {
    key,
    headers: { "if-none-match": etag },
  });
  assert.equal(again.status, 304);
});

Deno.test("portfolio and metrics: a voided provisional day is void, not provisional", async () => {
  const writer = await app.key(["read", "write"]);
  const store = snapshot.stores[1];
  const listed = (await app.call("GET", "/api/v1/stores", { key })).body.stores
    .find((s: { id: number }) => s.id === store.id);
  const metricsPath = `/api/v1/stores/${store.id}/metrics?scope_id=${store.scope.id}` +
    `&start=${end}&end=${end}`;
  const rowOf = async () =>
    (await portfolio(`start=${end}&end=${end}`)).stores.find((s) => s.store_id === store.id)!;
  const before = assertSchema(MetricsResponse, await get(metricsPath));
  assert.equal(before.days[0].provisional, 1, "the dataset's last day is provisional");
  assert.equal((await rowOf()).provisional_days, 1);

  await commitDay(app, writer.key, listed, end, "VOID");
  const after = assertSchema(MetricsResponse, await get(metricsPath));
  assert.equal(after.days[0].actual_kwh, null);
  assert.equal(after.days[0].provisional, 0);
  assert.equal(after.days[0].provisional_at, null);
  assert.ok(
    after.availability.every((a) => !a.reasons.includes("PROVISIONAL_EXCLUDED")),
    JSON.stringify(after.availability),
  );
  assert.equal((await rowOf()).provisional_days, 0);
});

Deno.test({
  name: "portfolio: close",
  sanitizeOps: false,
  sanitizeResources: false,
  fn: () => app.close(),
});
