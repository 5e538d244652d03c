// A snapshot reloaded while the service runs may give stores other metering scopes: from the next
// request on, a store is read through its new scopes only, whatever earlier requests read. A key
// limited to one store must never be served another store's days under its store's id.
import assert from "node:assert/strict";
import { Effect } from "effect";
import { generateSnapshot } from "../src/seed/generate.ts";
import { loadSnapshot } from "../src/seed/load.ts";
import { assertErrorBody, makeTestApp } from "./helpers.ts";

const snapshot = generateSnapshot({ stores: 3 });
const [one, two] = snapshot.stores;

// The same snapshot with the scopes of the first two stores exchanged, with all their records.
const other = new Map([[one.id, two.scope.id], [two.id, one.scope.id]]);
const follow = <T extends { readonly store_id: number; readonly scope_id: number }>(
  rows: ReadonlyArray<T>,
): Array<T> => rows.map((row) => ({ ...row, scope_id: other.get(row.store_id) ?? row.scope_id }));
const swapped: typeof snapshot = {
  ...snapshot,
  stores: snapshot.stores.map((store) => ({
    ...store,
    scope: { ...store.scope, id: other.get(store.id) ?? store.scope.id },
  })),
  target_periods: follow(snapshot.target_periods),
  tev_observations: follow(snapshot.tev_observations),
  energy: follow(snapshot.energy),
};

const app = await makeTestApp((db) =>
  db.run(Effect.asVoid(loadSnapshot(snapshot, { reset: false })))
);
const limited = await app.key(["read"], { stores: [one.id] });
const end = snapshot.dataset.end;

Deno.test("after a reload that gives a store other scopes, its old scope is refused at once", async () => {
  const oldRange = `scope_id=${one.scope.id}&start=${end}&end=${end}`;
  const reads = [
    `/api/v1/stores/${one.id}/quality?${oldRange}`,
    `/api/v1/stores/${one.id}/energy?${oldRange}`,
    `/api/v1/stores/${one.id}/metrics?${oldRange}`,
    `/api/v1/stores/${one.id}/months?${oldRange}`,
  ];
  for (const path of reads) {
    const answer = await app.call("GET", path, { key: limited.key });
    assert.equal(answer.status, 200, `${path}: ${JSON.stringify(answer.body)}`);
  }

  await app.db.run(Effect.asVoid(loadSnapshot(swapped, { reset: true })));

  for (const path of reads) {
    assertErrorBody(await app.call("GET", path, { key: limited.key }), 400, "INVALID_SCOPE");
  }
  // Its new scope reads its own days.
  const energy = await app.call(
    "GET",
    `/api/v1/stores/${one.id}/energy?scope_id=${two.scope.id}&start=${end}&end=${end}`,
    { key: limited.key },
  );
  assert.equal(energy.status, 200, JSON.stringify(energy.body));
  assert.equal(energy.body.scope_id, two.scope.id);
});

Deno.test({
  name: "reload scope test app closes",
  sanitizeOps: false,
  sanitizeResources: false,
  fn: () => app.close(),
});
