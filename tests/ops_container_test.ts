// The Dockerfile's rules, which CI checks when it cannot build the image: the real Dockerfile passes,
// and each rule catches the mistake it is for.
import assert from "node:assert/strict";
import { fromImage, lintDockerfile } from "../scripts/container_check.ts";

const root = new URL("..", import.meta.url);
const dockerfile = await Deno.readTextFile(new URL("Dockerfile", root));
const ignore = await Deno.readTextFile(new URL(".dockerignore", root));

Deno.test("the project's Dockerfile and .dockerignore pass", () => {
  assert.deepEqual(lintDockerfile(dockerfile, ignore), []);
});

Deno.test("each rule catches its mistake", () => {
  const broken = (from: string | RegExp, to: string) => {
    const text = dockerfile.replace(from, to);
    assert.notEqual(text, dockerfile, `${from} is in the Dockerfile`);
    return lintDockerfile(text, ignore);
  };
  const expect = (problems: Array<string>, pattern: RegExp) =>
    assert.ok(problems.some((p) => pattern.test(p)), `${pattern} in ${problems.join("; ")}`);

  expect(broken("denoland/deno:2.9.6", "denoland/deno:latest"), /not pinned/);
  expect(broken("denoland/deno:2.9.6", "denoland/deno"), /not pinned/);
  expect(broken("FROM denoland/deno:2.9.6", "FROM node:22.1.0"), /not built on denoland\/deno/);
  expect(broken(/^USER deno$/m, ""), /no USER/);
  expect(broken(/^USER deno$/m, "USER root"), /last USER is root/);
  expect(
    broken("COPY . .", "ADD https://example.com/x.tar.gz /tmp/\nCOPY . ."),
    /ADD of a URL/,
  );
  expect(
    broken("COPY . .", "RUN curl -fsSL https://example.com/i.sh | sh\nCOPY . ."),
    /piped into a shell/,
  );
  expect(broken("RUN deno install --frozen", "RUN deno install"), /deno install --frozen/);
  expect(broken("  && deno task console:build \\\n", ""), /console is not built/);
  expect(broken('VOLUME ["/data"]', ""), /not a VOLUME/);
  expect(broken(/BUILD_CONSOLE=false \\$/m, "BUILD_CONSOLE=true \\"), /BUILD_CONSOLE/);
  expect(broken("/health/ready`", "/health/live`"), /HEALTHCHECK does not ask/);
  expect(
    broken(/^CMD \[.*\]$/m, "CMD deno run -A src/main.ts"),
    /shell form/,
  );
  expect(lintDockerfile(dockerfile, ignore.replace(/^\.data$/m, "")), /does not exclude \.data/);
  expect(lintDockerfile(dockerfile, ignore + "\ndeno.lock\n"), /COPY deno\.lock, which/);
});

Deno.test("the base image is read from FROM's flags and stage name", () => {
  assert.equal(fromImage("denoland/deno:2.9.6"), "denoland/deno:2.9.6");
  assert.equal(
    fromImage("--platform=linux/amd64 denoland/deno:2.9.6 AS app"),
    "denoland/deno:2.9.6",
  );
});

// The script against a stand-in docker command: what it says and exits with when it cannot build.
const check = async (fakeDocker: string | undefined, env: Record<string, string> = {}) => {
  const dir = await Deno.makeTempDir({ prefix: "container_check_" });
  try {
    let docker = `${dir}/missing-docker`;
    if (fakeDocker !== undefined) {
      docker = `${dir}/docker`;
      await Deno.writeTextFile(docker, `#!/bin/sh\n${fakeDocker}\n`, { mode: 0o755 });
    }
    const started = performance.now();
    const output = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", "scripts/container_check.ts"],
      cwd: root,
      env: { ...env, CONTAINER_CHECK_DOCKER: docker, NO_COLOR: "1" },
      stdout: "piped",
      stderr: "piped",
    }).output();
    const lines = new TextDecoder().decode(output.stdout).trim().split("\n");
    return { code: output.code, last: lines.at(-1) ?? "", ms: performance.now() - started };
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
};

Deno.test("without a docker command the Dockerfile is only linted, exit 0", async () => {
  const { code, last } = await check(undefined);
  assert.equal(code, 0);
  assert.match(last, /^container: only linted: Dockerfile lint passed; not built: no .* command/);
});

Deno.test("a daemon that does not answer: only linted, exit 0", async () => {
  const { code, last } = await check(
    `echo "Cannot connect to the Docker daemon at unix:///var/run/docker.sock" >&2; exit 1`,
  );
  assert.equal(code, 0);
  assert.match(last, /^container: only linted: .*no Docker daemon answers/);
});

Deno.test("a pull that outlasts the build budget is stopped: only linted, exit 0", async () => {
  // The pull's child (sleep) keeps the pipes open after the stand-in is killed.
  const { code, last, ms } = await check(
    `case "$1" in info) echo 28.2.2;; image) exit 1;; pull) sleep 6;; esac`,
    { CONTAINER_CHECK_BUILD_SECONDS: "1" },
  );
  assert.equal(code, 0);
  assert.match(last, /^container: only linted: .*not pulled within the 1 s build budget/);
  assert.ok(ms < 10_000, `took ${Math.round(ms)} ms`);
});

Deno.test("an image that does not build fails the check, exit 1", async () => {
  const { code, last } = await check(
    `case "$1" in info) echo 28.2.2;; image) exit 0;; build) echo "RUN failed" >&2; exit 1;; esac`,
  );
  assert.equal(code, 1);
  assert.match(last, /^container: built and probed: FAILED/);
});
