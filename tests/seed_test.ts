// Snapshot generator, validation, loader (counts, lineage, revision invariants, atomicity) and the seed CLI.
import assert from "node:assert/strict";
import { SqlClient } from "@effect/sql";
import { Decimal } from "decimal.js";
import { Effect, Either } from "effect";
import pg from "pg";
import { DEMO_END, DEMO_OBSERVED_AT, generateSnapshot } from "../src/seed/generate.ts";
import { loadSnapshot } from "../src/seed/load.ts";
import { holdDataDir } from "../src/db/database.ts";
import { addDays, dayIndex } from "../src/domain/range.ts";
import { type Snapshot, validateSnapshot } from "../src/seed/snapshot.ts";
import { databaseKind, makeTestDatabase, type TestDatabase } from "./db.ts";

type Mutable<T> = { -readonly [K in keyof T]: Mutable<T[K]> };
const clone = (s: Snapshot) => structuredClone(s) as Mutable<Snapshot>;

const problemsOf = (input: unknown): ReadonlyArray<string> => {
  const result = validateSnapshot(input);
  assert.ok(Either.isLeft(result), "expected the snapshot to be rejected");
  return result.left.problems;
};

const assertProblem = (input: unknown, ...fragments: Array<string>) => {
  const problems = problemsOf(input);
  assert.ok(
    problems.some((p) => fragments.every((f) => p.includes(f))),
    `no problem mentions ${JSON.stringify(fragments)}; got ${JSON.stringify(problems)}`,
  );
};

// What the loader must produce, recomputed from the snapshot independently of the loader's SQL.
const expectedDays = (s: Snapshot) => {
  const days = new Map<
    string,
    { legacy: string | null; cleaned: string | null; isVoid: boolean; provisional: boolean }
  >();
  const at = (scope: number, date: string) => {
    const key = `${scope}/${date}`;
    const day = days.get(key) ??
      { legacy: null, cleaned: null, isVoid: false, provisional: false };
    days.set(key, day);
    return day;
  };
  for (const e of s.energy) {
    e.legacy.forEach((v, k) => {
      if (v !== null) at(e.scope_id, addDays(e.start, k)).legacy = v;
    });
    for (const c of e.cleaned) at(e.scope_id, c.date).cleaned = c.kwh;
    for (const v of e.void_days) at(e.scope_id, v).isVoid = true;
    if (e.provisional) at(e.scope_id, e.provisional.date).provisional = true;
  }
  return days;
};

const expectedActions = (s: Snapshot) => {
  const counts = { INSERT: 0, UPDATE: 0, RELINK: 0, VOID: 0, legacy: 0 };
  for (const day of expectedDays(s).values()) {
    if (day.legacy !== null) counts.legacy++;
    if (day.isVoid) counts.VOID++;
    else if (day.cleaned !== null) {
      if (day.legacy === null) counts.INSERT++;
      else if (new Decimal(day.cleaned).eq(day.legacy)) counts.RELINK++;
      else counts.UPDATE++;
    }
  }
  return counts;
};

Deno.test("the generator is deterministic, realistic and its output validates", () => {
  const a = generateSnapshot({ stores: 60 });
  const b = generateSnapshot({ stores: 60 });
  assert.equal(JSON.stringify(a), JSON.stringify(b));
  assert.notEqual(
    JSON.stringify(generateSnapshot({ stores: 60, seed: 7 }).energy),
    JSON.stringify(a.energy),
  );
  assert.ok(Either.isRight(validateSnapshot(a)), "the 60-store demo validates");
  assert.deepEqual(generateSnapshot({ stores: 6 }).stores, a.stores.slice(0, 6));

  assert.deepEqual(a.dataset, {
    label: "Demo chain snapshot 2026-11",
    start: "2025-01-01",
    end: "2026-11-20",
    source_policy: "CLEANED_THEN_LEGACY_THEN_NULL",
    timezone: "Asia/Shanghai",
    unit: "kWh",
  });
  assert.ok(a.brands.length >= 3);
  assert.ok(new Set(a.stores.map((s) => s.city)).size >= 4, "several cities");
  for (const brand of a.brands) {
    const names = a.stores.filter((s) => s.brand_id === brand.id).map((s) => s.name);
    assert.equal(new Set(names).size, names.length, `names unique within ${brand.name}`);
  }
  assert.ok(
    a.stores.every((s) => s.key_store_status === (s.is_key_store ? "MARKED" : "UNCONFIRMED")),
  );
  assert.ok(a.stores.some((s) => s.key_store_status === "MARKED"));
  assert.ok(a.stores.some((s) => s.business_hours?.some((h) => h.next_day)));

  const legacy = a.energy.flatMap((e) => e.legacy);
  assert.ok(legacy.every((v) => v === null || /^\d+\.\d{4}$/.test(v)));
  assert.ok(legacy.includes(null) && legacy.includes("0.0000"));
  const hasMultiDayGap = a.energy.some((e) =>
    e.legacy.some((v, k) => v === null && e.legacy[k + 1] === null)
  );
  assert.ok(hasMultiDayGap, "some gap spans several days");
  // Summer peak: July averages well above March across the chain.
  const monthMean = (month: string) => {
    let sum = new Decimal(0);
    let n = 0;
    for (const e of a.energy) {
      e.legacy.forEach((v, k) => {
        if (v !== null && addDays(e.start, k).startsWith(month)) {
          sum = sum.plus(v);
          n++;
        }
      });
    }
    return sum.div(n);
  };
  assert.ok(monthMean("2025-07").gt(monthMean("2025-03").times(2)));

  const expected = expectedActions(a);
  assert.ok(expected.RELINK > 0 && expected.UPDATE > 0 && expected.INSERT > 0);
  assert.ok(a.energy.some((e) => e.void_days.length > 0));
  const withEndData = a.energy.filter((e) =>
    dayIndex(e.start) + e.legacy.length - 1 === dayIndex(DEMO_END) && e.legacy.at(-1) !== null
  );
  assert.ok(withEndData.length > 0);
  for (const e of withEndData) {
    assert.deepEqual(e.provisional, { date: DEMO_END, observed_at: DEMO_OBSERVED_AT });
  }

  const storesWithStages = new Set(a.stage_history.map((h) => h.store_id));
  assert.ok(storesWithStages.size < a.stores.length, "some stores have no stage history");
  const stages = new Set<string>(a.stage_history.map((h) => h.stage));
  for (const code of ["BASELINE", "INSTALLING", "TRIAL", "OPERATING", "SUSPENDED", "EXITED"]) {
    assert.ok(stages.has(code), `stage ${code} occurs`);
  }
  assert.ok(a.stage_history.some((h) => h.valid_to === null));

  const storesWithPeriods = new Set(a.target_periods.map((p) => p.store_id));
  assert.ok(storesWithPeriods.size < a.stores.length, "some stores have no target");
  assert.ok(a.target_periods.some((p) => p.valid_to === null));
  assert.ok(a.target_periods.some((p) => p.tev_warning_ratio !== "1.2"));
  for (const p of a.target_periods) {
    assert.ok(p.items.length >= 1 && p.items.length <= 4);
    if (p.tes_kwh === null) continue;
    const cost = p.items.reduce(
      (sum, i) => sum.plus(new Decimal(i.unit_price).times(i.priced_quantity)),
      new Decimal(0),
    );
    assert.ok(
      !new Decimal(p.tes_kwh).eq(cost.div(180).toDecimalPlaces(4)),
      "tes_kwh is not TES-180",
    );
    assert.ok(
      !new Decimal(p.tes_kwh).eq(cost.div(210).toDecimalPlaces(4)),
      "tes_kwh is not TES-210",
    );
  }
  const lastValid = new Map<number, number>();
  for (const o of a.tev_observations) {
    if (o.is_valid && o.value_kwh !== null && new Decimal(o.value_kwh).gt(0)) {
      lastValid.set(
        o.store_id,
        Math.max(lastValid.get(o.store_id) ?? 0, dayIndex(o.observed_date)),
      );
    }
  }
  assert.ok([...lastValid.values()].some((d) => dayIndex(DEMO_END) - d > 180), "a stale TEV");
  assert.ok(
    a.tev_observations.some((o) => o.value_kwh !== null && new Decimal(o.value_kwh).lte(0)),
  );
  assert.ok(a.tev_observations.some((o) => !o.is_valid));
  assert.ok(a.devices.some((d) => d.device_name === null));
  assert.ok(a.devices.some((d) => d.material_code === null));
  assert.deepEqual(
    new Set(a.devices.map((d) => d.online_status)),
    new Set(["ONLINE", "OFFLINE", "UNKNOWN"]),
  );
  assert.ok(a.device_events.length > 0 && a.strategy_items.length > 0);
  assert.ok(a.target_candidates.length > 0);
});

Deno.test("2000 stores generate quickly", () => {
  const started = performance.now();
  const s = generateSnapshot({ stores: 2000 });
  assert.equal(s.stores.length, 2000);
  assert.ok(performance.now() - started < 15_000);
});

Deno.test("validation names the path and the problem", () => {
  const base = generateSnapshot({ stores: 4 });

  const badDecimal = clone(base);
  badDecimal.energy[1].legacy[3] = "1.23456";
  assertProblem(badDecimal, "energy[1].legacy[3]");
  const negative = clone(base);
  negative.target_periods[0].items[0].unit_price = "-5";
  assertProblem(negative, "target_periods[0].items[0].unit_price");
  const numeric = clone(base) as unknown as { energy: Array<{ legacy: Array<unknown> }> };
  numeric.energy[0].legacy[0] = 12.5;
  assertProblem(numeric, "energy[0].legacy[0]");

  const unknownBrand = clone(base);
  unknownBrand.stores[3].brand_id = 9;
  assertProblem(unknownBrand, "stores[3].brand_id: unknown brand 9");

  // key_store_status is derived from is_key_store (rules.md §8): both disagreements are invalid.
  const unconfirmedKey = clone(base);
  unconfirmedKey.stores[1].is_key_store = true;
  unconfirmedKey.stores[1].key_store_status = "UNCONFIRMED";
  assertProblem(unconfirmedKey, "stores[1].key_store_status", "must be MARKED");
  const markedPlain = clone(base);
  markedPlain.stores[1].is_key_store = false;
  markedPlain.stores[1].key_store_status = "MARKED";
  assertProblem(markedPlain, "stores[1].key_store_status", "must be UNCONFIRMED");

  const duplicate = clone(base);
  duplicate.stores[2].id = duplicate.stores[0].id;
  assertProblem(duplicate, "stores[2].id", `duplicate store id ${base.stores[0].id}`);

  const outside = clone(base);
  outside.energy[0].cleaned.push({ date: "2027-01-05", kwh: "1.0000" });
  assertProblem(outside, `energy[0].cleaned[${base.energy[0].cleaned.length}].date`, "2027-01-05");
  const tooLong = clone(base);
  tooLong.energy[0].legacy.push("1.0000");
  assertProblem(tooLong, "energy[0].legacy", "past the dataset end");

  const device = clone(base);
  device.devices[0].device_name = "x".repeat(51);
  device.devices[1].material_code = "M".repeat(17);
  assertProblem(device, "devices[0].device_name");
  assertProblem(device, "devices[1].material_code");

  const stage = clone(base);
  (stage.stage_history[0] as { stage: string }).stage = "PAUSED";
  assertProblem(stage, "stage_history[0].stage: expected one of BASELINE", '"PAUSED"');
  const stageDates = clone(base);
  stageDates.stage_history[1].valid_to = stageDates.stage_history[1].valid_from;
  assertProblem(stageDates, "stage_history[1].valid_to", "after valid_from");
  const overlap = clone(base);
  overlap.stage_history[1].valid_from = addDays(overlap.stage_history[0].valid_from, 1);
  assertProblem(overlap, "stage_history[1]", "overlaps stage_history[0]");

  const orphanDevice = clone(base);
  orphanDevice.device_events.push({ ...orphanDevice.device_events[0], id: 99_999, device_id: 777 });
  assertProblem(orphanDevice, "device_events", "unknown device 777");

  const wrongScope = clone(base);
  wrongScope.energy[0].scope_id = base.stores[1].scope.id;
  assertProblem(wrongScope, "energy[0].scope_id", `belongs to store ${base.stores[1].id}`);

  const voidAndCleaned = clone(base);
  const withCleaned = voidAndCleaned.energy.findIndex((e) => e.cleaned.length > 0);
  if (withCleaned >= 0) {
    voidAndCleaned.energy[withCleaned].void_days.push(
      voidAndCleaned.energy[withCleaned].cleaned[0].date,
    );
    assertProblem(voidAndCleaned, `energy[${withCleaned}].void_days`, "also has a cleaned value");
  }

  const extra = clone(base) as unknown as Record<string, unknown>;
  extra.surprise = true;
  assertProblem(extra, "surprise");
});

Deno.test("validation refuses what the database would refuse or read otherwise", () => {
  const base = generateSnapshot({ stores: 4 });
  const refused = (change: (s: Mutable<Snapshot>) => void, ...fragments: Array<string>) => {
    const s = clone(base);
    change(s);
    assertProblem(s, ...fragments);
  };
  // Time zones PostgreSQL does not know, or reads with the other sign than Intl.
  refused((s) => (s.stores[0].scope.timezone = "Mars/Base"), "stores[0].scope.timezone");
  refused((s) => (s.stores[0].scope.timezone = "+08:00"), "stores[0].scope.timezone");
  refused((s) => (s.dataset.timezone = "Mars/Base"), "dataset.timezone");
  // Instants PostgreSQL refuses, or that Date.parse rolls over to another day.
  for (const at of ["2026-02-30T00:00:00Z", "2026-11-20T02:00:00+23:59", "0000-01-01T00:00:00Z"]) {
    refused((s) => (s.strategies[0].synced_at = at), "strategies[0].synced_at");
  }
  // Integers past PostgreSQL's integer.
  refused((s) => (s.strategy_items[0].position = 3_000_000_000), "strategy_items[0].position");
  refused((s) => (s.strategies[0].configured_count = 3_000_000_000), "configured_count");
  // A NUL character anywhere, a field of free form included.
  refused((s) => (s.stores[1].city = "a\u0000b"), "stores[1].city", "NUL");
  refused(
    (s) => (s.stores[1].equipment_profile = { note: "x\u0000" }),
    "stores[1].equipment_profile.note",
    "NUL",
  );
  // A name the import could never match: whitespace at an end, or a line break.
  refused((s) => (s.stores[2].name = `${s.stores[2].name} `), "stores[2].name");
  refused((s) => (s.brands[0].name = `品牌\n二`), "brands[0].name");
  refused((s) => (s.stores[2].address = "一行\n两行"), "stores[2].address");
  // Two valid observations of one store's TEV on one day.
  refused((s) => {
    const first = s.tev_observations.find((o) => o.is_valid && o.value_kwh !== null)!;
    s.tev_observations.push({ ...first, value_kwh: "1.0000" });
  }, "a second valid observation");
  // An intraday value read on another day in the store's zone (the UTC date of 00:30 Beijing time).
  refused(
    (s) => {
      const e = s.energy.find((x) => x.provisional)!;
      const day = e.provisional!.date;
      e.provisional = { date: day, observed_at: `${day}T16:30:00Z` };
    },
    ".provisional.observed_at",
    "not on the provisional day",
  );
  // A dataset that serves its cleaned sample alone, holding a legacy value the service would serve.
  refused(
    (s) => {
      s.dataset.source_policy = "CLEANED_SAMPLE";
      s.energy[1].legacy = s.energy[1].legacy.map((v, i) => (i === 5 ? v ?? "1.0000" : null));
    },
    "energy[1].legacy[5]",
    "CLEANED_SAMPLE",
  );
  const sample = clone(base);
  sample.dataset.source_policy = "CLEANED_SAMPLE";
  for (const e of sample.energy) {
    e.legacy = e.legacy.map(() => null);
    e.provisional = null;
  }
  assert.ok(Either.isRight(validateSnapshot(sample)), JSON.stringify(validateSnapshot(sample)));
  // Still accepted: seconds left out, an offset, Etc zones.
  const fine = clone(base);
  fine.strategies[0].synced_at = "2026-11-20T10:00+08:00";
  fine.stores[0].scope.timezone = "Etc/GMT-8";
  assert.ok(Either.isRight(validateSnapshot(fine)), JSON.stringify(validateSnapshot(fine)));
});

const DATA_TABLES = [
  "dataset",
  "brands",
  "stores",
  "scopes",
  "stage_history",
  "stage_snapshots",
  "devices",
  "device_events",
  "strategies",
  "strategy_items",
  "target_periods",
  "target_period_items",
  "tev_observations",
  "target_candidates",
  "import_batches",
  "source_files",
  "source_records",
  "import_rows",
  "import_row_sources",
  "energy_days",
  "energy_revisions",
  "members",
  "access_keys",
];

Deno.test({
  name: `loading snapshots into ${databaseKind}`,
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async (t) => {
    const db: TestDatabase = await makeTestDatabase();
    const query = <A extends object>(text: string, params: ReadonlyArray<unknown> = []) =>
      db.run(Effect.flatMap(SqlClient.SqlClient, (sql) => sql.unsafe<A>(text, params)));
    const one = async <A extends object>(text: string) => (await query<A>(text))[0];
    const attempt = (input: unknown, reset: boolean) =>
      db.run(Effect.either(loadSnapshot(input, { reset })));

    // Row counts, content digests, the foreign keys and the triggers (enabled or not): "nothing
    // changed" means all of these agree.
    const fingerprint = async () => {
      const counts = await one<Record<string, number>>(
        `SELECT ${DATA_TABLES.map((t) => `(SELECT count(*) FROM ${t})::int AS ${t}`).join(", ")}`,
      );
      const digests = await one<Record<string, string>>(
        `SELECT
           (SELECT md5(coalesce(string_agg(concat_ws('|', id, scope_id, business_date, legacy_kwh,
              cleaned_kwh, is_void, provisional, revision_no, import_row_id), ',' ORDER BY id), ''))
            FROM energy_days) AS energy,
           (SELECT md5(coalesce(string_agg(concat_ws('|', id, name, store_code, address), ','
              ORDER BY id), '')) FROM stores) AS stores,
           (SELECT md5(coalesce(string_agg(batch_no, ',' ORDER BY id), '')) FROM import_batches)
             AS batches,
           (SELECT string_agg(conname::text, ',' ORDER BY conname) FROM pg_constraint
            WHERE contype = 'f') AS foreign_keys,
           (SELECT string_agg(tgname || ':' || tgenabled::text, ',' ORDER BY tgname) FROM pg_trigger
            WHERE NOT tgisinternal) AS triggers`,
      );
      return { counts, digests };
    };

    try {
      const empty = await fingerprint();
      const small = generateSnapshot({ stores: 6 });

      await t.step("a 6-store snapshot loads with the expected counts", async () => {
        const result = await attempt(small, false);
        assert.ok(Either.isRight(result), String(Either.isLeft(result) && result.left.message));
        // Settled after the load: every page of the day tables is marked visible to all (a first
        // read need not write it) and the planner has statistics.
        const settled = await query<{ relname: string; pages: number; visible: number }>(
          `SELECT relname::text, relpages AS pages, relallvisible AS visible FROM pg_class
           WHERE relname IN ('energy_days', 'energy_revisions', 'import_rows', 'energy_months')`,
        );
        assert.equal(settled.length, 4);
        for (const table of settled) {
          assert.ok(table.pages > 0, `${table.relname}: statistics`);
          assert.equal(table.visible, table.pages, `${table.relname}: all visible`);
        }
        const days = expectedDays(small);
        const actions = expectedActions(small);
        const rows = actions.legacy + actions.INSERT + actions.UPDATE + actions.RELINK +
          actions.VOID;
        const { counts, digests } = await fingerprint();
        assert.equal(counts.stores, 6);
        assert.equal(counts.scopes, 6);
        assert.equal(counts.brands, small.brands.length);
        assert.equal(counts.dataset, 1);
        assert.equal(counts.devices, small.devices.length);
        assert.equal(counts.device_events, small.device_events.length);
        assert.equal(counts.stage_history, small.stage_history.length);
        assert.equal(counts.target_periods, small.target_periods.length);
        assert.equal(
          counts.target_period_items,
          small.target_periods.reduce((n, p) => n + p.items.length, 0),
        );
        assert.equal(counts.tev_observations, small.tev_observations.length);
        assert.equal(counts.strategy_items, small.strategy_items.length);
        assert.equal(counts.import_batches, 2);
        assert.equal(counts.source_files, 2);
        assert.equal(counts.energy_days, days.size);
        assert.equal(counts.import_rows, rows);
        assert.equal(counts.source_records, rows);
        assert.equal(counts.import_row_sources, rows);
        assert.equal(counts.energy_revisions, rows);
        assert.equal(digests.foreign_keys, empty.digests.foreign_keys, "foreign keys are all back");
        assert.equal(digests.triggers, empty.digests.triggers, "reference checks are all back on");
        assert.equal(result.right.energy_days, days.size);
        assert.equal(result.right.energy_revisions, rows);

        const byAction = await query<{ action: string; source_kind: string; n: number }>(
          `SELECT action, source_kind, count(*)::int AS n FROM import_rows GROUP BY 1, 2`,
        );
        const n = (action: string, kind: string) =>
          byAction.find((r) => r.action === action && r.source_kind === kind)?.n ?? 0;
        assert.equal(n("INSERT", "LEGACY_DIRECT"), actions.legacy);
        assert.equal(n("INSERT", "CLEANED"), actions.INSERT);
        assert.equal(n("UPDATE", "CLEANED"), actions.UPDATE);
        assert.equal(n("RELINK", "CLEANED"), actions.RELINK);
        assert.equal(n("VOID", "CLEANED"), actions.VOID);
        assert.ok(actions.RELINK > 0 && actions.UPDATE > 0 && actions.VOID > 0);
      });

      await t.step("effective values follow the cleaned-then-legacy policy", async () => {
        const rows = await query<{
          scope_id: number;
          business_date: string;
          effective: string | null;
          is_void: boolean;
          provisional: number;
          provisional_at: string | null;
          after_kwh: string | null;
          after_is_void: boolean;
        }>(
          `SELECT d.scope_id, d.business_date::text AS business_date,
                  CASE WHEN d.is_void THEN NULL ELSE COALESCE(d.cleaned_kwh, d.legacy_kwh)::text END
                    AS effective,
                  d.is_void, d.provisional::int AS provisional,
                  to_char(d.provisional_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')
                    AS provisional_at,
                  r.after_kwh::text AS after_kwh, r.after_is_void
           FROM energy_days d
           JOIN energy_revisions r ON r.energy_id = d.id AND r.revision_no = d.revision_no`,
        );
        const expected = expectedDays(small);
        assert.equal(rows.length, expected.size, "gap days have no row");
        let zeros = 0;
        for (const row of rows) {
          const key = `${row.scope_id}/${row.business_date}`;
          const want = expected.get(key);
          assert.ok(want, `unexpected row ${key}`);
          const effective = want.isVoid ? null : want.cleaned ?? want.legacy;
          assert.equal(row.effective, effective, key);
          assert.equal(row.is_void, want.isVoid, key);
          assert.equal(row.after_kwh, effective, `latest revision of ${key}`);
          assert.equal(row.after_is_void, want.isVoid, key);
          assert.equal(row.provisional, want.provisional ? 1 : 0, key);
          if (effective === "0.0000") zeros++;
        }
        assert.ok(zeros > 0, "real zeros are kept as 0.0000");
        assert.ok(rows.some((r) => r.is_void), "void days have rows");

        const provisional = rows.filter((r) => r.provisional === 1);
        const scopesWithEndData = new Set(
          rows.filter((r) => r.business_date === DEMO_END && r.effective !== null).map((r) =>
            r.scope_id
          ),
        );
        assert.ok(scopesWithEndData.size > 0);
        assert.equal(provisional.length, scopesWithEndData.size, "one provisional day per scope");
        for (const r of provisional) {
          assert.equal(r.business_date, DEMO_END);
          assert.equal(r.provisional_at, DEMO_OBSERVED_AT);
          assert.ok(scopesWithEndData.has(r.scope_id));
        }
      });

      await t.step("revisions, import rows and sealed sources are consistent", async () => {
        const violations = await one<Record<string, number>>(
          `SELECT
             (SELECT count(*) FROM energy_days d
              WHERE d.revision_no <> (SELECT count(*) FROM energy_revisions r WHERE r.energy_id = d.id)
                 OR d.revision_no <> (SELECT max(revision_no) FROM energy_revisions r
                                      WHERE r.energy_id = d.id))::int AS revision_count,
             (SELECT count(*) FROM energy_days d
              WHERE d.import_row_id <> (SELECT r.import_row_id FROM energy_revisions r
                                        WHERE r.energy_id = d.id AND r.revision_no = d.revision_no)
             )::int AS latest_row,
             (SELECT count(*) FROM energy_revisions r
              JOIN import_rows i ON i.id = r.import_row_id
              JOIN import_batches b ON b.id = i.batch_id
              WHERE b.batch_kind NOT IN ('PLATFORM_LEGACY', 'PLATFORM_CLEANED')
                 OR b.status <> 'COMMITTED' OR b.filename IS NOT NULL OR b.committed_at IS NULL
                 OR i.lineage_status <> 'SEALED_SOURCE'
                 OR i.business_date <> (SELECT business_date FROM energy_days WHERE id = r.energy_id)
                 OR NOT EXISTS (SELECT 1 FROM import_row_sources s WHERE s.import_row_id = i.id)
             )::int AS revision_lineage,
             (SELECT count(*) FROM energy_revisions
              WHERE (revision_no = 1) <> (before_kwh IS NULL AND before_is_void IS NULL)
                 OR member_id IS NOT NULL)::int AS revision_before,
             (SELECT count(*) FROM import_rows i
              JOIN import_batches b ON b.id = i.batch_id
              WHERE (b.batch_kind = 'PLATFORM_LEGACY')
                    <> (i.source_kind = 'LEGACY_DIRECT' AND i.action = 'INSERT'))::int AS row_kind,
             (SELECT count(*) FROM import_row_sources irs
              JOIN import_rows i ON i.id = irs.import_row_id
              JOIN source_records s ON s.id = irs.source_record_id
              JOIN source_files f ON f.id = s.source_file_id
              JOIN import_batches b ON b.id = i.batch_id
              WHERE b.source_file_id <> f.id OR s.file_sha256 <> f.sha256
                 OR s.record->>'business_date' <> i.business_date::text)::int AS record_link,
             (SELECT count(*) FROM source_files
              WHERE sha256 !~ '^[0-9a-f]{64}$' OR byte_size <= 0 OR filename IS NOT NULL
                 OR content IS NOT NULL)::int AS files,
             (SELECT count(*) FROM (
                SELECT batch_id, min(row_number) AS lo, max(row_number) AS hi, count(*) AS n,
                       count(DISTINCT row_number) AS distinct_n
                FROM import_rows GROUP BY batch_id) x
              WHERE lo <> 1 OR hi <> n OR distinct_n <> n)::int AS row_numbers,
             (SELECT count(*) FROM energy_days d
              WHERE (d.source_reference->>'record_id')::int NOT IN (
                SELECT source_record_id FROM import_row_sources WHERE import_row_id = d.import_row_id)
             )::int AS day_reference`,
        );
        for (const [name, count] of Object.entries(violations)) {
          assert.equal(count, 0, `${name}: ${count} violating rows`);
        }
        const before = await query<{ operation: string; before_kwh: string | null }>(
          `SELECT r.operation, r.before_kwh::text AS before_kwh FROM energy_revisions r
           JOIN energy_days d ON d.id = r.energy_id
           WHERE r.revision_no = 2 AND r.before_kwh IS DISTINCT FROM d.legacy_kwh`,
        );
        assert.deepEqual(before, [], "a cleaned revision starts from the legacy value");
      });

      await t.step(
        "JSON nulls load as SQL NULL and identities continue after the load",
        async () => {
          const nulls = await one<{ hours: number; profile: number }>(
            `SELECT count(*) FILTER (WHERE business_hours IS NULL)::int AS hours,
                  count(*) FILTER (WHERE equipment_profile IS NULL)::int AS profile FROM stores`,
          );
          assert.equal(nulls.hours, small.stores.filter((s) => s.business_hours === null).length);
          assert.equal(
            nulls.profile,
            small.stores.filter((s) => s.equipment_profile === null).length,
          );
          const next = await one<{ fresh: boolean }>(
            `SELECT nextval(pg_get_serial_sequence('import_rows', 'id')::regclass)
                    > (SELECT max(id) FROM import_rows)
              AND nextval(pg_get_serial_sequence('energy_days', 'id')::regclass)
                    > (SELECT max(id) FROM energy_days)
              AND nextval(pg_get_serial_sequence('source_records', 'id')::regclass)
                    > (SELECT max(id) FROM source_records) AS fresh`,
          );
          assert.equal(next.fresh, true);
        },
      );

      const loaded = await fingerprint();

      await t.step("loading again without reset fails and changes nothing", async () => {
        const result = await attempt(generateSnapshot({ stores: 3, seed: 99 }), false);
        assert.ok(Either.isLeft(result));
        assert.equal(result.left._tag, "SnapshotAlreadyLoaded");
        assert.match(result.left.message, /already holds a snapshot; use --reset/);
        assert.deepEqual(await fingerprint(), loaded);
      });

      await t.step(
        "an invalid snapshot is rejected and nothing changes, even with reset",
        async () => {
          const cases: Array<[string, (s: Mutable<Snapshot>) => void, string]> = [
            ["bad decimal", (s) => (s.energy[2].legacy[10] = "12.34567"), "energy[2].legacy[10]"],
            [
              "unknown brand",
              (s) => (s.stores[1].brand_id = 42),
              "stores[1].brand_id: unknown brand 42",
            ],
            ["duplicate store id", (s) => (s.stores[4].id = s.stores[0].id), "duplicate store id"],
            [
              "date outside the dataset",
              (s) => (s.tev_observations[0].observed_date = "2024-12-31"),
              "tev_observations[0].observed_date: date 2024-12-31 outside the dataset",
            ],
          ];
          for (const [label, mutate, fragment] of cases) {
            const bad = clone(generateSnapshot({ stores: 5, seed: 3 }));
            mutate(bad);
            const result = await attempt(bad, true);
            assert.ok(Either.isLeft(result), label);
            assert.equal(result.left._tag, "SnapshotInvalid", label);
            assert.ok(result.left.message.includes(fragment), `${label}: ${result.left.message}`);
            assert.deepEqual(await fingerprint(), loaded, `${label} changed the database`);
          }
        },
      );

      await t.step("a failure inside the load rolls everything back, reset included", async () => {
        await query(
          `CREATE FUNCTION seed_test_fail() RETURNS trigger LANGUAGE plpgsql AS $$
           BEGIN RAISE EXCEPTION 'injected failure'; END; $$`,
        );
        await query(
          `CREATE TRIGGER seed_test_fail BEFORE INSERT ON energy_revisions
           FOR EACH STATEMENT EXECUTE FUNCTION seed_test_fail()`,
        );
        try {
          const result = await attempt(generateSnapshot({ stores: 3, seed: 5 }), true);
          assert.ok(Either.isLeft(result));
          assert.equal(result.left._tag, "SqlError");
        } finally {
          await query(`DROP TRIGGER seed_test_fail ON energy_revisions`);
          await query(`DROP FUNCTION seed_test_fail()`);
        }
        assert.deepEqual(await fingerprint(), loaded);
      });

      await t.step("reset is refused while committed uploads exist, unless told", async () => {
        await query(
          `INSERT INTO import_batches (batch_no, batch_kind, status, change_reason, action_counts)
           VALUES ('UP-SEED-TEST', 'UPLOAD', 'COMMITTED', 'a clerk''s correction', '{}')`,
        );
        const held = await fingerprint();
        const refused = await attempt(generateSnapshot({ stores: 4, seed: 11 }), true);
        assert.ok(Either.isLeft(refused));
        assert.equal(refused.left._tag, "SnapshotHoldsUploads");
        assert.match(refused.left.message, /1 committed upload, .* use --discard-uploads/);
        assert.deepEqual(await fingerprint(), held);
      });

      await t.step("reset replaces the snapshot and keeps members and keys", async () => {
        await query(
          `INSERT INTO members (login_name, db_role) VALUES ('seed-test', 'WRITER')`,
        );
        await query(
          `INSERT INTO access_keys (member_id, key_hash, key_prefix, permissions)
           SELECT id, 'hash-seed-test', 'pfx', ARRAY['read'] FROM members WHERE login_name = 'seed-test'`,
        );
        const before = await one<{ energy: number; rows: number; batches: number }>(
          `SELECT (SELECT max(id) FROM energy_days)::int AS energy,
                  (SELECT max(id) FROM import_rows)::int AS rows,
                  (SELECT max(id) FROM import_batches)::int AS batches`,
        );
        const other = generateSnapshot({ stores: 4, seed: 11 });
        const result = await db.run(
          Effect.either(loadSnapshot(other, { reset: true, discardUploads: true })),
        );
        assert.ok(Either.isRight(result), String(Either.isLeft(result) && result.left.message));
        const { counts: after, digests: afterDigests } = await fingerprint();
        assert.equal(after.stores, 4);
        assert.equal(after.energy_days, expectedDays(other).size);
        assert.equal(after.import_batches, 2);
        assert.equal(after.members, loaded.counts.members + 1);
        assert.equal(after.access_keys, loaded.counts.access_keys + 1);
        assert.notEqual(afterDigests.energy, loaded.digests.energy);
        const ids = await one<{ energy: number; rows: number; batches: number }>(
          `SELECT (SELECT min(id) FROM energy_days)::int AS energy,
                  (SELECT min(id) FROM import_rows)::int AS rows,
                  (SELECT min(id) FROM import_batches)::int AS batches`,
        );
        // Identities go on: no id or batch number handed out before names another row after.
        assert.ok(ids.energy > before.energy, "energy_days ids continue");
        assert.ok(ids.rows > before.rows, "import_rows ids continue");
        assert.ok(ids.batches > before.batches, "import_batches ids continue");
      });
    } finally {
      await db.close();
    }
  },
});

const runSeed = async (args: Array<string>, env: Record<string, string>) => {
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "scripts/seed.ts", ...args],
    cwd: new URL("..", import.meta.url),
    env: { ...env, DATABASE_URL: "" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const decode = (b: Uint8Array) => new TextDecoder().decode(b);
  return { code: output.code, stdout: decode(output.stdout), stderr: decode(output.stderr) };
};

Deno.test({
  name: "a reload that meets a preview's locks in the other order is tried again (PostgreSQL)",
  ignore: databaseKind !== "postgres",
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    const db = await makeTestDatabase();
    const writer = new pg.Client({ connectionString: db.url });
    try {
      await db.run(loadSnapshot(generateSnapshot({ stores: 2 }), { reset: false }));
      // A preview under way: its file written (source_files), its batch not yet (import_batches).
      // Its own deadlock check waits longer, so that the reload is the one PostgreSQL ends.
      await writer.connect();
      await writer.query("SET deadlock_timeout = '30s'");
      await writer.query("BEGIN");
      await writer.query("LOCK TABLE source_files IN ROW EXCLUSIVE MODE");
      const reload = db.run(Effect.either(
        loadSnapshot(generateSnapshot({ stores: 3 }), { reset: true, discardUploads: true }),
      ));
      // The reload holds import_batches and waits for source_files.
      for (;;) {
        const { rows } = await writer.query(
          `SELECT count(*)::int AS n FROM pg_locks
           WHERE NOT granted AND relation = 'source_files'::regclass`,
        );
        if (rows[0].n > 0) break;
        await new Promise((r) => setTimeout(r, 20));
      }
      await writer.query("LOCK TABLE import_batches IN ROW EXCLUSIVE MODE");
      await writer.query("ROLLBACK");
      const loaded = await reload;
      assert.ok(Either.isRight(loaded), JSON.stringify(loaded));
      const [{ n }] = await db.run(
        Effect.flatMap(
          SqlClient.SqlClient,
          (sql) => sql<{ n: number }>`SELECT count(*)::int AS n FROM stores`,
        ),
      );
      assert.equal(n, 3);
    } finally {
      await writer.end().catch(() => {});
      await db.close();
    }
  },
});

Deno.test("seed CLI: --out writes the generated snapshot without a database", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const file = `${dir}/snapshot.json`;
    const result = await runSeed(["--stores", "3", "--out", file], { DATA_DIR: `${dir}/data` });
    assert.equal(result.code, 0, result.stderr);
    const written = JSON.parse(await Deno.readTextFile(file));
    assert.equal(JSON.stringify(written), JSON.stringify(generateSnapshot({ stores: 3 })));
    await assert.rejects(() => Deno.stat(`${dir}/data`), "no database was created");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("seed CLI: --discard-uploads without --reset is a usage error", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const result = await runSeed(["--discard-uploads"], { DATA_DIR: `${dir}/data` });
    assert.equal(result.code, 2, result.stderr);
    assert.match(result.stderr, /--discard-uploads goes with --reset/);
    await assert.rejects(() => Deno.stat(`${dir}/data`), "no database was created");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("seed CLI: an invalid file prints its problems and exits 1", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const bad = clone(generateSnapshot({ stores: 3 }));
    bad.stores[2].brand_id = 9;
    bad.energy[0].legacy[0] = "abc";
    const file = `${dir}/bad.json`;
    await Deno.writeTextFile(file, JSON.stringify(bad));
    const result = await runSeed(["--snapshot", file], { DATA_DIR: `${dir}/data` });
    assert.equal(result.code, 1);
    assert.match(result.stderr, /stores\[2\]\.brand_id: unknown brand 9|energy\[0\]\.legacy\[0\]/);
    assert.match(result.stderr, /nothing was loaded/);
    assert.doesNotMatch(result.stdout, /Loaded snapshot/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("seed CLI: refuses, before opening it, an embedded database the service holds", async () => {
  const dir = await Deno.makeTempDir();
  try {
    // This test process stands in for a running service holding the folder.
    await Effect.runPromise(Effect.scoped(Effect.gen(function* () {
      yield* holdDataDir(`${dir}/data`);
      const result = yield* Effect.promise(() =>
        runSeed(["--stores", "3"], { DATA_DIR: `${dir}/data` })
      );
      assert.equal(result.code, 1);
      assert.match(result.stderr, new RegExp(`the service \\(pid ${Deno.pid}\\) is using`));
      const entries = [...Deno.readDirSync(`${dir}/data`)].map((e) => e.name);
      assert.deepEqual(entries, ["service.pid"], "nothing was opened or created");
    })));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
