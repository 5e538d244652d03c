// The store list and the catalog (GET /stores, GET /catalog): one reply for the HttpApi handler
// and the read lanes. Its version is read first (a matching If-None-Match reads no store); a list
// of at most LIST_BUFFER_STORES stores is then answered as one buffer, which the lanes keep with
// its ETag (src/http/answer_cache.ts) and answer again while the version holds, without reading a
// store; a longer list streams page by page, so that an answer of any size holds one page.
import { createHash } from "node:crypto";
import { Chunk, Effect, Stream } from "effect";
import {
  encodeParts,
  etagMatches,
  etagOf,
  jsonHeaders,
  notModifiedHeaders,
} from "../api/json_response.ts";
import { liveCredential, requirePermission } from "../auth/access.ts";
import { Auth } from "../auth/auth_service.ts";
import type { JsonText } from "../domain/answers.ts";
import type { CallerShape } from "../domain/auth.ts";
import type { ServiceUnavailable } from "../domain/errors.ts";
import { type CachedAnswer, SHARED_PLAIN_MIN_BYTES } from "../http/answer_cache.ts";
import {
  keptJson,
  keyRowSql,
  keyRowWith,
  type Lane,
  type LaneContext,
  laneJson,
  type LaneRequest,
  plainParams,
  runLane,
} from "../http/lanes.ts";
import { SHAPE_TAG } from "../routines.ts";
import { type ListVersion, listVersionSql, StoreRepo } from "./store_repo.ts";

export type ListKind = "s" | "c";

// A catalog row is about 700 bytes, a store-list row about 220: 1,000 stores are at most 0.7 MB.
export const LIST_BUFFER_STORES = 1_000;

export const LIST_OPEN = '{"stores" : [';
export const LIST_SEPARATOR = ", ";
export const LIST_CLOSE = "]}";

export type ListReply =
  | { readonly form: "not-modified"; readonly etag: string }
  // The lanes' kept answer is the answer.
  | { readonly form: "kept"; readonly etag: string; readonly kept: CachedAnswer }
  // The whole answer, as the parts of its JSON text.
  | { readonly form: "whole"; readonly etag: string; readonly parts: ReadonlyArray<string> }
  | {
    readonly form: "stream";
    readonly etag: string;
    readonly rows: Stream.Stream<JsonText, ServiceUnavailable>;
  }
  // Too long to answer in one buffer, and the caller does not stream (nothing was read).
  | { readonly form: "long" };

// Keys limited to different stores see different lists: the list's key among kept answers names
// the stores in full, its ETag by a short digest.
const scopeDigest = (storeIds: ReadonlyArray<number> | null) =>
  storeIds === null ? "all" : createHash("sha256").update(storeIds.join(",")).digest("hex");

export const listKey = (kind: ListKind, caller: CallerShape) => listKeyOf(kind, caller.storeIds);

const listKeyOf = (kind: ListKind, storeIds: ReadonlyArray<number> | null) =>
  `${kind}|${scopeDigest(storeIds)}`;

// The ETag of a list at `version` (listVersionSql) for a key of these stores.
const listEtag = (kind: ListKind, version: string, storeIds: ReadonlyArray<number> | null) =>
  etagOf(kind, `${version}.${scopeDigest(storeIds).slice(0, 12)}`, SHAPE_TAG);

// The reply to a read of a list by `caller`. `kept`: the list's answer kept by the lanes, whose
// version is its ETag; `streams`: whether a long list (more than `bufferStores` stores) may stream.
export const listReply = (
  kind: ListKind,
  caller: CallerShape,
  header: string | undefined,
  options: {
    readonly kept?: CachedAnswer;
    readonly streams: boolean;
    readonly bufferStores?: number;
  },
) =>
  Effect.gen(function* () {
    yield* requirePermission(caller, "read");
    const repo = yield* StoreRepo;
    const now = yield* repo.listVersion(caller.storeIds);
    const etag = listEtag(kind, now.version, caller.storeIds);
    const reply = (r: ListReply) => r;
    if (etagMatches(header, etag)) return reply({ form: "not-modified", etag });
    const kept = options.kept;
    if (kept !== undefined && kept.version === etag) return reply({ form: "kept", etag, kept });
    const long = now.stores > (options.bufferStores ?? LIST_BUFFER_STORES);
    if (long && !options.streams) return reply({ form: "long" });
    const rows =
      yield* (kind === "s" ? repo.stores(caller.storeIds) : repo.catalog(caller.storeIds));
    if (long) return reply({ form: "stream", etag, rows });
    const parts = yield* Stream.runCollect(rows);
    return reply({
      form: "whole",
      etag,
      parts: [LIST_OPEN, Chunk.join(parts, LIST_SEPARATOR), LIST_CLOSE],
    });
  });

// The key's row beside the lists' version, for directList.
const LIST_VERSION_SQL = keyRowSql("v.version", `(${listVersionSql("c.store_ids")})`);

// A list for a key on PostgreSQL when it is kept (or the caller holds it), without a fiber: the
// key's row and the list's version in one statement (keyRowWith), then the decision on the row as
// Auth and listReply make it (live, the read permission). Undefined for anything else, which the
// lane's Effect path then answers (building the list, or refusing the key). The fiber and
// @effect/sql's statement were most of what such a request allocated: 223 KB against 97 KB for the
// energy read, which decides the same way.
const directList = async (
  context: Pick<LaneContext<never>, "direct" | "answers">,
  kind: ListKind,
  lane: LaneRequest,
  header: string | undefined,
) => {
  const read = await keyRowWith<ListVersion>(context, lane, LIST_VERSION_SQL, []);
  const row = liveCredential(read?.credential);
  if (read === undefined || row === undefined || !row.permissions.includes("read")) {
    return undefined;
  }
  lane.note.memberId = row.member_id;
  const etag = listEtag(kind, read.version, row.store_ids);
  if (etagMatches(header, etag)) return laneJson(304, notModifiedHeaders(etag));
  const key = listKeyOf(kind, row.store_ids);
  if (header !== undefined || context.answers.peek(key)?.version !== etag) return undefined;
  return keptJson(context.answers, context.answers.get(key)!, jsonHeaders(etag));
};

// The lane of GET /api/v1/stores (kind "s") or GET /api/v1/catalog ("c") without query
// parameters (the front door matched the path); a list that streams is left to the HttpApi.
// One build of a list that is not kept, whoever asks meanwhile: the others wait for it and are
// answered from the kept bytes. After a start, 32 callers at once made 32 catalogs (0.4 MB of text
// and its rows each), and the service's peak RSS was set by that moment.
export const listLane = (kind: ListKind) => (context: LaneContext<StoreRepo | Auth>): Lane => {
  const building = new Map<string, Promise<void>>();
  return async (lane) => {
    if (plainParams(lane.url, []) === undefined) return undefined;
    const header = lane.request.headers.get("if-none-match") ?? undefined;
    const answered = await directList(context, kind, lane, header);
    if (answered !== undefined) return answered;
    // Set when this request builds the answer: lets those waiting for it go, once it is kept (or
    // when this request ends without it).
    let built: (() => void) | undefined;
    try {
      const reply = await runLane(context, lane, (facts) =>
        Effect.gen(function* () {
          const caller = yield* (yield* Auth).authenticate(facts);
          const key = listKey(kind, caller);
          if (header === undefined && context.answers.peek(key) === undefined) {
            const pending = building.get(key);
            if (pending !== undefined) yield* Effect.promise(() => pending);
            else {
              const done = Promise.withResolvers<void>();
              building.set(key, done.promise);
              built = () => {
                building.delete(key);
                done.resolve();
              };
            }
          }
          const kept = header === undefined ? context.answers.get(key) : undefined;
          return { key, reply: yield* listReply(kind, caller, header, { kept, streams: false }) };
        }));
      if (reply === undefined) return undefined;
      const { key, reply: r } = reply;
      switch (r.form) {
        case "long":
        case "stream":
          return undefined;
        case "not-modified":
          return laneJson(304, notModifiedHeaders(r.etag));
        case "kept":
          return keptJson(context.answers, r.kept, jsonHeaders(r.etag));
        case "whole": {
          const bytes = encodeParts(r.parts);
          context.answers.set(key, r.etag, bytes, SHARED_PLAIN_MIN_BYTES);
          return laneJson(200, jsonHeaders(r.etag), bytes);
        }
      }
    } finally {
      built?.();
    }
  };
};
