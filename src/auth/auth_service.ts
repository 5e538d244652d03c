// Auth: verifies bearer keys and session cookies on every request, and makes and ends sessions.
import * as SqlClient from "@effect/sql/SqlClient";
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import { Context, Effect, Option, Redacted } from "effect";
import { AppConfig } from "../config.ts";
import { dbBoundary } from "../db/errors.ts";
import { onPrimary } from "../db/read_replica.ts";
import type { CallerShape, Credential, PendingCallerShape } from "../domain/auth.ts";
import { forbidden, unauthorized } from "../domain/errors.ts";
import { Messages } from "../domain/messages.ts";
import { RequestNote } from "../domain/request.ts";
import {
  credentialByKeySql,
  credentialParams,
  type CredentialRow,
  credentialsSql,
  liveCredential,
} from "./access.ts";
import { type BatchLimits, makeBatched } from "../db/batched.ts";
import { hashKey } from "./keys.ts";
import { span } from "../ops/span.ts";
import { makeConfirmedCredentials } from "../reads/confirmed_reads.ts";

export const SESSION_HOURS = 8;

// Credentials looked up together: at most 64 to a statement (an index lookup each), 2 statements
// under way on each database.
const CREDENTIALS_AT_ONCE: BatchLimits = { size: 64, running: 2 };
const CREDENTIALS_SQL = credentialsSql("$1", "$2");

const toCaller = (row: CredentialRow, viaSession: boolean): CallerShape => ({
  memberId: row.member_id,
  keyId: row.key_id,
  loginName: row.login_name,
  displayName: row.display_name,
  dbRole: row.db_role,
  permissions: new Set(row.permissions),
  storeIds: row.store_ids,
  viaSession,
});

const invalid = unauthorized(Messages.invalidCredential());

export interface RequestFacts {
  readonly method: string;
  readonly authorization: string | undefined;
  readonly cookie: string | undefined;
  readonly origin: string | undefined;
  // The service's own origin for this request (PUBLIC_ORIGIN, else the request's scheme and Host).
  readonly expectedOrigin: string | undefined;
}

const originOf = (text: string) => {
  try {
    const url = new URL(text);
    return url.protocol === "http:" || url.protocol === "https:" ? url.origin : undefined;
  } catch {
    return undefined;
  }
};

// An Origin header's form: a scheme, a host and perhaps a port, nothing after them.
const ORIGIN_ONLY = /^https?:\/\/[^/?#@\s]+$/i;

// Same-origin: the Origin header is an origin alone and names the service's scheme, host and port
// (default ports folded).
export const isSameOrigin = (origin: string | undefined, expected: string | undefined) => {
  if (origin === undefined || expected === undefined || !ORIGIN_ONLY.test(origin)) return false;
  const given = originOf(origin);
  return given !== undefined && given === originOf(expected);
};

// A session id is kept only as its hash, like a key.
const sessionHash = hashKey;

// An Authorization header of a scheme other than Bearer, with its credentials (RFC 9110 11.4).
const OTHER_SCHEME = /^(?!bearer\s)[A-Za-z][A-Za-z0-9!#$%&'*+.^_`|~-]*\s+\S/i;

// The token of an Authorization: Bearer header; "" for a malformed one. A header of another scheme
// (Basic, as a browser sends for a proxy's sign-in in front of the console) is no credential of
// this service: undefined, as if absent, so that the session cookie decides.
export const bearerToken = (authorization: string | undefined) => {
  if (authorization === undefined) return undefined;
  const m = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
  if (m !== null) return m[1];
  return OTHER_SCHEME.test(authorization) ? undefined : "";
};

// A request whose endpoint verifies its credential along with its data (PendingAuthentication): the
// credential it presents, and whether Auth has decided on it yet. A request refused before that (a
// parameter the contract or the handler refuses) is refused for a bad credential first, as on
// every other endpoint (auth_http.ts, credentialFirst).
export interface PendingCheckShape {
  pending: PendingCallerShape | undefined;
  decided: boolean;
}

export class PendingCheck extends Context.Tag("Auth/PendingCheck")<
  PendingCheck,
  PendingCheckShape
>() {}

const noteDecided = Effect.map(Effect.serviceOption(PendingCheck), (check) => {
  if (Option.isSome(check)) check.value.decided = true;
});

// The access log names the member behind a verified credential.
const noteMember = (memberId: number) =>
  Effect.map(Effect.serviceOption(RequestNote), (note) => {
    if (Option.isSome(note)) note.value.memberId = memberId;
  });

export class Auth extends Effect.Service<Auth>()("Auth/Auth", {
  scoped: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient;
    const config = yield* AppConfig;

    const loadSecret = Option.match(config.sessionSecret, {
      onSome: (secret) => Effect.succeed(Redacted.value(secret)),
      // On the primary whatever request asks first: a read replica takes no INSERT.
      onNone: () =>
        onPrimary(Effect.gen(function* () {
          yield* sql`
            INSERT INTO app_settings (key, value)
            VALUES ('session_secret', ${randomBytes(32).toString("base64url")})
            ON CONFLICT (key) DO NOTHING`;
          const rows = yield* sql<{ value: string }>`
            SELECT value FROM app_settings WHERE key = 'session_secret'`;
          return rows[0].value;
        })),
    });
    // Kept once read; a failed read (database briefly away) is not kept, so the next request
    // tries again instead of failing until a restart.
    let known: string | undefined;
    const secret = Effect.suspend(() =>
      known !== undefined
        ? Effect.succeed(known)
        : Effect.tap(dbBoundary(loadSecret), (value) => Effect.sync(() => (known = value)))
    );

    const sign = (id: string) =>
      Effect.map(secret, (s) => createHmac("sha256", s).update(id).digest("base64url"));

    const verifyCookie = (value: string) =>
      Effect.gen(function* () {
        const dot = value.lastIndexOf(".");
        if (dot <= 0) return undefined;
        const id = value.slice(0, dot);
        const given = new TextEncoder().encode(value.slice(dot + 1));
        const expected = new TextEncoder().encode(yield* sign(id));
        return given.length === expected.length && timingSafeEqual(given, expected)
          ? id
          : undefined;
      });

    const byKeyHash = (keyHash: string) =>
      dbBoundary(sql.unsafe<CredentialRow>(credentialByKeySql("$1"), [keyHash]));

    // The rows of the credentials that requests present at once, in shared statements
    // (db/batched.ts): a flood of requests waits for a few statements, not one each.
    const rowOf = yield* makeBatched(
      (credentials: ReadonlyArray<Credential>) => {
        const params = credentials.map(credentialParams);
        return dbBoundary(sql.unsafe<CredentialRow & { readonly i: number }>(
          CREDENTIALS_SQL,
          [params.map(([key]) => key), params.map(([, session]) => session)],
        )).pipe(Effect.map((rows) => {
          const each: Array<CredentialRow | undefined> = credentials.map(() => undefined);
          for (const { i, ...row } of rows) each[i - 1] = row;
          return each;
        }));
      },
      CREDENTIALS_AT_ONCE,
    );

    // The credential a request presents, read without the database: 401 when there is none, the
    // bearer token is empty or the cookie's signature does not match.
    const credentialOf = (facts: RequestFacts) =>
      Effect.gen(function* () {
        const token = bearerToken(facts.authorization);
        if (token !== undefined) {
          if (token === "") return yield* invalid;
          return { kind: "key", keyHash: hashKey(token) } as const;
        }
        if (facts.cookie === undefined || facts.cookie === "") {
          return yield* unauthorized(Messages.missingCredential());
        }
        const sessionId = yield* verifyCookie(facts.cookie);
        if (sessionId === undefined) return yield* invalid;
        return { kind: "session", sessionHash: sessionHash(sessionId) } as const;
      });

    // The decision on a credential's row, however it was fetched: 401 unless the key (and the
    // session) is live; a write through a session cookie needs a same-origin Origin header.
    const accept = (pending: PendingCallerShape, fetched: CredentialRow | undefined) =>
      Effect.gen(function* () {
        yield* noteDecided;
        const row = liveCredential(fetched);
        if (row === undefined) return yield* invalid;
        yield* noteMember(row.member_id);
        if (pending.credential.kind === "key") return toCaller(row, false);
        const method = pending.method.toUpperCase();
        if (
          method !== "GET" && method !== "HEAD" &&
          !isSameOrigin(pending.origin, pending.expectedOrigin)
        ) {
          return yield* forbidden(Messages.originRequiredForSession());
        }
        return toCaller(row, true);
      });

    const pendingOf = (facts: RequestFacts) =>
      Effect.map(credentialOf(facts), (credential): PendingCallerShape => ({
        credential,
        method: facts.method,
        origin: facts.origin,
        // Read from the facts only when the decision needs it (a cookie's write).
        get expectedOrigin() {
          return facts.expectedOrigin;
        },
      }));

    // The credential's row from the database (for a read, from what a statement confirmed while
    // nothing has changed since: reads/confirmed_reads.ts), then the decision.
    const confirmed = yield* makeConfirmedCredentials;
    const verify = (pending: PendingCallerShape) =>
      Effect.gen(function* () {
        const { credential } = pending;
        const row = rowOf(credential);
        const method = pending.method.toUpperCase();
        return yield* accept(
          pending,
          yield* (method === "GET" || method === "HEAD" ? confirmed(credential, row) : row),
        );
      }).pipe(span("Auth.verify"));

    // One decision per request: the bearer header when present, else the session cookie.
    const authenticate = (facts: RequestFacts) => Effect.flatMap(pendingOf(facts), verify);

    // No expected origin: the request reached the service by a name it was not configured for.
    const requireOrigin = (facts: RequestFacts) =>
      isSameOrigin(facts.origin, facts.expectedOrigin) ? Effect.void : Effect.fail(
        forbidden(
          facts.expectedOrigin === undefined
            ? Messages.originUncheckable()
            : Messages.originRequired(),
        ),
      );

    const createSession = (accessKey: string, facts: RequestFacts) =>
      Effect.gen(function* () {
        yield* requireOrigin(facts);
        const rows = yield* byKeyHash(hashKey(accessKey));
        const row = liveCredential(rows.length === 1 ? rows[0] : undefined);
        if (row === undefined) return yield* invalid;
        const id = randomBytes(24).toString("base64url");
        const [created] = yield* dbBoundary(sql<{ expires_at: string }>`
          INSERT INTO sessions (id, key_id, expires_at)
          VALUES (${
          sessionHash(id)
        }, ${row.key_id}, now() + make_interval(hours => ${SESSION_HOURS}))
          RETURNING to_char(expires_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS expires_at`);
        return {
          cookie: `${id}.${yield* sign(id)}`,
          member: row.display_name ?? row.login_name,
          expiresAt: created.expires_at,
        };
      }).pipe(span("Auth.createSession"));

    const endSession = (facts: RequestFacts) =>
      Effect.gen(function* () {
        yield* requireOrigin(facts);
        if (facts.cookie === undefined || facts.cookie === "") return;
        const sessionId = yield* verifyCookie(facts.cookie);
        if (sessionId === undefined) return;
        yield* dbBoundary(sql`
          UPDATE sessions SET ended_at = now()
          WHERE id = ${sessionHash(sessionId)} AND ended_at IS NULL`);
      }).pipe(span("Auth.endSession"));

    return {
      // The service's secret (SESSION_SECRET, else kept in the database): sessions are signed
      // with it, and data_seal.ts derives its sealing key from it.
      secret,
      authenticate,
      pendingOf,
      verify,
      accept,
      createSession,
      endSession,
    } as const;
  }),
}) {}
