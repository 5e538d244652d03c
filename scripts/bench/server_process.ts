// What every benchmark server process shares: its settings from the environment, and a clean stop
// on SIGINT or SIGTERM.
export const env = (name: string, fallback: string) => Deno.env.get(name) ?? fallback;

// Runs `stop` once on SIGINT or SIGTERM, then exits.
export const stopOnSignal = (stop: () => Promise<void>) => {
  let stopping = false;
  const onSignal = () => {
    if (stopping) return;
    stopping = true;
    stop().finally(() => Deno.exit(0));
  };
  Deno.addSignalListener("SIGINT", onSignal);
  Deno.addSignalListener("SIGTERM", onSignal);
};
