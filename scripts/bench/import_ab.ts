// Previews and commits of two versions of the service, side by side: `deno task bench:imports-ab
// REF [ROUNDS]` starts REF's service and this checkout's, each on a 500-store database of its own
// (ab_sides.ts), and runs the import benchmark's six imports against each in turn (REF, this,
// this, REF, ...), ROUNDS rounds (default 2). The machine's drift falls on both alike, where single
// runs minutes apart differ on the same code (docs/performance.md).
//
// Prints each import's preview and commit seconds and the medians of both.
import { startSides } from "./ab_sides.ts";
import { runImportBench } from "./import_bench.ts";
import { median } from "./stats.ts";

const [ref, roundsArg] = Deno.args;
const rounds = Number(roundsArg ?? 2);
if (ref === undefined || !Number.isInteger(rounds) || rounds < 1 || Deno.args.length > 2) {
  console.error("usage: deno task bench:imports-ab REF [ROUNDS]");
  Deno.exit(2);
}

const { commit, sides: prepared, stop } = await startSides(ref, "read,write,raw");
try {
  const seconds = new Map(
    prepared.map((s) => [s.name, { preview: [] as Array<number>, commit: [] as Array<number> }]),
  );
  for (let round = 0; round < rounds; round++) {
    const order = round % 2 === 0 ? prepared : [...prepared].reverse();
    for (const side of order) {
      const result = await runImportBench({
        baseUrl: `http://127.0.0.1:${side.port}`,
        pid: side.child.pid,
        key: side.key,
        databaseUrl: side.db,
        log: () => {},
      });
      const mine = seconds.get(side.name)!;
      for (const r of result.runs) {
        mine.preview.push(r.preview_seconds);
        if (r.commit_seconds !== null) mine.commit.push(r.commit_seconds);
      }
      console.log(
        `${side.name.padEnd(4)} ${
          result.runs.map((r) =>
            `${r.format} ${r.preview_seconds.toFixed(3)}/${
              r.commit_seconds?.toFixed(3)
            } (${r.writes})`
          ).join("  ")
        }`,
      );
    }
  }
  for (const side of prepared) {
    const s = seconds.get(side.name)!;
    console.log(
      `${side.name} (${
        side.name === "ref" ? commit.slice(0, 12) : "this checkout"
      }): preview median ${median(s.preview).toFixed(3)} s, commit median ${
        median(s.commit).toFixed(3)
      } s (${s.preview.length} imports)`,
    );
  }
} finally {
  stop();
}
