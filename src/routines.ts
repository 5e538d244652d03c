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
import engine from "./metrics/engine.ts" with { type: "text" };
import summaryParts from "./metrics/summary_parts.ts" with { type: "text" };
import decimal from "./metrics/decimal.ts" with { type: "text" };
import targets from "./metrics/targets.ts" with { type: "text" };
import metricsService from "./metrics/metrics_service.ts" with { type: "text" };
import months from "./metrics/months.ts" with { type: "text" };
import monthsService from "./metrics/months_service.ts" with { type: "text" };
import qualityRules from "./quality/quality_rules.ts" with { type: "text" };
import portfolioCompute from "./portfolio/portfolio_compute.ts" with { type: "text" };
import portfolioRollup from "./portfolio/portfolio_rollup.ts" with { type: "text" };
import portfolioService from "./portfolio/portfolio_service.ts" with { type: "text" };
import portfolioFile from "./portfolio/portfolio_file.ts" with { type: "text" };
import messages from "./domain/messages.ts" with { type: "text" };
import readTexts from "./reads/read_texts.ts" with { type: "text" };
import energyRepo from "./energy/energy_repo.ts" with { type: "text" };
import storeLists from "./stores/store_lists.ts" with { type: "text" };

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

// The modules that compute and word the answers that carry an ETag, as text. A module that comes
// to compute or word such an answer is added here.
const ANSWER_SOURCES = [
  engine,
  summaryParts,
  decimal,
  targets,
  metricsService,
  months,
  monthsService,
  qualityRules,
  portfolioCompute,
  portfolioRollup,
  portfolioService,
  portfolioFile,
  messages,
  readTexts,
  energyRepo,
  storeLists,
];

// The shapes this code gives answers: part of every ETag, so that a new release whose rules, SQL
// or answer-making code differ never answers 304 to a body made by the old one.
export const SHAPE_TAG = createHash("sha256")
  .update(JSON.stringify([RULE_VERSION, ROUTINES.map((r) => r.text), ANSWER_SOURCES]))
  .digest("hex")
  .slice(0, 10);
