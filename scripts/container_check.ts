// CLI: deno task container:check — checks the Dockerfile's rules (pinned base image, non-root user,
// no remote ADD, frozen install, console built at build time, a volume for DATA_DIR, a readiness
// HEALTHCHECK, exec-form CMD) and, when a Docker daemon answers and the base image can be had, builds
// the image, starts it, waits for /health/ready, probes it (liveness, the console, a non-root user, a
// clean stop on SIGTERM) and removes it again.
//
// Every docker call is bounded: pulling and building share one budget, and a budget that runs out
// (a slow registry, no network) counts as "could not build here", like a missing daemon: the
// Dockerfile was linted only, exit 0. A build that fails, or a container that does not become ready
// or fails a probe, is exit 1. The last line starts with "container:" and says which was done.
// With the defaults it ends within about 8 minutes even if every docker call hangs to its limit;
// without a daemon, within a second.
//
//   CONTAINER_CHECK_DOCKER           the docker command (default docker)
//   CONTAINER_CHECK_BUILD_SECONDS    pull and build together (default 180)
//   CONTAINER_CHECK_READY_SECONDS    from start to /health/ready 200 (default 90; the first start
//                                    loads the demo into the embedded database, 13-23 s measured)
//
// Exit codes: 0 passed or linted only, 1 a rule, the build or the container failed.
const root = new URL("..", import.meta.url);
const IMAGE = "energy-saving-service:check";

const seconds = (name: string, fallback: number) => {
  const value = Number(Deno.env.get(name) ?? fallback);
  return (Number.isFinite(value) && value > 0 ? value : fallback) * 1_000;
};
const DOCKER = Deno.env.get("CONTAINER_CHECK_DOCKER") || "docker";
const DOCKER_INFO_MS = 10_000;
const BUILD_BUDGET_MS = seconds("CONTAINER_CHECK_BUILD_SECONDS", 180);
const READY_MS = seconds("CONTAINER_CHECK_READY_SECONDS", 90);
const START_MS = 20_000;
const STOP_GRACE_S = 10;
const CLEANUP_MS = 20_000;

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

// The image a FROM names ("FROM --platform=x image AS stage" names image).
export const fromImage = (args: string) => args.split(/\s+/).find((w) => !w.startsWith("--")) ?? "";

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
    const image = fromImage(from.args);
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

interface Ran {
  readonly ok: boolean;
  readonly text: string;
  // Killed at its time limit.
  readonly timedOut: boolean;
}

// One docker call, killed at its time limit. Its output is read as it comes, and not waited for
// past the limit: a killed client may leave a child (a build plugin) holding the pipes open.
const run = async (args: Array<string>, ms: number): Promise<Ran> => {
  let child: Deno.ChildProcess;
  try {
    child = new Deno.Command(DOCKER, { args, cwd: root, stdout: "piped", stderr: "piped" }).spawn();
  } catch (error) {
    return { ok: false, text: `${DOCKER}: ${(error as Error).message}`, timedOut: false };
  }
  const chunks: Array<string> = [];
  const readers = [child.stdout.getReader(), child.stderr.getReader()];
  const drained = Promise.all(readers.map(async (reader) => {
    const decoder = new TextDecoder();
    for (let r = await reader.read(); !r.done; r = await reader.read()) {
      chunks.push(decoder.decode(r.value, { stream: true }));
    }
  })).catch(() => {});
  let timedOut = false;
  const killer = setTimeout(() => {
    timedOut = true;
    try {
      child.kill("SIGKILL");
    } catch {
      // already stopped
    }
  }, ms);
  const status = await child.status;
  clearTimeout(killer);
  // The pipes close with the client, unless a child of it keeps them: 2 s more at most.
  let grace: ReturnType<typeof setTimeout> | undefined;
  await Promise.race([drained, new Promise((r) => (grace = setTimeout(r, 2_000)))]);
  clearTimeout(grace);
  await Promise.all(readers.map((reader) => reader.cancel().catch(() => {})));
  return { ok: status.success && !timedOut, text: chunks.join("").trim(), timedOut };
};

const lastLine = (text: string) => text.split("\n").filter((l) => l.trim() !== "").at(-1) ?? "";

type Outcome =
  | { readonly kind: "linted"; readonly why: string }
  | { readonly kind: "failed"; readonly why: string }
  | { readonly kind: "probed"; readonly facts: ReadonlyArray<string> };

// Why Docker cannot be used here, or undefined when it can.
const dockerUnavailable = async (): Promise<string | undefined> => {
  const info = await run(["info", "--format", "{{.ServerVersion}}"], DOCKER_INFO_MS);
  if (info.ok) return undefined;
  if (/ENOENT|not found|No such file/i.test(info.text) && !/daemon/i.test(info.text)) {
    return `no ${DOCKER} command`;
  }
  return info.timedOut
    ? "the Docker daemon did not answer within 10 s"
    : "no Docker daemon answers";
};

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const probe = async (base: string, started: number): Promise<Outcome> => {
  const left = () => BUILD_BUDGET_MS - (performance.now() - started);
  if (!(await run(["image", "inspect", base], DOCKER_INFO_MS)).ok) {
    const pull = await run(["pull", base], left());
    if (!pull.ok) {
      return {
        kind: "linted",
        why: pull.timedOut
          ? `${base} was not pulled within the ${BUILD_BUDGET_MS / 1000} s build budget`
          : `${base} cannot be pulled (${lastLine(pull.text)})`,
      };
    }
  }
  const built = await run(["build", "-t", IMAGE, "."], Math.max(left(), 1_000));
  if (built.timedOut) {
    await run(["rmi", "-f", IMAGE], CLEANUP_MS);
    return {
      kind: "linted",
      why: `the image did not finish building within the ${BUILD_BUDGET_MS / 1000} s build budget`,
    };
  }
  if (!built.ok) {
    return {
      kind: "failed",
      why: `the image does not build:\n${built.text.split("\n").slice(-30).join("\n")}`,
    };
  }
  const buildSeconds = (performance.now() - started) / 1000;
  const name = `energy-check-${crypto.randomUUID().slice(0, 8)}`;
  try {
    const start = await run(
      ["run", "-d", "--name", name, "-p", "127.0.0.1::8000", IMAGE],
      START_MS,
    );
    if (!start.ok) return { kind: "failed", why: `the container does not start: ${start.text}` };
    const port = (await run(["port", name, "8000/tcp"], DOCKER_INFO_MS)).text.split("\n")[0]
      .split(":").at(-1);
    const origin = `http://127.0.0.1:${port}`;
    const get = (path: string) =>
      fetch(origin + path, { signal: AbortSignal.timeout(10_000) }).catch(() => undefined);

    const readyFrom = performance.now();
    let ready = false;
    while (!ready && performance.now() - readyFrom < READY_MS) {
      const answer = await get("/health/ready");
      await answer?.body?.cancel();
      ready = answer?.status === 200;
      if (!ready) await sleep(1_000);
    }
    if (!ready) {
      const logs = await run(["logs", "--tail", "30", name], DOCKER_INFO_MS);
      return {
        kind: "failed",
        why: `/health/ready did not answer 200 within ${READY_MS / 1000} s:\n${logs.text}`,
      };
    }
    const readySeconds = (performance.now() - readyFrom) / 1000;

    const live = await get("/health/live");
    await live?.body?.cancel();
    if (live?.status !== 200) {
      return { kind: "failed", why: `/health/live answered ${live?.status}` };
    }
    // The console was built into the image (BUILD_CONSOLE=false at run time).
    const page = await get("/");
    const pageText = await page?.text();
    if (
      page?.status !== 200 || !page.headers.get("content-security-policy") ||
      !pageText?.includes("/console/assets/")
    ) {
      return { kind: "failed", why: `the console page answered ${page?.status}: not built in?` };
    }
    const user = await run(["exec", name, "id", "-u"], DOCKER_INFO_MS);
    if (!user.ok || user.text === "0") {
      return { kind: "failed", why: `the service runs as user ${user.text || "(unknown)"}` };
    }
    // SIGTERM reaches deno (exec-form CMD): it finishes and exits 0 well before the grace ends.
    const stopFrom = performance.now();
    await run(["stop", "--time", String(STOP_GRACE_S), name], (STOP_GRACE_S + 10) * 1_000);
    const stopSeconds = (performance.now() - stopFrom) / 1000;
    const exit = await run(["inspect", "--format", "{{.State.ExitCode}}", name], DOCKER_INFO_MS);
    if (exit.text !== "0" || stopSeconds >= STOP_GRACE_S) {
      return {
        kind: "failed",
        why: `docker stop took ${stopSeconds.toFixed(1)} s and the service exited ${exit.text}`,
      };
    }
    return {
      kind: "probed",
      facts: [
        `built in ${buildSeconds.toFixed(0)} s`,
        `ready in ${readySeconds.toFixed(0)} s`,
        "live, console served",
        `uid ${user.text}`,
        `stopped on SIGTERM in ${stopSeconds.toFixed(1)} s with exit 0`,
      ],
    };
  } finally {
    // The container with its anonymous /data volume, then the image.
    await run(["rm", "-f", "-v", name], CLEANUP_MS);
    await run(["rmi", "-f", IMAGE], CLEANUP_MS);
  }
};

if (import.meta.main) {
  const started = performance.now();
  const took = () => `${((performance.now() - started) / 1000).toFixed(1)} s`;
  const dockerfile = await Deno.readTextFile(new URL("Dockerfile", root));
  const ignore = await Deno.readTextFile(new URL(".dockerignore", root)).catch(() => "");
  const problems = lintDockerfile(dockerfile, ignore);
  for (const p of problems) console.log(`Dockerfile: ${p}`);
  if (problems.length > 0) {
    console.log(`container: Dockerfile lint FAILED (${problems.length} problems); not built`);
    Deno.exit(1);
  }
  const base = fromImage(
    parseDockerfile(dockerfile).filter((i) => i.keyword === "FROM").at(-1)!.args,
  );
  const why = await dockerUnavailable();
  const outcome: Outcome = why === undefined
    ? await probe(base, performance.now())
    : { kind: "linted", why };
  if (outcome.kind === "linted") {
    console.log(
      `container: only linted: Dockerfile lint passed; not built: ${outcome.why} (${took()})`,
    );
    Deno.exit(0);
  }
  if (outcome.kind === "failed") {
    console.log(outcome.why);
    console.log(`container: built and probed: FAILED (${took()})`);
    Deno.exit(1);
  }
  console.log(
    `container: built and probed: Dockerfile lint passed; ${outcome.facts.join(", ")} (${took()})`,
  );
}
