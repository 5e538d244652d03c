// The store reference: every section from the sealed snapshot, strict schema, edit rights per caller.
import assert from "node:assert/strict";
import { Decimal } from "decimal.js";
import { Effect } from "effect";
import { addDays } from "../src/domain/range.ts";
import { StoreReference } from "../src/domain/stores.ts";
import { generateSnapshot } from "../src/seed/generate.ts";
import { loadSnapshot } from "../src/seed/load.ts";
import { assertErrorBody, assertSchema, makeTestApp } from "./helpers.ts";

const snapshot = generateSnapshot({ stores: 8 });
const app = await makeTestApp((db) =>
  db.run(Effect.asVoid(loadSnapshot(snapshot, { reset: false })))
);
const reader = await app.key(["read"]);
const writer = await app.key(["read", "write"]);

const reference = async (storeId: number, key = reader.key) =>
  assertSchema(
    StoreReference,
    (await app.call("GET", `/api/v1/stores/${storeId}/reference`, { key })).body,
  );

Deno.test("every store's reference matches the strict schema and its snapshot sections", async () => {
  for (const store of snapshot.stores) {
    const ref = await reference(store.id);
    assert.equal(ref.profile.id, store.id);
    assert.equal(ref.profile.name, store.name);
    assert.equal(ref.profile.address, store.address);
    assert.equal(ref.profile.version, 1);
    assert.deepEqual(ref.profile.business_hours, store.business_hours);
    assert.equal(ref.mode, "FROZEN_LEGACY_REFERENCE");
    assert.equal(ref.timestamp_timezone, "UTC");
    const devices = snapshot.devices.filter((d) => d.store_id === store.id).sort((a, b) =>
      a.id - b.id
    );
    assert.deepEqual(ref.devices.map((d) => d.id), devices.map((d) => d.id));
    for (const [i, d] of ref.devices.entries()) {
      assert.equal(d.device_name, devices[i].device_name, "a null name stays null, never inferred");
      assert.equal(d.material_code, devices[i].material_code);
      assert.equal(d.online_status, devices[i].online_status);
    }
    const history = snapshot.stage_history.filter((h) => h.store_id === store.id);
    assert.equal(ref.stage_history.length, history.length);
    const candidate = snapshot.target_candidates.find((c) => c.store_id === store.id);
    if (candidate === undefined) {
      assert.equal(ref.target_candidate, null);
      assert.ok(ref.unavailable.includes("target_candidate"));
    } else {
      assert.equal(
        ref.target_candidate?.tes_180_kwh,
        new Decimal(candidate.tes_180_kwh).toFixed(4),
      );
      assert.equal(ref.target_candidate?.status, candidate.status);
    }
    assert.equal(ref.strategy === null, !snapshot.strategies.some((s) => s.store_id === store.id));
    assert.equal(ref.device_events.coverage, "UNVERIFIED");
  }
});

Deno.test("device events cover the last 30 Beijing days of the dataset, with the offline count", async () => {
  const end = snapshot.dataset.end;
  const start = addDays(end, -29);
  const from = Date.parse(`${start}T00:00:00+08:00`);
  const to = Date.parse(`${addDays(end, 1)}T00:00:00+08:00`);
  let seen = 0;
  for (const store of snapshot.stores) {
    const ref = await reference(store.id);
    assert.equal(ref.device_events.start, start);
    assert.equal(ref.device_events.end, end);
    const expected = snapshot.device_events.filter((e) =>
      e.store_id === store.id && Date.parse(e.occurred_at) >= from && Date.parse(e.occurred_at) < to
    );
    assert.deepEqual(
      ref.device_events.events.map((e) => e.id).sort((a, b) => a - b),
      expected.map((e) => e.id).sort((a, b) => a - b),
    );
    assert.equal(
      ref.device_events.offline_count,
      expected.filter((e) => e.event_type === "OFFLINE").length,
    );
    seen += expected.length;
  }
  assert.ok(seen > 0, "the demo has recent device events");
});

Deno.test("can_edit_profile follows the caller's write right; editable fields are name and address", async () => {
  const store = snapshot.stores.find((s) => s.profile_editable)!;
  const asReader = await reference(store.id);
  assert.equal(asReader.can_edit_profile, false);
  assert.deepEqual(asReader.editable_fields, ["name", "address"]);
  assert.equal((await reference(store.id, writer.key)).can_edit_profile, true);
});

Deno.test("reference: 404 for an unknown store, 403 outside the key's stores", async () => {
  assertErrorBody(
    await app.call("GET", "/api/v1/stores/424242/reference", { key: reader.key }),
    404,
  );
  const scoped = await app.key(["read"], { stores: [snapshot.stores[0].id] });
  assertErrorBody(
    await app.call("GET", `/api/v1/stores/${snapshot.stores[1].id}/reference`, { key: scoped.key }),
    403,
  );
});

Deno.test({
  name: "close the test app",
  fn: () => app.close(),
  sanitizeOps: false,
  sanitizeResources: false,
});
