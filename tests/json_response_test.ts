// JSON answers made of parts: the bytes are the UTF-8 of the parts joined, whatever they hold.
import assert from "node:assert/strict";
import { FastCheck } from "effect";
import { encodeParts } from "../src/api/json_response.ts";

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
