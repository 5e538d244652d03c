// The one place where every Layer is composed into the service's web handler.
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder";
import * as HttpApp from "@effect/platform/HttpApp";
import * as HttpServer from "@effect/platform/HttpServer";
import type * as SqlClient from "@effect/sql/SqlClient";
import { Cause, Context, Effect, Exit, Layer, ManagedRuntime, Option, type Redacted } from "effect";
import { Api } from "./api/api.ts";
import { contractMiddleware } from "./api/contract_middleware.ts";
import {
  AuthenticationLive,
  AuthHttpLive,
  credentialFirst,
  PendingAuthenticationLive,
  storeOfPath,
} from "./auth/auth_http.ts";
import { Auth } from "./auth/auth_service.ts";
import { DataSeal } from "./auth/data_seal.ts";
import { type AdmissionLimits, AppConfig, DEFAULT_LIMITS, type ServiceLimits } from "./config.ts";
import { ReadCache } from "./reads/read_cache.ts";
import { makeConsoleHandler } from "./console/assets.ts";
import { loadDocsPage } from "./http/docs_page.ts";
import { errorResponse, type Gate, makeFront } from "./http/front.ts";
import { databaseProbeLayer } from "./ops/db_probe.ts";
import { OpsMetrics } from "./ops/metrics.ts";
import { TracingLive } from "./ops/tracing_layer.ts";
import { apiRoutes } from "./http/routes.ts";
import { effectLoggerLayer, type Log, processLog } from "./log.ts";
import { ChangesHttpLive } from "./changes/changes_http.ts";
import { EnergyHttpLive } from "./energy/energy_http.ts";
import { ExportHttpLive } from "./exports/export_http.ts";
import { EnergyService } from "./energy/energy_service.ts";
import { ImportsHttpLive } from "./imports/imports_http.ts";
import { MetricsHttpLive } from "./metrics/metrics_http.ts";
import { MetricsService } from "./metrics/metrics_service.ts";
import { MonthsHttpLive } from "./metrics/months_http.ts";
import { MonthsService } from "./metrics/months_service.ts";
import { PortfolioHttpLive } from "./portfolio/portfolio_http.ts";
import { PortfolioService } from "./portfolio/portfolio_service.ts";
import { requirePermission, StoreAccess } from "./auth/access.ts";
import { webRequestFacts } from "./auth/auth_http.ts";
import { statusOfError } from "./domain/errors.ts";
import type { ErrorCode } from "./domain/error_codes.ts";
import { Messages } from "./domain/messages.ts";
import { ImportService } from "./imports/import_service.ts";
import { ProfileService } from "./stores/profile_service.ts";
import { QualityHttpLive } from "./quality/quality_http.ts";
import { ReferenceRepo } from "./stores/reference_repo.ts";
import { StoreRepo } from "./stores/store_repo.ts";
import { StoresHttpLive } from "./stores/stores_http.ts";
import { SystemHttpLive } from "./system/system_http.ts";
import { readRouteMiddleware } from "./system/read_route_http.ts";

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
  PortfolioHttpLive,
  MonthsHttpLive,
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
  ReadCache.Default,
  PortfolioService.Default,
  MonthsService.Default,
);

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
    // The credential before a parameter, then every failure mapped to its answer.
    HttpApiBuilder.middleware(
      Effect.map(credentialFirst, (first) => (app) => contractMiddleware(first(app))),
    ),
    // Reads to the replica when one is configured (src/db/read_replica.ts).
    HttpApiBuilder.middleware(readRouteMiddleware),
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
  readonly admission?: AdmissionLimits;
}

// The service's web handler: the front door over the HttpApi, both over one runtime.
export const makeHandler = <E>(
  infrastructure: Layer.Layer<SqlClient.SqlClient | AppConfig, E>,
  options: HandlerOptions = {},
) => {
  const log = options.log ?? processLog();
  const limits = options.limits ?? DEFAULT_LIMITS;
  const metrics = options.metricsToken === undefined ? undefined : new OpsMetrics();
  const services = Layer.provideMerge(ServicesLive, infrastructure);
  const runtime = ManagedRuntime.make(
    Layer.provideMerge(
      Layer.mergeAll(
        makeAppLayer(services, log, metrics),
        HttpApiBuilder.Router.Live,
        HttpApiBuilder.Middleware.layer,
      ),
      services,
    ),
  );
  // The kept answers, once the runtime is built (the front door compresses their bytes once).
  let keptCache: ReadCache | undefined;
  // The HttpApi's handler, made on the first request (the runtime is built then).
  let made: Promise<(request: Request, context?: Context.Context<never>) => Promise<Response>>;
  const api = (request: Request, context?: Context.Context<never>) => {
    made ??= runtime.runtime().then(async (r) => {
      const cache = Context.get(r.context, ReadCache);
      keptCache = cache;
      metrics?.setSources({ answers: () => cache.facts() });
      return HttpApp.toWebHandlerRuntime(r)(await runtime.runPromise(HttpApiBuilder.httpApp));
    });
    return made.then((handle) => handle(request, context));
  };
  // The credential and its permission, decided by Auth as the endpoint's middleware decides them,
  // before the front door reads a body or admits heavy work; and where the path names a store, the
  // store and the key's scope (404, 403), as the endpoint decides them, before its parameters and
  // body are decoded.
  const gate: Gate = async (request, route, language) => {
    const r = await runtime.runtime();
    const config = Context.get(r.context, AppConfig);
    const permission = route.admission?.permission ?? "read";
    const storeId = route.path.includes(":store_id") ? storeOfPath(request.url) : undefined;
    const exit = await runtime.runPromiseExit(
      Effect.flatMap(Auth, (auth) => auth.authenticate(webRequestFacts(request, config))).pipe(
        Effect.tap((caller) => requirePermission(caller, permission)),
        Effect.tap((caller) =>
          storeId === undefined
            ? Effect.void
            : Effect.flatMap(StoreAccess, (access) => access.store(caller, storeId, permission))
        ),
      ),
    );
    if (Exit.isSuccess(exit)) return { kind: "admitted", holder: `key ${exit.value.keyId}` };
    const failure = Option.getOrUndefined(Cause.failureOption(exit.cause));
    if (statusOfError(failure) !== undefined) {
      const refused = failure as Error & { readonly code: ErrorCode; readonly zh?: string };
      const m = { code: refused.code, en: refused.message, zh: refused.zh ?? refused.message };
      return { kind: "refused", response: errorResponse(m, language) };
    }
    log.error("the credential check failed", { cause: Cause.pretty(exit.cause).slice(0, 500) });
    return {
      kind: "refused",
      response: errorResponse(Messages.credentialUncheckable(), language),
    };
  };
  const handler = makeFront(api, {
    routes: apiRoutes(),
    requestMs: limits.requestMs,
    bodyMs: limits.bodyMs,
    log,
    docsPage: loadDocsPage,
    console: makeConsoleHandler(),
    metrics: metrics === undefined || options.metricsToken === undefined
      ? undefined
      : { registry: metrics, token: options.metricsToken },
    gate,
    admission: options.admission,
    heavyHoldMs: limits.exportMs + limits.requestMs,
    keptGzip: (bytes, encode) => keptCache?.gzipOf(bytes, encode),
  });
  return { handler, dispose: () => runtime.dispose() };
};
