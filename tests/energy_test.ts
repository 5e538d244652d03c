// Energy days, per-day versions and revision history, checked against the loaded snapshot.
import assert from "node:assert/strict";
import { Decimal } from "decimal.js";
import { Effect } from "effect";
import { checkReads, checkStoredDays } from "../src/energy/day_check.ts";
import { addDays } from "../src/domain/range.ts";
import { EnergyResponse, EnergyVersions, HistoryResponse } from "../src/domain/energy.ts";
import { generateSnapshot } from "../src/seed/generate.ts";
import { loadSnapshot } from "../src/seed/load.ts";
import type { Snapshot } from "../src/seed/snapshot.ts";
import { assertErrorBody, assertSchema, makeTestApp } from "./helpers.ts";

const snapshot = generateSnapshot({ stores: 6 });
const app = await makeTestApp((db) =>
  db.run(Effect.asVoid(loadSnapshot(snapshot, { reset: false })))
);
const reader = await app.key(["read"]);
const auditor = await app.key(["read", "raw"]);

type Expected = {
  status: "AVAILABLE" | "NO_DATA" | "VOID";
  kwh: string | null;
  kind: string | null;
};

// The policy of rules.md §2, computed independently from the snapshot file.
const expectedDays = (energy: Snapshot["energy"][number]) => {
  const days = new Map<string, Expected>();
  energy.legacy.forEach((value, i) => {
    if (value !== null) {
      days.set(addDays(energy.start, i), {
        status: "AVAILABLE",
        kwh: value,
        kind: "LEGACY_DIRECT",
      });
    }
  });
  for (const c of energy.cleaned) {
    days.set(c.date, { status: "AVAILABLE", kwh: c.kwh, kind: "CLEANED" });
  }
  for (const v of energy.void_days) days.set(v, { status: "VOID", kwh: null, kind: null });
  return days;
};

const fixed4 = (value: string) => new Decimal(value).toFixed(4, Decimal.ROUND_HALF_UP);

const path = (storeId: number, scopeId: number, start: string, end: string) =>
  `/api/v1/stores/${storeId}/energy?scope_id=${scopeId}&start=${start}&end=${end}`;

const busiest =
  [...snapshot.energy].sort((a, b) =>
    (b.cleaned.length + b.void_days.length) - (a.cleaned.length + a.void_days.length)
  )[0];

Deno.test("366 days come back ascending, one row each, in the strict schema", async () => {
  const end = snapshot.dataset.end;
  const start = addDays(end, -365);
  const answer = await app.call("GET", path(busiest.store_id, busiest.scope_id, start, end), {
    key: reader.key,
  });
  assert.equal(answer.status, 200);
  const body = assertSchema(EnergyResponse, answer.body);
  assert.equal(body.days.length, 366);
  body.days.forEach((day, i) => assert.equal(day.business_date, addDays(start, i)));
  assert.equal(body.summary.requested_days, 366);
  assert.equal(body.store_id, busiest.store_id);
  assert.equal(body.scope_id, busiest.scope_id);
  assert.equal(body.timezone, "Asia/Shanghai");
});

Deno.test("every day follows cleaned, then legacy, then null; void days are VOID", async () => {
  for (const energy of snapshot.energy) {
    const expected = expectedDays(energy);
    const start = snapshot.dataset.start;
    for (
      const [from, to] of [[start, addDays(start, 365)], [
        addDays(start, 366),
        snapshot.dataset.end,
      ]]
    ) {
      const body = (await app.call("GET", path(energy.store_id, energy.scope_id, from, to), {
        key: reader.key,
      })).body as EnergyResponse;
      for (const day of body.days) {
        const want = expected.get(day.business_date) ??
          { status: "NO_DATA", kwh: null, kind: null };
        assert.equal(day.status, want.status, `${energy.store_id} ${day.business_date}`);
        assert.equal(day.energy_kwh, want.kwh === null ? null : fixed4(want.kwh));
        if (want.status === "AVAILABLE") assert.equal(day.source_kind, want.kind);
        if (day.status === "NO_DATA") {
          assert.equal(day.energy_id, null);
          assert.equal(day.revision_no, null);
        } else {
          assert.ok(
            day.energy_id !== null && day.revision_no !== null && day.import_row_id !== null,
          );
        }
      }
    }
  }
});

Deno.test("a real zero is 0.0000 and AVAILABLE, never confused with missing", async () => {
  const zero =
    snapshot.energy.flatMap((energy) =>
      [...expectedDays(energy)].filter(([, day]) =>
        day.kwh !== null && new Decimal(day.kwh).isZero()
      ).map(([date]) => ({ energy, date }))
    )[0];
  assert.ok(zero, "the demo has days whose effective energy is zero");
  const { energy, date } = zero;
  const body = (await app.call("GET", path(energy.store_id, energy.scope_id, date, date), {
    key: reader.key,
  })).body;
  assert.equal(body.days[0].energy_kwh, "0.0000");
  assert.equal(body.days[0].status, "AVAILABLE");
  assert.equal(body.summary.available_energy_kwh, "0.0000");
  assert.equal(body.summary.available_days, 1);
});

Deno.test("the summary counts days and sums available energy exactly", async () => {
  const start = addDays(snapshot.dataset.end, -365);
  const end = snapshot.dataset.end;
  const expected = expectedDays(busiest);
  let sum = new Decimal(0);
  let available = 0, voids = 0;
  for (let d = start; d <= end; d = addDays(d, 1)) {
    const want = expected.get(d);
    if (want?.status === "AVAILABLE") {
      available++;
      sum = sum.plus(want.kwh!);
    }
    if (want?.status === "VOID") voids++;
  }
  const body = (await app.call("GET", path(busiest.store_id, busiest.scope_id, start, end), {
    key: reader.key,
  })).body as EnergyResponse;
  assert.equal(body.summary.available_days, available);
  assert.equal(body.summary.void_days, voids);
  assert.equal(body.summary.missing_days, 366 - available - voids);
  assert.equal(body.summary.available_energy_kwh, sum.toFixed(4));
  assert.equal(body.summary.complete, available === 366);
  assert.equal(body.summary.saving_metrics_status, "SEE_METRICS_ENDPOINT");
});

Deno.test("a range with no data is all NO_DATA with a null sum, not zero", async () => {
  const body =
    (await app.call("GET", path(busiest.store_id, busiest.scope_id, "2020-01-01", "2020-01-31"), {
      key: reader.key,
    })).body as EnergyResponse;
  assert.equal(body.days.length, 31);
  assert.ok(body.days.every((d) => d.status === "NO_DATA" && d.energy_kwh === null));
  assert.equal(body.summary.available_energy_kwh, null);
  assert.equal(body.summary.complete, false);
  assert.equal(body.summary.missing_days, 31);
});

Deno.test("ranges: 366 days is the limit, start after end is refused", async () => {
  const s = busiest.store_id, q = busiest.scope_id;
  assert.equal(
    (await app.call("GET", path(s, q, "2025-01-01", "2026-01-01"), { key: reader.key })).status,
    200,
  );
  assertErrorBody(
    await app.call("GET", path(s, q, "2025-01-01", "2026-01-02"), { key: reader.key }),
    400,
    "RANGE_TOO_LONG",
  );
  assertErrorBody(
    await app.call("GET", path(s, q, "2025-02-01", "2025-01-31"), { key: reader.key }),
    400,
    "INVALID_RANGE",
  );
  const single = await app.call("GET", path(s, q, "2025-02-01", "2025-02-01"), { key: reader.key });
  assert.equal(single.body.days.length, 1);
});

Deno.test("a day reads the same in energy and in versions.current (void, cleaned, legacy days)", async () => {
  const voided = snapshot.energy.find((e) => e.void_days.length > 0);
  assert.ok(voided, "the snapshot has a void day");
  const days = [voided, busiest].flatMap((e) => [
    ...e.void_days.slice(0, 4).map((date) => ({ e, date })),
    ...e.cleaned.slice(0, 3).map((c) => ({ e, date: c.date })),
    ...e.legacy.flatMap((v, i) => (v === null ? [] : [{ e, date: addDays(e.start, i) }])).slice(
      0,
      3,
    ),
  ]);
  for (const { e, date } of days) {
    const energy = await app.call("GET", path(e.store_id, e.scope_id, date, date), {
      key: reader.key,
    });
    const day = assertSchema(EnergyResponse, energy.body).days[0];
    const versions = await app.call(
      "GET",
      `/api/v1/stores/${e.store_id}/energy/${date}/versions`,
      { key: auditor.key },
    );
    const current = assertSchema(EnergyVersions, versions.body).current;
    assert.ok(current, date);
    assert.equal(current.energy_id, day.energy_id, date);
    assert.equal(current.energy_kwh, day.energy_kwh, date);
    assert.equal(current.source_kind, day.source_kind, `${date} (${day.status})`);
    assert.equal(current.source_label, day.source_label, `${date} (${day.status})`);
    assert.equal(current.is_void, day.status === "VOID" ? 1 : 0, date);
  }
});

Deno.test("versions: legacy and cleaned revisions told apart, ascending, with batch and actor", async () => {
  const cleaned = busiest.cleaned.find((c) => {
    const i = (Date.parse(c.date) - Date.parse(busiest.start)) / 86_400_000;
    return busiest.legacy[i] !== null && busiest.legacy[i] !== undefined;
  });
  assert.ok(cleaned, "a cleaned day over a legacy value");
  const url = `/api/v1/stores/${busiest.store_id}/energy/${cleaned.date}/versions`;
  assertErrorBody(await app.call("GET", url, { key: reader.key }), 403, "PERMISSION_MISSING");
  const answer = await app.call("GET", url, { key: auditor.key });
  assert.equal(answer.status, 200);
  const body = assertSchema(EnergyVersions, answer.body);
  assert.equal(body.scope_id, busiest.scope_id);
  assert.deepEqual(body.versions.map((v) => v.revision_no), [1, 2]);
  assert.equal(body.versions[0].source_kind, "LEGACY_DIRECT");
  assert.equal(body.versions[1].source_kind, "CLEANED");
  assert.equal(body.versions[1].after_kwh, fixed4(cleaned.kwh));
  assert.equal(body.versions[0].batch?.batch_kind, "PLATFORM_LEGACY");
  assert.equal(body.versions[1].batch?.batch_kind, "PLATFORM_CLEANED");
  assert.equal(body.versions[0].batch?.filename, null);
  assert.equal(body.versions[0].actor.member_id, null);
  assert.ok(body.current);
  assert.equal(body.current.energy_kwh, fixed4(cleaned.kwh));
  assert.equal(body.current.revision_no, 2);
  assert.equal(body.current.revision_count, 2);
  assert.equal(body.current.cleaned_revision_count, 1);
  assert.equal(body.current.cleaned_ever, true);
});

Deno.test("versions of a day with no fact: current null, no versions", async () => {
  const answer = await app.call(
    "GET",
    `/api/v1/stores/${busiest.store_id}/energy/2020-01-01/versions`,
    {
      key: auditor.key,
    },
  );
  const body = assertSchema(EnergyVersions, answer.body);
  assert.equal(body.current, null);
  assert.deepEqual(body.versions, []);
});

Deno.test("history: every revision of a fact, ascending; raw permission and store scope apply", async () => {
  const date = busiest.cleaned[0].date;
  const day = (await app.call("GET", path(busiest.store_id, busiest.scope_id, date, date), {
    key: reader.key,
  })).body.days[0];
  const url = `/api/v1/energy/${day.energy_id}/history`;
  const body = assertSchema(
    HistoryResponse,
    (await app.call("GET", url, { key: auditor.key })).body,
  );
  assert.equal(body.revisions.length, day.revision_no);
  body.revisions.forEach((r, i) => assert.equal(r.revision_no, i + 1));
  assert.equal(body.revisions.at(-1)?.import_row_id, day.import_row_id);
  assertErrorBody(await app.call("GET", url, { key: reader.key }), 403);
  const other = snapshot.stores.find((s) => s.id !== busiest.store_id)!;
  const scoped = await app.key(["read", "raw"], { stores: [other.id] });
  const outside = await app.call("GET", url, { key: scoped.key });
  assertErrorBody(outside, 403, "STORE_FORBIDDEN");
  assert.doesNotMatch(outside.body.error.message, /\d/, "the message names no store");
  const rawNoRead = await app.key(["raw"]);
  assertErrorBody(await app.call("GET", url, { key: rawNoRead.key }), 403, "PERMISSION_MISSING");
  assertErrorBody(
    await app.call("GET", "/api/v1/energy/99999999/history", { key: auditor.key }),
    404,
  );
});

// What a read returns is stored when the day is written (rules.md §2 shaped at write time): the
// stored derived columns equal the rules applied to the facts, and the stored read equals the
// answer computed from the facts alone, for every store and for ranges with gaps, void days, the
// provisional day, days outside the dataset and no data at all.
Deno.test("the stored energy days equal the days computed from the facts", async () => {
  const stored = await app.db.run(checkStoredDays());
  assert.ok(stored.days > 0);
  assert.deepEqual(stored.mismatches, []);
  assert.deepEqual(stored.months, []);
  const ranges = snapshot.energy.flatMap((energy) =>
    [
      [addDays(snapshot.dataset.end, -365), snapshot.dataset.end],
      [addDays(snapshot.dataset.start, -3), addDays(snapshot.dataset.start, 40)],
      [addDays(snapshot.dataset.end, -2), addDays(snapshot.dataset.end, 5)],
      ["2019-01-01", "2019-01-31"],
      ...energy.void_days.map((day) => [addDays(day, -1), addDays(day, 1)]),
    ].map(([start, end]) => ({ scopeId: energy.scope_id, start, end }))
  );
  assert.deepEqual(await app.db.run(checkReads(ranges)), []);
});

Deno.test({
  name: "close the test app",
  fn: () => app.close(),
  sanitizeOps: false,
  sanitizeResources: false,
});
