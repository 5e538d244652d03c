// JSON answers made of parts: the bytes are the UTF-8 of the parts joined, whatever they hold.
import assert from "node:assert/strict";
import { Cause, Chunk, Effect, Exit, FastCheck, Stream } from "effect";
import type { JsonText } from "../src/domain/answers.ts";
import { chunkedJson, encodeParts, jsonStream } from "../src/api/json_response.ts";
import { concat } from "./import_zip_fixtures.ts";

const utf8 = (parts: ReadonlyArray<string>) => new TextEncoder().encode(parts.join(""));

Deno.test("parts are encoded as the UTF-8 of their text, ASCII or not", () => {
  FastCheck.assert(
    FastCheck.property(
      FastCheck.array(
        FastCheck.oneof(
          FastCheck.string({ maxLength: 40 }),
          FastCheck.string({ unit: "grapheme", maxLength: 20 }),
          FastCheck.string({ unit: "binary", maxLength: 20 }),
        ),
        { maxLength: 12 },
      ),
      (parts) => {
        assert.deepEqual(encodeParts(parts), utf8(parts));
      },
    ),
    { numRuns: 500 },
  );
  for (
    const parts of [
      [],
      [""],
      ["😀"],
      ["a", "中文", "b"],
      ["x".repeat(9), "é", "y".repeat(9)],
      // A surrogate pair split between two parts, and lone halves.
      ["a\ud83d", "\ude00b"],
      ["\ud83d", "", "\ude00"],
      ["\ud83d"],
      ["x\ud83d", "y"],
    ]
  ) {
    assert.deepEqual(encodeParts(parts), utf8(parts), JSON.stringify(parts));
  }
});

Deno.test("an answer written in groups of its array's items is the UTF-8 of its JSON text", () => {
  const item = FastCheck.oneof(
    FastCheck.jsonValue({ maxDepth: 2 }),
    FastCheck.string({ unit: "binary", maxLength: 8 }),
  );
  FastCheck.assert(
    FastCheck.property(
      FastCheck.dictionary(
        FastCheck.string({ maxLength: 6 }),
        FastCheck.jsonValue({ maxDepth: 2 }),
      ),
      FastCheck.array(item, { maxLength: 40 }),
      FastCheck.boolean(),
      FastCheck.integer({ min: 1, max: 12 }),
      (fields, items, last, size) => {
        const { days: _, ...rest } = fields;
        const value = last ? { ...rest, days: items } : { days: items, ...rest };
        assert.deepEqual(
          encodeParts(chunkedJson(value, "days", size)),
          new TextEncoder().encode(JSON.stringify(value)),
        );
      },
    ),
    { numRuns: 500 },
  );
});

// A part given as bytes (as the database sends stored JSON) stands for its text: a part made of whole
// characters, so a lone half of a surrogate pair before it is written as the joined text of the
// strings alone would write it.
Deno.test("parts given as UTF-8 bytes go in as they are, between parts given as text", () => {
  const encoder = new TextEncoder();
  const expected = (parts: ReadonlyArray<string | Uint8Array>) => {
    const chunks: Array<Uint8Array> = [];
    let text = "";
    for (const part of parts) {
      if (typeof part === "string") {
        text += part;
        continue;
      }
      chunks.push(encoder.encode(text), part);
      text = "";
    }
    chunks.push(encoder.encode(text));
    return concat(chunks);
  };
  const text = FastCheck.oneof(
    FastCheck.string({ maxLength: 30 }),
    FastCheck.string({ unit: "grapheme", maxLength: 10 }),
    FastCheck.string({ unit: "binary", maxLength: 10 }),
  );
  FastCheck.assert(
    FastCheck.property(
      FastCheck.array(
        FastCheck.oneof(text, text.map((t) => encoder.encode(t.replace(/[\ud800-\udfff]/g, "?")))),
        { maxLength: 12 },
      ),
      (parts) => {
        assert.deepEqual(encodeParts(parts), expected(parts));
      },
    ),
    { numRuns: 500 },
  );
  // A year of month parts in bytes, larger than the first guess of the size.
  const month = encoder.encode('{"store" : "門店 A", "kwh" : "1.0000"}, '.repeat(31));
  const parts = ['{"days":[', ...Array.from({ length: 13 }, () => month), "]}"];
  assert.deepEqual(encodeParts(parts), expected(parts));
});

Deno.test("a streamed JSON answer is the parts joined, and is sent once: its source is not kept to send again", async () => {
  const response = jsonStream("[", Stream.make("1", "2", "3") as Stream.Stream<JsonText>, "]");
  assert.equal(response.body._tag, "Stream");
  if (response.body._tag !== "Stream") return;
  const sent = await Effect.runPromise(Stream.runCollect(response.body.stream));
  const decoder = new TextDecoder();
  assert.equal(Chunk.toArray(sent).map((bytes) => decoder.decode(bytes)).join(""), "[1, 2, 3]");
  const again = await Effect.runPromiseExit(Stream.runCollect(response.body.stream));
  assert.ok(Exit.isFailure(again) && Cause.isDie(again.cause));
});
