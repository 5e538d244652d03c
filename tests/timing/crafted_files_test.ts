// How quickly crafted files are refused: a decoy archive in front of a bomb and a row numbered a
// billion cost the service no more than a moment (the refusals themselves are tested in
// tests/import_readers_test.ts and tests/import_zip_test.ts). Wall-clock bounds: run on its own
// by `deno task test:timing`, not in the parallel suite.
import assert from "node:assert/strict";
import { Effect, Either } from "effect";
import { readImportFile } from "../../src/imports/readers.ts";
import { readZip } from "../../src/imports/zip.ts";
import { decoyBomb, handXlsx, inlineCell, sheetXml } from "../import_zip_fixtures.ts";

const readWithin = async (bytes: Uint8Array, ms: number) => {
  const started = performance.now();
  const result = await Effect.runPromise(
    Effect.either(readImportFile("upload.xlsx", bytes, { datasetEnd: "2026-08-31" })),
  );
  const took = performance.now() - started;
  assert.ok(took < ms, `answered after ${Math.round(took)} ms`);
  return result;
};

const refusedWithin = async (bytes: Uint8Array, ms: number) => {
  assert.ok(Either.isLeft(await readWithin(bytes, ms)), "the file was read");
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

Deno.test("cells that never close, or stand in a comment, cost the check of misread cells one pass", async () => {
  const header = `<row r="1">${inlineCell("A1", "门店名称")}${
    inlineCell("B1", "2026-07-09")
  }</row><row r="2">${inlineCell("A2", "店1")}<c r="B2"><f>1+1</f><v>2</v></c></row>`;
  const sheets = [
    // Accepted: a comment full of cell tags, and 4 MB of blanks after the sheet's data.
    sheetXml(header, " ".repeat(4_000_000), "<!--" + "<c>".repeat(16_000) + "-->"),
    // Refused: cells that never close, then 12 MB of blanks.
    sheetXml(header + `<c r="B2"></x>`.repeat(16_000) + " ".repeat(12_000_000)),
    // Refused: a cell of 12 MB of blanks around its value and a stray letter.
    sheetXml(
      header +
        `<row r="3"><c r="B3">${" ".repeat(6_000_000)}<v>1</v>${" ".repeat(6_000_000)}x</c></row>`,
    ),
  ];
  for (const xml of sheets) await readWithin(handXlsx([{ name: "A", xml }]), 3_000);
});
