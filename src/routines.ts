// Everything the database needs besides its schema, and the one step that prepares a database:
// migrations (schema, migrations/*.sql), then the routines of src/ (functions, derived columns).
import { createHash } from "node:crypto";
import { Effect } from "effect";
import { migrate } from "./db/migrator.ts";
import { installRoutines, type Routine, staleRoutines } from "./db/routines.ts";
import { energyRoutines } from "./energy/day_sql.ts";
import { derivedRoutine } from "./energy/day_writer.ts";
import { RULE_VERSION } from "./metrics/engine.ts";
import { metricsRoutines } from "./metrics/metrics_sql.ts";

export const ROUTINES: ReadonlyArray<Routine> = [
  derivedRoutine,
  ...energyRoutines,
  ...metricsRoutines,
];

// Returns the migrations applied and the routines installed (both empty when up to date).
export const prepareDatabase = Effect.gen(function* () {
  const applied = yield* migrate;
  const installed = yield* installRoutines(ROUTINES);
  return { applied, installed };
});

export const pendingRoutines = Effect.map(staleRoutines(ROUTINES), (stale) => stale.length);

// The shapes this code gives answers: part of every ETag, so that a new release whose SQL or rules
// differ never answers 304 to a body made by the old one.
export const SHAPE_TAG = createHash("sha256")
  .update(JSON.stringify([RULE_VERSION, ROUTINES.map((r) => r.text)]))
  .digest("hex")
  .slice(0, 10);
