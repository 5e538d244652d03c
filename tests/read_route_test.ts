// The read route's decisions when the replica cannot answer a read or the primary no longer accepts
// its credential, with the replica and the credential check stood in for (replica_test.ts runs a
// real standby).
import assert from "node:assert/strict";
import * as HttpServerRequest from "@effect/platform/HttpServerRequest";
import * as HttpServerResponse from "@effect/platform/HttpServerResponse";
import { SqlError } from "@effect/sql/SqlError";
import { Effect, FiberRef, Layer, Option } from "effect";
import { Auth } from "../src/auth/auth_service.ts";
import { AppConfig, type AppConfigShape } from "../src/config.ts";
import { ReadReplica } from "../src/db/read_replica.ts";
import { readTarget } from "../src/db/read_target.ts";
import { unauthorized } from "../src/domain/errors.ts";
import { Messages } from "../src/domain/messages.ts";
import { readRouteMiddleware } from "../src/system/read_route_http.ts";

// Where each run of the endpoint went, and how it answered there.
const routed = (
  onReplica: () => Effect.Effect<HttpServerResponse.HttpServerResponse>,
  options: {
    readonly revoked?: boolean;
    readonly path?: string;
    // When the replica stops being read (never, by default).
    readonly unusable?: Effect.Effect<void>;
  } = {},
) =>
  Effect.gen(function* () {
    const targets: Array<string> = [];
    const app = Effect.gen(function* () {
      const target = yield* FiberRef.get(readTarget);
      targets.push(target);
      return target === "replica"
        ? yield* onReplica()
        : HttpServerResponse.text("from the primary");
    });
    const middleware = yield* readRouteMiddleware;
    // Uninterruptible, as a request may run in the service.
    const response = yield* Effect.uninterruptible(middleware(app)).pipe(
      Effect.provideService(
        HttpServerRequest.HttpServerRequest,
        HttpServerRequest.fromWeb(
          new Request(`http://service.test${options.path ?? "/api/v1/stores"}`, {
            headers: { authorization: "Bearer some-key" },
          }),
        ),
      ),
    );
    return { targets, status: response.status, response };
  }).pipe(
    Effect.provide(Layer.mergeAll(
      Layer.succeed(ReadReplica, {
        configured: true,
        route: () => Effect.succeed("replica" as const),
        status: Effect.die("not asked"),
        unusable: options.unusable ?? Effect.never,
      }),
      Layer.succeed(
        Auth,
        {
          pendingOf: () =>
            Effect.succeed({
              credential: { kind: "key", keyHash: "h" },
              method: "GET",
              origin: undefined,
              expectedOrigin: undefined,
            }),
          // The primary's verdict on the credential.
          verify: () =>
            options.revoked === true
              ? Effect.fail(unauthorized(Messages.invalidCredential()))
              : Effect.succeed({}),
        } as unknown as Auth,
      ),
      Layer.succeed(
        AppConfig,
        { publicOrigin: Option.none(), host: "127.0.0.1", port: 0 } as unknown as AppConfigShape,
      ),
    )),
    Effect.runPromise,
  );

Deno.test("a read the replica answers is its answer", async () => {
  const r = await routed(() => Effect.succeed(HttpServerResponse.text("from the replica")));
  assert.deepEqual(r.targets, ["replica"]);
  assert.equal(r.status, 200);
});

Deno.test("a read cancelled on the replica (a conflict with replay) is answered by the primary", async () => {
  const conflict = new SqlError({
    cause: { code: "40001", message: "canceling statement due to conflict with recovery" },
    message: "Failed to execute statement",
  });
  const died = await routed(() => Effect.die(conflict));
  assert.deepEqual(died.targets, ["replica", "primary"]);
  assert.equal(died.status, 200);
  // The same when a failure was already made into its 500 or 503 answer.
  for (const status of [500, 503]) {
    const answered = await routed(() => Effect.succeed(HttpServerResponse.empty({ status })));
    assert.deepEqual(answered.targets, ["replica", "primary"]);
    assert.equal(answered.status, 200);
  }
  // A refusal of the request itself stays the replica's answer.
  const refused = await routed(() => Effect.succeed(HttpServerResponse.empty({ status: 403 })));
  assert.deepEqual(refused.targets, ["replica"]);
  assert.equal(refused.status, 403);
});

Deno.test("a read waiting on a replica found frozen is answered by the primary", async () => {
  let interrupted = false;
  const lostLater = Effect.asVoid(Effect.sleep("20 millis"));
  // A read that waited for the replica for ever fails the test instead of hanging it.
  let timer: ReturnType<typeof setTimeout> | undefined;
  const r = await Promise.race([
    routed(
      () => Effect.onInterrupt(Effect.never, () => Effect.sync(() => (interrupted = true))),
      { unusable: lostLater },
    ),
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error("the read waited for the replica")), 10_000);
    }),
  ]).finally(() => clearTimeout(timer));
  assert.deepEqual(r.targets, ["replica", "primary"]);
  assert.equal(r.status, 200);
  // The read left on the replica is interrupted there, without the answer waiting for it.
  for (let i = 0; i < 500 && !interrupted; i++) {
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  assert.equal(interrupted, true);
  // A replica read that ends first is the answer, whatever the replica does afterwards.
  const quick = await routed(
    () => Effect.succeed(HttpServerResponse.text("from the replica")),
    { unusable: lostLater },
  );
  assert.deepEqual(quick.targets, ["replica"]);
});

Deno.test("a credential the primary refuses is answered by the primary, whatever the replica says", async () => {
  const r = await routed(
    () => Effect.succeed(HttpServerResponse.text("from the replica")),
    { revoked: true },
  );
  assert.deepEqual(r.targets, ["replica", "primary"]);
});

Deno.test("only reads of /api/v1 are routed", async () => {
  const r = await routed(
    () => Effect.succeed(HttpServerResponse.text("from the replica")),
    { path: "/health/ready" },
  );
  assert.deepEqual(r.targets, ["primary"]);
});
