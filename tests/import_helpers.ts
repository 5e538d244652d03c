// Helpers shared by the import tests: SQL against the test database, table counts, the store list,
// a committed one-value correction.
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { SqlClient } from "@effect/sql";
import { Effect } from "effect";
import type { TestApp } from "./helpers.ts";

export const sqlOf =
  (app: TestApp) => <A>(f: (sql: SqlClient.SqlClient) => Effect.Effect<A, unknown>) =>
    app.db.run(Effect.flatMap(SqlClient.SqlClient, f));

export interface Counts {
  readonly files: number;
  readonly batches: number;
  readonly rows: number;
  readonly revisions: number;
  readonly days: number;
}

// Rows of the tables an import writes: a refused request must leave every count as it was.
export const countsOf = (app: TestApp) => (): Promise<Counts> =>
  sqlOf(app)((s) =>
    s<Counts>`
      SELECT (SELECT count(*) FROM source_files)::int AS files,
        (SELECT count(*) FROM import_batches)::int AS batches,
        (SELECT count(*) FROM import_rows)::int AS rows,
        (SELECT count(*) FROM energy_revisions)::int AS revisions,
        (SELECT count(*) FROM energy_days)::int AS days`
  ).then((rows) => rows[0]);

export interface StoreInfo {
  readonly id: number;
  readonly name: string;
  readonly brand_name: string;
  readonly scope_id: number;
}

export const storesOf = async (app: TestApp, key: string) =>
  (await app.call("GET", "/api/v1/stores", { key })).body.stores as StoreInfo[];

export const b64 = (content: string | Uint8Array) =>
  typeof content === "string"
    ? Buffer.from(content, "utf8").toString("base64")
    : Buffer.from(content).toString("base64");

// Previews and commits a one-value CSV that sets `store`'s energy on `day` to `kwh`.
export const commitDay = async (
  app: TestApp,
  key: string,
  store: Pick<StoreInfo, "brand_name" | "name">,
  day: string,
  kwh: string,
) => {
  const file = `品牌,门店,日期,日能耗\r\n${store.brand_name},${store.name},${day},${kwh}\r\n`;
  const preview = await app.call("POST", "/api/v1/imports/preview", {
    key,
    headers: { "idempotency-key": crypto.randomUUID() },
    body: { filename: "day.csv", content_base64: b64(file), reason: "meter fix" },
  });
  assert.equal(preview.status, 200, JSON.stringify(preview.body));
  const commit = await app.call("POST", `/api/v1/imports/${preview.body.id}/commit`, {
    key,
    headers: { "idempotency-key": crypto.randomUUID() },
    body: {},
  });
  assert.equal(commit.status, 200, JSON.stringify(commit.body));
};
