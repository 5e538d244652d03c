// The version of the service's contract: the OpenAPI document states it (api/api.ts) and traces
// carry it as the service version (ops/tracing.ts).
export const API_VERSION = "0.5.007-service.1";
