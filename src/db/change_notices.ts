// The notices of committed changes (migration 0018's triggers), heard on a connection of its own.
// What a statement confirmed (a credential's row, the version of a read's data) stands for as long
// as no notice has come since that statement began: `generation` counts the notices, and the loss
// of the connection (notices may have been missed then). A request relies on that only after a
// barrier: a statement on the listening connection that began after the request arrived. PostgreSQL
// sends a listener the notices of every commit made before a statement ends ahead of its answer, so
// once the barrier answers, every change committed before the request is counted, and a key
// revoked by another process is refused from its next request on (rules.md §9). Requests that ask
// meanwhile share one barrier. The barrier also reads the database's clock, against which a kept
// credential's expiry is judged. Only PostgreSQL's layer provides it; without it every request
// asks its statement.
import { Context, Effect, Layer } from "effect";
import pg from "pg";
import { pgStream } from "./pg_socket.ts";
import { utcMicros } from "./sql_text.ts";

export interface ChangeNoticesShape {
  // Changes with every notice and every loss or return of the listening connection.
  readonly generation: () => number;
  // The database's clock (utcMicros text) read by a statement on the listening connection that
  // began after this was asked; undefined while not listening (or when that statement failed).
  readonly barrier: Effect.Effect<string | undefined>;
}

export class ChangeNotices extends Context.Tag("Db/ChangeNotices")<
  ChangeNotices,
  ChangeNoticesShape
>() {}

export const CHANNEL = "data_changes";

// The barrier: the clock, and that the statement ran on the session that listens (behind a pooler
// that hands out server connections per transaction, it would not: no notice would ever come).
const NOW = utcMicros("now()");
const BARRIER_SQL = `
  SELECT ${NOW} AS now, pg_backend_pid() AS pid,
    '${CHANNEL}' = ANY (ARRAY(SELECT pg_listening_channels())) AS listening`;

// PostgreSQL 15 sends a session the notices it has received ahead of the answer to the statement
// it was running; the barrier relies on that.
const MIN_SERVER_VERSION = 150000;

// A barrier that has not answered in this long gives up (its requests ask their statements) and
// the connection is made again: a connection that hangs must not hold requests.
const BARRIER_MS = 1_000;
// How long after a loss the connection is made again, and how long making it may take.
const RECONNECT_MS = 1_000;
const CONNECT_MS = 5_000;

// The connection's string and startup options, as the pool's (database.ts connectionOf).
export interface ListenOptions {
  readonly connectionString: string;
  readonly options: string;
}

// Listens until the scope closes. Where the notices cannot be relied on, a warning says why and
// every read asks its statement.
export const listenChanges = (connection: ListenOptions) =>
  Effect.acquireRelease(
    Effect.sync(() => new Listener(connection)),
    (listener) => Effect.sync(() => listener.close()),
  ).pipe(
    Effect.tap((listener) =>
      Effect.forkScoped(Effect.flatMap(
        Effect.promise(() => listener.unusable.promise),
        (why) => Effect.logWarning(`the notices of changes are not used: ${why}`),
      ))
    ),
    Effect.map((listener): ChangeNoticesShape => ({
      generation: () => listener.generation,
      barrier: Effect.promise(() => listener.barrier()),
    })),
  );

export const changeNoticesLayer = (connection: ListenOptions) =>
  Layer.scoped(ChangeNotices, listenChanges(connection));

class Listener {
  generation = 0;
  #client: pg.Client | undefined;
  #listening = false;
  #closed = false;
  #retry: ReturnType<typeof setTimeout> | undefined;
  // The barrier that requests asking now wait for; it starts when the one under way has answered.
  #next: PromiseWithResolvers<string | undefined> | undefined;
  #running = false;
  // The server process of the listening session.
  #pid = 0;
  // Resolved, with the reason, when the notices cannot be relied on: no connection is made again.
  readonly unusable = Promise.withResolvers<string>();

  constructor(readonly connection: ListenOptions) {
    this.#connect();
  }

  #connect() {
    this.#retry = undefined;
    if (this.#closed) return;
    const client = new pg.Client({
      ...this.connection,
      application_name: "energy-saving-service notices",
      connectionTimeoutMillis: CONNECT_MS,
      stream: pgStream,
    });
    this.#client = client;
    client.on("notification", () => {
      if (client === this.#client) this.generation++;
    });
    client.on("error", () => this.#lose(client));
    client.on("end", () => this.#lose(client));
    client.connect()
      .then(() => client.query(`LISTEN ${CHANNEL}`))
      .then((): Promise<pg.QueryResult<{ pid: number; version: number }>> =>
        client.query(
          "SELECT pg_backend_pid() AS pid, current_setting('server_version_num')::int AS version",
        )
      )
      .then(({ rows: [session] }: pg.QueryResult<{ pid: number; version: number }>) => {
        if (client !== this.#client) return;
        if (session.version < MIN_SERVER_VERSION) {
          return this.#disable(`PostgreSQL ${session.version} is older than 15`);
        }
        this.#pid = session.pid;
        // What was confirmed before now was not heard: it is checked again.
        this.generation++;
        this.#listening = true;
      })
      .catch(() => this.#lose(client));
  }

  // For good: a lost connection is not made again.
  #disable(why: string) {
    this.unusable.resolve(why);
    this.close();
  }

  #lose(client: pg.Client) {
    if (client !== this.#client) return;
    this.#client = undefined;
    this.#listening = false;
    this.generation++;
    client.end().catch(() => {});
    if (!this.#closed) this.#retry = setTimeout(() => this.#connect(), RECONNECT_MS);
  }

  barrier(): Promise<string | undefined> {
    if (!this.#listening) return Promise.resolve(undefined);
    this.#next ??= Promise.withResolvers();
    const answer = this.#next.promise;
    if (!this.#running) this.#start();
    return answer;
  }

  #start() {
    const client = this.#client;
    const waiting = this.#next!;
    this.#next = undefined;
    if (client === undefined || !this.#listening) {
      waiting.resolve(undefined);
      return;
    }
    this.#running = true;
    let settled = false;
    const timer = setTimeout(() => {
      settled = true;
      waiting.resolve(undefined);
      this.#lose(client);
    }, BARRIER_MS);
    const barrier: Promise<pg.QueryResult<{ now: string; pid: number; listening: boolean }>> =
      client.query(BARRIER_SQL);
    barrier.then(
      ({ rows: [row] }): string | undefined => {
        // An answer of a connection since lost or made again says nothing of the listening one.
        if (client !== this.#client) return undefined;
        if (row.pid === this.#pid && row.listening) return row.now;
        this.#disable(
          "the connection to PostgreSQL is not a session of its own (a pooler in transaction " +
            "mode?): connect the service directly or through a pooler in session mode",
        );
        return undefined;
      },
      () => undefined,
    ).then((now) => {
      clearTimeout(timer);
      if (!settled) waiting.resolve(client === this.#client ? now : undefined);
      this.#running = false;
      if (this.#next !== undefined) this.#start();
    });
  }

  close() {
    this.#closed = true;
    if (this.#retry !== undefined) clearTimeout(this.#retry);
    const client = this.#client;
    this.#client = undefined;
    this.#listening = false;
    this.generation++;
    this.#next?.resolve(undefined);
    this.#next = undefined;
    client?.end().catch(() => {});
  }
}
