// The ZIP check: archives built byte by byte that JSZip would read differently, or inflate too far.
import assert from "node:assert/strict";
import ExcelJS from "exceljs";
import { FastCheck as fc } from "effect";
import { readZip, type ZipFile, type ZipLimits } from "../src/imports/zip.ts";
import {
  behindDecoy,
  buildZip,
  concat,
  decoyBomb,
  sheetXml,
  smallSheetRows,
  utf8,
  workbookEntries,
  type ZipEntrySpec,
} from "./import_zip_fixtures.ts";

const LIMITS: ZipLimits = { maxEntries: 50, maxUnpackedBytes: 1 << 20 };

const read = (bytes: Uint8Array, limits = LIMITS) => {
  const files: Array<ZipFile> = [];
  const problem = readZip(bytes, limits, (f) => {
    files.push({ name: f.name, data: Uint8Array.from(f.data) });
    return undefined;
  })?.en;
  return { problem, files };
};

const accepted = (bytes: Uint8Array): Array<ZipFile> => {
  const { problem, files } = read(bytes);
  assert.equal(problem, undefined);
  return files;
};

// Refused with a problem like `pattern`; `inflated` entries were handed over before the refusal.
const refused = (bytes: Uint8Array, pattern: RegExp, inflated = 0, limits = LIMITS) => {
  const { problem, files } = read(bytes, limits);
  assert.ok(problem !== undefined && pattern.test(problem), `expected ${pattern}, got ${problem}`);
  assert.equal(files.length, inflated, "entries inflated before the refusal");
};

const text = (s: string) => utf8(s);
const A: ZipEntrySpec = { name: "a.xml", data: text("<a>" + "x".repeat(300) + "</a>") };
const B: ZipEntrySpec = { name: "dir/b.txt", data: text("hello") };

Deno.test("valid archives: every entry inflated exactly, in directory order", () => {
  const entries: Array<ZipEntrySpec> = [
    A,
    { ...B, method: 0 },
    { name: "名字/c.xml", data: text("<c/>"), flags: 0x0800 },
    { name: "empty.txt", data: new Uint8Array(), method: 0 },
    { name: "d.xml", data: text("<d>descriptor</d>"), flags: 0x0008, descriptor: true },
    {
      name: "e.xml",
      data: text("<e>descriptor without signature, zero local sizes</e>"),
      flags: 0x0008,
      descriptor: { signature: false },
      local: { crc: 0, compressedSize: 0, size: 0 },
    },
    { name: "f.xml", data: text("<f/>"), localExtra: new Uint8Array([1, 0, 2, 0, 9, 9]) },
  ];
  const files = accepted(buildZip(entries, { comment: text("a comment") }));
  assert.deepEqual(files.map((f) => f.name), entries.map((e) => e.name));
  files.forEach((f, i) => assert.deepEqual(f.data, entries[i].data, f.name));
});

Deno.test("workbooks exceljs writes are accepted whole", async () => {
  const wb = new ExcelJS.Workbook();
  wb.addWorksheet("品牌A").addRow(["门店名称", "2026-07-09"]);
  const files = accepted(new Uint8Array(await wb.xlsx.writeBuffer()));
  assert.ok(files.some((f) => f.name === "xl/workbook.xml"));
  assert.ok(files.some((f) => f.name === "xl/worksheets/sheet1.xml"));
});

Deno.test("a decoy in front of the archive JSZip reads is refused before anything is inflated", async () => {
  const hidden = workbookEntries([{ name: "Hidden", xml: sheetXml(smallSheetRows()) }]);
  const crafted = behindDecoy(hidden);
  // JSZip (inside exceljs) reads the hidden workbook, not the decoy at the declared offsets.
  const wb = await new ExcelJS.Workbook().xlsx.load(crafted as unknown as ExcelJS.Buffer);
  assert.deepEqual(wb.worksheets.map((w) => w.name), ["Hidden"]);
  refused(crafted, /the ZIP directory is not where the archive declares it/);

  // The same shape with 64 MB of blanks behind the decoy (how quickly: tests/timing/).
  const bomb = decoyBomb(64 * 1024 * 1024, 8);
  assert.ok(bomb.length < 200_000, `${bomb.length} bytes`);
  refused(bomb, /not where the archive declares it/, 0, {
    maxEntries: 50,
    maxUnpackedBytes: 256 << 20,
  });
});

Deno.test("bytes before the first entry, between entries, after the directory or the EOCD", () => {
  const prefix = text("#!/bin/sh\nexit 0\n");
  // Offsets that count the prefix: JSZip reads it as it is; the prefix is still refused.
  refused(buildZip([A, B], { prefix }), /bytes before the first ZIP entry/);
  // Offsets that do not: JSZip shifts them by the prefix's length.
  refused(
    buildZip([A, B], { prefix, offsetShift: -prefix.length }),
    /not where the archive declares it/,
  );
  // Bytes after entry A's data, before entry B.
  const stored = new Uint8Array(A.data);
  refused(
    buildZip([
      { ...A, method: 0, body: concat([stored, text("junk")]), compressedSize: stored.length },
      B,
    ]),
    /bytes between ZIP entries/,
  );
  refused(buildZip([A, B], { gap: text("junk") }), /between the ZIP entries and the directory/);
  refused(buildZip([A, B], { trailing: text("x") }), /bytes after the end of the ZIP archive/);
  // The comment is counted: a comment length that leaves bytes over is refused too.
  const withComment = buildZip([A], { comment: text("abc") });
  refused(concat([withComment, text("d")]), /after the end/);
  accepted(withComment);
});

Deno.test("the directory must hold exactly the declared entries", () => {
  // JSZip reads every consecutive header, whatever the count says.
  refused(buildZip([A, B], { count: 1 }), /more entries than the archive declares/);
  refused(buildZip([A, B], { count: 3 }), /holds 2 entries, the archive declares 3/);
  refused(buildZip([A, B], { countOnDisk: 1, count: 2 }), /multi-part/);
  refused(buildZip([A, B], { disk: 1 }), /multi-part/);
  refused(buildZip([A, B], { directorySize: 10 }), /not where the archive declares it/);
  refused(buildZip([A, A]), /appears twice/);
  refused(buildZip([]), /holds no files/);
  refused(
    buildZip(Array.from({ length: 51 }, (_, i) => ({ name: `f${i}`, data: text("x") }))),
    /holds 51 files; at most 50/,
  );
});

Deno.test("sizes that lie are refused, before inflating when the declared total is too large", () => {
  const blanks = new Uint8Array(100_000).fill(0x20);
  // Declares less than it inflates to: inflating stops at the declared size.
  refused(buildZip([{ name: "x.xml", data: blanks, size: 1000 }]), /larger than it declares/);
  // Declares more than it holds.
  refused(buildZip([{ name: "x.xml", data: text("abc"), size: 10 }]), /smaller than it declares/);
  refused(buildZip([{ ...B, method: 0, size: 99 }]), /sizes .* disagree/);
  // A compressed size longer than the data runs into the next entry or the directory.
  refused(buildZip([{ ...A, compressedSize: 10_000 }, B]), /truncated|overlap/);
  // Shorter: the deflate stream is cut and the entry does not tile.
  refused(buildZip([{ ...A, compressedSize: 3 }, B]), /bytes between ZIP entries/);
  // The declared sizes add up beyond the limit: nothing is inflated.
  refused(
    buildZip([
      { name: "a", data: text("a"), size: 700_000, local: { size: 700_000 } },
      { name: "b", data: text("b"), size: 700_000, local: { size: 700_000 } },
    ]),
    /too large once unpacked/,
  );
  refused(buildZip([A, { ...B, crc: 12345 }]), /CRC mismatch/, 1);
});

Deno.test("local headers must agree with the directory", () => {
  refused(buildZip([{ ...A, local: { name: "other.xml" } }]), /local header .* disagrees/);
  refused(buildZip([{ ...A, local: { method: 0 } }]), /local header .* disagrees/);
  refused(buildZip([{ ...A, local: { size: 1 } }]), /local header .* disagrees/);
  refused(buildZip([{ ...A, local: { compressedSize: 1 } }]), /local header .* disagrees/);
  refused(buildZip([{ ...A, local: { crc: 1 } }]), /local header .* disagrees/);
  refused(buildZip([{ ...A, local: { flags: 0x0800 } }]), /local header .* disagrees/);
  // A data descriptor that does not match what the directory says.
  refused(
    buildZip([{ ...A, flags: 0x0008, descriptor: { size: 5 } }]),
    /data descriptor .* does not match/,
  );
  refused(buildZip([{ ...A, flags: 0x0008 }]), /data descriptor .* does not match/);
  // Zero local sizes are only allowed with a descriptor.
  refused(buildZip([{ ...A, local: { size: 0, crc: 0, compressedSize: 0 } }]), /disagrees/);
});

Deno.test("overlapping entries are refused", () => {
  // Entry "outer" stores, as its data, the whole local entry of "inner"; the directory lists both.
  const inner: ZipEntrySpec = { name: "inner.xml", data: text("<inner/>") };
  const innerArchive = buildZip([inner]);
  const innerLocal = innerArchive.subarray(
    0,
    new DataView(innerArchive.buffer).getUint32(
      innerArchive.length - 22 + 16,
      true,
    ),
  );
  const outerName = "outer.bin";
  refused(
    buildZip([{ name: outerName, data: innerLocal, method: 0 }, inner], {
      offsets: [0, 30 + outerName.length],
    }),
    /overlap/,
  );
});

Deno.test("ZIP64, encryption, other methods and flags are refused", () => {
  refused(buildZip([A], { directoryOffset: 0xffffffff }), /ZIP64/);
  refused(buildZip([A], { count: 0xffff }), /ZIP64/);
  refused(buildZip([{ ...A, size: 0xffffffff }]), /ZIP64/);
  refused(buildZip([A], { offsets: [0xffffffff] }), /ZIP64/);
  refused(buildZip([{ ...A, flags: 0x0001 }]), /encrypted/);
  refused(buildZip([{ ...A, flags: 0x0040 }]), /encrypted/);
  refused(buildZip([{ ...A, flags: 0x2000 }]), /unsupported feature/);
  refused(buildZip([{ ...A, method: 12 }]), /unsupported compression/);
});

Deno.test("no directory at all, or a damaged one", () => {
  refused(new Uint8Array([0x50, 0x4b, 0x03, 0x04]), /directory is missing/);
  const good = buildZip([A, B]);
  refused(good.slice(0, good.length - 10), /directory is missing|after the end|not where/);
  // An EOCD signature inside the comment is the one JSZip finds (the last one).
  const eocdInComment = buildZip([A], {
    comment: concat([text("x"), new Uint8Array([0x50, 0x4b, 5, 6])]),
  });
  refused(eocdInComment, /directory is missing|after the end|not where/);
  const broken = good.slice();
  const eocd = broken.length - 22;
  const dir = new DataView(broken.buffer).getUint32(eocd + 16, true);
  broken[dir] = 0; // the first directory header's signature
  refused(broken, /holds 0 entries|damaged/);
});

Deno.test("property: any damage to a valid archive gives a problem or exact entries, never a throw", () => {
  const base = buildZip([A, { ...B, method: 0 }, {
    name: "d.xml",
    data: text("<d/>"),
    flags: 0x0008,
    descriptor: true,
  }]);
  fc.assert(
    fc.property(
      fc.array(fc.tuple(fc.nat(base.length - 1), fc.nat(255)), { minLength: 1, maxLength: 6 }),
      fc.nat(40),
      (edits, cut) => {
        const bytes = base.slice(0, base.length - (cut % 5 === 0 ? cut : 0));
        for (const [at, value] of edits) if (at < bytes.length) bytes[at] = value;
        const { problem, files } = read(bytes);
        if (problem === undefined) {
          const total = files.reduce((n, f) => n + f.data.length, 0);
          assert.ok(total <= LIMITS.maxUnpackedBytes);
          const declared = new DataView(bytes.buffer).getUint16(bytes.length - 22 + 10, true);
          assert.equal(files.length, declared);
        }
      },
    ),
    { numRuns: 500 },
  );
});
