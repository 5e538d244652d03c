// The entry of the single binary (`deno task compile`, scripts/compile.ts): the service as
// src/main.ts starts it, with the console's bundle embedded in the binary and served from there.
// Its sources are not embedded, so it is never built (BUILD_CONSOLE has no effect); data is written
// only under DATA_DIR (the embedded database, service.pid, demo-keys.json).
import { startService } from "./start.ts";

await startService({ console: "served" });
