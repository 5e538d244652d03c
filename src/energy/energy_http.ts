// Handlers of the energy group: daily energy (a conditional read), per-day versions, revision
// history.
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder";
import * as HttpServerRequest from "@effect/platform/HttpServerRequest";
import * as HttpServerResponse from "@effect/platform/HttpServerResponse";
import { Effect } from "effect";
import { Api } from "../api/api.ts";
import {
  dataHeaders,
  encodeParts,
  etagOf,
  heldVersion,
  jsonBytes,
  jsonParts,
  notModifiedHeaders,
} from "../api/json_response.ts";
import { etagMatches, matchesAny } from "../domain/request.ts";
import { type JsonPart, JsonText, type Versioned } from "../domain/answers.ts";
import { asOfOf } from "../domain/as_of.ts";
import { Caller, PendingCaller } from "../domain/auth.ts";
import { rangeOf, type RangeRequest } from "../domain/range.ts";
import { DataSeal } from "../auth/data_seal.ts";
import { currentLanguage, type Language } from "../domain/language.ts";
import { ReadCache } from "../reads/read_cache.ts";
import { localizeDayParts, localizeRevisions } from "../reads/read_texts.ts";
import { SHAPE_TAG } from "../routines.ts";
import { type EnergyDays, EnergyService } from "./energy_service.ts";

// The body in parts: the head, the stored summary and the stored month parts of the days (their
// source labels in the request's language).
const bodyParts = (answer: EnergyDays, language: Language) => {
  const head = JSON.stringify(answer.head);
  const parts: Array<JsonPart> = [
    JsonText(`${head.slice(0, -1)},"summary":${answer.summary},"days":[`),
  ];
  localizeDayParts(answer.days, language).forEach((part, i) => {
    if (i > 0) parts.push(DAY_SEPARATOR);
    parts.push(part);
  });
  parts.push(JsonText("]}"));
  return parts;
};

// Between two month parts, as PostgreSQL's json_agg writes it.
const DAY_SEPARATOR = JsonText(", ");

// A Chinese answer is another answer: its own ETag (and kept bytes: ReadCache keys by language).
const shapeTag = (language: Language) => language === "en" ? SHAPE_TAG : `${SHAPE_TAG}.${language}`;

// A read of the current data: 304 when the client holds this version, else the days.
type CurrentReply =
  | { readonly status: 304; readonly headers: Record<string, string> }
  | {
    readonly status: 200;
    readonly parts: ReadonlyArray<JsonPart>;
    readonly etag: string;
    readonly headers: Record<string, string>;
  };

// `token`: the answer's Data-Token (sealed).
const currentReply = (
  answer: Versioned<EnergyDays>,
  header: string | undefined,
  token: string | undefined,
  language: Language,
): CurrentReply => {
  const etag = etagOf("e", answer.version, shapeTag(language));
  const headers = dataHeaders(token);
  return answer.value === undefined || etagMatches(header, etag)
    ? { status: 304, headers: notModifiedHeaders(etag, headers) }
    : { status: 200, parts: bodyParts(answer.value, language), etag, headers };
};

// The current days for a pending caller (the service verifies it in the same statement). A
// request without If-None-Match asks for the version of the answer kept under its read
// (src/reads/read_cache.ts): when the data is still at it, the statement (which checks the
// credential either way) sends no days and the kept bytes are the answer.
const currentDays = (
  energy: EnergyService,
  seal: DataSeal,
  cache: ReadCache,
  pending: Parameters<EnergyService["daysFor"]>[0],
  request: RangeRequest,
  header: string | undefined,
) =>
  Effect.gen(function* () {
    const key = `e|${request.storeId}|${request.scopeId}|${request.start}|${request.end}`;
    const language = yield* currentLanguage;
    const tag = shapeTag(language);
    const kept = header === undefined ? yield* cache.get(key) : undefined;
    const answer = yield* energy.daysFor(
      pending,
      request,
      kept?.version ?? heldVersion(header, "e", tag),
    );
    const token = yield* seal.dataToken(answer.token);
    // No other version than the kept one leaves out the days.
    if (kept !== undefined && answer.value === undefined && answer.version === kept.version) {
      yield* cache.served;
      return jsonBytes(kept.bytes, etagOf("e", answer.version, tag), dataHeaders(token));
    }
    const reply = currentReply(answer, header, token, language);
    if (reply.status === 304) {
      return HttpServerResponse.empty({ status: 304, headers: reply.headers });
    }
    const bytes = encodeParts(reply.parts);
    yield* cache.set(key, answer.version, bytes);
    return jsonBytes(bytes, reply.etag, reply.headers);
  });

export const EnergyHttpLive = HttpApiBuilder.group(
  Api,
  "energy",
  (handlers) =>
    Effect.gen(function* () {
      const energy = yield* EnergyService;
      const seal = yield* DataSeal;
      const cache = yield* ReadCache;
      return handlers
        .handle("days", ({ path, urlParams }) =>
          Effect.gen(function* () {
            const pending = yield* PendingCaller;
            const asOf = yield* asOfOf(urlParams, (t) => seal.open("data-token", t));
            const request = rangeOf(path.store_id, urlParams);
            const header = (yield* HttpServerRequest.HttpServerRequest).headers["if-none-match"];
            if (asOf.kind !== "current") {
              const past = yield* energy.daysAsOfFor(pending, request, asOf);
              const headers = dataHeaders(yield* seal.dataToken(past.asOf.token), past.asOf);
              return matchesAny(header)
                ? HttpServerResponse.empty({ status: 304, headers })
                : jsonParts(bodyParts(past.value, yield* currentLanguage), undefined, headers);
            }
            return yield* currentDays(energy, seal, cache, pending, request, header);
          }))
        .handle(
          "versions",
          ({ path }) =>
            Effect.gen(function* () {
              const language = yield* currentLanguage;
              const found = yield* energy.versions(
                yield* Caller,
                path.store_id,
                path.business_date,
              );
              return {
                ...found,
                current: found.current === null
                  ? null
                  : localizeRevisions([found.current], language)[0],
                versions: localizeRevisions(found.versions, language),
              };
            }),
        )
        .handle(
          "history",
          ({ path }) => Effect.flatMap(Caller, (caller) => energy.history(caller, path.energy_id)),
        );
    }),
);
