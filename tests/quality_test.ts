// Data quality: the pure rules against an independent reference (property tests), their notes,
// and the endpoint end to end over HTTP on a snapshot with hand-made
// disagreements (device events inserted, a day set to 0 and one voided by an import commit).
import assert from "node:assert/strict";
import { Effect, Exit, FastCheck as fc, Schema } from "effect";
import { EnergyResponse } from "../src/domain/energy.ts";
import { FLAG_KINDS, QualityFlag, QualityResponse } from "../src/domain/quality.ts";
import { addDays } from "../src/domain/range.ts";
import { QualityRepo } from "../src/quality/quality_repo.ts";
import {
  checkQuality,
  type DayVerdict,
  describeQuality,
  type DeviceEvidence,
  MAX_DEVICES_PER_FLAG,
  MAX_REPORTS_PER_DEVICE,
  type QualityDayInput,
  qualitySummary,
  type StateReport,
} from "../src/quality/quality_rules.ts";
import { generateSnapshot } from "../src/seed/generate.ts";
import { loadSnapshot } from "../src/seed/load.ts";
import { assertErrorBody, assertSchema, makeTestApp } from "./helpers.ts";
import { b64, sqlOf, type StoreInfo, storesOf } from "./import_helpers.ts";

// --- An independent reference of the rule (docs/quality.md), Beijing time as a fixed UTC+8: a
// device's state at an instant is its latest report at or before it; states carry into later
// days up to carryUntil. Sampled at the day's first instant and at each report of the day.

const DAY_MS = 86_400_000;
const dayStart = (date: string) => Date.parse(`${date}T00:00:00+08:00`);

interface RefReport {
  readonly ms: number;
  readonly rank: number;
  readonly id: number;
  readonly state: string;
}

const refVerdict = (day: QualityDayInput, evidence: DeviceEvidence): DayVerdict => {
  if (day.status === "VOID") return "VOID";
  const from = dayStart(day.date);
  const to = from + DAY_MS;
  const carry = evidence.carryUntil !== null && day.date <= evidence.carryUntil;
  let online = 0;
  let offline = 0;
  let known = false;
  for (const device of evidence.devices) {
    const reports: Array<RefReport> = evidence.reports
      .filter((r) => r.deviceId === device.id)
      .map((r) => ({
        ms: Math.floor(Date.parse(r.at) / 1000) * 1000,
        rank: r.source === "DEVICE_SNAPSHOT" ? 1 : 0,
        id: r.eventId ?? 0,
        state: r.state,
      }))
      .sort((a, b) => a.ms - b.ms || a.rank - b.rank || a.id - b.id);
    const stateAt = (t: number) => {
      let last: RefReport | undefined;
      for (const r of reports) if (r.ms <= t) last = r;
      if (last === undefined || (last.ms < from && !carry)) return undefined;
      return last.state;
    };
    const during = reports.filter((r) => r.ms >= from && r.ms < to);
    const samples = [from, ...during.map((r) => r.ms)].map(stateAt);
    const anyOnline = samples.includes("ONLINE") || during.some((r) => r.state === "ONLINE");
    if (anyOnline) online++;
    else if (samples.every((s) => s === "OFFLINE")) offline++;
    if (samples.some((s) => s !== undefined)) known = true;
  }
  const zero = day.status === "AVAILABLE" && day.servedKwh !== null &&
    Number(day.servedKwh) === 0;
  const missing = day.status === "NO_DATA" || day.servedKwh === null;
  if (online > 0) return missing ? "NO_DATA_WHILE_ONLINE" : zero ? "ZERO_WHILE_ONLINE" : "AGREES";
  if (evidence.devices.length > 0 && offline === evidence.devices.length) {
    return missing || zero ? "AGREES" : "POSITIVE_WHILE_ALL_OFFLINE";
  }
  return known ? "PARTIAL_EVIDENCE" : "NO_EVIDENCE";
};

const isKind = (v: DayVerdict) => (FLAG_KINDS as ReadonlyArray<string>).includes(v);

const strict = { onExcessProperty: "error" } as const;
const decodeFlag = Schema.decodeUnknownSync(QualityFlag, strict);

// --- Generators: a window of Beijing days, devices, reports around it (exact midnights often).

const WINDOW = "2026-03-01";
const windowDay = (i: number) => addDays(WINDOW, i);
const iso = (ms: number) => new Date(ms).toISOString().replace(".000Z", "Z");

const served = fc.constantFrom(
  "0",
  "0.0000",
  "00.00",
  "0.",
  "0.0001",
  "0.10",
  "10.0",
  "12.5",
  "31.1002",
  "100",
);

const energyArb = fc.oneof(
  served.map((kwh) => ({ status: "AVAILABLE" as const, servedKwh: kwh as string | null })),
  fc.constant({ status: "NO_DATA" as const, servedKwh: null }),
  fc.constant({ status: "VOID" as const, servedKwh: null }),
);

// `dense`: few days and instants, so that reports of one device often share an instant (the
// order of reports at one instant decides the state carried into the next day).
const caseArbOf = (dense: boolean) =>
  fc.record({
    deviceCount: fc.integer({ min: 0, max: dense ? 2 : 4 }),
    dayIndexes: fc.uniqueArray(fc.integer({ min: 0, max: dense ? 3 : 9 }), {
      minLength: 1,
      maxLength: 10,
    }),
    energy: fc.array(energyArb, { minLength: 10, maxLength: 10 }),
    reports: fc.array(
      fc.record({
        device: fc.integer({ min: 1, max: dense ? 3 : 5 }),
        snapshot: fc.boolean(),
        online: fc.boolean(),
        day: dense ? fc.integer({ min: -1, max: 3 }) : fc.integer({ min: -3, max: 11 }),
        minute: dense ? fc.constantFrom(0, 720, 1439) : fc.oneof(
          fc.constantFrom(0, 1, 719, 1439),
          fc.integer({ min: 0, max: 1439 }),
        ),
      }),
      { maxLength: dense ? 12 : 30 },
    ),
    carryUntil: fc.option(fc.integer({ min: -2, max: 11 }), { nil: null }),
  }).map((c) => {
    // A device has one snapshot status at most, as in the data model.
    const snapshots = new Set<number>();
    const evidence: DeviceEvidence = {
      timezone: "Asia/Shanghai",
      carryUntil: c.carryUntil === null ? null : windowDay(c.carryUntil),
      devices: Array.from({ length: c.deviceCount }, (_, i) => ({
        id: i + 1,
        name: i % 3 === 2 ? null : `device ${i + 1}`,
        code: `D-${i + 1}`,
      })),
      // Reports may name a device that is not one of the store's: they are left out.
      reports: c.reports.map((r, i): StateReport => {
        const snapshot = r.snapshot && !snapshots.has(r.device);
        if (snapshot) snapshots.add(r.device);
        return {
          deviceId: r.device,
          source: snapshot ? "DEVICE_SNAPSHOT" : "DEVICE_EVENT",
          eventId: snapshot ? null : i + 1,
          state: r.online ? "ONLINE" : "OFFLINE",
          at: iso(dayStart(windowDay(r.day)) + r.minute * 60_000),
        };
      }),
    };
    const days = c.dayIndexes.map((i): QualityDayInput => ({ date: windowDay(i), ...c.energy[i] }));
    return { days, evidence };
  });

const caseArb = caseArbOf(false);
const denseArb = caseArbOf(true);

Deno.test("rules: every day's verdict is the reference's, whatever the days and reports", () => {
  for (const arb of [caseArb, denseArb]) {
    fc.assert(
      fc.property(arb, ({ days, evidence }) => {
        const result = checkQuality(days, evidence);
        assert.deepEqual(result.verdicts, days.map((d) => refVerdict(d, evidence)));
      }),
      { numRuns: 1500 },
    );
  }
});

Deno.test("rules: the summary alone (as the portfolio takes it) is the full check's summary", () => {
  for (const arb of [caseArb, denseArb]) {
    fc.assert(
      fc.property(arb, ({ days, evidence }) => {
        assert.deepEqual(qualitySummary(days, evidence), checkQuality(days, evidence).summary);
      }),
      { numRuns: 500 },
    );
  }
});

Deno.test("rules: the summary counts every day once, and the flags are the flagged days", () => {
  fc.assert(
    fc.property(caseArb, ({ days, evidence }) => {
      const { summary: s, flags, verdicts } = checkQuality(days, evidence);
      assert.equal(s.requested_days, days.length);
      assert.equal(s.device_count, evidence.devices.length);
      assert.equal(
        s.checked_days + s.no_evidence_days + s.partial_evidence_days + s.void_days,
        s.requested_days,
      );
      assert.equal(s.agreeing_days + s.flagged_days, s.checked_days);
      assert.equal(
        FLAG_KINDS.reduce((n, k) => n + s.flagged_by_kind[k], 0),
        s.flagged_days,
      );
      assert.equal(flags.length, s.flagged_days);
      assert.deepEqual(
        flags.map((f) => [f.business_date, f.kind]),
        days.flatMap((d, i) => (isKind(verdicts[i]) ? [[d.date, verdicts[i]]] : [])),
      );
      assert.equal(s.void_days, days.filter((d) => d.status === "VOID").length);
      if (evidence.devices.length === 0) assert.equal(s.checked_days, 0);
    }),
    { numRuns: 800 },
  );
});

Deno.test("rules: each flag names the devices that make its case, with reports showing it", () => {
  fc.assert(
    fc.property(caseArb, ({ days, evidence }) => {
      for (const flag of checkQuality(days, evidence).flags) {
        decodeFlag(flag);
        const wanted = flag.kind === "POSITIVE_WHILE_ALL_OFFLINE" ? "OFFLINE" : "ONLINE";
        if (wanted === "OFFLINE") assert.equal(flag.device_count, evidence.devices.length);
        assert.ok(flag.device_count >= 1);
        assert.equal(flag.devices.length, Math.min(flag.device_count, MAX_DEVICES_PER_FLAG));
        for (const device of flag.devices) {
          assert.equal(device.state, wanted);
          assert.ok(evidence.devices.some((d) => d.id === device.device_id));
          assert.ok(device.reports.some((r) => r.state === wanted), "a report shows the state");
          if (wanted === "OFFLINE") assert.ok(device.reports.every((r) => r.state === "OFFLINE"));
          // Every listed report is the device's and falls on the day, or is the carried one.
          const from = dayStart(flag.business_date);
          for (const r of device.reports) {
            const ms = Date.parse(r.occurred_at);
            assert.equal(r.carried, ms < from);
            assert.ok(ms < from + DAY_MS);
            assert.ok(
              evidence.reports.some((x) =>
                x.deviceId === device.device_id && x.at === r.occurred_at &&
                x.eventId === r.event_id && x.state === r.state
              ),
            );
          }
          assert.equal(device.reports.filter((r) => r.carried).length <= 1, true);
        }
        assert.equal(flag.energy_kwh === null, flag.kind === "NO_DATA_WHILE_ONLINE");
      }
    }),
    { numRuns: 800 },
  );
});

Deno.test("rules: the order of the reports does not matter", () => {
  fc.assert(
    fc.property(caseArb, fc.nat(), ({ days, evidence }, seed) => {
      const shuffled = [...evidence.reports]
        .map((r, i) => ({ r, k: (i * 7919 + seed) % 1009 }))
        .sort((a, b) => a.k - b.k)
        .map((x) => x.r);
      assert.deepEqual(
        checkQuality(days, { ...evidence, reports: shuffled }),
        checkQuality(days, evidence),
      );
    }),
    { numRuns: 300 },
  );
});

Deno.test("rules: the notes follow the summary", () => {
  fc.assert(
    fc.property(caseArb, ({ days, evidence }) => {
      const result = checkQuality(days, evidence);
      const s = result.summary;
      const notes = describeQuality(result);
      assert.ok(notes.every((n) => n.startsWith("Data quality: ")));
      assert.equal(notes.some((n) => n.includes("disagree")), s.flagged_days > 0);
      for (const flag of result.flags.slice(0, 5)) {
        assert.ok(notes.some((n) => n.includes(flag.business_date)));
      }
      assert.equal(notes.some((n) => n.includes("has no devices")), s.device_count === 0);
      assert.equal(
        notes.some((n) => n.includes("were not checked")),
        s.device_count > 0 && s.no_evidence_days + s.partial_evidence_days > 0,
      );
      assert.equal(notes.some((n) => n.includes("void day")), s.void_days > 0);
    }),
    { numRuns: 500 },
  );
});

const at = (local: string) => iso(Date.parse(`${local}+08:00`));
const event = (deviceId: number, id: number, state: "ONLINE" | "OFFLINE", local: string) =>
  ({ deviceId, source: "DEVICE_EVENT", eventId: id, state, at: at(local) }) as const;
const devices = (n: number) =>
  Array.from({ length: n }, (_, i) => ({ id: i + 1, name: `d${i + 1}`, code: `C${i + 1}` }));
const available = (date: string, kwh: string): QualityDayInput => ({
  date,
  status: "AVAILABLE",
  servedKwh: kwh,
});
const noData = (date: string): QualityDayInput => ({ date, status: "NO_DATA", servedKwh: null });

Deno.test("rules: days are Beijing days; 16:00Z is the next day's first instant", () => {
  const evidence: DeviceEvidence = {
    timezone: "Asia/Shanghai",
    carryUntil: null,
    devices: devices(1),
    // 2026-07-03T16:30:00Z is 2026-07-04 00:30 in Beijing.
    reports: [{
      deviceId: 1,
      source: "DEVICE_EVENT",
      eventId: 1,
      state: "ONLINE",
      at: "2026-07-03T16:30:00Z",
    }],
  };
  const result = checkQuality([noData("2026-07-03"), noData("2026-07-04")], evidence);
  assert.deepEqual(result.verdicts, ["NO_EVIDENCE", "NO_DATA_WHILE_ONLINE"]);
});

Deno.test("rules: a state carries into later days, never past carryUntil", () => {
  const evidence = (carryUntil: string | null): DeviceEvidence => ({
    timezone: "Asia/Shanghai",
    carryUntil,
    devices: devices(2),
    reports: [
      event(1, 1, "ONLINE", "2026-07-01T09:00:00"),
      event(2, 2, "OFFLINE", "2026-07-01T09:00:00"),
    ],
  });
  const days = [noData("2026-07-04"), available("2026-07-05", "0.0000")];
  assert.deepEqual(checkQuality(days, evidence("2026-07-31")).verdicts, [
    "NO_DATA_WHILE_ONLINE",
    "ZERO_WHILE_ONLINE",
  ]);
  assert.deepEqual(checkQuality(days, evidence("2026-07-04")).verdicts, [
    "NO_DATA_WHILE_ONLINE",
    "NO_EVIDENCE",
  ]);
  assert.deepEqual(checkQuality(days, evidence(null)).verdicts, ["NO_EVIDENCE", "NO_EVIDENCE"]);
  const flag = checkQuality(days, evidence("2026-07-31")).flags[0];
  assert.equal(flag.device_count, 1, "only the device that reported online makes the case");
  assert.deepEqual(flag.devices[0].reports, [{
    source: "DEVICE_EVENT",
    event_id: 1,
    state: "ONLINE",
    occurred_at: "2026-07-01T01:00:00Z",
    carried: true,
  }]);
  assert.equal(flag.message, "No energy value, while 1 of 2 devices reported online");
});

Deno.test("rules: reports in one second are ordered by id, the snapshot last", () => {
  const evidence = (reports: ReadonlyArray<StateReport>): DeviceEvidence => ({
    timezone: "Asia/Shanghai",
    carryUntil: "2026-12-31",
    devices: devices(1),
    reports,
  });
  const day = [noData("2026-07-02")];
  // The OFFLINE event is 0.5 s earlier but has the higher id: it is the last report.
  const pair = [
    { ...event(1, 7, "ONLINE", "2026-07-01T10:00:00"), at: "2026-07-01T02:00:00.900Z" },
    { ...event(1, 8, "OFFLINE", "2026-07-01T10:00:00"), at: "2026-07-01T02:00:00.400Z" },
  ];
  assert.deepEqual(checkQuality(day, evidence(pair)).verdicts, ["AGREES"]);
  const snapshot: StateReport = {
    deviceId: 1,
    source: "DEVICE_SNAPSHOT",
    eventId: null,
    state: "ONLINE",
    at: "2026-07-01T02:00:00Z",
  };
  assert.deepEqual(checkQuality(day, evidence([snapshot, ...pair])).verdicts, [
    "NO_DATA_WHILE_ONLINE",
  ]);
});

Deno.test("rules: every device offline the whole day against a positive value; a report at 00:00 counts", () => {
  const reports = [
    event(1, 1, "ONLINE", "2026-07-01T09:00:00"),
    event(2, 2, "OFFLINE", "2026-07-01T09:00:00"),
    // Device 1 goes offline at the very first instant of 07-02: it was not online that day.
    event(1, 3, "OFFLINE", "2026-07-02T00:00:00"),
    event(2, 4, "OFFLINE", "2026-07-02T13:00:00"),
  ];
  const evidence: DeviceEvidence = {
    timezone: "Asia/Shanghai",
    carryUntil: "2026-12-31",
    devices: devices(2),
    reports,
  };
  const days = [
    available("2026-07-02", "12.5"),
    available("2026-07-03", "0.0001"),
    available("2026-07-04", "0"),
    noData("2026-07-05"),
  ];
  const result = checkQuality(days, evidence);
  assert.deepEqual(result.verdicts, [
    "POSITIVE_WHILE_ALL_OFFLINE",
    "POSITIVE_WHILE_ALL_OFFLINE",
    "AGREES",
    "AGREES",
  ]);
  const [first] = result.flags;
  assert.equal(first.energy_kwh, "12.5000");
  assert.equal(first.message, "Energy 12.5000 kWh, while all 2 devices were offline the whole day");
  assert.deepEqual(first.devices.map((d) => d.reports.map((r) => [r.event_id, r.carried])), [
    [[3, false]],
    [[2, true], [4, false]],
  ]);
  // Half a day of one device's state unknown: partial evidence, never a flag.
  const partial = checkQuality([available("2026-07-02", "12.5")], {
    ...evidence,
    reports: reports.filter((r) => r.eventId !== 2),
  });
  assert.deepEqual(partial.verdicts, ["PARTIAL_EVIDENCE"]);
  assert.equal(partial.summary.partial_evidence_days, 1);
});

Deno.test("rules: void days are never flagged; a store without devices has no evidence", () => {
  const evidence: DeviceEvidence = {
    timezone: "Asia/Shanghai",
    carryUntil: "2026-12-31",
    devices: devices(1),
    reports: [event(1, 1, "ONLINE", "2026-07-01T09:00:00")],
  };
  const days: ReadonlyArray<QualityDayInput> = [
    { date: "2026-07-01", status: "VOID", servedKwh: null },
    available("2026-07-02", "3"),
  ];
  const result = checkQuality(days, evidence);
  assert.deepEqual(result.verdicts, ["VOID", "AGREES"]);
  const described = describeQuality(result);
  assert.ok(described.some((n) => n.includes("1 void day not checked")));
  const none = checkQuality(days, { ...evidence, devices: [], reports: [] });
  assert.deepEqual(none.verdicts, ["VOID", "NO_EVIDENCE"]);
  const noDevices = describeQuality(none);
  assert.ok(noDevices[0].includes("no devices"));
});

Deno.test("rules: a flag's evidence is capped, the reports that show its state kept first", () => {
  const many = devices(MAX_DEVICES_PER_FLAG + 5);
  const evidence: DeviceEvidence = {
    timezone: "Asia/Shanghai",
    carryUntil: "2026-12-31",
    devices: many,
    reports: [
      ...many.map((d) => event(d.id, d.id, "ONLINE", "2026-07-01T08:00:00")),
      // Device 1 flaps all day and comes back online only at the end.
      ...Array.from(
        { length: 2 * MAX_REPORTS_PER_DEVICE },
        (_, i) =>
          event(1, 1000 + i, "OFFLINE", `2026-07-02T${String(1 + i).padStart(2, "0")}:00:00`),
      ),
      event(1, 2000, "ONLINE", "2026-07-02T23:00:00"),
    ],
  };
  const [flag] = checkQuality([noData("2026-07-02")], evidence).flags;
  assert.equal(flag.device_count, many.length);
  assert.equal(flag.devices.length, MAX_DEVICES_PER_FLAG);
  const first = flag.devices[0];
  assert.equal(first.report_count, 2 * MAX_REPORTS_PER_DEVICE + 2);
  assert.equal(first.reports.length, MAX_REPORTS_PER_DEVICE);
  assert.ok(first.reports.some((r) => r.event_id === 2000), "the ONLINE report is kept");
  assert.ok(first.reports[0].carried, "in time order, the carried report first");
});

// --- End to end over HTTP.

const snapshot = generateSnapshot({ stores: 6 });
const app = await makeTestApp((db) =>
  db.run(Effect.asVoid(loadSnapshot(snapshot, { reset: false })))
);
const reader = await app.key(["read"]);
const writer = await app.key(["read", "write"], { member: "quality-cleaner" });
const sql = sqlOf(app);
const stores = await storesOf(app, reader.key);

const quality = (store: StoreInfo, start: string, end: string, key = reader.key) =>
  app.call(
    "GET",
    `/api/v1/stores/${store.id}/quality?scope_id=${store.scope_id}&start=${start}&end=${end}`,
    { key },
  );
const qualityOk = async (store: StoreInfo, start: string, end: string) => {
  const answer = await quality(store, start, end);
  assert.equal(answer.status, 200, JSON.stringify(answer.body));
  return assertSchema(QualityResponse, answer.body);
};
const energyDays = async (store: StoreInfo, start: string, end: string) => {
  const answer = await app.call(
    "GET",
    `/api/v1/stores/${store.id}/energy?scope_id=${store.scope_id}&start=${start}&end=${end}`,
    { key: reader.key },
  );
  assert.equal(answer.status, 200);
  return assertSchema(EnergyResponse, answer.body).days;
};
const asInput = (days: Awaited<ReturnType<typeof energyDays>>): Array<QualityDayInput> =>
  days.map((d) => ({ date: d.business_date, status: d.status, servedKwh: d.energy_kwh }));

// The device reports of a store read straight from the tables, for the reference.
const storeEvidence = async (storeId: number): Promise<DeviceEvidence> => {
  const rows = await sql((s) =>
    s<{ device_id: number; event_id: number | null; state: string; at: string; snap: boolean }>`
      SELECT e.device_id, e.id AS event_id, e.event_type AS state, false AS snap,
        to_char(e.occurred_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS at
      FROM device_events e WHERE e.store_id = ${storeId}
        AND e.event_type IN ('ONLINE', 'OFFLINE')
      UNION ALL
      SELECT d.id, NULL, d.online_status, true,
        to_char(d.status_observed_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')
      FROM devices d WHERE d.store_id = ${storeId}
        AND d.online_status IN ('ONLINE', 'OFFLINE') AND d.status_observed_at IS NOT NULL`
  );
  return {
    timezone: "Asia/Shanghai",
    carryUntil: snapshot.dataset.end,
    devices: snapshot.devices.filter((d) => d.store_id === storeId)
      .map((d) => ({ id: d.id, name: d.device_name, code: d.device_code })),
    reports: rows.map((r) => ({
      deviceId: r.device_id,
      source: r.snap ? "DEVICE_SNAPSHOT" : "DEVICE_EVENT",
      eventId: r.event_id,
      state: r.state as "ONLINE" | "OFFLINE",
      at: r.at,
    })),
  };
};

const repoEvidence = (scopeId: number, dates: ReadonlyArray<string>) =>
  app.db.run(
    Effect.flatMap(QualityRepo, (repo) => repo.evidence(scopeId, dates)).pipe(
      Effect.provide(QualityRepo.Default),
    ),
  );

const withDevices = new Set(snapshot.devices.map((d) => d.store_id));
const bare = stores.find((s) => !withDevices.has(s.id));
const lastYear = { start: addDays(snapshot.dataset.end, -365), end: snapshot.dataset.end };

Deno.test("http: the demo snapshot's days are judged as the reference judges them", async () => {
  let flagged = 0;
  for (const store of stores) {
    const answer = await qualityOk(store, lastYear.start, lastYear.end);
    const days = asInput(await energyDays(store, lastYear.start, lastYear.end));
    const evidence = await storeEvidence(store.id);
    const expected = days.map((d) => refVerdict(d, evidence));
    assert.deepEqual(
      answer.flags.map((f) => [f.business_date, f.kind]),
      days.flatMap((d, i) => (isKind(expected[i]) ? [[d.date, expected[i]]] : [])),
      `store ${store.id}`,
    );
    const s = answer.summary;
    assert.equal(s.requested_days, 366);
    assert.equal(s.agreeing_days, expected.filter((v) => v === "AGREES").length);
    assert.equal(s.no_evidence_days, expected.filter((v) => v === "NO_EVIDENCE").length);
    assert.equal(s.partial_evidence_days, expected.filter((v) => v === "PARTIAL_EVIDENCE").length);
    assert.equal(s.void_days, days.filter((d) => d.status === "VOID").length);
    assert.equal(s.device_count, evidence.devices.length);
    assert.equal(answer.timezone, "Asia/Shanghai");
    assert.equal(answer.coverage, "UNVERIFIED");
    flagged += s.flagged_days;
    // Every event a flag names is one of this store's, of the state it is shown with.
    for (const flag of answer.flags) {
      for (const device of flag.devices) {
        for (const r of device.reports) {
          const found = evidence.reports.find((x) =>
            x.deviceId === device.device_id && x.eventId === r.event_id &&
            x.at === r.occurred_at && x.source === r.source
          );
          assert.ok(found, `store ${store.id} ${flag.business_date}: a known report`);
          assert.equal(found.state, r.state);
        }
      }
    }
  }
  // The demo's events start in September 2026; a year before, nothing can be checked.
  for (const store of stores) {
    const early = await qualityOk(store, "2025-01-01", "2025-12-31");
    assert.equal(early.summary.checked_days, 0);
    assert.equal(early.flags.length, 0);
    assert.equal(
      early.summary.no_evidence_days + early.summary.void_days,
      early.summary.requested_days,
    );
  }
  console.log(`demo snapshot, last year: ${flagged} flagged days over ${stores.length} stores`);
});

Deno.test("http: a store without devices is never flagged, every day counted as no evidence", async () => {
  assert.ok(bare, "the snapshot has a store without devices");
  const answer = await qualityOk(bare, lastYear.start, lastYear.end);
  assert.equal(answer.summary.device_count, 0);
  assert.equal(answer.flags.length, 0);
  assert.equal(answer.summary.checked_days, 0);
  assert.equal(
    answer.summary.no_evidence_days + answer.summary.void_days,
    answer.summary.requested_days,
  );
  assert.ok(answer.notes.some((n) => n.includes("no devices")));
});

// A window of a store with devices in 2025 (before any device event of the demo): a NO_DATA day
// G, positive days G-7..G-1 and G+1, the sealed legacy value serving G-2 and G+1.
const findWindow = async () => {
  for (const store of stores.filter((s) => withDevices.has(s.id))) {
    const days = await energyDays(store, "2025-02-01", "2025-12-31");
    for (let g = 7; g < days.length - 1; g++) {
      if (days[g].status !== "NO_DATA") continue;
      const around = [-7, -6, -5, -4, -3, -2, -1, 1].map((k) => days[g + k]);
      if (!around.every((d) => d.status === "AVAILABLE" && Number(d.energy_kwh) > 0)) continue;
      if (days[g - 2].source_kind !== "LEGACY_DIRECT") continue;
      if (days[g + 1].source_kind !== "LEGACY_DIRECT") continue;
      return { store, g: days[g].business_date };
    }
  }
  throw new Error("the snapshot has no suitable window");
};

let keysUsed = 0;
const importCsv = async (lines: ReadonlyArray<ReadonlyArray<string>>) => {
  const content = ["品牌,门店,日期,日能耗", ...lines.map((l) => l.join(","))].join("\r\n") + "\r\n";
  const preview = await app.call("POST", "/api/v1/imports/preview", {
    key: writer.key,
    headers: { "idempotency-key": `quality-${++keysUsed}-${crypto.randomUUID()}` },
    body: { filename: "quality.csv", content_base64: b64(content), reason: "quality test" },
  });
  assert.equal(preview.status, 200, JSON.stringify(preview.body));
  const commit = await app.call("POST", `/api/v1/imports/${preview.body.id}/commit`, {
    key: writer.key,
    headers: { "idempotency-key": `quality-${++keysUsed}-${crypto.randomUUID()}` },
    body: {},
  });
  assert.equal(commit.status, 200, JSON.stringify(commit.body));
  return preview.body.rows.map((r: { action: string }) => r.action);
};

Deno.test("http: each kind of flag end to end, with its evidence; values are never changed", async () => {
  const { store, g } = await findWindow();
  const storeDevices = snapshot.devices.filter((d) => d.store_id === store.id)
    .sort((a, b) => a.id - b.id);
  const p = addDays(g, -5);
  const z = addDays(g, -2);
  const v = addDays(g, 1);
  const start = addDays(g, -7);
  const prior = await sql((s) =>
    s<{ n: number }>`SELECT count(*)::int AS n FROM device_events
      WHERE store_id = ${store.id} AND occurred_at < ${`${addDays(v, 1)}T00:00:00+08:00`}`
  );
  assert.equal(prior[0].n, 0, "no device event of the demo before the window's end");

  // Every device goes offline on P-1 (23:30 Beijing); the first comes back on P+1 at 00:10
  // Beijing, which is still P in UTC: P is a Beijing day with every device offline throughout.
  const next =
    (await sql((s) =>
      s<{ id: number }>`SELECT coalesce(max(id), 0)::int AS id FROM device_events`
    ))[0].id;
  const inserted = [
    ...storeDevices.map((d, i) => ({
      id: next + 1 + i,
      device: d.id,
      type: "OFFLINE",
      at: `${addDays(p, -1)}T23:30:00+08:00`,
    })),
    {
      id: next + 100,
      device: storeDevices[0].id,
      type: "ONLINE",
      at: `${addDays(p, 1)}T00:10:00+08:00`,
    },
    // Not a state: ignored.
    { id: next + 101, device: storeDevices[0].id, type: "REBOOT", at: `${p}T12:00:00+08:00` },
  ];
  for (const e of inserted) {
    await sql((s) =>
      s`INSERT INTO device_events (id, store_id, device_id, event_type, occurred_at, note)
        VALUES (${e.id}, ${store.id}, ${e.device}, ${e.type}, ${e.at}::timestamptz, 'quality test')`
    );
  }

  const before = await qualityOk(store, start, v);
  assert.deepEqual(before.flags.map((f) => [f.business_date, f.kind]), [
    [p, "POSITIVE_WHILE_ALL_OFFLINE"],
    [g, "NO_DATA_WHILE_ONLINE"],
  ]);
  assert.deepEqual(before.summary, {
    requested_days: 9,
    device_count: storeDevices.length,
    checked_days: 7,
    agreeing_days: 5,
    flagged_days: 2,
    flagged_by_kind: {
      NO_DATA_WHILE_ONLINE: 1,
      POSITIVE_WHILE_ALL_OFFLINE: 1,
      ZERO_WHILE_ONLINE: 0,
    },
    no_evidence_days: 1,
    partial_evidence_days: 1,
    void_days: 0,
  });
  const [offline, missing] = before.flags;
  assert.equal(offline.energy_status, "AVAILABLE");
  assert.equal(offline.device_count, storeDevices.length);
  assert.deepEqual(offline.devices.map((d) => d.device_id), storeDevices.map((d) => d.id));
  assert.deepEqual(
    offline.devices.map((d) => [d.device_name, d.device_code]),
    storeDevices.map((d) => [d.device_name, d.device_code]),
  );
  for (const [i, d] of offline.devices.entries()) {
    assert.deepEqual(d.reports, [{
      source: "DEVICE_EVENT",
      event_id: next + 1 + i,
      state: "OFFLINE",
      occurred_at: `${addDays(p, -1)}T15:30:00Z`,
      carried: true,
    }]);
  }
  assert.equal(missing.energy_kwh, null);
  assert.equal(missing.energy_status, "NO_DATA");
  assert.equal(missing.device_count, 1);
  assert.deepEqual(missing.devices[0].reports, [{
    source: "DEVICE_EVENT",
    event_id: next + 100,
    state: "ONLINE",
    occurred_at: `${p}T16:10:00Z`,
    carried: true,
  }]);

  // An import sets Z to 0 and voids V while the first device reports online.
  const energyBefore = await energyDays(store, start, v);
  const actions = await importCsv([
    [store.brand_name, store.name, z, "0"],
    [store.brand_name, store.name, v, "作废"],
  ]);
  assert.deepEqual(actions, ["UPDATE", "VOID"]);
  const revisions = async () =>
    (await sql((s) => s<{ n: number }>`SELECT count(*)::int AS n FROM energy_revisions`))[0].n;
  const revisionsBefore = await revisions();
  const after = await qualityOk(store, start, v);
  assert.deepEqual(after.flags.map((f) => [f.business_date, f.kind]), [
    [p, "POSITIVE_WHILE_ALL_OFFLINE"],
    [z, "ZERO_WHILE_ONLINE"],
    [g, "NO_DATA_WHILE_ONLINE"],
  ]);
  const zero = after.flags[1];
  assert.equal(zero.energy_kwh, "0.0000");
  assert.equal(zero.energy_status, "AVAILABLE");
  assert.equal(zero.devices[0].device_id, storeDevices[0].id);
  assert.equal(after.summary.void_days, 1, "the void day is counted, not flagged");
  assert.equal(after.summary.checked_days, 6);
  assert.ok(after.notes.some((n) => n.includes(z) && n.includes("3 of 9 days")));
  assert.ok(after.notes.some((n) => n.includes("void")));
  // Reading the check wrote nothing: the energy is the import's, revisions unchanged.
  assert.equal(await revisions(), revisionsBefore);
  const energyAfter = await energyDays(store, start, v);
  assert.deepEqual(
    energyAfter.filter((d) => d.business_date !== z && d.business_date !== v),
    energyBefore.filter((d) => d.business_date !== z && d.business_date !== v),
  );

  // The evidence of any list of days, judged with days the caller made (Z as it was before the
  // import), gives the verdicts of the range for those days.
  const asBefore = asInput(energyBefore).filter((d) => [p, z, g].includes(d.date));
  const picked = checkQuality(asBefore, await repoEvidence(store.scope_id, [g, p, z]));
  assert.deepEqual(picked.verdicts, [
    "POSITIVE_WHILE_ALL_OFFLINE",
    "AGREES",
    "NO_DATA_WHILE_ONLINE",
  ]);
  const alone = checkQuality(
    asInput(energyAfter).filter((d) => d.date === z),
    await repoEvidence(store.scope_id, [z]),
  );
  assert.deepEqual(alone.verdicts, ["ZERO_WHILE_ONLINE"]);
  const described = describeQuality(
    checkQuality(
      asInput(energyAfter),
      await repoEvidence(store.scope_id, energyAfter.map((d) => d.business_date)),
    ),
  );
  assert.deepEqual(described, after.notes);

  // The metrics answer of the range names the flagged days in its notes and has the contract's
  // fields only (every response schema rejects unknown fields); a range without a flagged day is
  // answered without a quality note.
  const metricsOf = async (from: string, to: string, language = "en") => {
    const answer = await app.call(
      "GET",
      `/api/v1/stores/${store.id}/metrics?scope_id=${store.scope_id}&start=${from}&end=${to}`,
      { key: reader.key, headers: { "accept-language": language } },
    );
    assert.equal(answer.status, 200);
    return answer.body as {
      availability: Array<{ metric: string; reasons: Array<string> }>;
      notes: Array<string>;
    };
  };
  const CONTRACT_FIELDS = [
    "availability",
    "baseline_policy",
    "baseline_usage",
    "days",
    "end",
    "notes",
    "rule_version",
    "scope_id",
    "start",
    "store_id",
    "summary",
    "tev_warning_ratio",
    "timezone",
    "unit",
  ];
  const METRICS = ["actual", "eba", "aes", "aer", "tes", "tes_180", "tes_210", "tev"];
  const flaggedMetrics = await metricsOf(start, v);
  assert.deepEqual(Object.keys(flaggedMetrics).sort(), CONTRACT_FIELDS);
  assert.deepEqual(flaggedMetrics.availability.map((a) => a.metric), METRICS);
  for (const note of after.notes) assert.ok(flaggedMetrics.notes.includes(note), note);
  const zh = await metricsOf(start, v, "zh-CN");
  assert.deepEqual(Object.keys(zh).sort(), CONTRACT_FIELDS);
  assert.ok(zh.notes.some((n) => n.startsWith("数据质量：") && n.includes(z)));
  const quiet = after.flags.length === 0 ? start : addDays(p, 1);
  const quietMetrics = await metricsOf(quiet, quiet);
  if ((await qualityOk(store, quiet, quiet)).flags.length === 0) {
    assert.deepEqual(Object.keys(quietMetrics).sort(), CONTRACT_FIELDS);
    assert.deepEqual(quietMetrics.availability.map((a) => a.metric), METRICS);
    assert.ok(!quietMetrics.notes.some((n) => n.startsWith("Data quality")));
  }
});

Deno.test("http: evidence is fetched for any list of days, and refuses a span beyond 731 days", async () => {
  const end = snapshot.dataset.end;
  const first = addDays(end, -400);
  // Two events of one device in one second, the later one first by id: reports are ordered to
  // the second, then by id, in the fetch as in the rules.
  const store = stores.find((s) => withDevices.has(s.id))!;
  const device = snapshot.devices.find((d) => d.store_id === store.id)!;
  const next =
    (await sql((s) =>
      s<{ id: number }>`SELECT coalesce(max(id), 0)::int AS id FROM device_events`
    ))[0].id;
  const second = `${addDays(end, -61)}T23:59:59`;
  for (
    const [id, type, at] of [
      [next + 1, "ONLINE", `${second}.700+08:00`],
      [next + 2, "OFFLINE", `${second}.200+08:00`],
    ]
  ) {
    await sql((s) =>
      s`INSERT INTO device_events (id, store_id, device_id, event_type, occurred_at, note)
        VALUES (${id}, ${store.id}, ${device.id}, ${type}, ${at}::timestamptz, NULL)`
    );
  }
  const [tied] = await repoEvidence(store.scope_id, [addDays(end, -60)])
    .then((e) => e.reports.filter((r) => r.deviceId === device.id));
  assert.equal(tied.eventId, next + 2, "the last report before the day: the higher id");

  // Random lists of days (any order, gaps): the fetched evidence judges them as all reports do.
  for (const s of stores.filter((x) => withDevices.has(x.id))) {
    const full = await storeEvidence(s.id);
    const all = asInput(await energyDays(s, addDays(end, -365), end));
    const lists = fc.sample(
      fc.uniqueArray(fc.integer({ min: 0, max: all.length - 1 }), { minLength: 1, maxLength: 6 }),
      { numRuns: 15, seed: s.id },
    );
    // And lists that start on each day with a report (the span's first instant matters there).
    const beijingDay = (at: string) => new Date(Date.parse(at) + 8 * 3_600_000).toISOString();
    for (const r of full.reports) {
      const i = all.findIndex((d) => d.date === beijingDay(r.at).slice(0, 10));
      if (i >= 0) lists.push([i], [i, Math.min(i + 3, all.length - 1)]);
    }
    for (const picks of lists) {
      const days = picks.map((i) => all[i]);
      const evidence = await repoEvidence(s.scope_id, days.map((d) => d.date));
      assert.equal(evidence.timezone, "Asia/Shanghai");
      assert.equal(evidence.carryUntil, end);
      assert.deepEqual(evidence.devices, full.devices);
      for (const r of evidence.reports) {
        assert.ok(full.reports.some((x) => JSON.stringify(x) === JSON.stringify(r)));
      }
      assert.deepEqual(
        checkQuality(days, evidence),
        checkQuality(days, full),
        `store ${s.id}, ${days.map((d) => d.date).join(" ")}`,
      );
    }
  }
  const tooLong = await app.db.run(Effect.exit(
    Effect.flatMap(
      QualityRepo,
      (repo) => repo.evidence(store.scope_id, [first, addDays(first, 731)]),
    )
      .pipe(Effect.provide(QualityRepo.Default)),
  ));
  assert.ok(Exit.isFailure(tooLong));
  const longest = await repoEvidence(store.scope_id, [first, addDays(first, 730)]);
  assert.equal(longest.devices.length > 0, true);
  const empty = await repoEvidence(store.scope_id, []);
  assert.deepEqual(empty.reports, []);
  // Only the span counts: days in any order, some twice, read what their first and last day read.
  const mixed = [addDays(first, 40), first, addDays(first, 90), addDays(first, 40)];
  assert.deepEqual(
    await repoEvidence(store.scope_id, mixed),
    await repoEvidence(store.scope_id, [first, addDays(first, 90)]),
  );
});

Deno.test("http: the energy read's refusals, in the same order", async () => {
  const store = stores[0];
  const other = stores[1];
  const limited = await app.key(["read"], { stores: [store.id] });
  const noRead = await app.key(["write"]);
  const end = snapshot.dataset.end;
  const cases: Array<[string, string | undefined, string, number, string | undefined]> = [
    [
      "no credential",
      undefined,
      `${store.id}?scope_id=${store.scope_id}&start=${end}&end=${end}`,
      401,
      "MISSING_CREDENTIAL",
    ],
    [
      "a bad key",
      "not-a-key",
      `${store.id}?scope_id=${store.scope_id}&start=${end}&end=${end}`,
      401,
      "INVALID_CREDENTIAL",
    ],
    [
      "no read permission",
      noRead.key,
      `${store.id}?scope_id=${store.scope_id}&start=${end}&end=${end}`,
      403,
      "PERMISSION_MISSING",
    ],
    [
      "no read, unknown store",
      noRead.key,
      `424242?scope_id=1&start=${end}&end=${end}`,
      403,
      "PERMISSION_MISSING",
    ],
    ["unknown store", reader.key, `424242?scope_id=1&start=${end}&end=${end}`, 404, "NOT_FOUND"],
    [
      "outside the key's stores",
      limited.key,
      `${other.id}?scope_id=${other.scope_id}&start=${end}&end=${end}`,
      403,
      "STORE_FORBIDDEN",
    ],
    [
      "outside the key's stores, bad range",
      limited.key,
      `${other.id}?scope_id=${other.scope_id}&start=${end}&end=2020-01-01`,
      403,
      "STORE_FORBIDDEN",
    ],
    [
      "another store's scope",
      reader.key,
      `${store.id}?scope_id=${other.scope_id}&start=${end}&end=${end}`,
      400,
      "INVALID_SCOPE",
    ],
    [
      "another store's scope, bad range",
      reader.key,
      `${store.id}?scope_id=${other.scope_id}&start=${end}&end=2020-01-01`,
      400,
      "INVALID_SCOPE",
    ],
    [
      "start after end",
      reader.key,
      `${store.id}?scope_id=${store.scope_id}&start=${end}&end=${addDays(end, -1)}`,
      400,
      "INVALID_RANGE",
    ],
    [
      "367 days",
      reader.key,
      `${store.id}?scope_id=${store.scope_id}&start=${addDays(end, -366)}&end=${end}`,
      400,
      "RANGE_TOO_LONG",
    ],
    [
      "not a date",
      reader.key,
      `${store.id}?scope_id=${store.scope_id}&start=2026-02-30&end=${end}`,
      400,
      "INVALID_REQUEST",
    ],
    ["no scope_id", reader.key, `${store.id}?start=${end}&end=${end}`, 400, "INVALID_REQUEST"],
    [
      "a long scope_id",
      reader.key,
      `${store.id}?scope_id=${"9".repeat(400)}&start=${end}&end=${end}`,
      400,
      "INVALID_REQUEST",
    ],
    [
      "a store id of 0",
      reader.key,
      `0?scope_id=${store.scope_id}&start=${end}&end=${end}`,
      400,
      "INVALID_REQUEST",
    ],
    [
      "366 days",
      reader.key,
      `${store.id}?scope_id=${store.scope_id}&start=${addDays(end, -365)}&end=${end}`,
      200,
      undefined,
    ],
    [
      "the key's own store",
      limited.key,
      `${store.id}?scope_id=${store.scope_id}&start=${end}&end=${end}`,
      200,
      undefined,
    ],
  ];
  for (const [what, key, query, status, code] of cases) {
    const path = (kind: string) => `/api/v1/stores/${query.replace("?", `/${kind}?`)}`;
    const got = await app.call("GET", path("quality"), { key });
    const energy = await app.call("GET", path("energy"), { key });
    assert.equal(got.status, status, `${what}: ${JSON.stringify(got.body)}`);
    assert.equal(energy.status, status, `${what}: the energy read answers the same`);
    if (code !== undefined) {
      assertErrorBody(got, status, code);
      assert.equal(got.body.error.code, energy.body.error.code, what);
      assert.ok(got.body.error.message.length < 200, `${what}: a short message`);
      assert.ok(!got.body.error.message.includes("9".repeat(50)), `${what}: nothing long echoed`);
    }
  }
});

Deno.test({
  name: "close the test app",
  fn: () => app.close(),
  sanitizeOps: false,
  sanitizeResources: false,
});
