// A DailyRow's JSON text (day_sql.ts rowJsonOf, one format() call) is, byte for byte, what
// json_build_object writes for the same values: the stored month chunks and every read are made of
// it, and answers must not change by a byte whatever a day's note or reference holds.
import assert from "node:assert/strict";
import { Effect, FastCheck as fc } from "effect";
import * as SqlClient from "@effect/sql/SqlClient";
import { rowJsonOf } from "../src/energy/day_sql.ts";
import { fixed4 } from "../src/db/sql_text.ts";
import { makeTestDatabase } from "./db.ts";

const db = await makeTestDatabase({ migrate: false });

// The values of one day as a relation `d` reads them from json_to_recordset.
const COLUMNS = `d(business_date date, id int, served numeric, status text, kind text,
  quality_status text, quality_note text, revision_no int, import_row_id int,
  source_reference jsonb)`;

const parts = {
  date: "d.business_date",
  id: "d.id",
  served: "d.served",
  status: "d.status",
  kind: "d.kind",
  qualityStatus: "d.quality_status",
  qualityNote: "d.quality_note",
  revisionNo: "d.revision_no",
  importRowId: "d.import_row_id",
  sourceReference: "d.source_reference",
};

// The contract's field order written by json_build_object: the text the reads sent before.
const LABEL =
  `CASE WHEN d.status = 'VOID' THEN 'Voided day' WHEN d.status = 'NO_DATA' THEN 'No data'
  WHEN d.kind = 'CLEANED' THEN 'Cleaned value'
  WHEN d.kind = 'MANUAL_UPLOAD' THEN 'Cleaned value (manual upload)'
  ELSE 'Sealed legacy value' END`;
const reference = `json_build_object('business_date', (d.business_date)::text, 'energy_id', d.id,
  'energy_kwh', ${fixed4("d.served")}, 'status', d.status, 'source_kind', d.kind,
  'source_label', ${LABEL}, 'quality_status', d.quality_status, 'quality_note', d.quality_note,
  'revision_no', d.revision_no, 'import_row_id', d.import_row_id,
  'source_reference', d.source_reference)::text`;

const compare = (days: ReadonlyArray<Record<string, unknown>>) =>
  db.run(Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql.unsafe<{ ours: string; theirs: string }>(
      `SELECT ${rowJsonOf(parts)} AS ours, ${reference} AS theirs
       FROM json_to_recordset($1::json) AS ${COLUMNS}`,
      [JSON.stringify(days)],
    )));

// Text with what JSON must escape: quotes, backslashes, control characters, and beyond ASCII.
const text = fc.option(
  fc.string({
    unit: fc.oneof(
      fc.constantFrom('"', "\\", "\n", "\t", "\u0001", "\u001f", "/", "電", "😀", "'", "%s"),
      fc.string({ minLength: 1, maxLength: 1 }),
    ),
    maxLength: 12,
  }),
  { nil: null },
);

const day = fc.record({
  business_date: fc.integer({ min: 0, max: 20_000 }).map((n) =>
    new Date(Date.UTC(2000, 0, 1) + n * 86_400_000).toISOString().slice(0, 10)
  ),
  id: fc.option(fc.integer({ min: 1, max: 2 ** 31 - 1 }), { nil: null }),
  served: fc.option(
    fc.tuple(fc.bigInt({ min: 0n, max: 10n ** 12n }), fc.integer({ min: 0, max: 6 })).map((
      [units, scale],
    ) => {
      const digits = units.toString().padStart(scale + 1, "0");
      return scale === 0 ? digits : `${digits.slice(0, -scale)}.${digits.slice(-scale)}`;
    }),
    { nil: null },
  ),
  status: fc.constantFrom("AVAILABLE", "NO_DATA", "VOID"),
  kind: fc.constantFrom("CLEANED", "LEGACY_DIRECT", "MANUAL_UPLOAD", null),
  quality_status: text,
  quality_note: text,
  revision_no: fc.option(fc.integer({ min: 1, max: 10_000 }), { nil: null }),
  import_row_id: fc.option(fc.integer({ min: 1, max: 2 ** 31 - 1 }), { nil: null }),
  source_reference: fc.option(
    fc.dictionary(fc.string({ maxLength: 6 }), fc.oneof(text, fc.integer(), fc.boolean()), {
      maxKeys: 3,
    }),
    { nil: null },
  ),
});

Deno.test("a DailyRow's text is json_build_object's for any day's values", async () => {
  await fc.assert(
    fc.asyncProperty(fc.array(day, { minLength: 1, maxLength: 40 }), async (days) => {
      const rows = await compare(days);
      assert.equal(rows.length, days.length);
      for (const row of rows) assert.equal(row.ours, row.theirs);
    }),
    { numRuns: 60 },
  );
});

Deno.test("a day without a fact and one with every value set read as before", async () => {
  const [empty, full] = await compare([
    { business_date: "2026-03-01", status: "NO_DATA" },
    {
      business_date: "2026-03-02",
      id: 7,
      served: "12.34567",
      status: "AVAILABLE",
      kind: "MANUAL_UPLOAD",
      quality_status: "REVIEWED",
      quality_note: 'meter "A"\\reset',
      revision_no: 3,
      import_row_id: 99,
      source_reference: { file: "x.csv", row: 4 },
    },
  ]);
  assert.equal(empty.ours, empty.theirs);
  assert.equal(
    full.ours,
    '{"business_date" : "2026-03-02", "energy_id" : 7, "energy_kwh" : "12.3457", ' +
      '"status" : "AVAILABLE", "source_kind" : "MANUAL_UPLOAD", ' +
      '"source_label" : "Cleaned value (manual upload)", "quality_status" : "REVIEWED", ' +
      '"quality_note" : "meter \\"A\\"\\\\reset", "revision_no" : 3, "import_row_id" : 99, ' +
      '"source_reference" : {"row": 4, "file": "x.csv"}}',
  );
});

Deno.test("close the database", () => db.close());
