// Byte-level builders of ZIP archives and hand-written XLSX workbooks for the import tests.
import { crc32, deflateRawSync } from "node:zlib";
import { readZip } from "../src/imports/zip.ts";

// The entries of a well-formed archive, inflated, as the workbook reader gets them.
export const unzipped = (bytes: Uint8Array): Map<string, Uint8Array> => {
  const entries = new Map<string, Uint8Array>();
  const problem = readZip(
    bytes,
    { maxEntries: 1_000, maxUnpackedBytes: 16 * 1024 * 1024 },
    (file) => {
      entries.set(file.name, file.data);
      return undefined;
    },
  );
  if (problem !== undefined) throw new Error(problem.en);
  return entries;
};

export const utf8 = (s: string) => new TextEncoder().encode(s);

export const concat = (parts: ReadonlyArray<Uint8Array>): Uint8Array => {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
};

// One entry as written; every field a crafted archive may falsify can be overridden.
export interface ZipEntrySpec {
  readonly name: string;
  readonly data: Uint8Array;
  readonly method?: 0 | 8 | number;
  // The bytes stored for the entry (default: deflated or stored `data`).
  readonly body?: Uint8Array;
  readonly flags?: number;
  readonly crc?: number;
  // Sizes the central directory declares (default: the real ones).
  readonly compressedSize?: number;
  readonly size?: number;
  // What the local header says, where it differs from the central directory.
  readonly local?: {
    readonly name?: string;
    readonly method?: number;
    readonly flags?: number;
    readonly crc?: number;
    readonly compressedSize?: number;
    readonly size?: number;
  };
  // A data descriptor after the body: true writes the real values with a signature.
  readonly descriptor?: boolean | {
    readonly signature?: boolean;
    readonly crc?: number;
    readonly compressedSize?: number;
    readonly size?: number;
  };
  readonly centralExtra?: Uint8Array;
  readonly localExtra?: Uint8Array;
  readonly externalAttributes?: number;
}

export interface ZipSpec {
  readonly prefix?: Uint8Array;
  // Bytes between the last entry and the central directory.
  readonly gap?: Uint8Array;
  readonly trailing?: Uint8Array;
  readonly comment?: Uint8Array;
  // EOCD overrides.
  readonly count?: number;
  readonly countOnDisk?: number;
  readonly directorySize?: number;
  readonly directoryOffset?: number;
  readonly disk?: number;
  // Shifts every local-header offset the central directory declares.
  readonly offsetShift?: number;
  // Local-header offsets to declare instead of the real ones, by entry index.
  readonly offsets?: ReadonlyArray<number | undefined>;
}

const u16 = (v: DataView, at: number, n: number) => v.setUint16(at, n & 0xffff, true);
const u32 = (v: DataView, at: number, n: number) => v.setUint32(at, n >>> 0, true);

const bodyOf = (e: ZipEntrySpec) =>
  e.body ?? ((e.method ?? 8) === 8 ? new Uint8Array(deflateRawSync(e.data)) : e.data);

// The parts of one entry (local header, name, extra, body, descriptor) and its central header.
const entryParts = (e: ZipEntrySpec, offset: number) => {
  const name = utf8(e.name);
  const body = bodyOf(e);
  const method = e.method ?? 8;
  const flags = e.flags ?? 0;
  const crc = e.crc ?? crc32(e.data);
  const csize = e.compressedSize ?? body.length;
  const size = e.size ?? e.data.length;
  const localName = e.local?.name === undefined ? name : utf8(e.local.name);
  const localExtra = e.localExtra ?? new Uint8Array();
  const local = new DataView(new ArrayBuffer(30));
  u32(local, 0, 0x04034b50);
  u16(local, 4, 20);
  u16(local, 6, e.local?.flags ?? flags);
  u16(local, 8, e.local?.method ?? method);
  u32(local, 14, e.local?.crc ?? crc);
  u32(local, 18, e.local?.compressedSize ?? csize);
  u32(local, 22, e.local?.size ?? size);
  u16(local, 26, localName.length);
  u16(local, 28, localExtra.length);
  const parts = [new Uint8Array(local.buffer), localName, localExtra, body];
  if (e.descriptor !== undefined && e.descriptor !== false) {
    const d = e.descriptor === true ? {} : e.descriptor;
    const withSignature = d.signature ?? true;
    const view = new DataView(new ArrayBuffer(withSignature ? 16 : 12));
    let at = 0;
    if (withSignature) {
      u32(view, 0, 0x08074b50);
      at = 4;
    }
    u32(view, at, d.crc ?? crc);
    u32(view, at + 4, d.compressedSize ?? body.length);
    u32(view, at + 8, d.size ?? e.data.length);
    parts.push(new Uint8Array(view.buffer));
  }
  const extra = e.centralExtra ?? new Uint8Array();
  const dir = new DataView(new ArrayBuffer(46));
  u32(dir, 0, 0x02014b50);
  u16(dir, 4, 20);
  u16(dir, 6, 20);
  u16(dir, 8, flags);
  u16(dir, 10, method);
  u32(dir, 16, crc);
  u32(dir, 20, csize);
  u32(dir, 24, size);
  u16(dir, 28, name.length);
  u16(dir, 30, extra.length);
  u32(dir, 38, e.externalAttributes ?? 0);
  u32(dir, 42, offset);
  return { local: parts, central: [new Uint8Array(dir.buffer), name, extra] };
};

// An archive as `entries` and `spec` describe it; with no overrides, a valid ZIP.
export const buildZip = (entries: ReadonlyArray<ZipEntrySpec>, spec: ZipSpec = {}): Uint8Array => {
  const prefix = spec.prefix ?? new Uint8Array();
  const locals: Array<Uint8Array> = [];
  const centrals: Array<Uint8Array> = [];
  let offset = prefix.length;
  entries.forEach((e, i) => {
    const declared = spec.offsets?.[i] ?? offset + (spec.offsetShift ?? 0);
    const { local, central } = entryParts(e, declared);
    locals.push(...local);
    centrals.push(...central);
    offset += local.reduce((n, p) => n + p.length, 0);
  });
  const gap = spec.gap ?? new Uint8Array();
  const directory = concat(centrals);
  const comment = spec.comment ?? new Uint8Array();
  const eocd = new DataView(new ArrayBuffer(22));
  u32(eocd, 0, 0x06054b50);
  u16(eocd, 4, spec.disk ?? 0);
  u16(eocd, 6, spec.disk ?? 0);
  u16(eocd, 8, spec.countOnDisk ?? spec.count ?? entries.length);
  u16(eocd, 10, spec.count ?? entries.length);
  u32(eocd, 12, spec.directorySize ?? directory.length);
  u32(eocd, 16, spec.directoryOffset ?? offset + gap.length + (spec.offsetShift ?? 0));
  u16(eocd, 20, comment.length);
  return concat([
    prefix,
    ...locals,
    gap,
    directory,
    new Uint8Array(eocd.buffer),
    comment,
    spec.trailing ?? new Uint8Array(),
  ]);
};

// The parts of a minimal workbook exceljs reads: workbook, its relations, one XML per sheet.
export const workbookEntries = (
  sheets: ReadonlyArray<{ readonly name: string; readonly xml: string }>,
  options: { readonly definedNames?: string; readonly sharedStrings?: string } = {},
): Array<ZipEntrySpec> => {
  const escape = (s: string) =>
    s.replaceAll("&", "&amp;").replaceAll('"', "&quot;").replaceAll("<", "&lt;");
  const workbook = `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"><sheets>${
    sheets.map((s, i) => `<sheet name="${escape(s.name)}" sheetId="${i + 1}" r:id="rId${i + 1}"/>`)
      .join("")
  }</sheets>${
    options.definedNames === undefined ? "" : `<definedNames>${options.definedNames}</definedNames>`
  }</workbook>`;
  const rels = `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">${
    sheets.map((_, i) =>
      `<Relationship Id="rId${
        i + 1
      }" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet" Target="worksheets/sheet${
        i + 1
      }.xml"/>`
    ).join("")
  }</Relationships>`;
  const entries: Array<ZipEntrySpec> = [
    { name: "xl/workbook.xml", data: utf8(workbook) },
    { name: "xl/_rels/workbook.xml.rels", data: utf8(rels) },
    ...sheets.map((s, i) => ({ name: `xl/worksheets/sheet${i + 1}.xml`, data: utf8(s.xml) })),
  ];
  if (options.sharedStrings !== undefined) {
    entries.push({ name: "xl/sharedStrings.xml", data: utf8(options.sharedStrings) });
  }
  return entries;
};

// A worksheet's XML around the given sheetData rows and any elements after sheetData.
export const sheetXml = (rows: string, after = "", before = "") =>
  `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main">${before}<sheetData>${rows}</sheetData>${after}</worksheet>`;

export const inlineCell = (ref: string, text: string) =>
  `<c r="${ref}" t="inlineStr"><is><t>${text}</t></is></c>`;

export const numberCell = (ref: string, n: number | string) => `<c r="${ref}"><v>${n}</v></c>`;

// A hand-written workbook: sheets given as XML.
export const handXlsx = (
  sheets: ReadonlyArray<{ readonly name: string; readonly xml: string }>,
  options?: { readonly definedNames?: string; readonly sharedStrings?: string },
): Uint8Array => buildZip(workbookEntries(sheets, options));

// A small valid header row and one store row: A1 门店名称, B1 a date, A2 a store, B2 a value.
export const smallSheetRows = (date = "2026-07-09") =>
  `<row r="1">${inlineCell("A1", "门店名称")}${inlineCell("B1", date)}</row>` +
  `<row r="2">${inlineCell("A2", "店1")}${numberCell("B2", 1.5)}</row>`;

/**
 * An archive whose EOCD declares a central directory that ends before the EOCD: a reader that
 * shifts every offset by the difference (JSZip) reads the `hidden` entries placed after a decoy,
 * while a reader that takes the offsets as written sees only the small decoy entry.
 */
export const behindDecoy = (hidden: ReadonlyArray<ZipEntrySpec>): Uint8Array => {
  const decoy: ZipEntrySpec = { name: "xl/decoy.xml", data: utf8("<a/>") };
  // The hidden archive as a stand-alone one (offsets from its own start), without its EOCD.
  const inner = buildZip(hidden);
  const innerView = new DataView(inner.buffer);
  const innerEocd = inner.length - 22;
  const innerDirOffset = innerView.getUint32(innerEocd + 16, true);
  const innerDirSize = innerView.getUint32(innerEocd + 12, true);
  // The decoy's central directory sits where the hidden one is declared (innerDirOffset).
  const decoyParts = entryParts(decoy, 0);
  const decoyLocal = concat(decoyParts.local);
  const decoyDir = concat(decoyParts.central);
  if (decoyLocal.length > innerDirOffset) throw new Error("the hidden entries are too small");
  const zero = innerDirOffset + decoyDir.length;
  const head = new Uint8Array(zero);
  head.set(decoyLocal, 0);
  head.set(decoyDir, innerDirOffset);
  const eocd = new DataView(new ArrayBuffer(22));
  u32(eocd, 0, 0x06054b50);
  u16(eocd, 8, 1);
  u16(eocd, 10, 1);
  u32(eocd, 12, innerDirSize);
  u32(eocd, 16, innerDirOffset);
  return concat([head, inner.subarray(0, innerEocd), new Uint8Array(eocd.buffer)]);
};

// A decoy hiding `bytes` of blanks deflated in `entries` entries (about 1 MB of file per 1 GB).
export const decoyBomb = (bytes: number, entries = 1): Uint8Array =>
  behindDecoy(Array.from({ length: entries }, (_, i) => ({
    name: `xl/bomb${i}.xml`,
    data: new Uint8Array(Math.ceil(bytes / entries)).fill(0x20),
  })));
