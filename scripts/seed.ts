// CLI: deno task seed [--reset [--discard-uploads]] [--snapshot FILE] [--stores N] [--out FILE] —
// validate and load a snapshot.
import { parseArgs } from "node:util";
import { Cause, Effect, Either, Exit, Layer, Option } from "effect";
import { AppConfig } from "../src/config.ts";
import { AdminDatabaseLive } from "../src/db/database.ts";
import { prepareDatabase } from "../src/routines.ts";
import { generateSnapshot } from "../src/seed/generate.ts";
import { loadSnapshot, type LoadSummary } from "../src/seed/load.ts";
import { SnapshotInvalid, validateSnapshot } from "../src/seed/snapshot.ts";
import { failureReason } from "../src/log.ts";

const USAGE =
  `Usage: deno task seed [--reset [--discard-uploads]] [--snapshot FILE | --stores N] [--out FILE]

  --snapshot FILE  load this snapshot file (JSON, see docs/snapshot.md)
  --stores N       generate the demo snapshot with N stores (default 60)
  --reset          empty every data table first (members, keys and sessions are kept); refused
                   while the database holds committed uploads
  --discard-uploads  with --reset: reset even so (their corrections and history are deleted)
  --out FILE       write the validated snapshot to FILE and stop; the database is not touched

Uses DATABASE_URL when set, else embedded PGlite in DATA_DIR (default .data).
Exit codes: 0 loaded (or written), 1 invalid snapshot or load failure, 2 usage error.`;

const fail = (code: number, ...lines: Array<string>): never => {
  for (const line of lines) console.error(line);
  Deno.exit(code);
};

const printInvalid = (error: SnapshotInvalid): never =>
  fail(
    1,
    `Snapshot is invalid (${error.problems.length} problem${
      error.problems.length === 1 ? "" : "s"
    }); nothing was loaded:`,
    ...error.problems.map((p) => `  - ${p}`),
  );

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

const parse = () => {
  try {
    return parseArgs({
      args: Deno.args,
      options: {
        reset: { type: "boolean", default: false },
        "discard-uploads": { type: "boolean", default: false },
        snapshot: { type: "string" },
        stores: { type: "string" },
        out: { type: "string" },
        help: { type: "boolean", short: "h", default: false },
      },
      strict: true,
      allowPositionals: false,
    }).values;
  } catch (error) {
    return fail(2, (error as Error).message, USAGE);
  }
};

const readInput = async (args: ReturnType<typeof parse>): Promise<unknown> => {
  if (args.snapshot !== undefined) {
    if (args.stores !== undefined) fail(2, "--snapshot and --stores exclude each other", USAGE);
    let text: string;
    try {
      text = await Deno.readTextFile(args.snapshot);
    } catch (error) {
      return fail(1, `Cannot read ${args.snapshot}: ${(error as Error).message}`);
    }
    try {
      return JSON.parse(text);
    } catch (error) {
      return fail(1, `${args.snapshot} is not valid JSON: ${(error as Error).message}`);
    }
  }
  const stores = Number(args.stores ?? "60");
  if (!Number.isInteger(stores) || stores < 1) {
    fail(2, `--stores needs a positive integer, got ${args.stores}`, USAGE);
  }
  return generateSnapshot({ stores });
};

const printSummary = (summary: LoadSummary) => {
  const width = Math.max(...Object.keys(summary).map((k) => k.length));
  for (const [table, count] of Object.entries(summary)) {
    console.log(`  ${table.padEnd(width)}  ${count}`);
  }
};

const main = async () => {
  const args = parse();
  if (args.help) {
    console.log(USAGE);
    return;
  }
  if (args["discard-uploads"] && !args.reset) fail(2, "--discard-uploads goes with --reset", USAGE);
  const started = performance.now();
  const input = await readInput(args);
  const prepared = performance.now();

  if (args.out !== undefined) {
    const valid = validateSnapshot(input);
    if (Either.isLeft(valid)) return printInvalid(valid.left);
    await Deno.writeTextFile(args.out, JSON.stringify(valid.right) + "\n");
    console.log(
      `Wrote ${args.out}: ${valid.right.stores.length} stores, ` +
        `${seconds(performance.now() - started)}; the database was not touched.`,
    );
    return;
  }

  const program = Effect.gen(function* () {
    const config = yield* AppConfig;
    console.log(
      Option.isSome(config.databaseUrl)
        ? "Database: PostgreSQL (DATABASE_URL)"
        : `Database: embedded PGlite in ${config.dataDir}`,
    );
    const openStart = performance.now();
    yield* prepareDatabase;
    const loadStart = performance.now();
    const summary = yield* loadSnapshot(input, {
      reset: args.reset,
      discardUploads: args["discard-uploads"],
    });
    return { summary, openMs: loadStart - openStart, loadMs: performance.now() - loadStart };
  }).pipe(
    Effect.provide(Layer.provideMerge(AdminDatabaseLive, AppConfig.layer)),
  );

  const exit = await Effect.runPromiseExit(program);
  if (Exit.isFailure(exit)) {
    const failure = Cause.failureOption(exit.cause);
    if (Option.isSome(failure)) {
      const error = failure.value;
      if (error instanceof SnapshotInvalid) return printInvalid(error);
      if (error._tag === "SnapshotAlreadyLoaded" || error._tag === "SnapshotHoldsUploads") {
        return fail(1, `Not loaded: ${error.message}`);
      }
      if (error._tag === "DataDirBusy") return fail(1, `Not loaded: ${error.message}`);
      return fail(1, `Load failed, nothing was loaded: ${failureReason(error)}`);
    }
    return fail(1, "Load failed, nothing was loaded:", Cause.pretty(exit.cause));
  }
  const { summary, openMs, loadMs } = exit.value;
  console.log(`Loaded snapshot${args.reset ? " (after reset)" : ""}:`);
  printSummary(summary);
  console.log(
    `Snapshot prepared in ${seconds(prepared - started)}, migrations checked in ` +
      `${seconds(openMs)}, validated and loaded in ${seconds(loadMs)}, ` +
      `total ${seconds(performance.now() - started)}.`,
  );
};

await main();
