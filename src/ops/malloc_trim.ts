// glibc's malloc_trim: gives the pages of free memory inside malloc's arenas back to the system.
// Memory freed by the runtime's own allocations (answer buffers, sockets' reads, V8's worker
// threads) stays in glibc's arenas, counted in RSS, until then (docs/performance.md, Memory).
// Linux with glibc only, and only where the process may load a native library (`-A` or
// `--allow-ffi`, as the start task and the container give); elsewhere (Deno Deploy, musl, macOS)
// there is none and nothing is done.

export type Trim = () => void;

export const openMallocTrim = (): Trim | undefined => {
  if (Deno.build.os !== "linux") return undefined;
  try {
    const libc = Deno.dlopen("libc.so.6", {
      malloc_trim: { parameters: ["usize"], result: "i32" },
    });
    return () => {
      libc.symbols.malloc_trim(0n);
    };
  } catch {
    return undefined;
  }
};
