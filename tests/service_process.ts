// The service as a child process, for the tests of its entries (the single binary, the tree it is
// made from, the Deno Deploy entry): its output kept line by line, a wait for a line, a stop.
export interface ServiceProcess {
  readonly lines: ReadonlyArray<string>;
  // The first match of `pattern` in a line, waiting up to `ms` for it; throws with the output when
  // the line does not come or the process ends first.
  readonly waitFor: (pattern: RegExp, ms: number) => Promise<RegExpExecArray>;
  // Sends the signal and waits for the exit code.
  readonly stop: (signal?: Deno.Signal) => Promise<number>;
  // Waits, up to `ms`, for the process to end by itself, and gives its exit code.
  readonly exited: (ms: number) => Promise<number>;
  // Ends the process if it still runs (a test's `finally`).
  readonly kill: () => Promise<void>;
}

// The variables a child needs to find Deno and its cache, and no others: a setting of the test's
// own environment (DATABASE_URL, DATA_DIR, ...) must not reach the service.
export const baseEnv = (): Record<string, string> => {
  const env: Record<string, string> = { NO_COLOR: "1" };
  for (const name of ["PATH", "HOME", "DENO_DIR", "XDG_CACHE_HOME", "TMPDIR"]) {
    const value = Deno.env.get(name);
    if (value !== undefined) env[name] = value;
  }
  return env;
};

export const spawnService = (
  command: string | URL,
  args: ReadonlyArray<string>,
  options: { readonly cwd: string | URL; readonly env: Record<string, string> },
): ServiceProcess => {
  const child = new Deno.Command(command, {
    args: [...args],
    cwd: options.cwd,
    env: options.env,
    clearEnv: true,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const lines: Array<string> = [];
  const collect = async (stream: ReadableStream<Uint8Array>) => {
    let rest = "";
    for await (const chunk of stream.pipeThrough(new TextDecoderStream())) {
      const parts = (rest + chunk).split("\n");
      rest = parts.pop() ?? "";
      lines.push(...parts.filter((l) => l.trim() !== ""));
    }
    if (rest.trim() !== "") lines.push(rest);
  };
  const reading = Promise.all([collect(child.stdout), collect(child.stderr)]);
  let exited = false;
  const status = child.status.then((s) => {
    exited = true;
    return s;
  });
  const waitFor = async (pattern: RegExp, ms: number) => {
    const deadline = Date.now() + ms;
    while (Date.now() < deadline) {
      for (const line of lines) {
        const match = pattern.exec(line);
        if (match !== null) return match;
      }
      if (exited) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    await Promise.race([reading, new Promise((resolve) => setTimeout(resolve, 500))]);
    throw new Error(
      `${exited ? "the process ended" : `no line after ${ms} ms`} matching ${pattern}:\n` +
        lines.join("\n"),
    );
  };
  const stop = async (signal: Deno.Signal = "SIGTERM") => {
    if (!exited) child.kill(signal);
    const { code } = await status;
    await reading;
    return code;
  };
  const kill = async () => {
    if (!exited) {
      try {
        child.kill("SIGKILL");
      } catch {
        // already stopped
      }
    }
    await status;
    await reading;
  };
  const exitedWithin = async (ms: number) => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`still running after ${ms} ms:\n${lines.join("\n")}`)),
        ms,
      );
    });
    try {
      const { code } = await Promise.race([status, late]);
      await reading;
      return code;
    } finally {
      clearTimeout(timer);
    }
  };
  return { lines, waitFor, stop, exited: exitedWithin, kill };
};

// The `ready on http://host:port (...)` line of a service started by startService (JSON log).
export const READY_LINE = /"msg":"ready on http:\/\/[^:"]+:(\d+) /;

// The start task's entry (src/main.ts) as a child process, on loopback and a port of its own
// choosing, with `env` besides the variables it needs to run.
export const spawnMain = (env: Record<string, string>) =>
  spawnService(Deno.execPath(), ["run", "-A", "src/main.ts"], {
    cwd: new URL("..", import.meta.url),
    env: { ...baseEnv(), PORT: "0", HOST: "127.0.0.1", ...env },
  });
