// The service's V8 flags are stated once, in service.env, and every way of starting it uses that
// statement: the start and dev tasks, the container, the single binary and the scripts that start
// the service themselves.
import assert from "node:assert/strict";
import { BINARY_FLAGS } from "../scripts/compile.ts";
import { serviceV8Flags, v8FlagsIn } from "../scripts/service_env.ts";

const ROOT = new URL("../", import.meta.url);
const read = (name: string) => Deno.readTextFileSync(new URL(name, ROOT));
const tasks = JSON.parse(read("deno.json")).tasks as Record<string, string>;

Deno.test("service.env states V8 flags, and nothing else names any", () => {
  const flags = serviceV8Flags(ROOT);
  assert.match(flags, /^--[a-z-]+(=\S+)?(,--[a-z-]+(=\S+)?)*$/);
  for (const [name, task] of Object.entries(tasks)) {
    assert.doesNotMatch(task, /--v8-flags/, `task ${name}`);
  }
  assert.doesNotMatch(read("Dockerfile"), /--v8-flags|DENO_V8_FLAGS/);
});

Deno.test("the start and dev tasks and the container read service.env", () => {
  assert.match(tasks.start, /^deno run .*--env-file=service\.env .*src\/main\.ts$/);
  assert.match(tasks.dev, /^deno run .*--env-file=service\.env .*src\/main\.ts$/);
  const cmd = read("Dockerfile").split("\n").filter((line) => line.startsWith("CMD ")).at(-1);
  assert.ok(cmd !== undefined);
  const args: Array<string> = JSON.parse(cmd.slice(4));
  assert.ok(args.includes("--env-file=service.env"), cmd);
  assert.equal(args.at(-1), "src/main.ts");
});

Deno.test("the single binary is built with service.env's flags", () => {
  assert.ok(BINARY_FLAGS.includes(`--v8-flags=${serviceV8Flags(ROOT)}`), BINARY_FLAGS.join(" "));
});

Deno.test("DENO_V8_FLAGS is read from an env file as Deno reads it: comments, spaces, quotes", () => {
  assert.equal(v8FlagsIn("# a comment\nDENO_V8_FLAGS=--a,--b=1\n"), "--a,--b=1");
  assert.equal(v8FlagsIn("OTHER=1\r\n  DENO_V8_FLAGS = --a  \r\n"), "--a");
  assert.equal(v8FlagsIn('DENO_V8_FLAGS="--a,--b"'), "--a,--b");
  assert.equal(v8FlagsIn("# DENO_V8_FLAGS=--a\nOTHER=1"), "");
  assert.equal(v8FlagsIn(""), "");
});

Deno.test("a tree without service.env runs with its start task's flags (an older checkout)", async () => {
  const tree = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(
      `${tree}/deno.json`,
      JSON.stringify({ tasks: { start: "deno run -A --v8-flags=--a,--b src/main.ts" } }),
    );
    assert.equal(serviceV8Flags(tree), "--a,--b");
    await Deno.writeTextFile(`${tree}/service.env`, "DENO_V8_FLAGS=--c\n");
    assert.equal(serviceV8Flags(tree), "--c");
  } finally {
    await Deno.remove(tree, { recursive: true });
  }
});
