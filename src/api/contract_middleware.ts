// The one mapping of failures to answers: contract errors, request-decoding failures, unknown paths
// and defects all leave as {error: {code, message}}; every answer carries X-Request-ID.
import * as HttpServerRequest from "@effect/platform/HttpServerRequest";
import * as HttpServerResponse from "@effect/platform/HttpServerResponse";
import type * as HttpApp from "@effect/platform/HttpApp";
import { Cause, Effect, Option } from "effect";
import { statusOfError } from "../domain/errors.ts";
import { RequestNote } from "../domain/request.ts";

const errorBody = (status: number, code: string, message: string, requestId: string) =>
  HttpServerResponse.unsafeJson(
    { error: { code, message } },
    { status, headers: { "x-request-id": requestId } },
  );

interface DecodeIssue {
  readonly path?: ReadonlyArray<unknown>;
  readonly message?: string;
}

const MAX_ISSUES = 5;
const MAX_ISSUE_CHARS = 160;

// A decode message names the field and the problem, never the value: the library's messages end
// in ", actual <value>", and a value may be a credential (an access key sent as ["esk_..."]) or
// megabytes long. A field name is shown only when it is short and plain: an unknown field's name is
// the client's text, and may be a key.
const PLAIN_NAME = /^[A-Za-z_][A-Za-z0-9_-]{0,31}$/;

const issueText = (issue: DecodeIssue) => {
  const field = (issue.path ?? [])
    .map((p) => {
      const name = String(p);
      return typeof p === "number" || PLAIN_NAME.test(name) ? name : "(field)";
    })
    .join(".") || "request";
  const raw = issue.message ?? "invalid";
  const actual = raw.indexOf(", actual ");
  const what = (actual >= 0 ? raw.slice(0, actual) : raw).split("\n")[0];
  const text = `${field}: ${what}`;
  return text.length > MAX_ISSUE_CHARS ? `${text.slice(0, MAX_ISSUE_CHARS)}…` : text;
};

export const decodeMessage = (issues: ReadonlyArray<DecodeIssue>) =>
  issues.length === 0
    ? "The request is not valid"
    : issues.slice(0, MAX_ISSUES).map(issueText).join("; ") +
      (issues.length > MAX_ISSUES ? `; and ${issues.length - MAX_ISSUES} more` : "");

export const contractMiddleware = <E, R>(
  app: HttpApp.Default<E, R>,
): HttpApp.Default<never, R | HttpServerRequest.HttpServerRequest> =>
  Effect.gen(function* () {
    const note = yield* Effect.serviceOption(RequestNote);
    const requestId = Option.isSome(note) ? note.value.requestId : crypto.randomUUID();
    const response = yield* Effect.catchAllCause(app, (cause) =>
      Effect.gen(function* () {
        const error = Cause.squash(cause) as { _tag?: string } | undefined;
        const tag = error?._tag ?? "";
        const status = statusOfError(error);
        if (status !== undefined) {
          const { code, message } = error as { code: string; message: string };
          return errorBody(status, code, message, requestId);
        }
        if (tag === "HttpApiDecodeError") {
          const decode = error as { issues?: ReadonlyArray<DecodeIssue> };
          return errorBody(400, "INVALID_REQUEST", decodeMessage(decode.issues ?? []), requestId);
        }
        if (tag === "RouteNotFound") {
          return errorBody(404, "NOT_FOUND", "No endpoint at this path", requestId);
        }
        if (tag === "RequestError") {
          // A body that arrived whole but does not parse as JSON.
          if ((error as { cause?: unknown }).cause instanceof SyntaxError) {
            return errorBody(400, "INVALID_JSON", "The body is not well-formed JSON", requestId);
          }
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
    // A body of known size says so, so that the access log (and the wire) carry its length.
    const sized = response.body._tag === "Uint8Array"
      ? HttpServerResponse.setHeader(
        response,
        "content-length",
        String(response.body.contentLength),
      )
      : response;
    return HttpServerResponse.setHeader(sized, "x-request-id", requestId);
  });
