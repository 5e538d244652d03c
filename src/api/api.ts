// The service's HTTP contract: every group of contract part 4, shown at /openapi.json.
import { HttpApi, OpenApi } from "@effect/platform";
import {
  BadRequestWire,
  ConflictWire,
  ForbiddenWire,
  NotFoundWire,
  ServiceUnavailableWire,
  UnauthorizedWire,
} from "../domain/errors.ts";
import { AuthApi } from "./auth_api.ts";
import { EnergyApi } from "./energy_api.ts";
import { ImportsApi } from "./imports_api.ts";
import { MetricsApi } from "./metrics_api.ts";
import { StoresApi } from "./stores_api.ts";
import { SystemApi } from "./system_api.ts";

export const API_VERSION = "0.5.007-service.1";

export class Api extends HttpApi.make("energy-saving-analytics")
  .add(SystemApi)
  .add(AuthApi)
  .add(StoresApi)
  .add(EnergyApi)
  .add(MetricsApi)
  .add(ImportsApi)
  .addError(BadRequestWire)
  .addError(UnauthorizedWire)
  .addError(ForbiddenWire)
  .addError(NotFoundWire)
  .addError(ConflictWire)
  .addError(ServiceUnavailableWire)
  .annotate(OpenApi.Title, "Energy-Saving Analytics Service")
  .annotate(OpenApi.Version, API_VERSION) {}
