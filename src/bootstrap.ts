// Every start: migrate and install the routines; on a database without stores load the demo snapshot and issue demo keys.
import * as SqlClient from "@effect/sql/SqlClient";
import { Duration, Effect } from "effect";
import { issueKey } from "./auth/keys.ts";
import { AppConfig } from "./config.ts";
import { prepareDatabase } from "./routines.ts";
import type { Permission } from "./domain/auth.ts";
import { seedDatabase, settleLoadedTables } from "./seed/load.ts";

export interface DemoKey {
  readonly member: string;
  readonly permissions: ReadonlyArray<Permission>;
  readonly stores: ReadonlyArray<number> | null;
  readonly key: string;
}

const demoMembers = (firstStores: ReadonlyArray<number>) =>
  [
    { member: "demo-manager", name: "Demo Energy Manager", permissions: ["read"], stores: null },
    {
      member: "demo-analyst",
      name: "Demo Cleaning Analyst",
      permissions: ["read", "write", "raw"],
      stores: null,
    },
    { member: "demo-auditor", name: "Demo Auditor", permissions: ["read", "raw"], stores: null },
    {
      member: "demo-regional",
      name: "Demo Regional Manager",
      permissions: ["read"],
      stores: firstStores,
    },
  ] as const;

export const DEMO_KEY_LIFETIME_DAYS = 90;
export const DEMO_STORES = 60;

// What a start's preparation did: the demo keys when it loaded the demo (else an empty list), and
// whether it built anything (migrations applied, or the demo loaded).
export interface Bootstrapped {
  readonly keys: ReadonlyArray<DemoKey>;
  readonly built: boolean;
}

const DEMO_LOCK_WAIT = "120s";

// Migrates, installs the routines and, on an empty database, loads the demo. The snapshot, the keys
// and `keep` (which writes the keys where a person finds them) happen in one transaction, so a
// start that fails between them leaves no demo whose keys are lost: the next start loads it again.
export const bootstrap = <E>(keep: (keys: ReadonlyArray<DemoKey>) => Effect.Effect<void, E>) =>
  Effect.gen(function* () {
    const config = yield* AppConfig;
    const sql = yield* SqlClient.SqlClient;
    const { applied, installed } = yield* prepareDatabase;
    if (applied.length > 0) yield* Effect.logInfo(`applied ${applied.length} migration(s)`);
    if (installed.length > 0) yield* Effect.logInfo(`installed ${installed.join(", ")}`);
    const migrated: Bootstrapped = { keys: [], built: applied.length > 0 };
    if (!config.seedDemo) return migrated;
    const [{ stores }] = yield* sql<{ stores: number }>`SELECT count(*)::int AS stores FROM stores`;
    if (stores > 0) return migrated;
    yield* Effect.logInfo("empty database: loading the demo snapshot");
    const loaded = yield* sql.withTransaction(Effect.gen(function* () {
      // Another instance loading the demo at the same moment holds the tables for longer than a
      // request's lock wait: this one waits for it (then finds the demo there), within a bound.
      yield* sql.unsafe(`SET LOCAL lock_timeout = '${DEMO_LOCK_WAIT}'`);
      yield* seedDatabase({ stores: DEMO_STORES });
      const first = yield* sql<{ id: number }>`SELECT id FROM stores ORDER BY id LIMIT 3`;
      const keys: Array<DemoKey> = [];
      for (const demo of demoMembers(first.map((row) => row.id))) {
        const issued = yield* issueKey({
          member: demo.member,
          displayName: demo.name,
          permissions: demo.permissions,
          stores: demo.stores,
          lifetime: Duration.days(DEMO_KEY_LIFETIME_DAYS),
        });
        keys.push({
          member: issued.member,
          permissions: issued.permissions,
          stores: issued.stores,
          key: issued.key,
        });
      }
      yield* keep(keys);
      return keys;
    })).pipe(
      // Another instance on the same database loaded it first (both found it empty): its demo
      // and its keys are the ones; this start goes on without its own.
      Effect.catchTag("SnapshotAlreadyLoaded", () =>
        Effect.as(
          Effect.logInfo("another process loaded the demo meanwhile: its keys are the demo's"),
          undefined,
        )),
    );
    if (loaded === undefined) return migrated;
    yield* settleLoadedTables;
    return { keys: loaded, built: true } satisfies Bootstrapped;
  });
