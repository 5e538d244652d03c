// Bytes given to a statement: a page of rows goes as its JSON's UTF-8 bytes (the same text as
// JSON.stringify), a json parameter given as bytes reads as that text on either database, handed-over
// bytes move to the embedded database's worker while any other bytes are copied, a statement with
// large values answers as PGlite's own query does, and a preview's lookups of current days are cut
// into pages that cover exactly the days asked for.
import assert from "node:assert/strict";
import { SqlClient } from "@effect/sql";
import { Effect, FastCheck as fc } from "effect";
import { addDays, dayIndex } from "../src/domain/range.ts";
import { PGlite } from "@electric-sql/pglite";
import { handOver, startPgliteWorker } from "../src/db/pglite_worker.ts";
import { dayRanges, jsonArrayBytes, rangePages } from "../src/imports/import_repo.ts";
import { makeTestDatabase } from "./db.ts";

const utf8 = new TextEncoder();

const jsonValue = fc.oneof(
  fc.string(),
  fc.string({ unit: "grapheme" }),
  fc.constantFrom("品牌", '门店 "A"', "\\", "\n\t", "😀", "\u2028"),
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.boolean(),
  fc.constant(null),
);
const row = fc.dictionary(fc.string({ maxLength: 8 }), jsonValue, { maxKeys: 6 });

Deno.test("a page's bytes are the UTF-8 of its JSON text, in a buffer of their own", () => {
  fc.assert(
    fc.property(fc.array(row, { maxLength: 20 }), (rows) => {
      const bytes = jsonArrayBytes(rows);
      assert.deepStrictEqual(bytes, utf8.encode(JSON.stringify(rows)));
      assert.equal(bytes.byteOffset, 0);
      assert.equal(bytes.byteLength, bytes.buffer.byteLength);
    }),
    { numRuns: 300 },
  );
});

Deno.test("a json parameter given as bytes reads as its text", async () => {
  const db = await makeTestDatabase({ migrate: false });
  try {
    const rows = [{ n: 1, brand: "品牌", note: 'a "b"\n' }, { n: 2, brand: null, note: "😀" }];
    const found = await db.run(
      Effect.flatMap(
        SqlClient.SqlClient,
        (sql) =>
          sql<{ n: number; brand: string | null; note: string }>`
        SELECT i.n, i.brand, i.note
        FROM json_to_recordset(${handOver(jsonArrayBytes(rows))}::json)
          AS i(n int, brand text, note text)
        ORDER BY i.n`,
      ),
    );
    assert.deepStrictEqual(found.map((r) => ({ ...r })), rows);
  } finally {
    await db.close();
  }
});

Deno.test("handed-over bytes move to the worker; other bytes are copied", async () => {
  const worker = await startPgliteWorker(undefined, []);
  try {
    const text = JSON.stringify({ a: [1, "é"] });
    const ask = (bytes: Uint8Array) =>
      worker.query("SELECT $1::json AS j, length($2::bytea) AS n", [bytes, bytes]);

    const given = handOver(utf8.encode(text));
    assert.deepStrictEqual(await ask(given), [{ j: { a: [1, "é"] }, n: utf8.encode(text).length }]);
    assert.equal(given.byteLength, 0, "the handed-over view is left empty");

    const kept = utf8.encode(text);
    await ask(kept);
    assert.equal(kept.byteLength, utf8.encode(text).length, "bytes not handed over stay");

    // A view over part of a buffer is copied even when handed over: the rest is not the caller's to
    // give.
    const whole = utf8.encode(`  ${text}  `);
    const part = handOver(whole.subarray(2, whole.length - 2));
    assert.deepStrictEqual((await ask(part))[0], { j: { a: [1, "é"] }, n: part.length });
    assert.equal(whole.byteLength, utf8.encode(`  ${text}  `).length);
  } finally {
    await worker.close();
  }
});

Deno.test("a statement with large values answers, and fails, as PGlite's own query", async () => {
  // The worker binds large values itself; PGlite on this thread is the reference.
  const own = await PGlite.create();
  const handle = await startPgliteWorker(undefined, []);
  try {
    const file = new Uint8Array(300_000).map((_, i) => (i * 7) % 256);
    const rows = Array.from({ length: 3_000 }, (_, n) => ({ n, name: `门店 ${n}`, kwh: n / 8 }));
    const page = utf8.encode(JSON.stringify(rows));
    const sql = `SELECT length($1::bytea) AS size, md5($1::bytea) AS sum, $2::text AS label,
        $3::int8 AS big, $4::numeric AS dec, $5::date AS d, $6::int4[] AS a, $7::text AS none,
        (SELECT sum(i.kwh) FROM json_to_recordset($8::json) AS i(n int, name text, kwh numeric))
          AS total,
        (SELECT max(i.name) FROM json_to_recordset($8::json) AS i(n int, name text, kwh numeric))
          AS top`;
    const params = [
      file,
      'é "q"',
      10n ** 15n,
      "1.50",
      new Date(Date.UTC(2024, 1, 29)),
      [1, 2],
      null,
      page,
    ];
    const theirs = (await own.query(sql, [...params.slice(0, 7), JSON.stringify(rows)])).rows;
    assert.deepStrictEqual(await handle.query(sql, params), theirs);
    const [values] = await handle.values(sql, params);
    assert.deepStrictEqual(values, Object.values(theirs[0] as object));

    const failing = "SELECT $1::bytea AS b, 1 / $2::int AS x";
    const failureOf = async (run: Promise<unknown>) => {
      try {
        await run;
      } catch (error) {
        return error as Error & Record<string, unknown>;
      }
      assert.fail("expected the statement to fail");
    };
    const mine = await failureOf(handle.query(failing, [file, 0]));
    const their = await failureOf(own.query(failing, [file, 0]));
    for (const field of ["message", "code", "severity", "query", "queryOptions"]) {
      assert.deepStrictEqual(mine[field], their[field], field);
    }
    // Both go on after the error.
    assert.deepStrictEqual(await handle.query("SELECT 1 AS one", []), [{ one: 1 }]);
  } finally {
    await own.close();
    await handle.close();
  }
});

const key = fc.record({
  scopeId: fc.integer({ min: 1, max: 5 }),
  date: fc.integer({ min: 0, max: 1500 }).map((n) => addDays("2024-01-01", n)),
});

// Every day of a store that the ranges cover, as "scope date" texts.
const daysOf = (ranges: ReturnType<typeof dayRanges>) =>
  ranges.scopeIds.flatMap((scopeId, i) =>
    Array.from(
      { length: dayIndex(ranges.lasts[i]) - dayIndex(ranges.firsts[i]) + 1 },
      (_, d) => `${scopeId} ${addDays(ranges.firsts[i], d)}`,
    )
  );

Deno.test("the pages of a lookup cover exactly its ranges' days, each at most a page of days", () => {
  fc.assert(
    fc.property(
      fc.array(key, { maxLength: 400 }),
      fc.integer({ min: 1, max: 300 }),
      (keys, pageDays) => {
        const ranges = dayRanges(keys);
        const pages = rangePages(ranges, pageDays);
        const paged = pages.flatMap(daysOf);
        assert.deepStrictEqual(paged, daysOf(ranges));
        for (const page of pages) {
          assert.ok(page.scopeIds.length > 0);
          assert.ok(daysOf(page).length <= pageDays);
        }
        // Pages are full but the last.
        for (const page of pages.slice(0, -1)) assert.equal(daysOf(page).length, pageDays);
      },
    ),
    { numRuns: 300 },
  );
});
