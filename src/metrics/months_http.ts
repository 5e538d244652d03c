// Handler of the months group: a conditional read, kept like the metrics answers.
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder";
import { Effect } from "effect";
import { Api } from "../api/api.ts";
import { DataSeal } from "../auth/data_seal.ts";
import { Caller } from "../domain/auth.ts";
import { asOfOf } from "../domain/as_of.ts";
import { rangeOf } from "../domain/range.ts";
import { conditionalRead } from "../reads/conditional_read.ts";
import { ReadCache } from "../reads/read_cache.ts";
import { SHAPE_TAG } from "../routines.ts";
import { MonthsService } from "./months_service.ts";

export const MonthsHttpLive = HttpApiBuilder.group(
  Api,
  "months",
  (handlers) =>
    Effect.gen(function* () {
      const service = yield* MonthsService;
      const seal = yield* DataSeal;
      const cache = yield* ReadCache;
      const open = (token: string) => seal.open("data-token", token);
      return handlers.handle("months", ({ path, urlParams: q }) =>
        Effect.gen(function* () {
          const caller = yield* Caller;
          const asOf = yield* asOfOf(q, open);
          const range = rangeOf(path.store_id, q);
          return yield* conditionalRead(seal, cache, {
            kind: "mo",
            tag: SHAPE_TAG,
            key: `${range.storeId}|${range.scopeId}|${range.start}|${range.end}`,
            asOf,
            items: "months",
            read: (held) => service.months(caller, range, asOf, held),
            version: service.currentVersion(caller, range),
          });
        }));
    }),
);
