// Embedded PGlite in a Worker of its own, so that its statements run off the service's event loop:
// the message protocol, the worker's side (run as the worker's main module) and the handle over it.
// `deno compile` needs the worker named: `--include src/db/pglite_worker.ts`. The worker loads this
// module and PGlite only: every module it imports is loaded again in its own heap.
import { messages, parse, PGlite, protocol, types } from "@electric-sql/pglite";
import type { PGliteOptions, QueryOptions, Results } from "@electric-sql/pglite";
import { isBytesColumn } from "./bytes_columns.ts";
import type { PgliteHandle } from "./pglite_client.ts";

type Ask =
  | {
    readonly op: "open";
    readonly dataDir: string | undefined;
    readonly conf: Conf;
    readonly image: Blob | undefined;
  }
  | {
    readonly op: "query";
    readonly sql: string;
    readonly params: ReadonlyArray<unknown>;
    readonly rowMode: "object" | "array";
  }
  | { readonly op: "exec"; readonly sql: string }
  | { readonly op: "close" };

type Reply =
  | { readonly id: number; readonly ok: true; readonly value: unknown }
  | { readonly id: number; readonly ok: false; readonly error: WireError }
  | { readonly gone: string };

type Conf = PGliteOptions["postgresqlconf"];

// An error as it crosses: PostgreSQL's fields (code, detail, constraint, ...) are own properties.
interface WireError {
  readonly name: string;
  readonly message: string;
  readonly stack: string | undefined;
  readonly fields: Record<string, unknown>;
}

// PGlite on this thread: what the worker runs, and a reference for its results. A statement with a
// large binary parameter is bound by `queryWithLargeValues`, any other by PGlite's query.
export const inProcess = (db: PGlite): PgliteHandle => {
  const run = async (sql: string, params: ReadonlyArray<unknown>, options?: QueryOptions) =>
    withBytesColumns(
      params.some(isLargeBinary)
        ? await queryWithLargeValues(db, sql, params, options)
        : await db.query(sql, params as Array<unknown>, options),
    );
  return {
    query: (sql, params) => run(sql, params) as Promise<ReadonlyArray<object>>,
    values: (sql, params) =>
      run(sql, params, { rowMode: "array" }) as Promise<ReadonlyArray<ReadonlyArray<unknown>>>,
    exec: async (sql) => {
      const last = (await db.exec(sql)).at(-1);
      return (last === undefined ? [] : withBytesColumns(last)) as ReadonlyArray<object>;
    },
    close: () => db.close(),
  };
};

// A parameter this large in bytes (an uploaded file, a page of rows as JSON) is bound by
// queryWithLargeValues.
const LARGE_BINARY = 64 * 1024;
const isLargeBinary = (value: unknown) =>
  value instanceof Uint8Array && value.byteLength >= LARGE_BINARY;

const utf8 = new TextEncoder();

// The rows of a result, its bytes columns (bytes_columns.ts) as their UTF-8 bytes, as the
// PostgreSQL pool reads them (pg_bytes.ts).
const withBytesColumns = (result: Results): ReadonlyArray<unknown> => {
  const at = result.fields.flatMap((f, i) => isBytesColumn(f.name, f.dataTypeID) ? [i] : []);
  if (at.length === 0) return result.rows;
  const names = at.map((i) => result.fields[i].name);
  for (const row of result.rows as Array<Record<string, unknown> | Array<unknown>>) {
    if (Array.isArray(row)) {
      for (const i of at) if (typeof row[i] === "string") row[i] = utf8.encode(row[i] as string);
    } else {
      for (const name of names) {
        if (typeof row[name] === "string") row[name] = utf8.encode(row[name] as string);
      }
    }
  }
  return result.rows;
};

// A Bind message (the unnamed portal of the unnamed statement, results as text) of text and
// binary-format values, written into one buffer of its exact size: each value is copied once, into
// the message. PGlite's own message writer copies a value four times as its buffers grow and are
// cut; for a file of a few MB the worker held tens of MB of such copies until its next collection.
const bindMessage = (values: ReadonlyArray<string | Uint8Array | null>): Uint8Array => {
  const bytes = values.map((v) => typeof v === "string" ? utf8.encode(v) : v);
  // Length, portal and statement names, the format codes, the values, no result format code.
  let length = 4 + 1 + 1 + 2 + 2 * values.length + 2 + 2;
  for (const b of bytes) length += 4 + (b?.byteLength ?? 0);
  const message = new Uint8Array(1 + length);
  const view = new DataView(message.buffer);
  message[0] = 0x42; // B
  view.setInt32(1, length);
  let at = 7; // after the two empty names
  view.setInt16(at, values.length);
  at += 2;
  for (const v of values) {
    view.setInt16(at, v instanceof Uint8Array ? 1 : 0);
    at += 2;
  }
  view.setInt16(at, values.length);
  at += 2;
  for (const b of bytes) {
    view.setInt32(at, b === null ? -1 : b.byteLength);
    at += 4;
    if (b !== null) {
      message.set(b, at);
      at += b.byteLength;
    }
  }
  view.setInt16(at, 0);
  return message;
};

// What PGlite's query does (parse, the parameters' types, its serializers, bind, describe,
// execute, sync; its parsers for the rows; its locks; an error's query and parameters), with the
// Bind message above.
const queryWithLargeValues = async (
  db: PGlite,
  sql: string,
  params: ReadonlyArray<unknown>,
  options: QueryOptions | undefined,
): Promise<Results> => {
  await db._checkReady();
  return await db._runExclusiveTransaction(() =>
    db._runExclusiveQuery(async () => {
      const send = (message: Uint8Array) => db.execProtocolStream(message, { syncToFs: false });
      const replies: Array<messages.BackendMessage> = [];
      try {
        replies.push(...await send(protocol.serialize.parse({ text: sql })));
        const types = parse.parseDescribeStatementResults(
          await send(protocol.serialize.describe({ type: "S" })),
        );
        const values = params.map((value, i) => {
          if (value === null || value === undefined) return null;
          const serializer = db.serializers[types[i]];
          const serialized: unknown = serializer === undefined ? String(value) : serializer(value);
          return serialized instanceof ArrayBuffer
            ? new Uint8Array(serialized)
            : ArrayBuffer.isView(serialized)
            ? new Uint8Array(serialized.buffer, serialized.byteOffset, serialized.byteLength)
            : String(serialized);
        });
        replies.push(...await send(bindMessage(values)));
        replies.push(...await send(protocol.serialize.describe({ type: "P" })));
        replies.push(...await send(protocol.serialize.execute({})));
      } catch (error) {
        if (error instanceof messages.DatabaseError) {
          Object.assign(error, { query: sql, params, queryOptions: options });
        }
        throw error;
      } finally {
        replies.push(...await send(protocol.serialize.sync()));
      }
      await db.syncToFs();
      return parse.parseResults(replies, db.parsers, options)[0];
    })
  );
};

// Bytes a caller gives up with a statement's parameters (a page of rows encoded for it): the
// embedded database's worker takes their buffer as it is, without a copy, and the caller's view is
// left empty. Only a view over a whole buffer of its own is taken so; any other is copied.
// PostgreSQL's driver sends such bytes as they are, in binary format.
const handedOver = new WeakSet<Uint8Array>();

export const handOver = <A extends Uint8Array>(bytes: A): A => {
  handedOver.add(bytes);
  return bytes;
};

// The buffers of a statement's parameters that were handed over and can move as they are.
const movableBuffers = (params: ReadonlyArray<unknown>): Array<ArrayBuffer> => {
  const buffers: Array<ArrayBuffer> = [];
  for (const value of params) {
    if (!(value instanceof Uint8Array) || !handedOver.has(value)) continue;
    const buffer = value.buffer;
    if (
      buffer instanceof ArrayBuffer && value.byteOffset === 0 &&
      value.byteLength === buffer.byteLength && !buffers.includes(buffer)
    ) {
      buffers.push(buffer);
    }
  }
  return buffers;
};

// Structured clone keeps primitives, BigInt, Date, typed arrays, arrays and plain data, but not an
// object's class. PGlite turns an object parameter into text by its toString(), or JSON.stringify
// for a json parameter; both texts cross, and the worker puts back an object that gives them.
interface StandIn {
  readonly text: string;
  readonly json: string | undefined;
}

const isObject = (value: unknown): value is object =>
  typeof value === "object" && value !== null && !(value instanceof Date) &&
  !ArrayBuffer.isView(value);

const toWire = (value: unknown): unknown =>
  Array.isArray(value)
    ? value.some((item) => isObject(item)) ? value.map(toWire) : value
    : isObject(value)
    ? {
      text: String(value),
      json: JSON.stringify(value, (_, v) => typeof v === "bigint" ? v.toString() : v),
    } satisfies StandIn
    : value;

const fromWire = (value: unknown): unknown => {
  if (Array.isArray(value)) {
    return value.some((item) => isObject(item)) ? value.map(fromWire) : value;
  }
  if (!isObject(value)) return value;
  const { text, json } = value as StandIn;
  return { toString: () => text, toJSON: () => json === undefined ? undefined : JSON.parse(json) };
};

const cloneable = (value: unknown) => {
  try {
    structuredClone(value);
    return true;
  } catch {
    return false;
  }
};

const toWireError = (error: unknown): WireError => {
  const fields: Record<string, unknown> = {};
  if (typeof error === "object" && error !== null) {
    for (const [key, value] of Object.entries(error)) if (cloneable(value)) fields[key] = value;
  }
  return error instanceof Error
    ? { name: error.name, message: error.message, stack: error.stack, fields }
    : { name: "Error", message: String(error), stack: undefined, fields };
};

const fromWireError = (wire: WireError): Error => {
  const error = new Error(wire.message);
  error.name = wire.name;
  if (wire.stack !== undefined) error.stack = wire.stack;
  return Object.assign(error, wire.fields);
};

// PGlite's Bind message sends an ArrayBuffer or a view as a binary-format value, copying a view's
// bytes out first: a parameter that has its buffer to itself, as one that crossed from the service
// has, goes as that buffer. (The serializer's type names only text.)
const asBinary = (value: Uint8Array): string =>
  (value.byteOffset === 0 && value.byteLength === value.buffer.byteLength
    ? value.buffer
    : value.slice().buffer) as unknown as string;

// A bytea parameter goes to PostgreSQL as its bytes, in binary format (bytea's binary form is the
// bytes themselves). PGlite's own serializer spells it as hex through an array of one string per
// byte: for an uploaded file of a few MB that grew the worker's heap by tens of times the file's
// size (which it keeps) and took seconds.
const BYTEA = 17;
const byteaAsBinary = (value: unknown): string => {
  if (!(value instanceof Uint8Array)) throw new Error("Invalid input for bytea type");
  return asBinary(value);
};

// A json parameter given as bytes (UTF-8 text, as a page of rows is encoded for the database) goes
// in binary format, whose form for json is the text itself: the worker neither holds it as a string
// nor encodes it again. Any other value is serialised as PGlite does.
const JSON_TYPE = 114;
const pgliteJson = types.serializers[JSON_TYPE];
const jsonBytesAsBinary = (value: unknown): string =>
  value instanceof Uint8Array ? asBinary(value) : pgliteJson(value);

// The errors of a handle that can no longer reach its database carry connection SQLSTATEs, which
// errors.ts reports as "not ready": 08003 connection_does_not_exist, 08006 connection_failure.
const CLOSED = "PGlite is closed";
const closedError = () => Object.assign(new Error(CLOSED), { code: "08003" });
const lostError = (reason: string) =>
  Object.assign(new Error(`PGlite's worker stopped: ${reason}`), { code: "08006" });

// How PGlite is made, in the worker and wherever else one is made to stand for it.
export const pgliteOptions = (dataDir: string | undefined, conf: Conf): PGliteOptions => ({
  dataDir,
  postgresqlconf: conf,
  serializers: { [BYTEA]: byteaAsBinary, [JSON_TYPE]: jsonBytesAsBinary },
});

export interface WorkerOptions {
  // A data folder's image (PGlite's dumpDataDir) that a database in memory starts from instead of
  // an empty cluster.
  readonly image?: Blob;
  // This module's worker; a test may pass one of its own that speaks the protocol.
  readonly worker?: Worker;
}

// Starts the worker and opens the database in it (a folder, or in memory when undefined). Requests
// run one after the other in the worker; close() waits for those sent before it, then ends it.
export const startPgliteWorker = async (
  dataDir: string | undefined,
  conf: Conf,
  options: WorkerOptions = {},
): Promise<PgliteHandle> => {
  const worker = options.worker ??
    new Worker(new URL("./pglite_worker.ts", import.meta.url).href, { type: "module" });
  const pending = new Map<
    number,
    { resolve: (value: unknown) => void; reject: (error: Error) => void }
  >();
  let nextId = 0;
  let failure: Error | undefined;
  let ended = false;
  let markLost: (reason: Error) => void = () => {};
  const lost = new Promise<Error>((resolve) => (markLost = resolve));
  const end = (reason: Error) => {
    failure ??= reason;
    if (ended) return;
    ended = true;
    worker.terminate();
    for (const { reject } of pending.values()) reject(reason);
    pending.clear();
    if (failure.message !== CLOSED) markLost(failure);
  };
  worker.onmessage = ({ data }: MessageEvent<Reply>) => {
    if ("gone" in data) return end(lostError(data.gone));
    const call = pending.get(data.id);
    if (call === undefined) return;
    pending.delete(data.id);
    if (data.ok) call.resolve(data.value);
    else call.reject(fromWireError(data.error));
  };
  // An uncaught error in the worker would otherwise end this process too.
  worker.onerror = (event) => {
    event.preventDefault();
    end(lostError(event.message));
  };
  worker.onmessageerror = () => end(lostError("a reply could not be read"));

  const send = <A>(request: Ask) =>
    new Promise<A>((resolve, reject) => {
      if (ended) return reject(failure);
      const id = nextId++;
      // Handed-over bytes among the parameters move to the worker instead of being copied.
      worker.postMessage(
        { ...request, id },
        request.op === "query" ? movableBuffers(request.params) : [],
      );
      pending.set(id, { resolve: resolve as (value: unknown) => void, reject });
    });
  const call = <A>(request: Ask) =>
    failure === undefined ? send<A>(request) : Promise.reject(failure);

  try {
    await send({ op: "open", dataDir, conf, image: options.image });
  } catch (error) {
    end(closedError());
    throw error;
  }
  return {
    query: (sql, params) =>
      call<ReadonlyArray<object>>({
        op: "query",
        sql,
        params: params.map(toWire),
        rowMode: "object",
      }),
    values: (sql, params) =>
      call<ReadonlyArray<ReadonlyArray<unknown>>>({
        op: "query",
        sql,
        params: params.map(toWire),
        rowMode: "array",
      }),
    exec: (sql) => call<ReadonlyArray<object>>({ op: "exec", sql }),
    lost,
    close: async () => {
      if (failure !== undefined) return end(failure);
      failure = closedError();
      try {
        await send({ op: "close" });
      } finally {
        end(failure);
      }
    },
  };
};

// The bytes among a statement's parameters are the worker's own once they have crossed (moved, or
// copied by the message): their memory is given back as soon as the statement has run and been
// answered. Left to the worker's collector, whose heap grows little, a preview's file and pages of
// rows stayed allocated for tens of MB.
// (Several parameters may be views of one buffer: it is given back once.)
const release = (params: ReadonlyArray<unknown>) => {
  for (const value of params) {
    if (value instanceof Uint8Array) {
      const buffer = value.buffer;
      if (buffer instanceof ArrayBuffer && !buffer.detached) buffer.transfer(0);
    }
  }
};

// The worker's side: one PGlite, requests served in the order they came.
if (import.meta.main) {
  const scope = globalThis as unknown as {
    onmessage: ((event: MessageEvent<Ask & { id: number }>) => void) | null;
    postMessage: (message: Reply) => void;
    addEventListener: (type: "unload", listener: () => void) => void;
  };
  let db: PgliteHandle | undefined;
  const opened = () => {
    if (db === undefined) throw closedError();
    return db;
  };
  const perform = async (request: Ask): Promise<unknown> => {
    switch (request.op) {
      case "open": {
        // Options in one object: PGlite drops the second argument when the first (the folder) is
        // undefined, as it is for a database in memory.
        const pglite = new PGlite({
          ...pgliteOptions(request.dataDir, request.conf),
          loadDataDir: request.image,
        });
        await pglite.waitReady;
        db = inProcess(pglite);
        return undefined;
      }
      case "query": {
        const params = request.params.map(fromWire);
        return request.rowMode === "array"
          ? opened().values(request.sql, params)
          : opened().query(request.sql, params);
      }
      case "exec":
        return opened().exec(request.sql);
      case "close": {
        const closing = opened();
        db = undefined;
        return closing.close();
      }
    }
  };
  let queue = Promise.resolve();
  scope.onmessage = ({ data }) => {
    queue = queue.then(async () => {
      try {
        scope.postMessage({ id: data.id, ok: true, value: await perform(data) });
      } catch (error) {
        scope.postMessage({ id: data.id, ok: false, error: toWireError(error) });
      }
      if (data.op === "query") release(data.params);
    });
  };
  // An exit from inside (Deno.exit, as PGlite's runtime may call on a fatal error) fires no error
  // event in the parent: say so, or its requests would wait for ever.
  scope.addEventListener("unload", () => scope.postMessage({ gone: "the worker exited" }));
}
