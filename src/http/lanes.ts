// Read lanes: the most frequent reads answered without the HttpApi pipeline (its routing, schema
// decoding, middleware and response conversion cost more than the read itself once the data is
// shaped at write time). A lane takes only the plain form of its request: the query parameters it
// knows, each once, in their canonical spelling, and a credential. It runs the same service call
// as the endpoint's handler and writes the same bytes and headers; for anything else, and for
// every refusal or failure, it gives up (undefined) and the HttpApi answers the request, so that
// every error answer has a single source. tests/lanes_test.ts compares both ways byte for byte.
import { Effect, Exit, Option, Runtime } from "effect";
import { RequestNote, type RequestNoteShape } from "../domain/request.ts";
import { ID_TEXT, isCalendarDate, MAX_ID } from "../domain/common.ts";
import { type OriginSettings, webRequestFacts } from "../auth/auth_http.ts";
import { bearerToken, type RequestFacts } from "../auth/auth_service.ts";
import { credentialByKeySql, type CredentialRow } from "../auth/access.ts";
import { hashKey } from "../auth/keys.ts";
import type { AnswerCache, CachedAnswer } from "./answer_cache.ts";
import type { DirectQueryShape } from "../db/database.ts";
import type { Incoming } from "./incoming.ts";

export interface LaneRequest {
  readonly request: Incoming;
  readonly url: URL;
  readonly note: RequestNoteShape;
  readonly signal: AbortSignal;
}

export type Lane = (request: LaneRequest) => Promise<Response | undefined>;

// What a lane needs from the service: its layers' runtime (whose services the HttpApi uses too),
// the origin setting for the credential facts, and plain queries when the database has them.
export interface LaneContext<R> {
  readonly runtime: Runtime.Runtime<R>;
  // What the service's own origin is decided from (auth_http.ts ownOrigin).
  readonly origin: OriginSettings;
  readonly direct: Option.Option<DirectQueryShape>;
  // Recent answers of the lanes, with the version of their data (src/http/answer_cache.ts).
  readonly answers: AnswerCache;
}

// A lane answer with its body at hand, for the server to write at once without reading it as a
// stream. The bytes belong to the response object itself: kept beside it in a WeakMap, a body
// outlived every young-generation collection (the map's entries are cleared by full collections
// only), so each answer's buffer waited in memory for the next full one. `owned`: nobody else holds
// the bytes, so the server may release them once written.
// Its headers are a plain record, which the server writes as it is (setHeader adds to it): a
// Headers object is made only when something asks for `headers`. Made for every answer, the
// Headers (its init's conversion, then its sorted iteration by the server) were about a quarter of
// what a kept catalog answer allocated (14 of 58 KB).
class KnownBodyResponse extends Response {
  #headers: Headers | undefined;
  constructor(
    body: BodyInit | null,
    status: number,
    readonly record: Record<string, string>,
    readonly knownBytes: Uint8Array | undefined,
    readonly owned: boolean,
  ) {
    super(body, { status });
  }

  override get headers(): Headers {
    return this.#headers ??= new Headers(this.record);
  }

  // The record, while no Headers object was made (whose changes it would not show).
  get plainRecord(): Record<string, string> | undefined {
    return this.#headers === undefined ? this.record : undefined;
  }

  set(name: string, value: string) {
    this.record[name] = value;
    this.#headers?.set(name, value);
  }
}

export const knownBody = (response: Response): Uint8Array | undefined =>
  response instanceof KnownBodyResponse ? response.knownBytes : undefined;

// Whether the server may release a known body once written (releaseBody).
export const ownedBody = (response: Response): boolean =>
  response instanceof KnownBodyResponse && response.owned;

// A response's headers as a record of lower-case names, when it is a lane answer whose headers
// were not made into a Headers object (undefined otherwise: read `headers`).
export const plainHeaders = (response: Response): Readonly<Record<string, string>> | undefined =>
  response instanceof KnownBodyResponse ? response.plainRecord : undefined;

// Sets a header (lower-case name) of any response; a lane answer's without making its Headers
// object.
export const setHeader = (response: Response, name: string, value: string) => {
  if (response instanceof KnownBodyResponse) response.set(name, value);
  else response.headers.set(name, value);
};

// A header of any response (lower-case name); a lane answer's without making its Headers object.
export const headerOf = (response: Response, name: string): string | null => {
  const record = plainHeaders(response);
  return record === undefined ? response.headers.get(name) : record[name] ?? null;
};

// Frees the memory of bytes nobody else holds, at once, without waiting for a collection: their
// ArrayBuffer is detached (transferred to one of no bytes). Bytes that are a part of a larger
// buffer are left to the collector. A 160 KB answer unpacked for each request at 2,000 requests a
// second is 320 MB a second of buffers: freed this way they are reused by the next requests, where
// otherwise they waited in memory for V8 to collect the objects that held them.
export const releaseBody = (bytes: Uint8Array) => {
  const buffer = bytes.buffer;
  if (
    buffer instanceof ArrayBuffer && bytes.byteOffset === 0 &&
    bytes.byteLength === buffer.byteLength && !buffer.detached
  ) {
    buffer.transfer(0);
  }
};

// A JSON answer of a lane: 200 with its bytes (and their length), or 304 without a body. The
// headers are those of HttpServerResponse.uint8Array / .empty for the same answer. `owned`: the
// bytes are this answer's alone (AnswerCache.take), released by the server once written.
export const laneJson = (
  status: 200 | 304,
  headers: Readonly<Record<string, string>>,
  body?: Uint8Array<ArrayBuffer>,
  owned = false,
) => {
  const record: Record<string, string> = {};
  for (const name in headers) record[name.toLowerCase()] = headers[name];
  if (body !== undefined) {
    record["content-type"] = "application/json";
    record["content-length"] = String(body.byteLength);
  }
  // The body as a stream that hands over the buffer itself: a Uint8Array given to Response would
  // be copied, and the server writes the buffer directly anyway (knownBody).
  return new KnownBodyResponse(
    body === undefined ? null : new ReadableStream<Uint8Array>({
      pull(controller) {
        controller.enqueue(body);
        controller.close();
      },
    }),
    status,
    record,
    body,
    owned && body !== undefined,
  );
};

// A kept answer's bytes as a lane's 200 (AnswerCache.take): released once written when they were
// unpacked for this request alone.
export const keptJson = (
  answers: AnswerCache,
  answer: CachedAnswer,
  headers: Readonly<Record<string, string>>,
) => {
  const { bytes, owned } = answers.take(answer);
  return laneJson(200, headers, bytes, owned);
};

// The query parameters `names`, each present exactly once and nothing else; undefined otherwise.
export const plainParams = <K extends string>(
  url: URL,
  names: ReadonlyArray<K>,
): Record<K, string> | undefined => {
  const found: Partial<Record<K, string>> = {};
  let count = 0;
  for (const [name, value] of url.searchParams) {
    if (!(names as ReadonlyArray<string>).includes(name) || found[name as K] !== undefined) {
      return undefined;
    }
    found[name as K] = value;
    count++;
  }
  return count === names.length ? found as Record<K, string> : undefined;
};

// An id as the contract's IdFromString takes it.
export const plainId = (text: string | undefined) => {
  if (text === undefined || !ID_TEXT.test(text)) return undefined;
  const id = Number(text);
  return id <= MAX_ID ? id : undefined;
};

export const RANGE_PARAMS = ["scope_id", "start", "end"] as const;

// A range read's query (RANGE_PARAMS) in its plain form: a canonical scope id, calendar dates.
export const plainRange = (storeId: number, query: Record<string, string>) => {
  const scopeId = plainId(query.scope_id);
  return scopeId === undefined || !isCalendarDate(query.start) || !isCalendarDate(query.end)
    ? undefined
    : { storeId, scopeId, start: query.start, end: query.end };
};

// A lane's one round trip for a bearer key on PostgreSQL, without a fiber: the key's row (access.ts,
// as `credential`) beside `columns` of `relation` (a lateral relation that may name the row `c`;
// its parameters from $2). Made once per lane, so that its text is one constant string (the
// database prepares it once per connection: src/db/database.ts).
export const keyRowSql = (columns: string, relation: string) =>
  `WITH c AS (${credentialByKeySql("$1")})
     SELECT row_to_json(c) AS credential, ${columns}
     FROM c CROSS JOIN LATERAL ${relation} v`;

// Runs a keyRowSql statement with the request's key and `params` ($2 on). Undefined without plain
// queries (the embedded database) or without a key (a session cookie, none), and when the statement
// fails: the lane's Effect path then decides, as it does for every row the caller's decision
// refuses.
export const keyRowWith = async <Row>(
  context: Pick<LaneContext<never>, "direct">,
  lane: LaneRequest,
  sql: string,
  params: ReadonlyArray<unknown>,
): Promise<(Row & { readonly credential: CredentialRow }) | undefined> => {
  if (Option.isNone(context.direct)) return undefined;
  const token = bearerToken(lane.request.headers.get("authorization") ?? undefined);
  if (token === undefined || token === "") return undefined;
  const rows = await context.direct.value<Row & { readonly credential: CredentialRow }>(
    sql,
    [hashKey(token), ...params],
  ).catch(() => []);
  return rows[0];
};

// Runs a lane's service call for one request: with the request's note (the access log's member)
// and its signal; a failure of any kind gives undefined.
export const runLane = async <A, E, R>(
  context: LaneContext<R>,
  lane: LaneRequest,
  effect: (facts: RequestFacts) => Effect.Effect<A, E, R | RequestNote>,
): Promise<A | undefined> => {
  const facts = webRequestFacts(lane.request, context.origin);
  const runtime = Runtime.provideService(context.runtime, RequestNote, lane.note);
  // Lanes run only while tracing is off (app.ts): no span is made.
  const exit = await Runtime.runPromiseExit(runtime)(
    Effect.withTracerEnabled(effect(facts), false),
    { signal: lane.signal },
  );
  return Exit.isSuccess(exit) ? exit.value : undefined;
};

// The lanes of a table, over a context made on first use (the services' runtime is built by then);
// a context that cannot be made (the database is away at the first request) is tried again on the
// next request, and no context (undefined) turns every lane off.
export const makeLanes = <R>(
  context: () => Promise<LaneContext<R> | undefined>,
  table: ReadonlyArray<readonly [string, (context: LaneContext<R>) => Lane]>,
): ReadonlyMap<string, Lane> => {
  let made: Promise<ReadonlyMap<string, Lane> | undefined> | undefined;
  const lanes = () => {
    made ??= context().then(
      (c) => c === undefined ? undefined : new Map(table.map(([key, lane]) => [key, lane(c)])),
      () => {
        made = undefined;
        return undefined;
      },
    );
    return made;
  };
  return new Map(table.map(([key]) => [key, async (request: LaneRequest) => {
    const lane = (await lanes())?.get(key);
    return lane === undefined ? undefined : lane(request);
  }]));
};
