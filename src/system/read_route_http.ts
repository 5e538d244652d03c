// Which database a request's statements go to when a read replica is configured: a GET (or HEAD)
// of /api/v1 is sent where ReadReplica.route says for the data it asks for (its data_token or
// known_at, else the current data); everything else stays on the primary. The credential of a
// read sent to the replica is also checked on the primary.
import type * as HttpApp from "@effect/platform/HttpApp";
import * as HttpServerRequest from "@effect/platform/HttpServerRequest";
import { Cause, Effect, Either, Exit, Option } from "effect";
import { requestFacts } from "../auth/auth_http.ts";
import { Auth } from "../auth/auth_service.ts";
import { DataSeal } from "../auth/data_seal.ts";
import { AppConfig } from "../config.ts";
import { onPrimary, onTarget, type ReadNeed, ReadReplica } from "../db/read_replica.ts";
import { asOfOf, canonicalInstant, isInstant } from "../domain/as_of.ts";
import { statusOfError } from "../domain/errors.ts";

const CURRENT: ReadNeed = { kind: "current" };

// The data a read asks for. A parameter the handler will refuse (malformed, both at once, a token
// this service did not seal) asks for the current data: the refusal is the same on either database.
const needOf = (query: URLSearchParams) =>
  Effect.gen(function* () {
    const knownAt = query.get("known_at");
    const token = query.get("data_token");
    if (knownAt !== null && token !== null) return CURRENT;
    if (knownAt !== null) {
      return isInstant(knownAt)
        ? { kind: "instant", at: canonicalInstant(knownAt) } satisfies ReadNeed
        : CURRENT;
    }
    if (token === null) return CURRENT;
    const seal = yield* Effect.serviceOption(DataSeal);
    if (Option.isNone(seal)) return CURRENT;
    const asOf = yield* Effect.option(
      asOfOf({ data_token: token }, (t) => seal.value.open("data-token", t)),
    );
    return Option.isSome(asOf) && asOf.value.kind === "token"
      ? {
        kind: "commit",
        seq: BigInt(asOf.value.seq),
        generation: asOf.value.generation,
      } satisfies ReadNeed
      : CURRENT;
  });

// The middleware, made once over the service's Auth and configuration.
export const readRouteMiddleware = Effect.gen(function* () {
  const replica = yield* Effect.serviceOption(ReadReplica);
  const auth = yield* Auth;
  const facts = requestFacts(yield* AppConfig);

  // Whether the primary refuses the request's credential (401): a key revoked or a session ended
  // there, which a replica that has not replayed it would still accept. A request without a
  // well-formed credential, or a primary that cannot answer, leaves the replica's answer as it is.
  const primaryRefuses = Effect.gen(function* () {
    const pending = yield* Effect.either(Effect.flatMap(facts, auth.pendingOf));
    if (Either.isLeft(pending)) return false;
    const verdict = yield* Effect.exit(onPrimary(auth.verify(pending.right)));
    return Exit.isFailure(verdict) && statusOfError(Cause.squash(verdict.cause)) === 401;
  });

  // Without a replica every statement goes to the primary: the app as it is.
  if (Option.isNone(replica) || !replica.value.configured) {
    return <E, R>(app: HttpApp.Default<E, R>) => app;
  }
  const router = replica.value;
  return <E, R>(app: HttpApp.Default<E, R>) =>
    Effect.gen(function* () {
      const request = yield* HttpServerRequest.HttpServerRequest;
      if (request.method !== "GET" && request.method !== "HEAD") return yield* app;
      const url = new URL(request.url, "http://service");
      if (!url.pathname.startsWith("/api/v1/")) return yield* app;
      const target = yield* router.route(yield* needOf(url.searchParams));
      if (target === "primary") return yield* app;
      // The replica reads while the primary checks the credential: a credential the primary no
      // longer accepts is refused at once, however far behind the replica is. What the replica
      // does not know yet (a session or key made moments ago on the primary, a preview just
      // stored) is asked again of the primary: a client reading what it has just made is not
      // answered 401 or 404. So is a read the replica failed (a statement cancelled by a
      // conflict with replay, a connection lost mid-read): a read can be made again. So is one
      // still waiting when a probe finds the replica frozen or gone: it is left to end there on
      // its own, and the primary answers.
      // Both sides interruptible, as the request's own fiber may not be; the read left on the
      // replica is not waited for (its statement ends there on its own, dbBoundary).
      const onReplica = Effect.race(
        Effect.interruptible(Effect.disconnect(Effect.exit(onTarget("replica")(app)))),
        Effect.interruptible(Effect.as(router.unusable, undefined)),
      );
      const [exit, refused] = yield* Effect.all([onReplica, primaryRefuses], { concurrency: 2 });
      if (refused || exit === undefined) return yield* app;
      if (Exit.isFailure(exit) && Cause.isInterruptedOnly(exit.cause)) return yield* exit;
      const status = Exit.isSuccess(exit)
        ? exit.value.status
        : statusOfError(Cause.squash(exit.cause)) ?? 500;
      return yield* (status === 401 || status === 404 || status >= 500 ? app : exit);
    });
});
