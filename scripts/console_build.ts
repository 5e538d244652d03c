// CLI: deno task console:build [--force] — builds the browser console into dist/console (skipped
// when the bundle was made from the same sources).
import { buildConsole } from "../src/console/build.ts";

const result = await buildConsole({ force: Deno.args.includes("--force") });
console.log(
  result.built
    ? `console built in ${
      Math.round(result.ms)
    } ms: ${result.stamp.script}, ${result.stamp.stylesheet}`
    : `console is up to date (${result.stamp.script})`,
);
