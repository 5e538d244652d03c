// Process and readiness checks (no authentication).
import { HttpApiEndpoint, HttpApiGroup } from "@effect/platform";
import { Schema } from "effect";
import { ServiceUnavailableWire } from "../domain/errors.ts";

export const Health = Schema.Struct({
  status: Schema.Literal("ok", "ready"),
}).annotations({ identifier: "Health" });

export class SystemApi extends HttpApiGroup.make("system")
  .add(HttpApiEndpoint.get("live", "/health/live").addSuccess(Health))
  .add(
    HttpApiEndpoint.get("ready", "/health/ready").addSuccess(Health).addError(
      ServiceUnavailableWire,
    ),
  ) {}
