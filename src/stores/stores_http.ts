// Handlers of the stores group: dataset, stores, catalog, reference (conditional reads) and
// profile edits.
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder";
import * as HttpServerRequest from "@effect/platform/HttpServerRequest";
import { Effect } from "effect";
import { Api } from "../api/api.ts";
import { etagOf, jsonBytes, jsonResponse, jsonStream, notModified } from "../api/json_response.ts";
import { etagMatches } from "../domain/request.ts";
import { requirePermission, StoreAccess } from "../auth/access.ts";
import { JsonText } from "../domain/answers.ts";
import { Caller, canWrite } from "../domain/auth.ts";
import { notFound } from "../domain/errors.ts";
import { Messages } from "../domain/messages.ts";
import { SHAPE_TAG } from "../routines.ts";
import { ProfileService } from "./profile_service.ts";
import { ReferenceRepo } from "./reference_repo.ts";
import { LIST_CLOSE, LIST_OPEN, LIST_SEPARATOR, type ListKind, listReply } from "./store_lists.ts";
import { StoreRepo } from "./store_repo.ts";

const ifNoneMatch = Effect.map(
  HttpServerRequest.HttpServerRequest,
  (request) => request.headers["if-none-match"],
);

export const StoresHttpLive = HttpApiBuilder.group(
  Api,
  "stores",
  (handlers) =>
    Effect.gen(function* () {
      const repo = yield* StoreRepo;
      const access = yield* StoreAccess;
      const references = yield* ReferenceRepo;
      const profiles = yield* ProfileService;

      // A list of the stores a key sees (store_lists.ts).
      const list = (kind: ListKind) =>
        Effect.gen(function* () {
          const reply = yield* listReply(kind, yield* Caller, yield* ifNoneMatch);
          switch (reply.form) {
            case "not-modified":
              return notModified(reply.etag);
            case "stream":
              return jsonStream(LIST_OPEN, reply.rows, LIST_CLOSE, reply.etag, LIST_SEPARATOR);
            case "whole":
              return jsonBytes(reply.bytes, reply.etag);
          }
        });

      return handlers
        .handle("dataset", () =>
          Effect.gen(function* () {
            yield* requirePermission(yield* Caller, "read");
            const { generation, ...dataset } = yield* repo.dataset;
            const etag = etagOf("d", generation, SHAPE_TAG);
            return etagMatches(yield* ifNoneMatch, etag)
              ? notModified(etag)
              : jsonResponse(JsonText(JSON.stringify(dataset)), etag);
          }))
        .handle("stores", () => list("s"))
        .handle("catalog", () => list("c"))
        .handle("reference", ({ path }) =>
          Effect.gen(function* () {
            const caller = yield* Caller;
            yield* access.store(caller, path.store_id, "read");
            // can_edit_profile depends on the caller: part of the version.
            const editor = canWrite(caller) ? "w" : "r";
            const header = yield* ifNoneMatch;
            if (header !== undefined) {
              const held = yield* references.version(path.store_id);
              const etag = held === undefined
                ? undefined
                : etagOf("r", `${held}.${editor}`, SHAPE_TAG);
              if (etag !== undefined && etagMatches(header, etag)) return notModified(etag);
            }
            const found = yield* references.reference(path.store_id, canWrite(caller));
            if (found === undefined) {
              return yield* notFound(Messages.storeMissing(path.store_id));
            }
            return jsonResponse(found.body, etagOf("r", `${found.version}.${editor}`, SHAPE_TAG));
          }))
        .handle("profile", ({ path, payload }) =>
          Effect.flatMap(Caller, (caller) =>
            profiles.update(caller, path.store_id, {
              name: payload.name,
              address: payload.address,
              expectedVersion: payload.expected_version,
            })));
    }),
);
