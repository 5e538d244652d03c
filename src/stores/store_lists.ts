// The store list and the catalog (GET /stores, GET /catalog). Its version is read first (a
// matching If-None-Match reads no store); a list of at most LIST_BUFFER_STORES stores is then
// answered as one buffer, kept under the key's store scope (src/reads/read_cache.ts) and answered
// again while the version holds, without reading a store; a longer list streams page by page, so
// that an answer of any size holds one page.
import { Chunk, Effect, Stream } from "effect";
import { encodeParts, etagOf } from "../api/json_response.ts";
import { etagMatches } from "../domain/request.ts";
import { requirePermission, scopeDigest } from "../auth/access.ts";
import type { JsonText } from "../domain/answers.ts";
import type { CallerShape } from "../domain/auth.ts";
import type { ServiceUnavailable } from "../domain/errors.ts";
import { ReadCache } from "../reads/read_cache.ts";
import { SHAPE_TAG } from "../routines.ts";
import { StoreRepo } from "./store_repo.ts";

export type ListKind = "s" | "c";

// A catalog row is about 700 bytes, a store-list row about 220: 1,000 stores are at most 0.7 MB.
export const LIST_BUFFER_STORES = 1_000;

export const LIST_OPEN = '{"stores" : [';
export const LIST_SEPARATOR = ", ";
export const LIST_CLOSE = "]}";

export type ListReply =
  | { readonly form: "not-modified"; readonly etag: string }
  // The whole answer, encoded (kept, or made now and kept).
  | { readonly form: "whole"; readonly etag: string; readonly bytes: Uint8Array<ArrayBuffer> }
  | {
    readonly form: "stream";
    readonly etag: string;
    readonly rows: Stream.Stream<JsonText, ServiceUnavailable>;
  };

// Keys limited to different stores see different lists: the list's key among kept answers names
// the stores in full, its ETag by a short digest.
const listKeyOf = (kind: ListKind, storeIds: ReadonlyArray<number> | null) =>
  `${kind}|${scopeDigest(storeIds)}`;

// The ETag of a list at `version` (listVersionSql) for a key of these stores.
const listEtag = (kind: ListKind, version: string, storeIds: ReadonlyArray<number> | null) =>
  etagOf(kind, `${version}.${scopeDigest(storeIds).slice(0, 12)}`, SHAPE_TAG);

// The reply to a read of a list by `caller`; a list of more than `bufferStores` stores streams.
// While a list is being made, other callers of the same key scope wait for it and are answered
// from the kept bytes (after a start, every client at once asks for the same lists).
export const listReply = (
  kind: ListKind,
  caller: CallerShape,
  header: string | undefined,
  bufferStores = LIST_BUFFER_STORES,
) =>
  Effect.gen(function* () {
    yield* requirePermission(caller, "read");
    const repo = yield* StoreRepo;
    const cache = yield* ReadCache;
    const key = listKeyOf(kind, caller.storeIds);
    const reply = (r: ListReply) => r;
    const answer = Effect.gen(function* () {
      const now = yield* repo.listVersion(caller.storeIds);
      const etag = listEtag(kind, now.version, caller.storeIds);
      if (etagMatches(header, etag)) return reply({ form: "not-modified", etag });
      const kept = yield* cache.get(key);
      if (kept !== undefined && kept.version === etag) {
        yield* cache.served;
        return reply({ form: "whole", etag, bytes: kept.bytes });
      }
      const rows =
        yield* (kind === "s" ? repo.stores(caller.storeIds) : repo.catalog(caller.storeIds));
      if (now.stores > bufferStores) return reply({ form: "stream", etag, rows });
      const parts = yield* Stream.runCollect(rows);
      const bytes = encodeParts([LIST_OPEN, Chunk.join(parts, LIST_SEPARATOR), LIST_CLOSE]);
      yield* cache.set(key, etag, bytes, true);
      return reply({ form: "whole", etag, bytes });
    });
    return yield* (header === undefined ? cache.once(key, answer) : answer);
  });
