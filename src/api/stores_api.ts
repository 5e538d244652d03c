// Dataset, stores, catalog, store reference and profile edits.
import { HttpApiEndpoint, HttpApiGroup } from "@effect/platform";
import {
  CatalogResponse,
  Dataset,
  ProfileResult,
  ProfileUpdate,
  StoreReference,
  StoresResponse,
} from "../domain/stores.ts";
import { StorePath } from "./params.ts";
import { Authentication } from "./security.ts";

export class StoresApi extends HttpApiGroup.make("stores")
  .add(HttpApiEndpoint.get("dataset", "/dataset").addSuccess(Dataset))
  .add(HttpApiEndpoint.get("catalog", "/catalog").addSuccess(CatalogResponse))
  .add(HttpApiEndpoint.get("stores", "/stores").addSuccess(StoresResponse))
  .add(
    HttpApiEndpoint.get("reference", "/stores/:store_id/reference")
      .setPath(StorePath)
      .addSuccess(StoreReference),
  )
  .add(
    HttpApiEndpoint.patch("profile", "/stores/:store_id/profile")
      .setPath(StorePath)
      .setPayload(ProfileUpdate)
      .addSuccess(ProfileResult),
  )
  .middleware(Authentication)
  .prefix("/api/v1") {}
