// The one mapping of failures to answers: contract errors, request-decoding failures, unknown paths
// and defects all leave as {error: {code, message}}; every answer carries X-Request-ID.
import { HttpServerRequest, HttpServerResponse } from "@effect/platform";
import type { HttpApp } from "@effect/platform";
import { Cause, Effect } from "effect";

const errorBody = (status: number, code: string, message: string, requestId: string) =>
  HttpServerResponse.unsafeJson(
    { error: { code, message } },
    { status, headers: { "x-request-id": requestId } },
  );

interface DecodeIssue {
  readonly path?: ReadonlyArray<unknown>;
  readonly message?: string;
}

const decodeMessage = (issues: ReadonlyArray<DecodeIssue>, fallback: string) =>
  issues.length === 0 ? fallback : issues
    .map((i) => `${(i.path ?? []).join(".") || "request"}: ${i.message ?? "invalid"}`)
    .join("; ");

const statusOf: Record<string, number> = {
  BadRequest: 400,
  Unauthorized: 401,
  Forbidden: 403,
  NotFound: 404,
  Conflict: 409,
  ServiceUnavailable: 503,
};

export const contractMiddleware = <E, R>(
  app: HttpApp.Default<E, R>,
): HttpApp.Default<never, R | HttpServerRequest.HttpServerRequest> =>
  Effect.gen(function* () {
    const requestId = crypto.randomUUID();
    const response = yield* Effect.catchAllCause(app, (cause) =>
      Effect.gen(function* () {
        const error = Cause.squash(cause) as { _tag?: string } | undefined;
        const tag = error?._tag ?? "";
        if (tag in statusOf) {
          const { code, message } = error as { code: string; message: string };
          return errorBody(statusOf[tag], code, message, requestId);
        }
        if (tag === "HttpApiDecodeError") {
          const decode = error as { issues?: ReadonlyArray<DecodeIssue>; message?: string };
          const text = decodeMessage(decode.issues ?? [], decode.message ?? "Invalid request");
          // A message quotes the offending value; a 5 MB upload is not sent back.
          const short = text.length > 2000 ? `${text.slice(0, 2000)}... (truncated)` : text;
          return errorBody(400, "INVALID_REQUEST", short, requestId);
        }
        if (tag === "RouteNotFound") {
          const request = yield* HttpServerRequest.HttpServerRequest;
          return errorBody(
            404,
            "NOT_FOUND",
            `No endpoint ${request.method} ${request.url}`,
            requestId,
          );
        }
        if (tag === "RequestError") {
          return errorBody(400, "INVALID_REQUEST", "The request body could not be read", requestId);
        }
        if (Cause.isInterruptedOnly(cause)) {
          return errorBody(503, "NOT_READY", "The request was interrupted", requestId);
        }
        yield* Effect.logError("request failed", cause).pipe(
          Effect.annotateLogs("request_id", requestId),
        );
        return errorBody(500, "INTERNAL", `The operation failed (request ${requestId})`, requestId);
      }));
    return HttpServerResponse.setHeader(response, "x-request-id", requestId);
  });
