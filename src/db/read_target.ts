// Which database a fiber's statements go to: the primary, or the read replica. ReadReplica decides
// (read_replica.ts); the routing client sends by it, and the repository boundary (errors.ts) judges
// a full pool by the pool it names.
import { FiberRef } from "effect";

export type ReadTarget = "primary" | "replica";

// The default is the primary: start-up, writes, and every request ReadReplica.route did not send to
// the replica.
export const readTarget = FiberRef.unsafeMake<ReadTarget>("primary");
