// ZIP archives checked exactly as JSZip 3.10 (inside exceljs) will read them, then inflated entry by entry.
import { crc32, inflateRawSync } from "node:zlib";
import { type Text, text as t } from "../domain/language.ts";
import { qPath } from "./problem_texts.ts";

export interface ZipLimits {
  readonly maxEntries: number;
  // The sum of the entries' declared sizes; each entry is inflated to exactly its declared size.
  readonly maxUnpackedBytes: number;
}

export interface ZipFile {
  // The entry's name as its headers spell it (UTF-8 decoded, invalid bytes replaced).
  readonly name: string;
  readonly data: Uint8Array;
}

const SIG_LOCAL = 0x04034b50;
const SIG_CENTRAL = 0x02014b50;
// The end-of-central-directory signature (0x06054b50) as bytes.
const SIG_EOCD_BYTES = [0x50, 0x4b, 0x05, 0x06];
const SIG_DESCRIPTOR = 0x08074b50;

const EOCD_BYTES = 22;
const CENTRAL_BYTES = 46;
const LOCAL_BYTES = 30;

const FLAG_ENCRYPTED = 0x0001;
const FLAG_DESCRIPTOR = 0x0008;
const FLAG_STRONG_ENCRYPTION = 0x0040;
// Deflate speed hints (bits 1-2), a data descriptor (bit 3), UTF-8 names (bit 11): nothing else.
const FLAGS_ALLOWED = 0x0002 | 0x0004 | FLAG_DESCRIPTOR | 0x0800;

const STORED = 0;
const DEFLATED = 8;

// Problems found in more than one place.
const DIRECTORY_DAMAGED = t("the ZIP directory is damaged", "ZIP 目录已损坏");
const NO_ZIP64 = t("ZIP64 archives are not supported", "不支持 ZIP64 压缩包");
const NO_MULTI_PART = t("multi-part ZIP archives are not supported", "不支持分卷 ZIP 压缩包");

interface Entry {
  readonly index: number;
  readonly name: Uint8Array;
  readonly flags: number;
  readonly method: number;
  readonly crc: number;
  readonly compressedSize: number;
  readonly size: number;
  readonly localOffset: number;
  // Set once the local header is read: where the stored bytes are, and where the entry ends.
  dataStart: number;
  end: number;
}

const sameBytes = (a: Uint8Array, b: Uint8Array) =>
  a.length === b.length && a.every((byte, i) => byte === b[i]);

const nameText = (name: Uint8Array) => new TextDecoder().decode(name);

const quoted = (name: Uint8Array) => qPath(nameText(name));

// JSZip's lastIndexOfSignature: the last occurrence of the signature anywhere in the file,
// scanning back from four bytes before its end (so a signature inside a comment wins).
const lastEocd = (bytes: Uint8Array): number => {
  const [a, b, c, d] = SIG_EOCD_BYTES;
  for (let i = bytes.length - 4; i >= 0; i--) {
    if (bytes[i] === a && bytes[i + 1] === b && bytes[i + 2] === c && bytes[i + 3] === d) return i;
  }
  return -1;
};

/**
 * Checks `bytes` as JSZip will read them and passes every entry's inflated bytes to `visit`, in
 * central directory order, one at a time. Returns the first problem (of the archive, or the one
 * `visit` returns) in both languages, else undefined.
 *
 * JSZip finds the last end-of-central-directory signature, shifts every offset by the gap between
 * where the directory is declared to end and where that record starts (`extraBytes`), reads every
 * consecutive directory header whatever the declared count, and trusts the directory's sizes and
 * method. So the archive must leave no room for a second reading: the directory ends exactly at
 * the record, the record and its comment end the file, the headers are exactly the declared
 * count, the entries tile the bytes from offset 0 to the directory without gaps or overlaps, each
 * local header agrees with its directory header (name, flags, method, and sizes and CRC unless a
 * data descriptor carries them, which must then agree too), no ZIP64, no encryption, only stored
 * or deflated data, and each entry inflates to exactly its declared size and CRC.
 */
export const readZip = (
  bytes: Uint8Array,
  limits: ZipLimits,
  visit: (file: ZipFile) => Text | undefined,
): Text | undefined => {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const u16 = (at: number) => view.getUint16(at, true);
  const u32 = (at: number) => view.getUint32(at, true);

  const eocd = lastEocd(bytes);
  if (eocd < 0 || eocd + EOCD_BYTES > bytes.length) {
    return t(
      "the ZIP directory is missing (the file is damaged or truncated)",
      "缺少 ZIP 目录（文件已损坏或不完整）",
    );
  }
  const disk = u16(eocd + 4);
  const directoryDisk = u16(eocd + 6);
  const countOnDisk = u16(eocd + 8);
  const count = u16(eocd + 10);
  const directorySize = u32(eocd + 12);
  const directoryOffset = u32(eocd + 16);
  const commentLength = u16(eocd + 20);
  if (
    disk === 0xffff || directoryDisk === 0xffff || countOnDisk === 0xffff || count === 0xffff ||
    directorySize === 0xffffffff || directoryOffset === 0xffffffff
  ) {
    return NO_ZIP64;
  }
  if (disk !== 0 || directoryDisk !== 0 || countOnDisk !== count) {
    return NO_MULTI_PART;
  }
  if (eocd + EOCD_BYTES + commentLength !== bytes.length) {
    return t(
      "the file has bytes after the end of the ZIP archive",
      "文件在 ZIP 压缩包结尾之后还有多余的字节",
    );
  }
  if (directoryOffset + directorySize !== eocd) {
    return t(
      "the ZIP directory is not where the archive declares it",
      "ZIP 目录不在压缩包声明的位置",
    );
  }
  if (count === 0) return t("the ZIP archive holds no files", "ZIP 压缩包中没有文件");
  if (count > limits.maxEntries) {
    return t(
      `the ZIP archive holds ${count} files; at most ${limits.maxEntries} are read`,
      `ZIP 压缩包中有 ${count} 个文件；最多读取 ${limits.maxEntries} 个`,
    );
  }

  // The directory, header after header, as JSZip reads it: until a header signature is missing.
  const entries: Array<Entry> = [];
  let at = directoryOffset;
  let declaredTotal = 0;
  while (at + 4 <= eocd && u32(at) === SIG_CENTRAL) {
    if (entries.length === count) {
      return t(
        "the ZIP directory holds more entries than the archive declares",
        "ZIP 目录中的条目多于压缩包声明的数量",
      );
    }
    if (at + CENTRAL_BYTES > eocd) return DIRECTORY_DAMAGED;
    const nameLength = u16(at + 28);
    const next = at + CENTRAL_BYTES + nameLength + u16(at + 30) + u16(at + 32);
    if (next > eocd) return DIRECTORY_DAMAGED;
    const entry: Entry = {
      index: entries.length,
      name: bytes.subarray(at + CENTRAL_BYTES, at + CENTRAL_BYTES + nameLength),
      flags: u16(at + 8),
      method: u16(at + 10),
      crc: u32(at + 16),
      compressedSize: u32(at + 20),
      size: u32(at + 24),
      localOffset: u32(at + 42),
      dataStart: 0,
      end: 0,
    };
    if (
      entry.compressedSize === 0xffffffff || entry.size === 0xffffffff ||
      entry.localOffset === 0xffffffff || u16(at + 34) === 0xffff
    ) {
      return NO_ZIP64;
    }
    if (u16(at + 34) !== 0) {
      return NO_MULTI_PART;
    }
    if ((entry.flags & (FLAG_ENCRYPTED | FLAG_STRONG_ENCRYPTION)) !== 0) {
      return t(
        "encrypted files are not supported: save the workbook without a password",
        "不支持加密的文件：请在保存工作簿时不设密码",
      );
    }
    if ((entry.flags & ~FLAGS_ALLOWED) !== 0) {
      return t(
        `the ZIP entry ${quoted(entry.name)} uses an unsupported feature`,
        `ZIP 条目 ${quoted(entry.name)} 使用了不支持的功能`,
      );
    }
    if (entry.method !== STORED && entry.method !== DEFLATED) {
      return t(
        `the ZIP entry ${quoted(entry.name)} uses an unsupported compression method`,
        `ZIP 条目 ${quoted(entry.name)} 使用了不支持的压缩方式`,
      );
    }
    if (entry.method === STORED && entry.compressedSize !== entry.size) {
      return t(
        `the sizes of the ZIP entry ${quoted(entry.name)} disagree`,
        `ZIP 条目 ${quoted(entry.name)} 声明的两个大小不一致`,
      );
    }
    declaredTotal += entry.size;
    if (declaredTotal > limits.maxUnpackedBytes) {
      return t(
        `it is too large once unpacked (more than ${limits.maxUnpackedBytes} bytes)`,
        `解压后过大（超过 ${limits.maxUnpackedBytes} 字节）`,
      );
    }
    entries.push(entry);
    at = next;
  }
  if (at !== eocd) return DIRECTORY_DAMAGED;
  if (entries.length !== count) {
    return t(
      `the ZIP directory holds ${entries.length} entries, the archive declares ${count}`,
      `ZIP 目录中有 ${entries.length} 个条目，压缩包声明的是 ${count} 个`,
    );
  }
  const names = new Set<string>();
  for (const e of entries) {
    const key = Array.from(e.name).join(",");
    if (names.has(key)) {
      return t(
        `the ZIP entry ${quoted(e.name)} appears twice`,
        `ZIP 条目 ${quoted(e.name)} 出现了两次`,
      );
    }
    names.add(key);
  }

  // Local headers: each must agree with its directory header; with the data and any descriptor
  // they must tile the bytes before the directory exactly.
  for (const e of entries) {
    const local = e.localOffset;
    if (local + LOCAL_BYTES > directoryOffset || u32(local) !== SIG_LOCAL) {
      return t(`the ZIP entry ${quoted(e.name)} is damaged`, `ZIP 条目 ${quoted(e.name)} 已损坏`);
    }
    const flags = u16(local + 6);
    const method = u16(local + 8);
    const crc = u32(local + 14);
    const compressedSize = u32(local + 18);
    const size = u32(local + 22);
    const nameLength = u16(local + 26);
    const extraLength = u16(local + 28);
    const name = bytes.subarray(local + LOCAL_BYTES, local + LOCAL_BYTES + nameLength);
    const descriptor = (e.flags & FLAG_DESCRIPTOR) !== 0;
    // With a descriptor, a writer may leave the local CRC and sizes zero.
    const agrees = (value: number, central: number) =>
      value === central || (descriptor && value === 0);
    if (
      flags !== e.flags || method !== e.method || !sameBytes(name, e.name) ||
      !agrees(crc, e.crc) || !agrees(compressedSize, e.compressedSize) || !agrees(size, e.size)
    ) {
      return t(
        `the local header of the ZIP entry ${quoted(e.name)} disagrees with the ZIP directory`,
        `ZIP 条目 ${quoted(e.name)} 的本地文件头与 ZIP 目录不一致`,
      );
    }
    e.dataStart = local + LOCAL_BYTES + nameLength + extraLength;
    const dataEnd = e.dataStart + e.compressedSize;
    if (dataEnd > directoryOffset) {
      return t(
        `the ZIP entry ${quoted(e.name)} is truncated`,
        `ZIP 条目 ${quoted(e.name)} 被截断，数据不完整`,
      );
    }
    e.end = dataEnd;
    if (descriptor) {
      const matches = (from: number) =>
        from + 12 <= directoryOffset && u32(from) === e.crc &&
        u32(from + 4) === e.compressedSize && u32(from + 8) === e.size;
      if (
        dataEnd + 4 <= directoryOffset && u32(dataEnd) === SIG_DESCRIPTOR && matches(dataEnd + 4)
      ) {
        e.end = dataEnd + 16;
      } else if (matches(dataEnd)) {
        e.end = dataEnd + 12;
      } else {
        return t(
          `the data descriptor of the ZIP entry ${quoted(e.name)} does not match the ZIP directory`,
          `ZIP 条目 ${quoted(e.name)} 的数据描述符与 ZIP 目录不符`,
        );
      }
    }
  }
  const byOffset = [...entries].sort((a, b) => a.localOffset - b.localOffset);
  let expected = 0;
  for (const e of byOffset) {
    if (e.localOffset < expected) return t("ZIP entries overlap", "ZIP 条目相互重叠");
    if (e.localOffset > expected) {
      return expected === 0
        ? t(
          "the file has bytes before the first ZIP entry",
          "文件在第一个 ZIP 条目之前有多余的字节",
        )
        : t("the file has bytes between ZIP entries", "文件在 ZIP 条目之间有多余的字节");
    }
    expected = e.end;
  }
  if (expected !== directoryOffset) {
    return t(
      "the file has bytes between the ZIP entries and the directory",
      "文件在 ZIP 条目与 ZIP 目录之间有多余的字节",
    );
  }

  for (const e of entries) {
    const stored = bytes.subarray(e.dataStart, e.dataStart + e.compressedSize);
    let data: Uint8Array;
    if (e.method === STORED) {
      data = stored;
    } else {
      try {
        // Throws when the entry inflates to more than it declares.
        data = inflateRawSync(stored, { maxOutputLength: Math.max(1, e.size) });
      } catch {
        return t(
          `the ZIP entry ${quoted(e.name)} is damaged or larger than it declares`,
          `ZIP 条目 ${quoted(e.name)} 已损坏，或解压后大于其声明的大小`,
        );
      }
    }
    if (data.length !== e.size) {
      return t(
        `the ZIP entry ${quoted(e.name)} is smaller than it declares`,
        `ZIP 条目 ${quoted(e.name)} 解压后小于其声明的大小`,
      );
    }
    if (crc32(data) !== e.crc) {
      return t(
        `the ZIP entry ${quoted(e.name)} is damaged (CRC mismatch)`,
        `ZIP 条目 ${quoted(e.name)} 已损坏（CRC 校验不符）`,
      );
    }
    const problem = visit({ name: nameText(e.name), data });
    if (problem !== undefined) return problem;
  }
  return undefined;
};
