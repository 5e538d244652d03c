// Typed errors of the contract; each encodes on the wire as {error: {code, message}} with its HTTP status.
import * as HttpApiSchema from "@effect/platform/HttpApiSchema";
import { Schema } from "effect";

export const ErrorBody = Schema.Struct({
  error: Schema.Struct({ code: Schema.String, message: Schema.String }),
}).annotations({ identifier: "Error" });

const fields = { code: Schema.String, message: Schema.String };

export class BadRequest extends Schema.TaggedError<BadRequest>()("BadRequest", fields) {}
export class Unauthorized extends Schema.TaggedError<Unauthorized>()("Unauthorized", fields) {}
export class Forbidden extends Schema.TaggedError<Forbidden>()("Forbidden", fields) {}
export class NotFound extends Schema.TaggedError<NotFound>()("NotFound", fields) {}
export class Conflict extends Schema.TaggedError<Conflict>()("Conflict", fields) {}
export class ServiceUnavailable
  extends Schema.TaggedError<ServiceUnavailable>()("ServiceUnavailable", fields) {}

// deno-lint-ignore no-explicit-any
type ErrorClass<E> = Schema.Schema<E, any> & {
  new (props: { code: string; message: string }): E;
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

export const badRequest = (message: string, code = "INVALID_PARAMETER") =>
  new BadRequest({ code, message });
export const notFound = (message: string, code = "NOT_FOUND") => new NotFound({ code, message });
export const forbidden = (message: string, code = "FORBIDDEN") => new Forbidden({ code, message });
export const conflict = (message: string, code = "CONFLICT") => new Conflict({ code, message });
export const unauthorized = (message: string, code = "UNAUTHORIZED") =>
  new Unauthorized({ code, message });
export const notReady = (message = "The database is not reachable") =>
  new ServiceUnavailable({ code: "NOT_READY", message });
export const busy = () =>
  new ServiceUnavailable({
    code: "BUSY",
    message: "The data is busy (a lock or a long statement held it); try again shortly",
  });
