// How quickly crafted files are refused: a decoy archive in front of a bomb and a row numbered a
// billion cost the service no more than a moment (the refusals themselves are tested in
// tests/import_readers_test.ts and tests/import_zip_test.ts). Wall-clock bounds: run on its own
// by `deno task test:timing`, not in the parallel suite.
import assert from "node:assert/strict";
import { Effect, Either } from "effect";
import { readImportFile } from "../../src/imports/readers.ts";
import { readZip } from "../../src/imports/zip.ts";
import { decoyBomb, handXlsx, inlineCell, sheetXml } from "../import_zip_fixtures.ts";

const refusedWithin = async (bytes: Uint8Array, ms: number) => {
  const started = performance.now();
  const result = await Effect.runPromise(
    Effect.either(readImportFile("upload.xlsx", bytes, { datasetEnd: "2026-08-31" })),
  );
  const took = performance.now() - started;
  assert.ok(Either.isLeft(result), "the file was read");
  assert.ok(took < ms, `refused after ${Math.round(took)} ms`);
};

Deno.test("a workbook behind a decoy of a 200 MB bomb is refused within a second", async () => {
  await refusedWithin(decoyBomb(200 * 1024 * 1024, 8), 1_000);
});

Deno.test("a row numbered a billion is refused within a second", async () => {
  const header = `<row r="1">${inlineCell("A1", "门店名称")}${
    inlineCell("B1", "2026-07-09")
  }</row>`;
  const hugeRow = handXlsx([{
    name: "A",
    xml: sheetXml(header + `<row r="1000000000">${inlineCell("A1000000000", "店1")}</row>`),
  }]);
  await refusedWithin(hugeRow, 1_000);
});

Deno.test("the ZIP reader refuses a decoy of 64 MB of blanks within two seconds", () => {
  const started = performance.now();
  const bomb = decoyBomb(64 * 1024 * 1024, 8);
  const problem = readZip(
    bomb,
    { maxEntries: 50, maxUnpackedBytes: 256 << 20 },
    () => undefined,
  )?.en;
  assert.match(problem ?? "", /not where the archive declares it/);
  assert.ok(performance.now() - started < 2_000);
});
