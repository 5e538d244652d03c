// Process and readiness checks (no authentication).
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint";
import * as HttpApiGroup from "@effect/platform/HttpApiGroup";
import * as OpenApi from "@effect/platform/OpenApi";
import { Schema } from "effect";
import { ServiceUnavailableWire } from "../domain/errors.ts";
import { DATABASE, operation } from "./openapi.ts";

export const Health = Schema.Struct({
  status: Schema.Literal("ok", "ready"),
}).annotations({ identifier: "Health" });

export class SystemApi extends HttpApiGroup.make("system")
  .add(
    HttpApiEndpoint.get("live", "/health/live")
      .addSuccess(Health)
      .addError(ServiceUnavailableWire)
      .annotateContext(operation({
        summary: "Process check",
        description: 'Answers `{status: "ok"}` while the process serves requests; it does not ' +
          "query the database. 503 `NOT_READY` once the embedded database is lost for good " +
          "(its worker ended): the service must be started again. Needs no credential.",
        errors: ["NOT_READY"],
      })),
  )
  .add(
    HttpApiEndpoint.get("ready", "/health/ready")
      .addSuccess(Health)
      .addError(ServiceUnavailableWire)
      .annotateContext(operation({
        summary: "Readiness check",
        description: 'Answers `{status: "ready"}` when the database answers and every ' +
          "migration is applied, else 503 `NOT_READY`. Needs no credential.",
        errors: DATABASE,
      })),
  )
  .annotate(OpenApi.Description, "Liveness and readiness probes; no credential needed") {}
