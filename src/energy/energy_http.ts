// Handlers of the energy group: daily energy (a conditional read), per-day versions, revision
// history; and the lane of the daily energy read (src/http/lanes.ts).
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder";
import * as HttpServerRequest from "@effect/platform/HttpServerRequest";
import * as HttpServerResponse from "@effect/platform/HttpServerResponse";
import { Context, Effect, Option } from "effect";
import { Api } from "../api/api.ts";
import {
  dataHeaders,
  encodeParts,
  etagMatches,
  etagOf,
  heldVersion,
  jsonHeaders,
  jsonParts,
  notModifiedHeaders,
} from "../api/json_response.ts";
import { JsonText, type Versioned } from "../domain/answers.ts";
import { asOfOf } from "../domain/as_of.ts";
import { Caller, PendingCaller } from "../domain/auth.ts";
import { ENERGY_MAX_DAYS, isValidRange, rangeOf, type RangeRequest } from "../domain/range.ts";
import { mayReadStore } from "../auth/access.ts";
import { Auth, bearerToken } from "../auth/auth_service.ts";
import { DataSeal } from "../auth/data_seal.ts";
import { hashKey } from "../auth/keys.ts";
import type { DirectQueryShape } from "../db/database.ts";
import {
  keptJson,
  type Lane,
  type LaneContext,
  laneJson,
  type LaneRequest,
  plainId,
  plainParams,
  plainRange,
  RANGE_PARAMS,
  runLane,
} from "../http/lanes.ts";
import { SHAPE_TAG } from "../routines.ts";
import { type EnergyDays, EnergyService, headOf } from "./energy_service.ts";
import {
  ENERGY_READ_SQL,
  energyReadOf,
  energyReadParams,
  type EnergyReadRow,
} from "./energy_repo.ts";

// The body in parts: the head, the stored summary and the stored month parts of the days.
const bodyParts = (answer: EnergyDays) => {
  const head = JSON.stringify(answer.head);
  const parts = [`${head.slice(0, -1)},"summary":${answer.summary},"days":[`];
  answer.days.forEach((part, i) => parts.push(i === 0 ? part : `, ${part}`));
  parts.push("]}");
  return parts;
};

// A read of the current data: 304 when the client holds this version, else the days.
type CurrentReply =
  | { readonly status: 304; readonly headers: Record<string, string> }
  | {
    readonly status: 200;
    readonly parts: ReadonlyArray<string>;
    readonly etag: string;
    readonly headers: Record<string, string>;
  };

// `token`: the answer's Data-Token (sealed).
const currentReply = (
  answer: Versioned<EnergyDays>,
  header: string | undefined,
  token: string | undefined,
): CurrentReply => {
  const etag = etagOf("e", answer.version, SHAPE_TAG);
  const headers = dataHeaders(token);
  return answer.value === undefined || etagMatches(header, etag)
    ? { status: 304, headers: notModifiedHeaders(etag, headers) }
    : { status: 200, parts: bodyParts(answer.value), etag, headers };
};

// The current days for a pending caller (the service verifies it in the same statement).
const currentDays = (
  energy: EnergyService,
  seal: DataSeal,
  pending: Parameters<EnergyService["daysFor"]>[0],
  request: RangeRequest,
  header: string | undefined,
) =>
  Effect.gen(function* () {
    const answer = yield* energy.daysFor(pending, request, heldVersion(header, "e", SHAPE_TAG));
    return currentReply(answer, header, yield* seal.dataToken(answer.token));
  });

const ENERGY_PATH = /^\/api\/v1\/stores\/([^/]+)\/energy$/;

// GET /api/v1/stores/{id}/energy?scope_id=&start=&end= over the current data.
export const energyLane = (
  context: LaneContext<EnergyService | Auth | DataSeal>,
): Lane => {
  const seal = Context.get(context.runtime.context, DataSeal);
  return (lane) => energyLaneRead(context, seal, lane);
};

const energyLaneRead = async (
  context: LaneContext<EnergyService | Auth | DataSeal>,
  seal: DataSeal,
  lane: LaneRequest,
) => {
  // The sealing key, read once; while it cannot be read, the HttpApi answers.
  if (!seal.ready() && (await runLane(context, lane, () => seal.load)) === undefined) {
    return undefined;
  }
  const storeId = plainId(ENERGY_PATH.exec(lane.url.pathname)?.[1]);
  const query = plainParams(lane.url, RANGE_PARAMS);
  const request = storeId === undefined || query === undefined
    ? undefined
    : plainRange(storeId, query);
  if (request === undefined) return undefined;
  const header = lane.request.headers.get("if-none-match") ?? undefined;
  // A request without If-None-Match asks for the version of the answer kept in the lanes' answers
  // (src/http/answer_cache.ts): when the data is still at it, the statement (which checks the
  // credential either way) sends no days and the kept bytes are the answer.
  const key = `e|${request.storeId}|${request.scopeId}|${request.start}|${request.end}`;
  const kept = header === undefined ? context.answers.get(key) : undefined;
  const ifVersion = kept?.version ?? heldVersion(header, "e", SHAPE_TAG);
  const token = bearerToken(lane.request.headers.get("authorization") ?? undefined);
  const answer = Option.isSome(context.direct) && token !== undefined
    // A key on PostgreSQL: the statement and the decision without a fiber (the fiber's work was
    // about a third of this read's time).
    ? await directDays(context.direct.value, lane, token, request, ifVersion)
    : await runLane(context, lane, (facts) =>
      Effect.gen(function* () {
        const pending = yield* (yield* Auth).pendingOf(facts);
        return yield* (yield* EnergyService).daysFor(pending, request, ifVersion);
      }));
  if (answer === undefined) return undefined;
  if (kept !== undefined && answer.value === undefined) {
    // The data is at the kept answer's version (no other version leaves out the days).
    if (answer.version !== kept.version) return undefined;
    const etag = etagOf("e", answer.version, SHAPE_TAG);
    return keptJson(
      context.answers,
      kept,
      jsonHeaders(etag, dataHeaders(seal.dataTokenNow(answer.token))),
    );
  }
  const reply = currentReply(answer, header, seal.dataTokenNow(answer.token));
  if (reply.status === 304) return laneJson(304, reply.headers);
  const bytes = encodeParts(reply.parts);
  context.answers.set(key, answer.version, bytes);
  return laneJson(200, jsonHeaders(reply.etag, reply.headers), bytes);
};

// EnergyService.daysFor for a key, over plain queries: energy_read's statement, then the decision
// on its row as access.ts states it (live, the read permission, the store in the key's scope; the
// statement found the scope in the store); undefined for anything daysFor would refuse or do
// otherwise, which the HttpApi then answers.
const directDays = async (
  query: DirectQueryShape,
  lane: LaneRequest,
  token: string,
  request: RangeRequest,
  ifVersion: string | undefined,
): Promise<Versioned<EnergyDays> | undefined> => {
  if (token === "" || !isValidRange(request.start, request.end, ENERGY_MAX_DAYS)) return undefined;
  const credential = { kind: "key", keyHash: hashKey(token) } as const;
  const read = energyReadOf(
    await query<EnergyReadRow>(
      ENERGY_READ_SQL,
      energyReadParams(
        credential,
        request.storeId,
        request.scopeId,
        request.start,
        request.end,
        ifVersion,
      ),
    ).catch(() => []),
  );
  const row = mayReadStore(read.credential, request.storeId);
  if (row === undefined || read.version === undefined || read.scope === undefined) return undefined;
  lane.note.memberId = row.member_id;
  return {
    version: read.version,
    token: read.token,
    value: read.data === undefined ? undefined : {
      head: headOf(request, {
        store_id: request.storeId,
        scope_id: request.scopeId,
        ...read.scope,
      }),
      summary: JsonText(read.data.summary),
      days: read.data.parts.map(JsonText),
    },
  };
};

export const EnergyHttpLive = HttpApiBuilder.group(
  Api,
  "energy",
  (handlers) =>
    Effect.gen(function* () {
      const energy = yield* EnergyService;
      const seal = yield* DataSeal;
      return handlers
        .handle("days", ({ path, urlParams }) =>
          Effect.gen(function* () {
            const pending = yield* PendingCaller;
            const asOf = yield* asOfOf(urlParams, (t) => seal.open("data-token", t));
            const request = rangeOf(path.store_id, urlParams);
            if (asOf.kind !== "current") {
              const past = yield* energy.daysAsOfFor(pending, request, asOf);
              return jsonParts(
                bodyParts(past.value),
                undefined,
                dataHeaders(yield* seal.dataToken(past.asOf.token), past.asOf),
              );
            }
            const header = (yield* HttpServerRequest.HttpServerRequest).headers["if-none-match"];
            const reply = yield* currentDays(energy, seal, pending, request, header);
            return reply.status === 304
              ? HttpServerResponse.empty({ status: 304, headers: reply.headers })
              : jsonParts(reply.parts, reply.etag, reply.headers);
          }))
        .handle(
          "versions",
          ({ path }) =>
            Effect.flatMap(Caller, (caller) =>
              energy.versions(caller, path.store_id, path.business_date)),
        )
        .handle(
          "history",
          ({ path }) =>
            Effect.flatMap(Caller, (caller) => energy.history(caller, path.energy_id)),
        );
    }),
);
