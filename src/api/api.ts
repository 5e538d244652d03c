// The service's HTTP contract: every group of contract part 4, shown at /openapi.json.
import * as HttpApi from "@effect/platform/HttpApi";
import * as OpenApi from "@effect/platform/OpenApi";
import {
  BadRequestWire,
  ConflictWire,
  ForbiddenWire,
  NotFoundWire,
  ServiceUnavailableWire,
  UnauthorizedWire,
} from "../domain/errors.ts";
import { API_VERSION } from "../domain/version.ts";
import { AuthApi } from "./auth_api.ts";
import { ChangesApi } from "./changes_api.ts";
import { EnergyApi } from "./energy_api.ts";
import { ExportApi } from "./export_api.ts";
import { ImportsApi } from "./imports_api.ts";
import { MetricsApi } from "./metrics_api.ts";
import { MonthsApi } from "./months_api.ts";
import { PortfolioApi } from "./portfolio_api.ts";
import { QualityApi } from "./quality_api.ts";
import { finishDocument } from "./openapi.ts";
import { StoresApi } from "./stores_api.ts";
import { SystemApi } from "./system_api.ts";

const DESCRIPTION = `Per-store daily air-conditioning energy (kWh per Beijing calendar day), \
energy-saving targets and metrics, store reference data, and a controlled import path.

Business endpoints take \`Authorization: Bearer <ACCESS_KEY>\` or the \`svc05_session\` cookie.

Every answer carries an \`X-Request-ID\` header. Every error answer has the body \
\`{"error": {"code": "...", "message": "..."}}\`; \`code\` is one of the \`ErrorCode\` values, \
and each operation lists the statuses and codes it can answer with. Two answers belong to no \
operation and are not listed under any: a path the service does not have is 404 \`NOT_FOUND\`, \
and a known path called with a method it does not answer is 405 \`METHOD_NOT_ALLOWED\` with an \
\`Allow\` header naming the methods it answers.

\`Accept-Language\` selects the language of every text written for people: error messages, \
import problems and warnings, labels and notes of the read answers. \`zh-CN\` (also \`zh\`, \
\`zh-Hans\`, \`zh-SG\`) gives Simplified Chinese, \`en\` English, chosen by q-value; without \
the header, or when neither is acceptable, English. Codes, enums, field names and data stay as \
they are, and so do the column names of files. Such answers carry \`Vary: Accept-Language\`.`;

export class Api extends HttpApi.make("energy-saving-analytics")
  .add(SystemApi)
  .add(AuthApi)
  .add(StoresApi)
  .add(EnergyApi)
  .add(MetricsApi)
  .add(ImportsApi)
  .add(ChangesApi)
  .add(ExportApi)
  .add(QualityApi)
  .add(PortfolioApi)
  .add(MonthsApi)
  .addError(BadRequestWire)
  .addError(UnauthorizedWire)
  .addError(ForbiddenWire)
  .addError(NotFoundWire)
  .addError(ConflictWire)
  .addError(ServiceUnavailableWire)
  .annotate(OpenApi.Title, "Energy-Saving Analytics Service")
  .annotate(OpenApi.Version, API_VERSION)
  .annotate(OpenApi.Description, DESCRIPTION)
  .annotate(OpenApi.Servers, [{ url: "/", description: "This service" }])
  .annotate(OpenApi.Transform, finishDocument) {}
