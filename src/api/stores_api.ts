// Dataset, stores, catalog, store reference and profile edits.
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint";
import * as HttpApiGroup from "@effect/platform/HttpApiGroup";
import * as OpenApi from "@effect/platform/OpenApi";
import {
  CatalogResponse,
  Dataset,
  ProfileResult,
  ProfileUpdate,
  StoreReference,
  StoresResponse,
} from "../domain/stores.ts";
import { CALLER, JSON_BODY, operation, STORE_OBJECT, WRITE } from "./openapi.ts";
import { StorePath } from "./params.ts";
import { Admission, admits, Authentication } from "./security.ts";

export class StoresApi extends HttpApiGroup.make("stores")
  .add(
    HttpApiEndpoint.get("dataset", "/dataset").addSuccess(Dataset).annotateContext(operation({
      summary: "The dataset",
      description: "Label, date range, time zone, unit and energy value policy " +
        "(`source_policy`) of the loaded data. Needs the read permission.",
      errors: CALLER,
      conditional: true,
    })),
  )
  .add(
    HttpApiEndpoint.get("catalog", "/catalog").addSuccess(CatalogResponse).annotateContext(
      operation({
        summary: "Stores with their profile and device counts",
        description: "Every store the key may see, with city, hours, modes, key-store status, " +
          "stage and the device snapshot's online, offline and unknown counts. Needs the read " +
          "permission.",
        errors: CALLER,
        conditional: true,
      }),
    ),
  )
  .add(
    HttpApiEndpoint.get("stores", "/stores").addSuccess(StoresResponse).annotateContext(
      operation({
        summary: "Stores and their metering scopes",
        description: "Every store the key may see, with the id of its air-conditioning " +
          "metering scope (`scope_id`, used by the energy, targets and metrics queries). " +
          "Needs the read permission.",
        errors: CALLER,
        conditional: true,
      }),
    ),
  )
  .add(
    HttpApiEndpoint.get("reference", "/stores/:store_id/reference")
      .setPath(StorePath)
      .addSuccess(StoreReference)
      .annotateContext(operation({
        summary: "A store's reference data",
        description: "Profile, sealed target candidate, devices, strategy, stage and device " +
          "events of one store: a frozen snapshot, not real time. `version` is the profile " +
          "version a profile edit expects. Needs the read permission.",
        errors: [...CALLER, ...STORE_OBJECT],
        conditional: true,
      })),
  )
  .add(
    HttpApiEndpoint.patch("profile", "/stores/:store_id/profile")
      .annotate(Admission, admits("write", false))
      .setPath(StorePath)
      .setPayload(ProfileUpdate)
      .addSuccess(ProfileResult)
      .annotateContext(operation({
        summary: "Edit a store's name and address",
        description: "Sets name and address when `expected_version` is the profile's current " +
          "version (else 409 `STALE_VERSION`: read the reference again and re-check). Equal " +
          "values answer `UNCHANGED` and write nothing. Needs the write and read permissions.",
        errors: [
          ...CALLER,
          ...JSON_BODY,
          ...WRITE,
          ...STORE_OBJECT,
          "PROFILE_NOT_EDITABLE",
          "STALE_VERSION",
          "NAME_TAKEN",
        ],
      })),
  )
  .middleware(Authentication)
  .prefix("/api/v1")
  .annotate(OpenApi.Description, "The dataset, stores, their reference data and profile edits") {}
