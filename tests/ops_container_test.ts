// The Dockerfile's rules, which CI checks when it cannot build the image: the real Dockerfile passes,
// and each rule catches the mistake it is for.
import assert from "node:assert/strict";
import { lintDockerfile } from "../scripts/container_check.ts";

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
