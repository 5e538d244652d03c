// Result columns read as bytes on PostgreSQL. A bytes column (bytes_columns.ts) arrives as the
// UTF-8 bytes PostgreSQL sent, not as a string: stored JSON text that goes into an answer as it is
// (an energy read's month parts) is then neither decoded into a string nor encoded back, which cost
// the service more than the rest of the read. Every other column reads as pg reads it.
import { Buffer } from "node:buffer";
import { EventEmitter } from "node:events";
import pg from "pg";
import { parse } from "pg-protocol";
import { isBytesColumn, TEXT_TYPE } from "./bytes_columns.ts";
import { PgSocket } from "./pg_socket.ts";

const ROW_DESCRIPTION = 0x54; // T
const DATA_ROW = 0x44; // D
const HEADER = 5; // the code and the length
// The largest buffer of an incomplete message kept between rows.
const KEPT_BYTES = 256 * 1024;

const names = new TextDecoder();

// The positions of the bytes columns of a RowDescription message's body (from after its length).
const bytesColumnsOf = (body: Uint8Array): ReadonlyArray<number> => {
  const view = new DataView(body.buffer, body.byteOffset, body.byteLength);
  const count = view.getInt16(0);
  const found: Array<number> = [];
  let at = 2;
  for (let i = 0; i < count; i++) {
    const end = body.indexOf(0, at);
    // After the name's terminator: table (4 bytes), column (2), type (4), size, modifier, format.
    const type = view.getInt32(end + 1 + 6);
    if (isBytesColumn(names.decode(body.subarray(at, end)), type)) found.push(i);
    at = end + 1 + 18;
  }
  return found;
};

// A DataRow message's body as pg's own message, the bytes columns as copies of their bytes.
const dataRowOf = (body: Uint8Array, bytesColumns: ReadonlyArray<number>, length: number) => {
  const view = new DataView(body.buffer, body.byteOffset, body.byteLength);
  const count = view.getInt16(0);
  const fields: Array<string | Uint8Array | null> = new Array(count);
  let at = 2;
  for (let i = 0; i < count; i++) {
    const size = view.getInt32(at);
    at += 4;
    if (size < 0) {
      fields[i] = null;
      continue;
    }
    const value = body.subarray(at, at + size);
    // A copy (a Buffer's slice would be a view of the read).
    fields[i] = bytesColumns.includes(i)
      ? new Uint8Array(value)
      : Buffer.from(value.buffer, value.byteOffset, size).toString("utf8");
    at += size;
  }
  return { name: "dataRow", length, fields };
};

type Callback = (message: { name: string }) => void;

/**
 * Splits what the socket reads into the server's messages: the data rows of a result with bytes
 * columns are read here, every other message goes whole to pg's own parser (in order, at once, so
 * its callback sees them in the order they came). Nothing of a read is kept past `read`: a message
 * that has not all arrived is copied, and so are the messages given to pg's parser when the reads
 * are lent (`lent`: each read is a view of a buffer the next read overwrites).
 */
export class BytesReader {
  // The start of a message that has not all arrived, in a buffer grown by doubling (a row of
  // several MB arrives in many reads: each is copied once, not the whole row again).
  #pending = new Uint8Array(0);
  #pendingLength = 0;
  #bytesColumns: ReadonlyArray<number> = [];
  #inner = new EventEmitter();

  constructor(private readonly callback: Callback, private readonly lent = false) {
    parse(this.#inner as unknown as NodeJS.ReadableStream, callback as never);
  }

  read(chunk: Uint8Array) {
    const rest = this.#pendingLength > 0 ? this.#completePending(chunk) : chunk;
    if (rest === undefined) return;
    const at = this.#messages(rest);
    // What is left is the start of a message: kept (copied: the socket's buffer is reused).
    if (at < rest.byteLength) this.#append(rest.subarray(at));
  }

  // The pending message completed from the start of `chunk` (only the bytes it lacks are copied)
  // and handled; gives the rest of the chunk, or undefined when the message is still incomplete.
  #completePending(chunk: Uint8Array): Uint8Array | undefined {
    let taken = Math.min(Math.max(HEADER - this.#pendingLength, 0), chunk.byteLength);
    this.#append(chunk.subarray(0, taken));
    if (this.#pendingLength < HEADER) return undefined;
    const length = new DataView(this.#pending.buffer).getInt32(1);
    // Not a message PostgreSQL sends: all of it goes to pg's parser, which fails as it would.
    const whole = length < 4 ? this.#pendingLength + chunk.byteLength - taken : 1 + length;
    const lacking = whole - this.#pendingLength;
    if (chunk.byteLength - taken < lacking) {
      this.#append(chunk.subarray(taken));
      return undefined;
    }
    this.#append(chunk.subarray(taken, taken + lacking));
    taken += lacking;
    this.#pendingLength = 0;
    this.#messages(this.#pending.subarray(0, whole));
    // A buffer grown for one large row is not kept.
    if (this.#pending.byteLength > KEPT_BYTES) this.#pending = new Uint8Array(0);
    return chunk.subarray(taken);
  }

  // Copies `bytes` after the pending ones.
  #append(bytes: Uint8Array) {
    const needed = this.#pendingLength + bytes.byteLength;
    if (needed > this.#pending.byteLength) {
      const grown = new Uint8Array(Math.max(needed, 2 * this.#pending.byteLength, 4096));
      grown.set(this.#pending.subarray(0, this.#pendingLength));
      this.#pending = grown;
    }
    this.#pending.set(bytes, this.#pendingLength);
    this.#pendingLength = needed;
  }

  // Handles the whole messages at the start of `bytes`; gives where the first incomplete one
  // starts.
  #messages(bytes: Uint8Array): number {
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    // Messages from `run` on go to pg's parser together.
    let run = 0;
    let at = 0;
    while (at + HEADER <= bytes.byteLength) {
      const length = view.getInt32(at + 1);
      // Not a message PostgreSQL sends: the rest goes to pg's parser, which fails as it would.
      if (length < 4) {
        this.#forward(bytes.subarray(run));
        return bytes.byteLength;
      }
      const end = at + 1 + length;
      if (end > bytes.byteLength) break;
      const code = bytes[at];
      if (code === ROW_DESCRIPTION) {
        this.#bytesColumns = bytesColumnsOf(bytes.subarray(at + HEADER, end));
      } else if (code === DATA_ROW && this.#bytesColumns.length > 0) {
        this.#forward(bytes.subarray(run, at));
        this.callback(
          dataRowOf(bytes.subarray(at + HEADER, end), this.#bytesColumns, end - at - 1),
        );
        run = end;
      }
      at = end;
    }
    this.#forward(bytes.subarray(run, at));
    return at;
  }

  end() {
    this.#inner.emit("end");
  }

  // pg's parser keeps views of some messages (a COPY's data, a password's salt) past its call.
  #forward(messages: Uint8Array) {
    if (messages.byteLength === 0) return;
    const bytes = this.lent ? new Uint8Array(messages) : messages;
    this.#inner.emit("data", Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength));
  }
}

// What of pg's Connection and Client this module uses (its types leave them out).
interface ConnectionInternals extends EventEmitter {
  readonly _emitMessage: boolean;
}
interface ClientInternals {
  connection: unknown;
  setTypeParser(oid: number, format: "text", parse: (value: string | Uint8Array) => unknown): void;
  readonly connectionParameters: { readonly ssl: unknown; readonly client_encoding?: string };
}
const Connection = (pg as unknown as {
  Connection: new (config: Record<string, unknown>) => ConnectionInternals;
}).Connection;

// pg's connection with its messages read by a BytesReader (the same events as its own).
// Over the service's own socket (pg_socket.ts) the reads are lent: the reader copies what it keeps.
class BytesConnection extends Connection {
  attachListeners(stream: EventEmitter) {
    const lent = stream instanceof PgSocket;
    if (lent) stream.lendReads();
    const reader = new BytesReader((message) => {
      const eventName = message.name === "error" ? "errorMessage" : message.name;
      if (this._emitMessage) this.emit("message", message);
      this.emit(eventName, message);
    }, lent);
    stream.on("data", (chunk: Uint8Array) => reader.read(chunk));
    stream.on("end", () => reader.end());
  }
}

// pg's client over a BytesConnection, made with the settings pg's own client gives its connection
// (pg's pool takes it as its `Client`). The connection given to pg's constructor only stands in
// for it until it is made: pg makes none of its own then (nor a socket for it).
export class BytesClient extends pg.Client {
  // deno-lint-ignore no-explicit-any
  constructor(config: any) {
    super({ ...config, connection: {} });
    const client = this as unknown as ClientInternals;
    client.connection = new BytesConnection({
      stream: config.stream,
      ssl: client.connectionParameters.ssl,
      keepAlive: config.keepAlive || false,
      keepAliveInitialDelayMillis: config.keepAliveInitialDelayMillis || 0,
      encoding: client.connectionParameters.client_encoding || "utf8",
    });
    // A text value as it is: a string, or a bytes column's bytes (pg's own makes it a string).
    client.setTypeParser(TEXT_TYPE, "text", (value) => value);
  }
}
