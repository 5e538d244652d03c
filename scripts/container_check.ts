// CLI: deno task container:check — checks the Dockerfile's rules (pinned base image, non-root user,
// no remote ADD, frozen install, console built at build time, a volume for DATA_DIR, a readiness
// HEALTHCHECK, exec-form CMD) and, when a Docker daemon answers and the base image can be had within
// a bounded time, builds the image, starts it, waits for /health/ready and removes it again.
// The last line says which was done. Exit codes: 0 passed, 1 a rule or the container failed.
const root = new URL("..", import.meta.url);
const IMAGE = "energy-saving-service:check";
const DOCKER_INFO_MS = 10_000;
const PULL_MS = 180_000;
const BUILD_MS = 600_000;
const READY_MS = 120_000;

interface Instruction {
  readonly line: number;
  readonly keyword: string;
  readonly args: string;
}

// Instructions with their continuation lines joined; comments and blank lines dropped.
export const parseDockerfile = (text: string): Array<Instruction> => {
  const out: Array<Instruction> = [];
  let pending = "";
  let start = 0;
  text.split("\n").forEach((raw, i) => {
    const line = raw.replace(/\r$/, "");
    if (pending === "" && (line.trim() === "" || line.trim().startsWith("#"))) return;
    if (pending !== "" && line.trim().startsWith("#")) return;
    if (pending === "") start = i + 1;
    if (line.endsWith("\\")) {
      pending += line.slice(0, -1) + " ";
      return;
    }
    const whole = (pending + line).trim();
    pending = "";
    const m = /^(\w+)\s*(.*)$/s.exec(whole);
    if (m) out.push({ line: start, keyword: m[1].toUpperCase(), args: m[2].trim() });
  });
  return out;
};

const isExecForm = (args: string) => {
  try {
    const parsed = JSON.parse(args);
    return Array.isArray(parsed) && parsed.every((p) => typeof p === "string");
  } catch {
    return false;
  }
};

// The problems of a Dockerfile and its .dockerignore, as sentences.
export const lintDockerfile = (text: string, ignore: string): Array<string> => {
  const problems: Array<string> = [];
  const all = parseDockerfile(text);
  const of = (keyword: string) => all.filter((i) => i.keyword === keyword);

  const froms = of("FROM");
  if (froms.length === 0) problems.push("no FROM");
  for (const from of froms) {
    const image = from.args.split(/\s+/).find((w) => !w.startsWith("--")) ?? "";
    const pinned = /@sha256:[0-9a-f]{64}$/.test(image) ||
      /^[^:@\s]+:\d+\.\d+\.\d+[\w.-]*$/.test(image);
    if (!pinned) {
      problems.push(`line ${from.line}: FROM ${image} is not pinned to a version or digest`);
    }
    if (froms.indexOf(from) === froms.length - 1 && !image.startsWith("denoland/deno:")) {
      problems.push(`line ${from.line}: the final stage is not built on denoland/deno`);
    }
  }

  const users = of("USER");
  const lastUser = users.at(-1)?.args.split(":")[0];
  if (lastUser === undefined) problems.push("no USER: the service would run as root");
  else if (lastUser === "root" || lastUser === "0") {
    problems.push(`line ${users.at(-1)!.line}: the last USER is root`);
  }
  const cmd = of("CMD").at(-1) ?? of("ENTRYPOINT").at(-1);
  if (cmd === undefined) problems.push("no CMD or ENTRYPOINT");
  else {
    if (!isExecForm(cmd.args)) {
      problems.push(`line ${cmd.line}: CMD in shell form; SIGTERM would not reach deno`);
    }
    if (users.length > 0 && users.at(-1)!.line > cmd.line) {
      problems.push("USER comes after CMD");
    }
  }

  for (const add of of("ADD")) {
    if (/(https?|ftp):\/\//i.test(add.args) || /\bgit@/.test(add.args)) {
      problems.push(`line ${add.line}: ADD of a URL (download in a checked step or COPY instead)`);
    }
  }
  for (const run of of("RUN")) {
    if (/(curl|wget)[^|]*\|\s*(ba|z)?sh\b/.test(run.args)) {
      problems.push(`line ${run.line}: a downloaded script is piped into a shell`);
    }
  }

  const runs = of("RUN").map((r) => r.args).join("\n");
  if (!/deno install[^\n]*--frozen/.test(runs)) {
    problems.push("no `deno install --frozen`: dependencies would not follow deno.lock");
  }
  if (!/deno task console:build/.test(runs)) {
    problems.push("the console is not built at build time (`deno task console:build`)");
  }

  const env = of("ENV").map((e) => e.args).join(" ");
  const dataDir = /\bDATA_DIR[= ]+(\S+)/.exec(env)?.[1];
  if (dataDir === undefined) problems.push("ENV does not set DATA_DIR");
  else if (!of("VOLUME").some((v) => v.args.includes(dataDir))) {
    problems.push(`DATA_DIR ${dataDir} is not a VOLUME`);
  }
  if (!/\bBUILD_CONSOLE[= ]+false\b/.test(env)) {
    problems.push("BUILD_CONSOLE is not false: the service would rebuild the console into /app");
  }

  const health = of("HEALTHCHECK").at(-1);
  if (health === undefined) problems.push("no HEALTHCHECK");
  else if (!health.args.includes("/health/ready")) {
    problems.push(`line ${health.line}: the HEALTHCHECK does not ask /health/ready`);
  }

  const ignored = new Set(
    ignore.split("\n").map((l) => l.trim().replace(/\/$/, "")).filter((l) =>
      l !== "" && !l.startsWith("#")
    ),
  );
  for (const needed of [".git", ".data", "node_modules", ".env"]) {
    if (!ignored.has(needed)) problems.push(`.dockerignore does not exclude ${needed}`);
  }
  for (const copy of of("COPY")) {
    const parts = isExecForm(copy.args)
      ? JSON.parse(copy.args) as Array<string>
      : copy.args.split(/\s+/).filter((p) => !p.startsWith("--"));
    for (const source of parts.slice(0, -1)) {
      if (source !== "." && ignored.has(source)) {
        problems.push(`line ${copy.line}: COPY ${source}, which .dockerignore excludes`);
      }
    }
  }
  return problems;
};

const run = async (args: Array<string>, ms: number) => {
  const child = new Deno.Command("docker", {
    args,
    cwd: root,
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const timer = setTimeout(() => {
    try {
      child.kill("SIGKILL");
    } catch {
      // already stopped
    }
  }, ms);
  const output = await child.output();
  clearTimeout(timer);
  const text = new TextDecoder().decode(output.stdout) + new TextDecoder().decode(output.stderr);
  return { ok: output.success, text: text.trim() };
};

// Why Docker cannot be used here, or undefined when it can (the base image is then present).
const dockerUnavailable = async (base: string): Promise<string | undefined> => {
  try {
    const info = await run(["info", "--format", "{{.ServerVersion}}"], DOCKER_INFO_MS);
    if (!info.ok) return "no Docker daemon answers";
  } catch {
    return "no docker command";
  }
  if ((await run(["image", "inspect", base], DOCKER_INFO_MS)).ok) return undefined;
  const pull = await run(["pull", base], PULL_MS);
  return pull.ok ? undefined : `${base} cannot be pulled (${pull.text.split("\n").at(-1)})`;
};

const probe = async (): Promise<string | undefined> => {
  const built = await run(["build", "-t", IMAGE, "."], BUILD_MS);
  if (!built.ok) {
    return `the image does not build:\n${built.text.split("\n").slice(-30).join("\n")}`;
  }
  const name = `energy-check-${crypto.randomUUID().slice(0, 8)}`;
  const started = await run(
    ["run", "-d", "--name", name, "-p", "127.0.0.1::8000", IMAGE],
    30_000,
  );
  if (!started.ok) return `the container does not start: ${started.text}`;
  try {
    const port = (await run(["port", name, "8000/tcp"], 10_000)).text.split(":").at(-1);
    const deadline = Date.now() + READY_MS;
    while (Date.now() < deadline) {
      const answer = await fetch(`http://127.0.0.1:${port}/health/ready`).catch(() => undefined);
      if (answer?.status === 200) {
        await answer.body?.cancel();
        const user = await run(["exec", name, "id", "-u"], 10_000);
        if (user.text === "0") return "the container runs as root";
        return undefined;
      }
      await answer?.body?.cancel();
      await new Promise((r) => setTimeout(r, 1_000));
    }
    const logs = await run(["logs", "--tail", "30", name], 10_000);
    return `/health/ready did not answer 200 within ${READY_MS / 1000} s:\n${logs.text}`;
  } finally {
    // The container with its anonymous /data volume, then the image.
    await run(["rm", "-f", "-v", name], 30_000);
    await run(["rmi", IMAGE], 30_000);
  }
};

if (import.meta.main) {
  const dockerfile = await Deno.readTextFile(new URL("Dockerfile", root));
  const ignore = await Deno.readTextFile(new URL(".dockerignore", root)).catch(() => "");
  const problems = lintDockerfile(dockerfile, ignore);
  for (const p of problems) console.log(`Dockerfile: ${p}`);
  if (problems.length > 0) {
    console.log(`container: Dockerfile lint failed (${problems.length} problems)`);
    Deno.exit(1);
  }
  const base = parseDockerfile(dockerfile).filter((i) => i.keyword === "FROM").at(-1)!.args;
  const why = await dockerUnavailable(base);
  if (why !== undefined) {
    console.log(`container: Dockerfile lint passed; not built (${why})`);
    Deno.exit(0);
  }
  const failure = await probe();
  if (failure !== undefined) {
    console.log(failure);
    console.log("container: built, started and FAILED");
    Deno.exit(1);
  }
  console.log("container: Dockerfile lint passed; image built, /health/ready answered 200");
}
