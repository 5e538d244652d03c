// Bytes columns (src/db/bytes_columns.ts): a text column named for it reads as its UTF-8 bytes on
// either database, every other column as before; on PostgreSQL the reader that splits the socket's
// bytes into messages gives pg what its own parser gives, however the bytes arrive.
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { EventEmitter } from "node:events";
import { SqlClient } from "@effect/sql";
import { Effect, FastCheck as fc } from "effect";
import { parse } from "pg-protocol";
import { BytesReader } from "../src/db/pg_bytes.ts";
import { makeTestDatabase } from "./db.ts";
import { concat } from "./import_zip_fixtures.ts";

const utf8 = new TextEncoder();

// A backend message: its code, its length, its body.
const message = (code: string, body: Uint8Array) => {
  const out = new Uint8Array(5 + body.byteLength);
  out[0] = code.charCodeAt(0);
  new DataView(out.buffer).setInt32(1, 4 + body.byteLength);
  out.set(body, 5);
  return out;
};

const int16 = (n: number) => new Uint8Array([(n >> 8) & 0xff, n & 0xff]);
const int32 = (n: number) => {
  const b = new Uint8Array(4);
  new DataView(b.buffer).setInt32(0, n);
  return b;
};

// A RowDescription of columns (name, type oid), all in text format.
const rowDescription = (columns: ReadonlyArray<readonly [string, number]>) =>
  message(
    "T",
    concat([
      int16(columns.length),
      ...columns.flatMap(([name, type]) => [
        utf8.encode(name),
        new Uint8Array([0]),
        int32(0),
        int16(0),
        int32(type),
        int16(-1),
        int32(-1),
        int16(0),
      ]),
    ]),
  );

const dataRow = (values: ReadonlyArray<string | null>) =>
  message(
    "D",
    concat([
      int16(values.length),
      ...values.flatMap((v) => {
        if (v === null) return [int32(-1)];
        const b = utf8.encode(v);
        return [int32(b.byteLength), b];
      }),
    ]),
  );

const commandComplete = (tag: string) => message("C", utf8.encode(`${tag}\0`));
const readyForQuery = message("Z", new Uint8Array([0x49]));

interface Seen {
  readonly name: string;
  readonly fields?: ReadonlyArray<unknown>;
}

// What pg-protocol's own parser gives for the stream, and what the reader gives for it in `cuts`.
const parsedByPg = async (bytes: Uint8Array): Promise<Array<Seen>> => {
  const seen: Array<Seen> = [];
  const stream = new EventEmitter();
  const done = parse(stream as never, (m) => seen.push(m as unknown as Seen));
  stream.emit("data", Buffer.from(bytes));
  stream.emit("end");
  await done;
  return seen;
};

const readInPieces = (bytes: Uint8Array, cuts: ReadonlyArray<number>): Array<Seen> => {
  const seen: Array<Seen> = [];
  const reader = new BytesReader((m) => seen.push(m as Seen), true);
  let from = 0;
  for (const cut of [...cuts, bytes.byteLength]) {
    // Each read a Buffer that is overwritten afterwards, as the service's socket lends its reads.
    const chunk = Buffer.from(bytes.slice(from, cut).buffer);
    reader.read(chunk);
    chunk.fill(0);
    from = cut;
  }
  return seen;
};

const TEXT = 25;
const INT4 = 23;

const stream = concat([
  rowDescription([["n", INT4], ["part_utf8", TEXT], ["label", TEXT], ["count_utf8", INT4]]),
  dataRow(["1", '{"name" : "門店 A"}', "é", "7"]),
  dataRow(["2", null, null, null]),
  dataRow(["3", "", "", "0"]),
  dataRow(["4", "x".repeat(70_000) + "電", "plain", "9"]),
  commandComplete("SELECT 4"),
  // A later result without bytes columns reads as pg reads it.
  rowDescription([["part", TEXT]]),
  dataRow(["門店"]),
  commandComplete("SELECT 1"),
  readyForQuery,
  // pg's parser keeps a COPY's data as a view of what it was given.
  message("d", utf8.encode("copy data 門店")),
]);

Deno.test("the reader gives pg's messages, a bytes column's value as its bytes, however the bytes arrive", async () => {
  const expected = await parsedByPg(stream);
  const bytesAt = (row: number) => expected[row].fields![1] as string | null;
  const check = (seen: ReadonlyArray<Seen>) => {
    assert.equal(seen.length, expected.length);
    seen.forEach((m, i) => {
      assert.equal(m.name, expected[i].name);
      // Rows 1 to 4 of the first result: the bytes column as bytes, the rest as pg's strings.
      if (i >= 1 && i <= 4) {
        const fields = [...m.fields!];
        const text = bytesAt(i);
        assert.deepEqual(fields[1], text === null ? null : utf8.encode(text));
        fields[1] = text;
        assert.deepEqual(fields, expected[i].fields);
      } else {
        assert.deepEqual(
          JSON.parse(JSON.stringify(m)),
          JSON.parse(JSON.stringify(expected[i])),
        );
      }
    });
  };
  check(readInPieces(stream, []));
  // Every single cut among the first bytes, then cuts anywhere.
  for (let cut = 1; cut < 400; cut++) check(readInPieces(stream, [cut]));
  fc.assert(
    fc.property(
      fc.uniqueArray(fc.integer({ min: 1, max: stream.byteLength - 1 }), { maxLength: 40 }),
      (cuts) => check(readInPieces(stream, [...cuts].sort((a, b) => a - b))),
    ),
    { numRuns: 200 },
  );
});

Deno.test("a text column named for it reads as its UTF-8 bytes, any other as before", async () => {
  const db = await makeTestDatabase({ migrate: false });
  try {
    const rows = await db.run(
      Effect.flatMap(SqlClient.SqlClient, (sql) =>
        sql<Record<string, unknown>>`
        SELECT '{"門店" : "é"}'::text AS part_utf8, '門店'::text AS name, NULL::text AS none_utf8,
          ''::text AS empty_utf8, 5 AS n_utf8, repeat('電力', 40000) AS big_utf8
        FROM generate_series(1, 3)`),
    );
    assert.equal(rows.length, 3);
    for (const row of rows) {
      assert.deepEqual(row.part_utf8, utf8.encode('{"門店" : "é"}'));
      assert.equal(row.name, "門店");
      assert.equal(row.none_utf8, null);
      assert.deepEqual(row.empty_utf8, new Uint8Array(0));
      // Only text columns: an integer reads as a number whatever its name.
      assert.equal(row.n_utf8, 5);
      assert.deepEqual(row.big_utf8, utf8.encode("電力".repeat(40000)));
    }
  } finally {
    await db.close();
  }
});
