// A ZIP archive written piece by piece as it is sent: small entries whole, large ones chunk by
// chunk with a data descriptor after them. Each chunk is deflated on its own and ended with a sync
// flush, so the chunks of an entry join into one deflate stream without holding the entry. What it
// writes is what src/imports/zip.ts accepts: entries tiling the bytes from offset 0, local headers
// agreeing with the directory, no ZIP64 (an entry and the archive stay under 4 GiB).
import { constants, crc32, deflateRawSync } from "node:zlib";

const SIG_LOCAL = 0x04034b50;
const SIG_DESCRIPTOR = 0x08074b50;
const SIG_CENTRAL = 0x02014b50;
const SIG_END = 0x06054b50;

const VERSION = 20;
const FLAG_DESCRIPTOR = 0x0008;
const FLAG_UTF8 = 0x0800;
const DEFLATED = 8;
// 1980-01-01 00:00 in DOS format: the archive's bytes depend on its content only.
const DOS_DATE = (0 << 9) | (1 << 5) | 1;
const DOS_TIME = 0;

const LIMIT = 0xffffffff;

// The last deflate block of every entry: an empty final block.
const FINAL_BLOCK = new Uint8Array(deflateRawSync(new Uint8Array(0)));

interface Written {
  readonly name: Uint8Array;
  readonly flags: number;
  readonly crc: number;
  readonly compressed: number;
  readonly size: number;
  readonly offset: number;
}

// The parts as one array (the one part that is not empty as it is).
export const concat = (parts: ReadonlyArray<Uint8Array>) => {
  const nonEmpty = parts.filter((p) => p.length > 0);
  if (nonEmpty.length === 1) return nonEmpty[0];
  const out = new Uint8Array(nonEmpty.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const part of nonEmpty) {
    out.set(part, at);
    at += part.length;
  }
  return out;
};

const header = (size: number, fill: (view: DataView) => void) => {
  const bytes = new Uint8Array(size);
  fill(new DataView(bytes.buffer));
  return bytes;
};

export class ZipStream {
  private offset = 0;
  private readonly written: Array<Written> = [];
  private open:
    | { name: Uint8Array; offset: number; crc: number; compressed: number; size: number }
    | undefined;

  private advance(bytes: Uint8Array) {
    this.offset += bytes.length;
    if (this.offset > LIMIT) throw new Error("the archive would need ZIP64");
    return bytes;
  }

  private local(name: Uint8Array, flags: number, crc: number, compressed: number, size: number) {
    return concat([
      header(30, (v) => {
        v.setUint32(0, SIG_LOCAL, true);
        v.setUint16(4, VERSION, true);
        v.setUint16(6, flags, true);
        v.setUint16(8, DEFLATED, true);
        v.setUint16(10, DOS_TIME, true);
        v.setUint16(12, DOS_DATE, true);
        v.setUint32(14, crc, true);
        v.setUint32(18, compressed, true);
        v.setUint32(22, size, true);
        v.setUint16(26, name.length, true);
        v.setUint16(28, 0, true);
      }),
      name,
    ]);
  }

  // A whole entry (its bytes are at hand and small).
  file(path: string, data: Uint8Array): Uint8Array {
    if (this.open !== undefined) throw new Error("an entry is open");
    const name = new TextEncoder().encode(path);
    const deflated = new Uint8Array(deflateRawSync(data));
    const crc = crc32(data);
    this.written.push({
      name,
      flags: FLAG_UTF8,
      crc,
      compressed: deflated.length,
      size: data.length,
      offset: this.offset,
    });
    return this.advance(
      concat([this.local(name, FLAG_UTF8, crc, deflated.length, data.length), deflated]),
    );
  }

  // Opens an entry written chunk by chunk (write), closed by end.
  begin(path: string): Uint8Array {
    if (this.open !== undefined) throw new Error("an entry is open");
    const name = new TextEncoder().encode(path);
    this.open = { name, offset: this.offset, crc: 0, compressed: 0, size: 0 };
    return this.advance(this.local(name, FLAG_UTF8 | FLAG_DESCRIPTOR, 0, 0, 0));
  }

  write(data: Uint8Array): Uint8Array {
    const open = this.open;
    if (open === undefined) throw new Error("no entry is open");
    if (data.length === 0) return data;
    const deflated = new Uint8Array(
      deflateRawSync(data, { finishFlush: constants.Z_SYNC_FLUSH }),
    );
    open.crc = crc32(data, open.crc);
    open.size += data.length;
    open.compressed += deflated.length;
    if (open.size > LIMIT) throw new Error("the entry would need ZIP64");
    return this.advance(deflated);
  }

  end(): Uint8Array {
    const open = this.open;
    if (open === undefined) throw new Error("no entry is open");
    this.open = undefined;
    open.compressed += FINAL_BLOCK.length;
    this.written.push({
      name: open.name,
      flags: FLAG_UTF8 | FLAG_DESCRIPTOR,
      crc: open.crc,
      compressed: open.compressed,
      size: open.size,
      offset: open.offset,
    });
    return this.advance(concat([
      FINAL_BLOCK,
      header(16, (v) => {
        v.setUint32(0, SIG_DESCRIPTOR, true);
        v.setUint32(4, open.crc, true);
        v.setUint32(8, open.compressed, true);
        v.setUint32(12, open.size, true);
      }),
    ]));
  }

  // The central directory and its end record: the archive's last bytes.
  finish(): Uint8Array {
    if (this.open !== undefined) throw new Error("an entry is open");
    if (this.written.length > 0xfffe) throw new Error("the archive would need ZIP64");
    const start = this.offset;
    const directory = concat(this.written.map((e) =>
      concat([
        header(46, (v) => {
          v.setUint32(0, SIG_CENTRAL, true);
          v.setUint16(4, VERSION, true);
          v.setUint16(6, VERSION, true);
          v.setUint16(8, e.flags, true);
          v.setUint16(10, DEFLATED, true);
          v.setUint16(12, DOS_TIME, true);
          v.setUint16(14, DOS_DATE, true);
          v.setUint32(16, e.crc, true);
          v.setUint32(20, e.compressed, true);
          v.setUint32(24, e.size, true);
          v.setUint16(28, e.name.length, true);
          v.setUint32(42, e.offset, true);
        }),
        e.name,
      ])
    ));
    this.advance(directory);
    const end = header(22, (v) => {
      v.setUint32(0, SIG_END, true);
      v.setUint16(8, this.written.length, true);
      v.setUint16(10, this.written.length, true);
      v.setUint32(12, directory.length, true);
      v.setUint32(16, start, true);
    });
    return concat([directory, this.advance(end)]);
  }
}
