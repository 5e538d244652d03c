// Handlers of the imports group: template, preview, commit, batch detail, lineage.
import { HttpApiBuilder } from "@effect/platform";
import { Effect } from "effect";
import { Api } from "../api/api.ts";
import { Caller, type Permission } from "../domain/auth.ts";
import { notImplemented } from "../domain/errors.ts";
import { requirePermission } from "../stores/access.ts";

const pending = (permission: Permission, what: string) =>
  Effect.gen(function* () {
    yield* requirePermission(yield* Caller, permission);
    return yield* notImplemented(what);
  });

export const ImportsHttpLive = HttpApiBuilder.group(Api, "imports", (handlers) =>
  Effect.succeed(
    handlers
      .handle("template", () => pending("write", "GET /imports/template"))
      .handle("preview", () => pending("write", "POST /imports/preview"))
      .handle("commit", () => pending("write", "POST /imports/{batch_id}/commit"))
      .handle("batch", () => pending("raw", "GET /imports/{batch_id}"))
      .handle("lineage", () => pending("raw", "GET /import-rows/{import_row_id}/lineage")),
  ));
