// CLI: deno task two-instances — two service processes on one fresh PostgreSQL database, driven with
// the same conflicting writes, checked for what horizontal scaling must not break:
//   - profile edits of one store with one expected_version, sent to both: exactly one wins per
//     version, the others are 409 STALE_VERSION (no lost update);
//   - one batch committed through both with the same Idempotency-Key (all answer the one commit)
//     and with different keys (one commit, the others 409 ALREADY_COMMITTED): no double commit;
//   - two batches over the same days committed at once through the two: one wins, the other is
//     409 STALE_PREVIEW;
//   - a session made on one instance is valid on the other (the secret is in the database);
// and the final state equals a single instance's: the winners are replayed in order on one instance
// over a copy of the starting database, and the answers, revisions and records compared. The same
// read load (wrk, energy of a year) is sent to one instance, then split over the two. Two stand-ins
// for a read replica (docs/scaling.md): the starting copy, before the replay, is a replica that has
// not replayed the commits yet (what it answers for the newest Data-Token and for known_at), and the
// database set to default_transaction_read_only is what a hot standby allows (which requests work).
// ADMIN_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/postgres) is where the databases
// are created; both are dropped at the end. Exit codes: 0 every check passed, 1 one failed.
import { adminQuery, withDatabase } from "./pg_admin.ts";

const adminUrl = Deno.env.get("ADMIN_DATABASE_URL") ??
  "postgres://postgres@127.0.0.1:5432/postgres";
const root = new URL("..", import.meta.url);
const STORES = 60;
const PROFILE_ROUNDS = 20;
const PROFILE_EDITS_PER_INSTANCE = 8;
const BATCHES = 5;
const BATCH_DAYS = 50;
const RACE_ROUNDS = 5;
const RACE_DAYS = 30;
const RACE_OVERLAP = 10;
const COMMITS_PER_INSTANCE = 2;
const METRICS_TOKEN = crypto.randomUUID();
const READ_SECONDS = Number(Deno.env.get("READ_SECONDS") ?? 8);

const decoder = new TextDecoder();
const failures: Array<string> = [];
const check = (ok: boolean, what: string) => {
  console.log(`${ok ? "  ok  " : "  FAIL"} ${what}`);
  if (!ok) failures.push(what);
};

const deno = async (args: Array<string>, env: Record<string, string>) => {
  const output = await new Deno.Command(Deno.execPath(), {
    args,
    cwd: root,
    env: { NO_COLOR: "1", ...env },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = decoder.decode(output.stdout).trim();
  if (!output.success) throw new Error(`${args.join(" ")}: ${decoder.decode(output.stderr)}`);
  return text;
};

interface Instance {
  readonly name: string;
  readonly origin: string;
  readonly stop: () => Promise<void>;
}

const startInstance = async (name: string, databaseUrl: string): Promise<Instance> => {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--unstable-no-legacy-abort", "src/main.ts"],
    cwd: root,
    env: {
      DATABASE_URL: databaseUrl,
      PORT: "0",
      HOST: "127.0.0.1",
      SEED_DEMO: "false",
      BUILD_CONSOLE: "false",
      METRICS_TOKEN,
      NO_COLOR: "1",
    },
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  // Warnings (a load generator's connections cut at its end are logged as 503) are kept only to
  // explain a failed start.
  let errors = "";
  (async () => {
    for await (const chunk of child.stderr.pipeThrough(new TextDecoderStream())) {
      errors = (errors + chunk).slice(-4_000);
    }
  })();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let port = 0;
  for (let seen = ""; port === 0;) {
    const { value, done } = await reader.read();
    if (done) {
      throw new Error(`${name} stopped before it was ready:\n${seen.slice(-2_000)}${errors}`);
    }
    seen += value;
    port = Number(/ready on http:\/\/[^:]+:(\d+)/.exec(seen)?.[1] ?? 0);
  }
  // The access log is read and dropped.
  (async () => {
    while (!(await reader.read()).done) { /* drain */ }
  })();
  return {
    name,
    origin: `http://127.0.0.1:${port}`,
    stop: async () => {
      child.kill("SIGTERM");
      await child.status;
    },
  };
};

interface Answer {
  readonly status: number;
  // deno-lint-ignore no-explicit-any
  readonly body: any;
  readonly ms: number;
  readonly headers: Headers;
}

const latencies: Array<number> = [];

const call = async (
  instance: Instance,
  method: string,
  path: string,
  options: { key?: string; body?: unknown; headers?: Record<string, string> } = {},
): Promise<Answer> => {
  const headers = new Headers(options.headers);
  if (options.key !== undefined) headers.set("authorization", `Bearer ${options.key}`);
  if (options.body !== undefined) headers.set("content-type", "application/json");
  const started = performance.now();
  const response = await fetch(instance.origin + path, {
    method,
    headers,
    body: options.body === undefined ? undefined : JSON.stringify(options.body),
  });
  const text = await response.text();
  const ms = performance.now() - started;
  latencies.push(ms);
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // not JSON
  }
  return { status: response.status, body, ms, headers: response.headers };
};

const tally = (answers: ReadonlyArray<Answer>) => {
  const counts: Record<string, number> = {};
  for (const a of answers) {
    const label = a.status === 200 ? "200" : `${a.status} ${a.body?.error?.code ?? ""}`.trim();
    counts[label] = (counts[label] ?? 0) + 1;
  }
  return Object.entries(counts).sort().map(([k, v]) => `${v} x ${k}`).join(", ");
};

const percentile = (values: ReadonlyArray<number>, p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? 0;
};

const b64 = (text: string) => btoa(String.fromCharCode(...new TextEncoder().encode(text)));

interface StoreInfo {
  readonly id: number;
  readonly scope_id: number;
  readonly name: string;
  readonly brand_name: string;
}

interface Cell {
  readonly store: StoreInfo;
  readonly date: string;
  readonly value: string;
}

const csvOf = (cells: ReadonlyArray<Cell>) =>
  [
    "品牌,门店,日期,日能耗",
    ...cells.map((c) => `${c.store.brand_name},${c.store.name},${c.date},${c.value}`),
  ]
    .join("\r\n") + "\r\n";

// Writes a preview plans (each is one revision at commit).
const WRITING = ["INSERT", "UPDATE", "RELINK", "RESTORE", "VOID"];
const writesOf = (batch: { action_counts: Record<string, number> }) =>
  WRITING.reduce((n, a) => n + (batch.action_counts[a] ?? 0), 0);

// One operation that took effect, to replay on a single instance.
type Step =
  | { readonly kind: "profile"; readonly storeId: number; readonly body: unknown }
  | {
    readonly kind: "preview";
    readonly label: string;
    readonly csv: string;
    readonly idem: string;
  }
  | { readonly kind: "commit"; readonly label: string; readonly idem: string };

interface WrkResult {
  readonly requests: number;
  readonly seconds: number;
  readonly p50: number;
  readonly p99: number;
  readonly failed: number;
}

// One wrk run of scripts/bench/random_store.lua: a random store's year of energy per request.
const wrk = async (
  instance: Instance,
  targets: string,
  path: string,
  key: string,
  connections: number,
  threads: number,
): Promise<WrkResult> => {
  const output = await new Deno.Command("wrk", {
    args: [
      `-t${threads}`,
      `-c${connections}`,
      `-d${READ_SECONDS}s`,
      "--timeout",
      "10s",
      "-s",
      "scripts/bench/random_store.lua",
      instance.origin,
      "--",
      targets,
      path,
      key,
    ],
    cwd: root,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const line = decoder.decode(output.stdout).split("\n").find((l) => l.startsWith("BENCH_RESULT "));
  if (line === undefined) throw new Error(`wrk failed: ${decoder.decode(output.stderr)}`);
  const v = Object.fromEntries(
    line.split(" ").slice(1).map((pair) => pair.split("=")).map(([k, n]) => [k, Number(n)]),
  );
  return {
    requests: v.requests,
    seconds: v.duration_us / 1e6,
    p50: v.p50_us / 1000,
    p99: v.p99_us / 1000,
    failed: v.non2xx + v.connect + v.read + v.write + v.timeout,
  };
};

// Whether a program can be started at all (Deno.Command throws, synchronously, when it is missing).
const commandExists = async (command: string) => {
  try {
    await new Deno.Command(command, { args: ["--version"], stdout: "null", stderr: "null" })
      .output();
    return true;
  } catch {
    return false;
  }
};

// The same read load at one instance, then split over both (32 connections either way).
const readLoad = async (
  instances: ReadonlyArray<Instance>,
  stores: ReadonlyArray<StoreInfo>,
  key: string,
  start: string,
  end: string,
) => {
  if (!(await commandExists("wrk"))) {
    console.log("read load: skipped (wrk is not installed; apt-get install wrk)");
    return;
  }
  const targets = await Deno.makeTempFile({ prefix: "two_instances_", suffix: ".txt" });
  await Deno.writeTextFile(targets, stores.map((s) => `${s.id} ${s.scope_id}`).join("\n") + "\n");
  const path = `/api/v1/stores/{store}/energy?scope_id={scope}&start=${start}&end=${end}`;
  try {
    // Warm-up, unrecorded.
    await Promise.all(instances.map((i) => wrk(i, targets, path, key, 8, 1)));
    const one = await wrk(instances[0], targets, path, key, 32, 2);
    const split = await Promise.all(instances.map((i) => wrk(i, targets, path, key, 16, 1)));
    const rate = (r: ReadonlyArray<WrkResult>) => r.reduce((n, x) => n + x.requests / x.seconds, 0);
    const show = (label: string, r: ReadonlyArray<WrkResult>) =>
      console.log(
        `read load, ${label}: ${rate(r).toFixed(0)} req/s, p50 ${
          r.map((x) => x.p50.toFixed(1)).join("/")
        } ms, p99 ${r.map((x) => x.p99.toFixed(1)).join("/")} ms, ${
          r.reduce((n, x) => n + x.failed, 0)
        } failed`,
      );
    show("one instance, c=32", [one]);
    show("two instances, c=16 each", split);
    check(
      one.failed + split.reduce((n, x) => n + x.failed, 0) === 0,
      "the read loads had no failed request",
    );
  } finally {
    await Deno.remove(targets);
  }
};

const suffix = crypto.randomUUID().replaceAll("-", "").slice(0, 12);
const mainDb = `two_inst_${suffix}`;
const replayDb = `two_inst_replay_${suffix}`;
const created: Array<string> = [];
const running: Array<Instance> = [];
const steps: Array<Step> = [];
const started = performance.now();

try {
  await adminQuery(adminUrl, `CREATE DATABASE ${mainDb}`);
  created.push(mainDb);
  const url = withDatabase(adminUrl, mainDb);
  await deno(["task", "seed", "--stores", String(STORES)], { DATABASE_URL: url });
  const keyText = await deno(
    [
      "run",
      "-A",
      "scripts/keys.ts",
      "issue",
      "--member",
      "two-instances",
      "--permissions",
      "read,write,raw",
    ],
    { DATABASE_URL: url },
  );
  const key = keyText.split("\n").at(-1)!;
  // The starting state, copied before any instance connects: the single instance's replay starts here.
  await adminQuery(adminUrl, `CREATE DATABASE ${replayDb} TEMPLATE ${mainDb}`);
  created.push(replayDb);
  console.log(`database ${mainDb}: demo with ${STORES} stores; copy ${replayDb} for the replay`);

  const [a, b] = await Promise.all([startInstance("A", url), startInstance("B", url)]);
  running.push(a, b);
  const both = [a, b];
  console.log(`instances A ${a.origin} and B ${b.origin}`);

  // Sessions: made on A, used on B.
  const session = await call(a, "POST", "/auth/session", {
    body: { access_key: key },
    headers: { origin: a.origin },
  });
  const cookie = (session.headers.get("set-cookie") ?? "").split(";")[0];
  const onB = await call(b, "GET", "/auth/session", { headers: { cookie } });
  check(session.status === 200 && onB.status === 200, "a session made on A is valid on B");

  const stores = (await call(a, "GET", "/api/v1/stores", { key })).body.stores as Array<StoreInfo>;

  // 1. Profile edits: every round, 2 x 8 edits with the same expected_version.
  let editable: StoreInfo | undefined;
  for (const store of stores) {
    const reference = await call(a, "GET", `/api/v1/stores/${store.id}/reference`, { key });
    if (reference.body.can_edit_profile === true) {
      editable = store;
      break;
    }
  }
  if (editable === undefined) throw new Error("no store of the demo has an editable profile");
  const [{ n: auditBefore }] = await adminQuery<{ n: string }>(
    url,
    "SELECT count(*) AS n FROM audit_log",
  );
  const profileStarted = performance.now();
  let lostRounds = 0;
  const profileAnswers: Array<Answer> = [];
  for (let round = 1; round <= PROFILE_ROUNDS; round++) {
    const reference = await call(
      both[round % 2],
      "GET",
      `/api/v1/stores/${editable.id}/reference`,
      {
        key,
      },
    );
    const version = reference.body.profile.version as number;
    const bodies = both.flatMap((instance) =>
      Array.from({ length: PROFILE_EDITS_PER_INSTANCE }, (_, i) => ({
        instance,
        body: {
          name: `${editable!.name} r${round} ${instance.name}${i}`,
          address: `Round ${round}, edit ${instance.name}${i}`,
          expected_version: version,
        },
      }))
    );
    const answers = await Promise.all(
      bodies.map(({ instance, body }) =>
        call(instance, "PATCH", `/api/v1/stores/${editable!.id}/profile`, { key, body })
      ),
    );
    profileAnswers.push(...answers);
    const winners = answers.map((x, i) => ({ x, i })).filter(({ x }) => x.status === 200);
    const stale = answers.filter((x) =>
      x.status === 409 && x.body?.error?.code === "STALE_VERSION"
    );
    const after = await call(
      both[(round + 1) % 2],
      "GET",
      `/api/v1/stores/${editable.id}/reference`,
      {
        key,
      },
    );
    const winner = winners[0] === undefined ? undefined : bodies[winners[0].i].body;
    const kept = winner !== undefined && after.body.profile.version === version + 1 &&
      after.body.profile.name === winner.name && after.body.profile.address === winner.address;
    if (winners.length !== 1 || stale.length !== answers.length - 1 || !kept) lostRounds++;
    if (winner !== undefined) steps.push({ kind: "profile", storeId: editable.id, body: winner });
  }
  const profileSeconds = (performance.now() - profileStarted) / 1000;
  const [{ n: auditAfter }] = await adminQuery<{ n: string }>(
    url,
    "SELECT count(*) AS n FROM audit_log",
  );
  console.log(
    `profile edits: ${PROFILE_ROUNDS} rounds x ${
      2 * PROFILE_EDITS_PER_INSTANCE
    } concurrent edits ` +
      `(${tally(profileAnswers)}) in ${profileSeconds.toFixed(1)} s, ` +
      `${(profileAnswers.length / profileSeconds).toFixed(0)} edits/s`,
  );
  check(
    lostRounds === 0,
    `every round: exactly one edit wins, the rest 409 STALE_VERSION, the winner is what both read (${lostRounds} rounds wrong)`,
  );
  check(
    Number(auditAfter) - Number(auditBefore) === PROFILE_ROUNDS,
    `one audit entry per winning edit (${
      Number(auditAfter) - Number(auditBefore)
    } of ${PROFILE_ROUNDS})`,
  );

  // Days that an import writes: legacy values and days without data, never the edited store's.
  const fresh: Array<{ store: StoreInfo; date: string; kwh: string | null }> = [];
  const dataset = (await call(a, "GET", "/api/v1/dataset", { key })).body as { end: string };
  const addDays = (date: string, n: number) =>
    new Date(Date.parse(`${date}T00:00:00Z`) + n * 86_400_000).toISOString().slice(0, 10);
  for (const store of stores) {
    if (store.id === editable.id) continue;
    const energy = await call(
      a,
      "GET",
      `/api/v1/stores/${store.id}/energy?scope_id=${store.scope_id}&start=${
        addDays(dataset.end, -120)
      }&end=${dataset.end}`,
      { key },
    );
    for (const day of energy.body.days) {
      if (
        day.status === "NO_DATA" ||
        (day.status === "AVAILABLE" && day.source_kind === "LEGACY_DIRECT")
      ) {
        fresh.push({ store, date: day.business_date, kwh: day.energy_kwh });
      }
    }
  }
  // Spread over stores: a batch takes days of many stores.
  fresh.sort((x, y) => (x.date + x.store.id).localeCompare(y.date + y.store.id));
  let taken = 0;
  const takeDays = (n: number, salt: number): Array<Cell> => {
    if (taken + n > fresh.length) throw new Error("the demo has too few days to import into");
    return fresh.slice(taken, taken += n).map((d, i) => ({
      store: d.store,
      date: d.date,
      value: (100 + salt + i / 7).toFixed(4),
    }));
  };
  const [{ n: revisionsBefore }] = await adminQuery<{ n: string }>(
    url,
    "SELECT count(*) AS n FROM energy_revisions",
  );
  let expectedRevisions = 0;

  const preview = async (instance: Instance, label: string, cells: ReadonlyArray<Cell>) => {
    const csv = csvOf(cells);
    const idem = crypto.randomUUID();
    const answer = await call(instance, "POST", "/api/v1/imports/preview", {
      key,
      headers: { "idempotency-key": idem },
      body: {
        filename: `${label}.csv`,
        content_base64: b64(csv),
        reason: `two instances ${label}`,
      },
    });
    if (answer.status !== 200) {
      throw new Error(`preview ${label}: ${answer.status} ${JSON.stringify(answer.body)}`);
    }
    steps.push({ kind: "preview", label, csv, idem });
    return answer.body as { id: number; action_counts: Record<string, number> };
  };
  const commit = (instance: Instance, batchId: number, idem: string) =>
    call(instance, "POST", `/api/v1/imports/${batchId}/commit`, {
      key,
      headers: { "idempotency-key": idem },
      body: {},
    });

  // 2. One batch, the same key, through both: one commit, every answer that commit.
  const sameKey: Array<Answer> = [];
  let sameKeyWrong = 0;
  for (let i = 0; i < BATCHES; i++) {
    const label = `same-key-${i}`;
    const batch = await preview(both[i % 2], label, takeDays(BATCH_DAYS, i));
    expectedRevisions += writesOf(batch);
    const idem = crypto.randomUUID();
    const answers = await Promise.all(
      both.flatMap((instance) =>
        Array.from({ length: COMMITS_PER_INSTANCE }, () => commit(instance, batch.id, idem))
      ),
    );
    sameKey.push(...answers);
    const committedAt = new Set(answers.map((x) => x.body?.committed_at));
    if (answers.some((x) => x.status !== 200) || committedAt.size !== 1) sameKeyWrong++;
    steps.push({ kind: "commit", label, idem });
  }
  console.log(
    `same batch, same Idempotency-Key: ${BATCHES} batches x ${2 * COMMITS_PER_INSTANCE} commits (${
      tally(sameKey)
    })`,
  );
  check(
    sameKeyWrong === 0,
    `every commit with one key answers the same single commit (${sameKeyWrong} batches wrong)`,
  );

  // 3. One batch, different keys, through both: one commit, the others 409 ALREADY_COMMITTED.
  const otherKeys: Array<Answer> = [];
  let otherKeysWrong = 0;
  for (let i = 0; i < BATCHES; i++) {
    const label = `other-keys-${i}`;
    const batch = await preview(both[i % 2], label, takeDays(BATCH_DAYS, 50 + i));
    expectedRevisions += writesOf(batch);
    const attempts = both.flatMap((instance) =>
      Array.from({ length: COMMITS_PER_INSTANCE }, () => ({ instance, idem: crypto.randomUUID() }))
    );
    const answers = await Promise.all(attempts.map((t) => commit(t.instance, batch.id, t.idem)));
    otherKeys.push(...answers);
    const won = answers.findIndex((x) => x.status === 200);
    const refused = answers.filter((x) =>
      x.status === 409 && x.body?.error?.code === "ALREADY_COMMITTED"
    );
    if (
      answers.filter((x) => x.status === 200).length !== 1 || refused.length !== answers.length - 1
    ) {
      otherKeysWrong++;
    }
    if (won >= 0) steps.push({ kind: "commit", label, idem: attempts[won].idem });
  }
  console.log(
    `same batch, different keys: ${BATCHES} batches x ${2 * COMMITS_PER_INSTANCE} commits (${
      tally(otherKeys)
    })`,
  );
  check(
    otherKeysWrong === 0,
    `every batch commits once; the other commits are 409 ALREADY_COMMITTED (${otherKeysWrong} batches wrong)`,
  );

  // 4. Two batches over the same days, committed at once through A and B.
  const races: Array<Answer> = [];
  let racesWrong = 0;
  const raceDays: Array<Cell> = [];
  for (let i = 0; i < RACE_ROUNDS; i++) {
    const shared = takeDays(RACE_OVERLAP, 0);
    const onlyX = takeDays(RACE_DAYS - RACE_OVERLAP, 0);
    const onlyY = takeDays(RACE_DAYS - RACE_OVERLAP, 0);
    const cellsX = [...shared, ...onlyX].map((c, j) => ({
      ...c,
      value: (200 + i + j / 9).toFixed(4),
    }));
    const cellsY = [...shared, ...onlyY].map((c, j) => ({
      ...c,
      value: (300 + i + j / 11).toFixed(4),
    }));
    const x = await preview(a, `race-${i}-x`, cellsX);
    const y = await preview(b, `race-${i}-y`, cellsY);
    const idemX = crypto.randomUUID();
    const idemY = crypto.randomUUID();
    // Alternate which instance gets which batch.
    const [first, second] = i % 2 === 0 ? [a, b] : [b, a];
    const [ax, ay] = await Promise.all([commit(first, x.id, idemX), commit(second, y.id, idemY)]);
    races.push(ax, ay);
    const okX = ax.status === 200;
    const okY = ay.status === 200;
    const loser = okX ? ay : ax;
    if (okX === okY || loser.status !== 409 || loser.body?.error?.code !== "STALE_PREVIEW") {
      racesWrong++;
    }
    const winnerCells = okX ? cellsX : cellsY;
    expectedRevisions += writesOf(okX ? x : y);
    raceDays.push(...winnerCells);
    steps.push({
      kind: "commit",
      label: `race-${i}-${okX ? "x" : "y"}`,
      idem: okX ? idemX : idemY,
    });
  }
  console.log(`two batches over the same days: ${RACE_ROUNDS} races (${tally(races)})`);
  check(
    racesWrong === 0,
    `every race: one batch commits, the other is 409 STALE_PREVIEW (${racesWrong} wrong)`,
  );

  const [{ n: revisionsAfter }] = await adminQuery<{ n: string }>(
    url,
    "SELECT count(*) AS n FROM energy_revisions",
  );
  const [{ n: duplicated }] = await adminQuery<{ n: string }>(
    url,
    `SELECT count(*) AS n FROM (SELECT import_row_id FROM energy_revisions
       GROUP BY import_row_id, energy_id HAVING count(*) > 1) d`,
  );
  check(
    Number(revisionsAfter) - Number(revisionsBefore) === expectedRevisions,
    `revisions written: ${
      Number(revisionsAfter) - Number(revisionsBefore)
    }, planned by the winning previews: ${expectedRevisions}`,
  );
  check(Number(duplicated) === 0, "no import row has two revisions of one day");

  // Both instances answer the same for every touched store.
  const touched = new Map<number, StoreInfo>();
  for (const c of raceDays) touched.set(c.store.id, c.store);
  for (const s of fresh.slice(0, taken)) touched.set(s.store.id, s.store);
  const from = addDays(dataset.end, -120);
  const reads = [...touched.values()].flatMap((s) => [
    `/api/v1/stores/${s.id}/energy?scope_id=${s.scope_id}&start=${from}&end=${dataset.end}`,
    `/api/v1/stores/${s.id}/metrics?scope_id=${s.scope_id}&start=${from}&end=${dataset.end}`,
  ]).concat(
    [`/api/v1/stores/${editable.id}/reference`, "/api/v1/stores"],
    raceDays.slice(0, 20).map((c) => `/api/v1/stores/${c.store.id}/energy/${c.date}/versions`),
  );
  let disagree = 0;
  for (const path of reads) {
    const [x, y] = await Promise.all(both.map((i) => call(i, "GET", path, { key })));
    if (x.status !== 200 || JSON.stringify(x.body) !== JSON.stringify(y.body)) disagree++;
  }
  check(disagree === 0, `A and B answer ${reads.length} reads identically (${disagree} differ)`);
  // The newest data, as a client holds it: the Data-Token of a read after every commit.
  const probeStore = raceDays[0].store;
  const probePath =
    `/api/v1/stores/${probeStore.id}/energy?scope_id=${probeStore.scope_id}&start=${from}&end=${dataset.end}`;
  const headRead = await Promise.all(both.map((i) => call(i, "GET", probePath, { key })));
  const headToken = headRead[0].headers.get("data-token") ?? "";
  check(
    headToken !== "" && headRead[1].headers.get("data-token") === headToken,
    `A and B name the same data: Data-Token ${headToken}`,
  );
  const raceOk = await Promise.all(
    raceDays.slice(0, 40).map(async (c) => {
      const day = (await call(
        b,
        "GET",
        `/api/v1/stores/${c.store.id}/energy?scope_id=${c.store.scope_id}&start=${c.date}&end=${c.date}`,
        { key },
      )).body.days[0];
      return day.energy_kwh === c.value;
    }),
  );
  check(raceOk.every(Boolean), "raced days hold the winning batch's values");

  // Per-instance counts, from each one's /metrics.
  for (const instance of both) {
    const text = await (await fetch(`${instance.origin}/metrics`, {
      headers: { authorization: `Bearer ${METRICS_TOKEN}` },
    })).text();
    const sum = (route: string) =>
      text.split("\n").filter((l) =>
        l.startsWith("http_requests_total{") && l.includes(`route="${route}"`)
      )
        .reduce((n, l) => n + Number(l.split(" ").at(-1)), 0);
    console.log(
      `instance ${instance.name}: ${sum("/api/v1/stores/:store_id/profile")} profile edits, ` +
        `${sum("/api/v1/imports/:batch_id/commit")} commits, ${
          sum("/api/v1/imports/preview")
        } previews`,
    );
  }
  const all = latencies;
  console.log(
    `requests: ${all.length}, p50 ${percentile(all, 0.5).toFixed(1)} ms, p99 ${
      percentile(all, 0.99).toFixed(1)
    } ms, max ${Math.max(...all).toFixed(1)} ms`,
  );
  await readLoad(both, stores, key, addDays(dataset.end, -364), dataset.end);
  await Promise.all(both.map((i) => i.stop()));
  running.length = 0;

  // 5. The same winners, in order, on one instance over the starting copy.
  const replayUrl = withDatabase(adminUrl, replayDb);
  const single = await startInstance("single", replayUrl);
  running.push(single);
  // The copy has none of the commits above: a replica that has not replayed them yet.
  const lagToken = await call(single, "GET", `${probePath}&data_token=${headToken}`, { key });
  console.log(
    `behind by ${
      steps.filter((x) => x.kind === "commit").length
    } commits, data_token ${headToken}: ` +
      `${lagToken.status} ${lagToken.body?.error?.code ?? ""} "${
        lagToken.body?.error?.message ?? ""
      }"`,
  );
  check(
    lagToken.status === 400 && lagToken.body?.error?.code === "INVALID_REQUEST",
    "a copy behind the newest commit answers its data_token 400 INVALID_REQUEST (names no commit)",
  );
  const instant = new Date(Date.now() - 1_000).toISOString();
  const lagInstant = await call(single, "GET", `${probePath}&known_at=${instant}`, { key });
  console.log(
    `behind, known_at ${instant}: ${lagInstant.status} with Data-Token ${
      lagInstant.headers.get("data-token")
    } (the newest is ${headToken})`,
  );
  check(
    lagInstant.status === 200 && lagInstant.headers.get("data-token") !== headToken,
    "a copy behind answers known_at from the last commit it has, not the newest one",
  );
  const batchIds = new Map<string, number>();
  const replayStarted = performance.now();
  let replayWrong = 0;
  for (const step of steps) {
    if (step.kind === "profile") {
      const answer = await call(single, "PATCH", `/api/v1/stores/${step.storeId}/profile`, {
        key,
        body: step.body,
      });
      if (answer.status !== 200) replayWrong++;
    } else if (step.kind === "preview") {
      const answer = await call(single, "POST", "/api/v1/imports/preview", {
        key,
        headers: { "idempotency-key": step.idem },
        body: {
          filename: `${step.label}.csv`,
          content_base64: b64(step.csv),
          reason: `two instances ${step.label}`,
        },
      });
      if (answer.status !== 200) replayWrong++;
      batchIds.set(step.label, answer.body.id);
    } else {
      const answer = await call(
        single,
        "POST",
        `/api/v1/imports/${batchIds.get(step.label)}/commit`,
        {
          key,
          headers: { "idempotency-key": step.idem },
          body: {},
        },
      );
      if (answer.status !== 200) replayWrong++;
    }
  }
  check(
    replayWrong === 0,
    `the ${steps.length} winning steps replay on one instance (${replayWrong} refused)`,
  );
  console.log(
    `replay on one instance: ${steps.length} steps in ${
      ((performance.now() - replayStarted) / 1000).toFixed(1)
    } s`,
  );

  // Ids and times differ by construction (a refused commit still takes identity values).
  const normalise = (value: unknown): unknown =>
    Array.isArray(value)
      ? value.map(normalise)
      : value !== null && typeof value === "object"
      ? Object.fromEntries(
        Object.entries(value).filter(([k]) =>
          !k.endsWith("_id") && k !== "id" && !k.endsWith("_at") && k !== "batch_no"
        ).map(([k, v]) => [k, normalise(v)]),
      )
      : value;
  // The two-instance database is read through the single instance's code on a second process.
  const twin = await startInstance("A again", url);
  running.push(twin);
  let unequal = 0;
  for (const path of reads) {
    const [x, y] = await Promise.all([
      call(twin, "GET", path, { key }),
      call(single, "GET", path, { key }),
    ]);
    if (JSON.stringify(normalise(x.body)) !== JSON.stringify(normalise(y.body))) {
      unequal++;
      if (unequal <= 3) console.log(`    differs: ${path.split("?")[0]}`);
    }
  }
  check(
    unequal === 0,
    `the final state equals the single instance's: ${reads.length} reads (${unequal} differ)`,
  );
  const counts = async (u: string) =>
    (await adminQuery<{ revisions: string; committed: string; audit: string; idem: string }>(
      u,
      `SELECT (SELECT count(*) FROM energy_revisions) AS revisions,
        (SELECT count(*) FROM import_batches WHERE status = 'COMMITTED') AS committed,
        (SELECT count(*) FROM audit_log) AS audit,
        (SELECT count(*) FROM idempotency_records) AS idem`,
    ))[0];
  const [two, one] = [await counts(url), await counts(replayUrl)];
  check(
    JSON.stringify(two) === JSON.stringify(one),
    `revisions, committed batches, audit entries and idempotency records equal: ${
      JSON.stringify(two)
    } vs ${JSON.stringify(one)}`,
  );

  // 6. What a hot standby allows: the database read-only for every new connection, the twin's
  // connections ended so that its pool opens new ones. The twin has not used a cookie yet, so the
  // session secret (SESSION_SECRET unset: kept in the database) is still to be read.
  await adminQuery(adminUrl, `ALTER DATABASE ${mainDb} SET default_transaction_read_only = on`);
  await adminQuery(
    adminUrl,
    `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '${mainDb}'`,
  );
  for (let i = 0; i < 20; i++) {
    if ((await call(twin, "GET", "/health/ready").catch(() => undefined))?.status === 200) break;
    await new Promise((r) => setTimeout(r, 250));
  }
  const [ids] = await adminQuery<{ energy_id: number; row_id: number; batch_id: number }>(
    url,
    `SELECT (SELECT max(energy_id) FROM energy_revisions) AS energy_id,
       (SELECT max(id) FROM import_rows) AS row_id,
       (SELECT max(id) FROM import_batches WHERE status = 'COMMITTED') AS batch_id`,
  );
  const s0 = probeStore;
  const range = `scope_id=${s0.scope_id}&start=${from}&end=${dataset.end}`;
  const readOnlyReads = [
    "/health/ready",
    "/api/v1/dataset",
    "/api/v1/stores",
    "/api/v1/catalog",
    "/auth/session",
    `/api/v1/stores/${s0.id}/energy?${range}`,
    `/api/v1/stores/${s0.id}/energy?${range}&data_token=${headToken}`,
    `/api/v1/stores/${s0.id}/energy?${range}&known_at=${instant}`,
    `/api/v1/stores/${s0.id}/targets?${range}`,
    `/api/v1/stores/${s0.id}/metrics?${range}`,
    `/api/v1/stores/${s0.id}/periods?scope_id=${s0.scope_id}&as_of=${dataset.end}`,
    `/api/v1/stores/${s0.id}/reference`,
    `/api/v1/stores/${s0.id}/quality?${range}`,
    `/api/v1/stores/${editable.id}/audit`,
    `/api/v1/stores/${s0.id}/energy/${raceDays[0].date}/versions`,
    `/api/v1/energy/${ids.energy_id}/history`,
    `/api/v1/import-rows/${ids.row_id}/lineage`,
    "/api/v1/imports",
    `/api/v1/imports/${ids.batch_id}`,
    "/api/v1/changes",
    "/api/v1/imports/template",
  ];
  const refused: Array<string> = [];
  for (const path of readOnlyReads) {
    const answer = await call(twin, "GET", path, { key });
    if (answer.status !== 200) refused.push(`${path.split("?")[0]} ${answer.status}`);
  }
  console.log(
    `read-only database: ${readOnlyReads.length - refused.length} of ${readOnlyReads.length} ` +
      `reads answered 200${refused.length === 0 ? "" : ` (not: ${refused.join(", ")})`}`,
  );
  check(refused.length === 0, "every read with a key answers 200 on a read-only database");
  const profileVersion =
    (await call(twin, "GET", `/api/v1/stores/${editable.id}/reference`, { key }))
      .body?.profile?.version;
  const writes = [
    await call(twin, "GET", "/auth/session", { headers: { cookie } }),
    await call(twin, "POST", "/auth/session", {
      body: { access_key: key },
      headers: { origin: twin.origin },
    }),
    await call(twin, "PATCH", `/api/v1/stores/${editable.id}/profile`, {
      key,
      body: {
        name: `${editable.name} read-only`,
        address: "read-only",
        expected_version: profileVersion,
      },
    }),
    await call(twin, "POST", "/api/v1/imports/preview", {
      key,
      headers: { "idempotency-key": crypto.randomUUID() },
      body: {
        filename: "read-only.csv",
        content_base64: b64(csvOf(takeDays(1, 7))),
        reason: "read-only",
      },
    }),
  ];
  console.log(
    `read-only database: a cookie whose secret is not read yet ${writes[0].status} ${
      writes[0].body?.error?.code ?? ""
    }; new session ${writes[1].status} ${writes[1].body?.error?.code ?? ""}; profile edit ${
      writes[2].status
    } ${writes[2].body?.error?.code ?? ""}; preview ${writes[3].status} ${
      writes[3].body?.error?.code ?? ""
    }`,
  );
  check(
    writes.slice(1).every((w) => w.status >= 500),
    "writes on a read-only database are refused (5xx), none answers 2xx",
  );
} catch (error) {
  failures.push(error instanceof Error ? error.message : String(error));
  console.error(error instanceof Error ? error.message : String(error));
} finally {
  await Promise.all(running.map((i) => i.stop().catch(() => {})));
  for (const name of created.reverse()) {
    await adminQuery(adminUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch((e) =>
      console.error(`${name} could not be dropped: ${e.message}`)
    );
  }
}
console.log(
  `${failures.length === 0 ? "all checks passed" : `${failures.length} checks FAILED`} in ${
    ((performance.now() - started) / 1000).toFixed(1)
  } s`,
);
Deno.exit(failures.length === 0 ? 0 : 1);
