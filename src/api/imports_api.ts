// The import path: template, preview, commit, batch detail and row lineage.
import { HttpApiEndpoint, HttpApiGroup } from "@effect/platform";
import { Schema } from "effect";
import { IdFromString } from "../domain/common.ts";
import { CommitInput, Import, Lineage, PreviewInput, Template } from "../domain/imports.ts";
import { IdempotencyHeaders } from "./params.ts";
import { Authentication } from "./security.ts";

export class ImportsApi extends HttpApiGroup.make("imports")
  .add(HttpApiEndpoint.get("template", "/imports/template").addSuccess(Template))
  .add(
    HttpApiEndpoint.post("preview", "/imports/preview")
      .setHeaders(IdempotencyHeaders)
      .setPayload(PreviewInput)
      .addSuccess(Import),
  )
  .add(
    HttpApiEndpoint.post("commit", "/imports/:batch_id/commit")
      .setPath(Schema.Struct({ batch_id: IdFromString }))
      .setHeaders(IdempotencyHeaders)
      .setPayload(CommitInput)
      .addSuccess(Import),
  )
  .add(
    HttpApiEndpoint.get("batch", "/imports/:batch_id")
      .setPath(Schema.Struct({ batch_id: IdFromString }))
      .addSuccess(Import),
  )
  .add(
    HttpApiEndpoint.get("lineage", "/import-rows/:import_row_id/lineage")
      .setPath(Schema.Struct({ import_row_id: IdFromString }))
      .addSuccess(Lineage),
  )
  .middleware(Authentication)
  .prefix("/api/v1") {}
