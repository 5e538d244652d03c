// A fresh, migrated database per test file: in-memory PGlite, or a new database on TEST_DATABASE_URL.
import { createHash } from "node:crypto";
import { SqlClient } from "@effect/sql";
import { PGlite } from "@electric-sql/pglite";
import { Effect, Layer, ManagedRuntime, Redacted } from "effect";
import { DEFAULT_LIMITS } from "../src/config.ts";
import pg from "pg";
import { EMBEDDED_CONF, openPglite, pgLayer } from "../src/db/database.ts";
import { migrationTexts } from "../src/db/migrator.ts";
import { inProcess, pgliteOptions } from "../src/db/pglite_worker.ts";
import { prepareDatabase, ROUTINES } from "../src/routines.ts";
import { layerPglite } from "../src/db/pglite_client.ts";

export const testDatabaseUrl = Deno.env.get("TEST_DATABASE_URL");
export const databaseKind = testDatabaseUrl ? "postgres" : "pglite";

// A test whose service runs on a database of its own making, whatever TEST_DATABASE_URL names (the
// single binary's embedded one, a primary and standby it starts), is the same test in both runs:
// it runs in the run on the embedded database, and the run on PostgreSQL lists it as skipped.
export const embeddedRunOnly = (name: string): { name: string; ignore: boolean } =>
  testDatabaseUrl
    ? {
      name: `${name} (in the embedded database's run only: it does not use TEST_DATABASE_URL)`,
      ignore: true,
    }
    : { name, ignore: false };

export interface TestDatabase {
  readonly layer: Layer.Layer<SqlClient.SqlClient>;
  readonly url: string | undefined;
  readonly run: <A, E>(effect: Effect.Effect<A, E, SqlClient.SqlClient>) => Promise<A>;
  readonly close: () => Promise<void>;
}

const adminQuery = async (url: string, text: string) => {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(text);
  } finally {
    await client.end();
  }
};

const withDatabase = (url: string, name: string) => {
  const u = new URL(url);
  u.pathname = `/${name}`;
  return u.toString();
};

// A migrated embedded database's image (a data folder's tar), made once for every test file of a
// checkout: a database opened from it skips the empty cluster's initdb, most of the time an
// embedded test database takes to open. Its name is a hash of what prepareDatabase installs and of
// PGlite's version, so any change to them makes a new one (and the old ones are removed); every
// database opened from it is still prepared, which finds nothing to do when the image is current.
const IMAGES = new URL("../.data/test-images/", import.meta.url);
const imageName = () =>
  createHash("sha256")
    .update(JSON.stringify([
      migrationTexts,
      ROUTINES.map((routine) => routine.text),
      import.meta.resolve("@electric-sql/pglite"),
    ]))
    .digest("hex")
    .slice(0, 16);

// Writes the image for the other test files: whole under a name of its own, then renamed, so that
// a file beside it reads all or none. A checkout that cannot be written (read-only, full) keeps it
// in this file's memory only.
const keepImage = async (name: string, made: Blob) => {
  const partial = new URL(`${name}.${crypto.randomUUID()}.part`, IMAGES);
  try {
    await Deno.mkdir(IMAGES, { recursive: true });
    for await (const entry of Deno.readDir(IMAGES)) {
      if (!entry.name.startsWith(name)) await Deno.remove(new URL(entry.name, IMAGES));
    }
    await Deno.writeFile(partial, new Uint8Array(await made.arrayBuffer()));
    await Deno.rename(partial, new URL(`${name}.tar`, IMAGES));
  } catch {
    await Deno.remove(partial).catch(() => {});
  }
};

let image: Promise<Blob> | undefined;
const migratedImage = () =>
  image ??= (async () => {
    const name = imageName();
    try {
      return new Blob([await Deno.readFile(new URL(`${name}.tar`, IMAGES))]);
    } catch {
      // not made yet
    }
    const pglite = new PGlite(pgliteOptions(undefined, EMBEDDED_CONF));
    const runtime = ManagedRuntime.make(layerPglite(inProcess(pglite)));
    try {
      await runtime.runPromise(prepareDatabase);
      await pglite.exec("CHECKPOINT");
      const made = await pglite.dumpDataDir("none");
      await keepImage(name, made);
      return made;
    } finally {
      await runtime.dispose();
      await pglite.close().catch(() => {});
    }
  })();

// An image that does not open (a damaged file) is removed, and the database made from an empty
// cluster; the next test file makes the image again.
const openEmbedded = async (migrate: boolean) => {
  const open = (from: Blob | undefined) =>
    ManagedRuntime.make(Layer.unwrapScoped(Effect.map(openPglite(undefined, from), layerPglite)));
  if (!migrate) return open(undefined);
  const runtime = open(await migratedImage());
  try {
    await runtime.runPromise(prepareDatabase);
    return runtime;
  } catch {
    await runtime.dispose().catch(() => {});
    image = undefined;
    await Deno.remove(new URL(`${imageName()}.tar`, IMAGES)).catch(() => {});
    const fresh = open(undefined);
    await fresh.runPromise(prepareDatabase);
    return fresh;
  }
};

// Creates the database (migrated unless told otherwise); close() disposes and drops it.
export const makeTestDatabase = async (
  options: { migrate?: boolean; lockMs?: number; statementMs?: number; urlOptions?: string } = {},
): Promise<TestDatabase> => {
  let runtime: ManagedRuntime.ManagedRuntime<SqlClient.SqlClient, never>;
  let drop = async () => {};
  let url: string | undefined;
  if (testDatabaseUrl) {
    const name = `test_${crypto.randomUUID().replaceAll("-", "").slice(0, 20)}`;
    await adminQuery(testDatabaseUrl, `CREATE DATABASE ${name}`);
    url = withDatabase(testDatabaseUrl, name);
    const connectTo = new URL(url);
    if (options.urlOptions !== undefined) connectTo.searchParams.set("options", options.urlOptions);
    runtime = ManagedRuntime.make(pgLayer({
      url: Redacted.make(connectTo.toString()),
      maxConnections: 30,
      statementMs: options.statementMs ?? DEFAULT_LIMITS.statementMs,
      lockMs: options.lockMs ?? DEFAULT_LIMITS.lockMs,
    }));
    drop = () => adminQuery(testDatabaseUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    if (options.migrate !== false) await runtime.runPromise(prepareDatabase);
  } else {
    runtime = await openEmbedded(options.migrate !== false);
  }
  return {
    layer: Layer.effectContext(runtime.runtimeEffect.pipe(Effect.map((rt) => rt.context))),
    url,
    run: (effect) => runtime.runPromise(effect),
    close: async () => {
      await runtime.dispose();
      await drop();
    },
  };
};
