// Records every read answer of a database, to compare two versions of the service byte for byte.
// Starts the service (src/main.ts) on DATABASE_URL, issues a read,raw key (revoked at the end),
// asks every store's energy, targets, metrics, periods, reference, per-day versions and revision
// histories, the snapshot's import batches and lineage rows, the lists and a few refusals, and
// writes each answer (status and body) under DIR, one file per request, plus DIR/index.txt with a
// SHA-256 per request.
// Stores are asked ANSWERS_CONCURRENCY (default 4) at a time; what is asked does not depend on it.
// --stores N asks only the first N stores of /api/v1/stores (the lists and refusals still whole).
// Usage: DATABASE_URL=postgres://... deno task answers DIR [--compare OTHER_DIR] [--stores N]
import { createHash } from "node:crypto";
import { parseArgs } from "node:util";

const USAGE =
  "usage: DATABASE_URL=postgres://... deno task answers DIR [--compare OTHER_DIR] [--stores N]";
let parsed: { values: { compare?: string; stores?: string }; positionals: Array<string> };
try {
  parsed = parseArgs({
    args: Deno.args,
    options: { compare: { type: "string" }, stores: { type: "string" } },
    allowPositionals: true,
    strict: true,
  });
} catch (error) {
  console.error(`${(error as Error).message}\n${USAGE}`);
  Deno.exit(2);
}
const [dir] = parsed.positionals;
const other = parsed.values.compare;
const storeLimit = parsed.values.stores === undefined ? Infinity : Number(parsed.values.stores);
if (
  dir === undefined || parsed.positionals.length > 1 ||
  !(storeLimit === Infinity || (Number.isInteger(storeLimit) && storeLimit >= 1))
) {
  console.error(USAGE);
  Deno.exit(2);
}
const concurrency = Math.max(1, Number(Deno.env.get("ANSWERS_CONCURRENCY") ?? 4) || 4);
const databaseUrl = Deno.env.get("DATABASE_URL");
if (databaseUrl === undefined) {
  console.error("DATABASE_URL must name the database whose answers are recorded");
  Deno.exit(2);
}
const root = new URL("..", import.meta.url);
const env = { DATABASE_URL: databaseUrl, SEED_DEMO: "false", NO_COLOR: "1" };

const issue = await new Deno.Command(Deno.execPath(), {
  args: [
    "run",
    "-A",
    "scripts/keys.ts",
    "issue",
    "--member",
    "answers",
    "--permissions",
    "read,raw",
  ],
  cwd: root,
  env,
  stdout: "piped",
  stderr: "piped",
}).output();
const issued = new TextDecoder().decode(issue.stdout).trim();
const key = issued.split("\n").at(-1) ?? "";
const keyId = /issued key (\d+) for/.exec(issued)?.[1];
if (issue.code !== 0 || key === "") {
  console.error(new TextDecoder().decode(issue.stderr));
  Deno.exit(1);
}

const child = new Deno.Command(Deno.execPath(), {
  args: ["run", "-A", "src/main.ts"],
  cwd: root,
  env: { ...env, PORT: "0", HOST: "127.0.0.1", LOG_FORMAT: "json", LOG_LEVEL: "info" },
  stdout: "piped",
  stderr: "inherit",
}).spawn();
let port = 0;
const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
for (let seen = ""; port === 0;) {
  const { value, done } = await reader.read();
  if (done) throw new Error(`the service stopped before it was ready:\n${seen}`);
  seen += value;
  port = Number(/ready on http:\/\/[^:]+:(\d+)/.exec(seen)?.[1] ?? 0);
}
(async () => {
  while (!(await reader.read()).done) { /* drain */ }
})();

await Deno.mkdir(dir, { recursive: true });
const index: Array<string> = [];
const fileName = (path: string) => path.replace(/^\//, "").replace(/[^A-Za-z0-9._-]+/g, "_");

// deno-lint-ignore no-explicit-any
const get = async (path: string): Promise<any> => {
  const answer = await fetch(`http://127.0.0.1:${port}${path}`, {
    headers: { authorization: `Bearer ${key}` },
  });
  let body = await answer.text();
  // The template's workbook carries the time it was made: recorded without its bytes.
  if (path === "/api/v1/imports/template" && answer.status === 200) {
    const parsed = JSON.parse(body);
    parsed.content_base64 = "(omitted)";
    body = JSON.stringify(parsed);
  }
  const text = `${answer.status}\n${body}`;
  await Deno.writeTextFile(`${dir}/${fileName(path)}`, text);
  index.push(`${createHash("sha256").update(text).digest("hex")} ${path}`);
  return answer.status === 200 ? JSON.parse(body) : undefined;
};

const dataset = await get("/api/v1/dataset");
const { stores } = await get("/api/v1/stores");
await get("/api/v1/catalog");
await get("/api/v1/imports/template");
const addDays = (date: string, n: number) =>
  new Date(Date.parse(`${date}T00:00:00Z`) + n * 86_400_000).toISOString().slice(0, 10);
const { start, end } = dataset as { start: string; end: string };
const yearEnd = addDays(start, 364);
const ranges = [
  [start, yearEnd],
  [addDays(yearEnd, 1), end],
  [addDays(start, -7), addDays(start, 6)],
  [addDays(end, -6), addDays(end, 9)],
];
const batches = new Set<number>();
// One store's answers, in order; returns the import rows it met, for the lineage sample below.
const askStore = async (store: { id: number; scope_id: number }) => {
  const rows: Array<number> = [];
  const q = (from: string, to: string) => `scope_id=${store.scope_id}&start=${from}&end=${to}`;
  await get(`/api/v1/stores/${store.id}/reference`);
  for (const [from, to] of ranges) {
    const energy = await get(`/api/v1/stores/${store.id}/energy?${q(from, to)}`);
    await get(`/api/v1/stores/${store.id}/targets?${q(from, to)}`);
    await get(`/api/v1/stores/${store.id}/metrics?${q(from, to)}`);
    for (const [i, day] of (energy?.days ?? []).entries()) {
      if (i % 9 !== 0) continue;
      await get(`/api/v1/stores/${store.id}/energy/${day.business_date}/versions`);
      if (day.energy_id !== null) {
        await get(`/api/v1/energy/${day.energy_id}/history`);
        rows.push(day.import_row_id);
      }
    }
  }
  await get(`/api/v1/stores/${store.id}/metrics?${q(start, end)}`);
  for (const asOf of [start, addDays(start, 180), addDays(end, -120), end]) {
    await get(`/api/v1/stores/${store.id}/periods?scope_id=${store.scope_id}&as_of=${asOf}`);
  }
  return rows;
};
const asked = (stores as Array<{ id: number; scope_id: number }>).slice(0, storeLimit);
const rowsOf: Array<Array<number>> = new Array(asked.length);
let next = 0;
await Promise.all(Array.from({ length: Math.min(concurrency, asked.length) }, async () => {
  for (let i = next++; i < asked.length; i = next++) rowsOf[i] = await askStore(asked[i]);
}));
// In store order, whatever order the stores were answered in.
const importRows = rowsOf.flat();
for (const [i, row] of importRows.entries()) {
  if (i % 7 !== 0) continue;
  const lineage = await get(`/api/v1/import-rows/${row}/lineage`);
  if (lineage !== undefined) batches.add(lineage.batch_id);
}
for (const batch of batches) await get(`/api/v1/imports/${batch}`);
// Refusals: their messages are part of the answers too.
const first = (stores as Array<{ id: number; scope_id: number }>)[0];
await get(`/api/v1/stores/${first.id}/energy?scope_id=${first.scope_id}&start=${end}&end=${start}`);
await get(`/api/v1/stores/${first.id}/energy?scope_id=${first.scope_id}&start=${start}&end=${end}`);
await get(`/api/v1/stores/999999/reference`);
await get(`/api/v1/energy/999999999/history`);
await get(`/api/v1/imports/999999999`);

child.kill("SIGTERM");
await child.status;
// The key was for this run only.
if (keyId !== undefined) {
  await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "scripts/keys.ts", "revoke", keyId],
    cwd: root,
    env,
    stdout: "null",
    stderr: "inherit",
  }).output();
}
index.sort();
await Deno.writeTextFile(`${dir}/index.txt`, index.join("\n") + "\n");
console.log(`${index.length} answers recorded in ${dir}`);

if (other !== undefined) {
  const theirs = new Map(
    (await Deno.readTextFile(`${other}/index.txt`)).trim().split("\n").map((line) => {
      const [hash, path] = line.split(" ");
      return [path, hash] as const;
    }),
  );
  const differing = index.map((line) => line.split(" ")).filter(([hash, path]) =>
    theirs.get(path) !== hash
  );
  const mine = new Set(index.map((line) => line.slice(line.indexOf(" ") + 1)));
  const missing = [...theirs.keys()].filter((path) => !mine.has(path));
  for (const [, path] of differing.slice(0, 20)) console.log(`differs: ${path}`);
  for (const path of missing.slice(0, 20)) console.log(`only in ${other}: ${path}`);
  console.log(`${differing.length} differ, ${missing.length} missing, of ${theirs.size}`);
  if (differing.length > 0 || missing.length > 0) Deno.exit(1);
}
