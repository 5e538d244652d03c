// Handler of the portfolio group: a conditional read that names its data, kept like the metrics
// reads (src/reads/read_cache.ts). The answer is encoded here, the store rows a few at a time; with
// `format` it is a file (portfolio_file.ts), made afresh and never kept.
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder";
import { createHash } from "node:crypto";
import { Effect } from "effect";
import { Api } from "../api/api.ts";
import { DataSeal } from "../auth/data_seal.ts";
import { asOfOf } from "../domain/as_of.ts";
import { Caller, type CallerShape } from "../domain/auth.ts";
import { dataHeaders, streamResponse } from "../api/json_response.ts";
import { downloadHeaders } from "../files/layout.ts";
import { conditionalRead } from "../reads/conditional_read.ts";
import { ReadCache } from "../reads/read_cache.ts";
import { SHAPE_TAG } from "../routines.ts";
import { currentInputsSql } from "./portfolio_sql.ts";
import { type PortfolioRequest, PortfolioService } from "./portfolio_service.ts";
import { portfolioFile } from "./portfolio_file.ts";

const KIND = "pf";

// Part of every ETag: the rules' and routines' tag and this read's own statement, so that a release
// whose statement differs never answers 304 to a body made by the old one.
const TAG = createHash("sha256")
  .update(SHAPE_TAG)
  .update(currentInputsSql)
  .digest("hex")
  .slice(0, 10);

// The answer's key among kept answers: the read, the key's stores in full and the parameters.
const keptKey = (caller: CallerShape, r: PortfolioRequest) =>
  JSON.stringify([KIND, caller.storeIds, r.start, r.end, r.brandId, r.city]);

export const PortfolioHttpLive = HttpApiBuilder.group(
  Api,
  "portfolio",
  (handlers) =>
    Effect.gen(function* () {
      const service = yield* PortfolioService;
      const seal = yield* DataSeal;
      const cache = yield* ReadCache;
      const open = (token: string) => seal.open("data-token", token);
      return handlers.handle("portfolio", ({ urlParams: q }) =>
        Effect.gen(function* () {
          const caller = yield* Caller;
          const asOf = yield* asOfOf(q, open);
          const request: PortfolioRequest = {
            start: q.start,
            end: q.end,
            brandId: q.brand_id ?? null,
            city: q.city ?? null,
          };
          if (q.format !== undefined) {
            const answer = yield* service.portfolio(caller, request, asOf);
            const file = portfolioFile(answer.value!, q.format);
            return streamResponse(file.body, {
              contentType: file.mediaType,
              headers: {
                ...dataHeaders(yield* seal.dataToken(answer.token), answer.asOf),
                ...downloadHeaders(file.filename),
              },
            });
          }
          return yield* conditionalRead(seal, cache, {
            kind: KIND,
            tag: TAG,
            key: keptKey(caller, request),
            asOf,
            items: "stores",
            read: (held) => service.portfolio(caller, request, asOf, held),
            version: service.currentVersion(caller, request),
          });
        }));
    }),
);
