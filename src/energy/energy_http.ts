// Handlers of the energy group: daily energy (a conditional read), per-day versions, revision
// history.
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder";
import * as HttpServerRequest from "@effect/platform/HttpServerRequest";
import { Effect } from "effect";
import { Api } from "../api/api.ts";
import {
  dataHeaders,
  etagMatches,
  etagOf,
  heldVersion,
  jsonParts,
  notModified,
} from "../api/json_response.ts";
import { asOfOf } from "../domain/as_of.ts";
import { Caller, PendingCaller } from "../domain/auth.ts";
import { rangeOf } from "../domain/range.ts";
import { SHAPE_TAG } from "../routines.ts";
import { type EnergyDays, EnergyService } from "./energy_service.ts";

// Encoded part by part: no string of the whole answer (150 KB for a year) is ever made.
const encode = (
  answer: EnergyDays,
  etag: string | undefined,
  headers: Readonly<Record<string, string>>,
) => {
  const head = JSON.stringify(answer.head);
  const parts = [`${head.slice(0, -1)},"summary":${answer.summary},"days":[`];
  answer.days.forEach((part, i) => parts.push(i === 0 ? part : `, ${part}`));
  parts.push("]}");
  return jsonParts(parts, etag, headers);
};

export const EnergyHttpLive = HttpApiBuilder.group(
  Api,
  "energy",
  (handlers) =>
    Effect.gen(function* () {
      const energy = yield* EnergyService;
      return handlers
        .handle("days", ({ path, urlParams }) =>
          Effect.gen(function* () {
            const pending = yield* PendingCaller;
            const asOf = yield* asOfOf(urlParams);
            const request = rangeOf(path.store_id, urlParams);
            if (asOf.kind !== "current") {
              const past = yield* energy.daysAsOfFor(pending, request, asOf);
              return encode(past.value, undefined, dataHeaders(past.asOf.token, past.asOf));
            }
            const header = (yield* HttpServerRequest.HttpServerRequest).headers["if-none-match"];
            const answer = yield* energy.daysFor(
              pending,
              request,
              heldVersion(header, "e", SHAPE_TAG),
            );
            const etag = etagOf("e", answer.version, SHAPE_TAG);
            const headers = dataHeaders(answer.token);
            return answer.value === undefined || etagMatches(header, etag)
              ? notModified(etag, headers)
              : encode(answer.value, etag, headers);
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
