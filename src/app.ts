// The one place where every Layer is composed into the service's web handler.
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder";
import * as HttpServer from "@effect/platform/HttpServer";
import type * as SqlClient from "@effect/sql/SqlClient";
import { Cause, Context, Effect, Exit, Layer, ManagedRuntime, Option, type Redacted } from "effect";
import { Api } from "./api/api.ts";
import { contractMiddleware } from "./api/contract_middleware.ts";
import { AuthenticationLive, AuthHttpLive, PendingAuthenticationLive } from "./auth/auth_http.ts";
import { Auth } from "./auth/auth_service.ts";
import { DataSeal } from "./auth/data_seal.ts";
import { type AdmissionLimits, AppConfig, DEFAULT_LIMITS, type ServiceLimits } from "./config.ts";
import { makeConsoleHandler } from "./console/assets.ts";
import { loadDocsPage } from "./http/docs_page.ts";
import { errorResponse, type Gate, makeFront } from "./http/front.ts";
import { AnswerCache } from "./http/answer_cache.ts";
import { makeLanes } from "./http/lanes.ts";
import { DirectQuery } from "./db/database.ts";
import { databaseProbeLayer } from "./ops/db_probe.ts";
import { OpsMetrics } from "./ops/metrics.ts";
import { trackPgPools } from "./ops/pg_pools.ts";
import { TracingLive } from "./ops/tracing_layer.ts";
import { apiRoutes } from "./http/routes.ts";
import { effectLoggerLayer, type Log, processLog } from "./log.ts";
import { ChangesHttpLive } from "./changes/changes_http.ts";
import { EnergyHttpLive, energyLane } from "./energy/energy_http.ts";
import { ExportHttpLive } from "./exports/export_http.ts";
import { EnergyService } from "./energy/energy_service.ts";
import { ImportsHttpLive } from "./imports/imports_http.ts";
import { MetricsHttpLive, metricsLane, periodsLane, targetsLane } from "./metrics/metrics_http.ts";
import { MetricsService } from "./metrics/metrics_service.ts";
import { requirePermission, StoreAccess } from "./auth/access.ts";
import { webRequestFacts } from "./auth/auth_http.ts";
import { statusOfError } from "./domain/errors.ts";
import { ImportService } from "./imports/import_service.ts";
import { ProfileService } from "./stores/profile_service.ts";
import { QualityHttpLive } from "./quality/quality_http.ts";
import { ReferenceRepo } from "./stores/reference_repo.ts";
import { StoreRepo } from "./stores/store_repo.ts";
import { StoresHttpLive } from "./stores/stores_http.ts";
import { listLane } from "./stores/store_lists.ts";
import { SystemHttpLive } from "./system/system_http.ts";

const GroupsLive = Layer.mergeAll(
  SystemHttpLive,
  AuthHttpLive,
  StoresHttpLive,
  EnergyHttpLive,
  MetricsHttpLive,
  ImportsHttpLive,
  ChangesHttpLive,
  ExportHttpLive,
  QualityHttpLive,
);

const ServicesLive = Layer.mergeAll(
  Auth.Default,
  DataSeal.Default,
  StoreRepo.Default,
  StoreAccess.Default,
  EnergyService.Default,
  MetricsService.Default,
  ReferenceRepo.Default,
  ProfileService.Default,
  ImportService.Default,
);

// The services come from outside (makeHandler builds them once for the HttpApi and the lanes).
const ApiLive = HttpApiBuilder.api(Api).pipe(
  Layer.provide(GroupsLive),
  Layer.provide(AuthenticationLive),
  Layer.provide(PendingAuthenticationLive),
);

// /api-docs is made by the front door on first request (docs_page.ts).
const DocsLive = HttpApiBuilder.middlewareOpenApi({ path: "/openapi.json" });

type Services = Layer.Layer.Success<typeof ServicesLive>;

// The whole service over its services, database and configuration (traced when configured; with
// the database sources of the metrics when there are metrics).
export const makeAppLayer = <E>(
  infrastructure: Layer.Layer<Services | SqlClient.SqlClient | AppConfig, E>,
  log: Log,
  metrics?: OpsMetrics,
) => {
  return Layer.mergeAll(
    ApiLive,
    HttpApiBuilder.middleware(contractMiddleware),
    Layer.provide(DocsLive, ApiLive),
    HttpServer.layerContext,
    effectLoggerLayer(log),
    TracingLive,
    metrics === undefined ? Layer.empty : databaseProbeLayer(metrics),
  ).pipe(Layer.provide(infrastructure));
};

export interface HandlerOptions {
  readonly limits?: ServiceLimits;
  readonly log?: Log;
  // GET /metrics behind this bearer token; absent: no /metrics and no request is counted.
  readonly metricsToken?: Redacted.Redacted<string>;
  // The read lanes (src/http/lanes.ts); on unless false. Off while tracing is on.
  readonly lanes?: boolean;
  readonly admission?: AdmissionLimits;
}

// The reads that have a lane, by "GET <route path>".
const LANES = [
  ["GET /api/v1/stores/:store_id/energy", energyLane],
  ["GET /api/v1/stores/:store_id/targets", targetsLane],
  ["GET /api/v1/stores/:store_id/metrics", metricsLane],
  ["GET /api/v1/stores/:store_id/periods", periodsLane],
  ["GET /api/v1/stores", listLane("s")],
  ["GET /api/v1/catalog", listLane("c")],
] as const;

// The service's web handler: the front door over the HttpApi.
export const makeHandler = <E>(
  infrastructure: Layer.Layer<SqlClient.SqlClient | AppConfig, E>,
  options: HandlerOptions = {},
) => {
  const log = options.log ?? processLog();
  const limits = options.limits ?? DEFAULT_LIMITS;
  const metrics = options.metricsToken === undefined ? undefined : new OpsMetrics();
  if (metrics !== undefined) trackPgPools();
  // The services are built once: the HttpApi's handlers and the lanes share their instances (and
  // so their caches).
  const services = ManagedRuntime.make(
    Layer.merge(Layer.provideMerge(ServicesLive, infrastructure), effectLoggerLayer(log)),
  );
  const shared = Layer.effectContext(Effect.map(services.runtimeEffect, (r) => r.context));
  const api = HttpApiBuilder.toWebHandler(makeAppLayer(shared, log, metrics));
  // The lanes' kept answers, reported by /metrics when there is one.
  const keptAnswers = (mb: number) => {
    const answers = new AnswerCache(mb * 1024 * 1024);
    metrics?.setSources({ answers: () => answers.facts() });
    return answers;
  };
  const lanes = options.lanes === false ? undefined : makeLanes(
    () =>
      services.runtime().then((runtime) => {
        const config = Context.get(runtime.context, AppConfig);
        // A lane makes no server span: with tracing on, every request takes the HttpApi.
        return Option.isSome(config.tracing) ? undefined : {
          runtime,
          origin: config,
          direct: Context.getOption(runtime.context, DirectQuery),
          answers: keptAnswers(config.answerCacheMb),
        };
      }),
    LANES,
  );
  // The credential and its permission, decided by Auth as the endpoint's middleware decides them,
  // before the front door reads a body or admits heavy work.
  const gate: Gate = async (request, route) => {
    const runtime = await services.runtime();
    const config = Context.get(runtime.context, AppConfig);
    const permission = route.admission?.permission ?? "read";
    const exit = await services.runPromiseExit(
      Effect.flatMap(Auth, (auth) => auth.authenticate(webRequestFacts(request, config))).pipe(
        Effect.tap((caller) => requirePermission(caller, permission)),
      ),
    );
    if (Exit.isSuccess(exit)) return { kind: "admitted", holder: `key ${exit.value.keyId}` };
    const failure = Option.getOrUndefined(Cause.failureOption(exit.cause));
    const status = statusOfError(failure);
    if (status !== undefined) {
      const { code, message } = failure as { readonly code: string; readonly message: string };
      return { kind: "refused", response: errorResponse(status, code, message) };
    }
    log.error("the credential check failed", { cause: Cause.pretty(exit.cause).slice(0, 500) });
    return {
      kind: "refused",
      response: errorResponse(503, "NOT_READY", "The credential could not be checked"),
    };
  };
  const handler = makeFront(api.handler, {
    routes: apiRoutes(),
    requestMs: limits.requestMs,
    bodyMs: limits.bodyMs,
    log,
    docsPage: loadDocsPage,
    console: makeConsoleHandler(),
    metrics: metrics === undefined || options.metricsToken === undefined
      ? undefined
      : { registry: metrics, token: options.metricsToken },
    lanes,
    gate,
    admission: options.admission,
    heavyHoldMs: limits.exportMs + limits.requestMs,
  });
  const dispose = async () => {
    await api.dispose();
    await services.dispose();
  };
  return { handler, dispose };
};
