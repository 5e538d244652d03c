// The service's V8 flags as a tree's service.env states them (DENO_V8_FLAGS), for the scripts that
// start or build the service without `deno task start`: the benchmark, the starvation run and the
// compile task. A tree without the file (an older checkout) names them in its start task instead.

const FLAGS_LINE = /^\s*DENO_V8_FLAGS\s*=\s*(.*?)\s*$/;

// The value of DENO_V8_FLAGS in an env file's text ("" when it sets none); quotes around it dropped.
export const v8FlagsIn = (text: string): string => {
  for (const line of text.split(/\r?\n/)) {
    const found = FLAGS_LINE.exec(line);
    if (found !== null) return found[1].replace(/^(["'])(.*)\1$/, "$2");
  }
  return "";
};

// A file of the tree (a folder's path or URL).
const fileOf = (tree: string | URL, name: string) =>
  tree instanceof URL ? new URL(name, tree) : `${tree.replace(/\/$/, "")}/${name}`;

// The V8 flags the tree's service runs with: service.env's, else its start task's --v8-flags.
export const serviceV8Flags = (tree: string | URL): string => {
  try {
    return v8FlagsIn(Deno.readTextFileSync(fileOf(tree, "service.env")));
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
  }
  const config = JSON.parse(Deno.readTextFileSync(fileOf(tree, "deno.json")));
  return /--v8-flags=(\S+)/.exec(config.tasks?.start ?? "")?.[1] ?? "";
};
