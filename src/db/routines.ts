// Routines: SQL the service needs besides its schema (functions, data derived from the facts),
// kept in src/ and installed at start, each keyed by the SHA-256 of its text. A changed text is
// installed again, in one transaction, by whichever process starts first; the same text is not
// run twice. Migrations hold the schema only.
import * as SqlClient from "@effect/sql/SqlClient";
import { createHash } from "node:crypto";
import { Effect } from "effect";
import { span } from "../ops/span.ts";

export interface Routine {
  // Unique; the record of installed_routines.
  readonly name: string;
  // Idempotent SQL, run whole (several statements allowed) when its hash is new.
  readonly text: string;
}

const hashOf = (routine: Routine) => createHash("sha256").update(routine.text).digest("hex");

// Drops every function of that name first, so that a new text may change its arguments or result.
export const functionRoutine = (name: string, definition: string): Routine => ({
  name: `function ${name}`,
  text: `
DO $drop$
DECLARE f regprocedure;
BEGIN
  FOR f IN SELECT p.oid::regprocedure FROM pg_proc p
           WHERE p.proname = '${name}' AND p.pronamespace = current_schema()::regnamespace LOOP
    EXECUTE 'DROP FUNCTION ' || f;
  END LOOP;
END
$drop$;
${definition}`,
});

// The routines whose text differs from the installed one (or that were never installed).
export const staleRoutines = (routines: ReadonlyArray<Routine>) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient;
    const rows = yield* sql<{ name: string; sha256: string }>`
      SELECT name, sha256 FROM installed_routines`;
    const installed = new Map(rows.map((r) => [r.name, r.sha256]));
    return routines.filter((r) => installed.get(r.name) !== hashOf(r));
  });

// Installs what changed, in the given order; returns the names installed.
export const installRoutines = (routines: ReadonlyArray<Routine>) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient;
    if ((yield* staleRoutines(routines)).length === 0) return [];
    return yield* sql.withTransaction(Effect.gen(function* () {
      // A changed routine may re-derive stored data (at 2,000 stores about 70 s): no statement or
      // lock time limit of the connection applies to this transaction.
      yield* sql`SET LOCAL statement_timeout = 0`;
      yield* sql`SET LOCAL lock_timeout = 0`;
      // Two processes starting at once: the second waits, then finds nothing left to do.
      yield* sql`SELECT pg_advisory_xact_lock(hashtext('installed_routines'))`;
      const stale = yield* staleRoutines(routines);
      for (const routine of stale) {
        yield* sql.unsafe(routine.text);
        yield* sql`
          INSERT INTO installed_routines (name, sha256) VALUES (${routine.name}, ${hashOf(routine)})
          ON CONFLICT (name) DO UPDATE SET sha256 = excluded.sha256, installed_at = now()`;
      }
      return stale.map((r) => r.name);
    }));
  }).pipe(span("Db.installRoutines"));
