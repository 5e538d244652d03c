// Typed errors of the contract; each encodes on the wire as {error: {code, message}} with its HTTP status.
import * as HttpApiSchema from "@effect/platform/HttpApiSchema";
import { Schema } from "effect";
import type { ErrorCode } from "./error_codes.ts";
import { type Language, pick, type Text } from "./language.ts";

export const ErrorBody = Schema.Struct({
  error: Schema.Struct({ code: Schema.String, message: Schema.String }),
}).annotations({ identifier: "Error" });

// `message` is the English text (what logs and tests read); `zh` its Chinese form, chosen on the
// wire by the request's language (messageIn).
const fields = {
  code: Schema.String,
  message: Schema.String,
  zh: Schema.optional(Schema.String),
};

export class BadRequest extends Schema.TaggedError<BadRequest>()("BadRequest", fields) {}
export class Unauthorized extends Schema.TaggedError<Unauthorized>()("Unauthorized", fields) {}
export class Forbidden extends Schema.TaggedError<Forbidden>()("Forbidden", fields) {}
export class NotFound extends Schema.TaggedError<NotFound>()("NotFound", fields) {}
export class Conflict extends Schema.TaggedError<Conflict>()("Conflict", fields) {}
export class ServiceUnavailable
  extends Schema.TaggedError<ServiceUnavailable>()("ServiceUnavailable", fields) {}

// deno-lint-ignore no-explicit-any
type ErrorClass<E> = Schema.Schema<E, any> & {
  new (props: { code: string; message: string; zh?: string }): E;
};

// The wire form of one error class: the contract's Error body, with the status the builder answers.
const wire = <E extends { code: string; message: string }>(
  cls: ErrorClass<E>,
  status: number,
  description: string,
) =>
  Schema.transform(ErrorBody, Schema.typeSchema(cls), {
    strict: true,
    decode: (body) => new cls({ code: body.error.code, message: body.error.message }),
    encode: (error) => ({ error: { code: error.code, message: error.message } }),
  }).annotations({ ...HttpApiSchema.annotations({ status }), description });

// Each error class's HTTP status: the one statement of it, for the contract, the HttpApi's error
// mapping and the front door.
export const STATUS_OF_ERROR: Readonly<Record<string, number>> = {
  BadRequest: 400,
  Unauthorized: 401,
  Forbidden: 403,
  NotFound: 404,
  Conflict: 409,
  ServiceUnavailable: 503,
};

// The status of a contract error, or undefined for anything else.
export const statusOfError = (error: unknown): number | undefined => {
  const tag = (error as { _tag?: unknown } | null | undefined)?._tag;
  return typeof tag === "string" && Object.hasOwn(STATUS_OF_ERROR, tag)
    ? STATUS_OF_ERROR[tag]
    : undefined;
};

export const BadRequestWire = wire(
  BadRequest,
  STATUS_OF_ERROR.BadRequest,
  "Invalid date, parameter, scope, file or body",
);
export const UnauthorizedWire = wire(
  Unauthorized,
  STATUS_OF_ERROR.Unauthorized,
  "Credential invalid, expired or revoked",
);
export const ForbiddenWire = wire(
  Forbidden,
  STATUS_OF_ERROR.Forbidden,
  "Store, operation or raw permission missing",
);
export const NotFoundWire = wire(NotFound, STATUS_OF_ERROR.NotFound, "Unknown object");
export const ConflictWire = wire(
  Conflict,
  STATUS_OF_ERROR.Conflict,
  "Version, commit or idempotency conflict",
);
export const ServiceUnavailableWire = wire(
  ServiceUnavailable,
  STATUS_OF_ERROR.ServiceUnavailable,
  "Database or service not ready",
);

// A refusal's code with its text for people: every message the service answers with is one of these
// (src/domain/messages.ts).
export interface Message extends Text {
  readonly code: ErrorCode;
}

const props = (m: Message) => ({ code: m.code, message: m.en, zh: m.zh });

export const badRequest = (m: Message) => new BadRequest(props(m));
export const notFound = (m: Message) => new NotFound(props(m));
export const forbidden = (m: Message) => new Forbidden(props(m));
export const conflict = (m: Message) => new Conflict(props(m));
export const unauthorized = (m: Message) => new Unauthorized(props(m));
export const unavailable = (m: Message) => new ServiceUnavailable(props(m));

// An error's message in a language (its English one when it has no other form).
export const messageIn = (
  error: { readonly message: string; readonly zh?: string },
  language: Language,
): string =>
  error.zh === undefined ? error.message : pick({ en: error.message, zh: error.zh }, language);
