// A 200 answer whose JSON body is already in the contract's final shape (built by PostgreSQL or
// the metrics engine): it leaves as is, without a second encode; the tests check it against the schema.
import { HttpServerResponse } from "@effect/platform";

export const jsonResponse = (body: string) =>
  HttpServerResponse.text(body, { contentType: "application/json" });
