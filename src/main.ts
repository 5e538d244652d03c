// Serves the service from the source tree: bootstrap the database, build the console when its bundle
// is missing or stale (BUILD_CONSOLE), warm up, listen, and shut down cleanly on a signal (start.ts).
import { startService } from "./start.ts";

await startService({ console: "build" });
