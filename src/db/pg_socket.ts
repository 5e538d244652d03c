// The pool's connections to PostgreSQL over Deno's own sockets, with one read buffer per
// connection. Through node:net, every read of the runtime allocates a fresh 64 KB buffer before it
// waits; a pooled connection waits between statements, so those buffers outlive young-generation
// collections and pile up as old garbage until a full collection, 64 KB for every statement. Here
// each read lands in the connection's own buffer, and only the bytes that arrived are copied out
// for the driver; or, for a reader that copies what it keeps (lendReads), lent to it as they are.
//
// The socket offers what pg's Connection uses (the shape of its own Cloudflare socket):
// connect(port, host) or connect(path) for a Unix socket, write, end, destroy, setNoDelay,
// setKeepAlive, ref, unref, `writable`, and the events connect, data, error and close. TLS
// connections keep node's socket (pg upgrades it with node:tls).
import { EventEmitter } from "node:events";
import { Buffer } from "node:buffer";
import net from "node:net";

// Bytes read at most at once: PostgreSQL sends at most 8 KB per write on a TCP socket by default;
// larger reads serve a large row in fewer wake-ups.
const READ_BYTES = 64 * 1024;

// Node's error codes for the runtime's socket errors, so that the pool's callers (src/db/errors.ts)
// recognise a lost database whichever socket failed.
const CODES: ReadonlyArray<readonly [new (...args: never[]) => Error, string]> = [
  [Deno.errors.ConnectionRefused, "ECONNREFUSED"],
  [Deno.errors.ConnectionReset, "ECONNRESET"],
  [Deno.errors.ConnectionAborted, "ECONNRESET"],
  [Deno.errors.BrokenPipe, "EPIPE"],
  [Deno.errors.TimedOut, "ETIMEDOUT"],
  [Deno.errors.NotConnected, "ENOTCONN"],
  [Deno.errors.AddrNotAvailable, "EADDRNOTAVAIL"],
  [Deno.errors.NotFound, "ENOENT"],
  [Deno.errors.PermissionDenied, "EACCES"],
];

const withNodeCode = (error: unknown): Error => {
  const e = error instanceof Error ? error : new Error(String(error));
  const found = CODES.find(([type]) => e instanceof type);
  if (found !== undefined && (e as { code?: unknown }).code === undefined) {
    Object.defineProperty(e, "code", { value: found[1], enumerable: true });
  }
  return e;
};

type Conn = Deno.TcpConn | Deno.UnixConn;

export class PgSocket extends EventEmitter {
  writable = false;
  destroyed = false;
  #conn: Conn | undefined;
  #closed = false;
  #unref = false;
  // Each read's bytes given as a view of the read buffer, valid until the listener returns.
  #lends = false;
  // Bytes written and not yet sent, their callbacks, and those waiting for them to be sent.
  #pending: Array<Uint8Array> = [];
  #callbacks: Array<(error?: Error) => void> = [];
  #drained: Array<() => void> = [];
  #flushing = false;

  setNoDelay(): this {
    if (this.#conn !== undefined && "setNoDelay" in this.#conn) this.#conn.setNoDelay(true);
    return this;
  }

  setKeepAlive(enable = false): this {
    if (this.#conn !== undefined && "setKeepAlive" in this.#conn) {
      this.#conn.setKeepAlive(enable);
    }
    return this;
  }

  // From now on, each "data" event gives a view of the connection's read buffer instead of a copy:
  // for a listener that handles the bytes before it returns and copies what it keeps.
  lendReads(): this {
    this.#lends = true;
    return this;
  }

  ref(): this {
    this.#unref = false;
    this.#conn?.ref();
    return this;
  }

  unref(): this {
    this.#unref = true;
    this.#conn?.unref();
    return this;
  }

  connect(portOrPath: number | string, host?: string): this {
    const opening = typeof portOrPath === "string" && host === undefined
      ? Deno.connect({ transport: "unix", path: portOrPath })
      : Deno.connect({ hostname: host ?? "localhost", port: Number(portOrPath) });
    opening.then(
      (conn) => {
        if (this.destroyed) {
          conn.close();
          return;
        }
        this.#conn = conn;
        if ("setNoDelay" in conn) conn.setNoDelay(true);
        if (this.#unref) conn.unref();
        this.writable = true;
        this.emit("connect");
        this.#listen(conn);
      },
      (error) => this.#fail(error),
    );
    return this;
  }

  async #listen(conn: Conn) {
    const buffer = new Uint8Array(READ_BYTES);
    try {
      while (true) {
        const n = await conn.read(buffer);
        if (n === null) break;
        // A copy of what arrived (the driver may keep it while the next read fills the buffer),
        // unless the reads are lent. A typed array's slice is one block copy; Buffer.from of a
        // view copies it slower.
        if (n > 0) {
          const bytes = this.#lends ? buffer : buffer.slice(0, n);
          this.emit("data", Buffer.from(bytes.buffer, 0, n));
        }
      }
    } catch (error) {
      // A read cut by this side's own close is not a failure.
      if (!this.#closed && !this.destroyed) this.#fail(error);
      return;
    }
    this.emit("end");
    this.#close();
  }

  // Writes given in one turn of the event loop go out as one: the driver writes a statement's
  // messages (parse, bind, describe, execute, sync) one by one.
  write(
    data: Uint8Array | string,
    encodingOrCallback?: string | ((error?: Error) => void),
    callback?: (error?: Error) => void,
  ): boolean {
    const done = typeof encodingOrCallback === "function" ? encodingOrCallback : callback;
    const bytes = typeof data === "string" ? Buffer.from(data, "utf8") : data;
    if (this.#conn === undefined || !this.writable) {
      queueMicrotask(() => done?.(new Error("The connection is not open")));
      return false;
    }
    this.#pending.push(bytes);
    if (done !== undefined) this.#callbacks.push(done);
    if (!this.#flushing) {
      this.#flushing = true;
      queueMicrotask(() => this.#flush());
    }
    return true;
  }

  async #flush() {
    const conn = this.#conn!;
    while (this.#pending.length > 0) {
      const parts = this.#pending;
      const callbacks = this.#callbacks;
      this.#pending = [];
      this.#callbacks = [];
      const bytes = parts.length === 1 ? parts[0] : Buffer.concat(parts);
      let failed: Error | undefined;
      try {
        let written = 0;
        while (written < bytes.byteLength) written += await conn.write(bytes.subarray(written));
      } catch (error) {
        failed = withNodeCode(error);
      }
      for (const callback of callbacks) callback(failed);
      if (failed !== undefined) {
        this.#pending = [];
        this.#callbacks = [];
        this.#fail(failed);
        break;
      }
    }
    this.#flushing = false;
    const drained = this.#drained;
    this.#drained = [];
    for (const resolve of drained) resolve();
  }

  // Resolves once what was written so far has gone out.
  #sent(): Promise<void> {
    return this.#flushing
      ? new Promise((resolve) => this.#drained.push(resolve))
      : Promise.resolve();
  }

  end(
    data?: Uint8Array | string | (() => void),
    _encoding?: string,
    callback?: () => void,
  ): this {
    const done = typeof data === "function" ? data : callback;
    if (data !== undefined && typeof data !== "function" && data.length > 0) this.write(data);
    this.writable = false;
    this.#sent().then(() => {
      this.#close();
      done?.();
    });
    return this;
  }

  destroy(error?: Error): this {
    if (this.destroyed) return this;
    this.destroyed = true;
    this.writable = false;
    if (error !== undefined) this.emit("error", error);
    this.#close();
    return this;
  }

  #fail(error: unknown) {
    this.writable = false;
    this.emit("error", withNodeCode(error));
    this.#close();
  }

  #close() {
    if (this.#closed) return;
    this.#closed = true;
    this.writable = false;
    try {
      this.#conn?.close();
    } catch {
      // Already closed by the other side.
    }
    this.emit("close");
  }
}

// pg's `stream` option: this socket, or node's where the connection asks for TLS.
export const pgStream = (config: { readonly ssl?: unknown }) =>
  config.ssl !== undefined && config.ssl !== false ? new net.Socket() : new PgSocket();
