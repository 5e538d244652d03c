// A read of store data as every kept, conditional read answers it (metrics, targets, periods, the
// portfolio): a request without If-None-Match whose answer is kept asks only for the version its
// inputs are at now and, while they are still at it, the kept bytes are the answer; otherwise the
// version the client holds goes to the service, which builds nothing when it is current (304). An
// answer as of an earlier instant has no ETag (it says which commit it shows) and is not kept.
// Answers are made in their turn (ReadCache.build) and written a few array items at a time.
import { currentLanguage } from "../domain/language.ts";
import { localizeAnswer } from "./read_texts.ts";
import * as HttpServerRequest from "@effect/platform/HttpServerRequest";
import * as HttpServerResponse from "@effect/platform/HttpServerResponse";
import { Effect } from "effect";
import {
  chunkedJson,
  dataHeaders,
  encodeParts,
  etagOf,
  heldVersion,
  jsonBytes,
  jsonHeaders,
  notModifiedHeaders,
} from "../api/json_response.ts";
import { etagMatches, matchesAny } from "../domain/request.ts";
import type { DataSeal } from "../auth/data_seal.ts";
import type { Versioned } from "../domain/answers.ts";
import type { AsOf } from "../domain/as_of.ts";
import type { ReadCache } from "./read_cache.ts";

export interface ConditionalRead<A, E, R, E2, R2> {
  // The ETag's kind and tag (the code's shape), and the answer's key among kept answers.
  readonly kind: string;
  readonly tag: string;
  readonly key: string;
  readonly asOf: AsOf;
  // The answer's array field, written a few items at a time.
  readonly items: string;
  // The answer, given the version the client holds (none: nothing held).
  readonly read: (held: string | undefined) => Effect.Effect<Versioned<A>, E, R>;
  // The version (and data token) the answer's inputs are at now.
  readonly version: Effect.Effect<{ readonly version: string; readonly token?: string }, E2, R2>;
}

export const conditionalRead = <A, E, R, E2, R2>(
  seal: DataSeal,
  cache: ReadCache,
  r: ConditionalRead<A, E, R, E2, R2>,
) =>
  Effect.gen(function* () {
    const header = (yield* HttpServerRequest.HttpServerRequest).headers["if-none-match"];
    const current = r.asOf.kind === "current";
    // A Chinese answer is another answer: its own kept bytes (ReadCache keys by language) and ETag.
    const language = yield* currentLanguage;
    const tag = language === "en" ? r.tag : `${r.tag}.${language}`;
    const key = `${r.kind}|${r.key}`;
    const kept = current && header === undefined ? yield* cache.get(key) : undefined;
    if (kept !== undefined) {
      const now = yield* r.version;
      if (now.version === kept.version) {
        yield* cache.served;
        const token = yield* seal.dataToken(now.token);
        return jsonBytes(kept.bytes, etagOf(r.kind, now.version, tag), dataHeaders(token));
      }
    }
    return yield* cache.build(Effect.gen(function* () {
      const answer = yield* r.read(heldVersion(header, r.kind, tag));
      const headers = dataHeaders(yield* seal.dataToken(answer.token), answer.asOf);
      const body = (value: A) =>
        encodeParts(
          chunkedJson(
            localizeAnswer(value, language) as Readonly<Record<string, unknown>>,
            r.items,
          ),
        );
      if (answer.asOf !== undefined) {
        return matchesAny(header)
          ? HttpServerResponse.empty({ status: 304, headers })
          : jsonBytes(body(answer.value!), undefined, jsonHeaders(undefined, headers));
      }
      const etag = etagOf(r.kind, answer.version, tag);
      if (answer.value === undefined || etagMatches(header, etag)) {
        return HttpServerResponse.empty({
          status: 304,
          headers: notModifiedHeaders(etag, headers),
        });
      }
      const bytes = body(answer.value);
      if (current) yield* cache.set(key, answer.version, bytes);
      return jsonBytes(bytes, etag, headers);
    }));
  });
