// Exports sent while they are read: success is decided before the first byte, a failure after it
// cuts the body, the event loop is let go between slices, a page is read only when the client has
// taken the bytes before it, the time limit, and the bytes the same as the one-piece writer made.
import assert from "node:assert/strict";
import * as SqlClient from "@effect/sql/SqlClient";
import { SqlError } from "@effect/sql/SqlError";
import { Effect, Layer } from "effect";
import { makeHandler } from "../src/app.ts";
import { issueKey } from "../src/auth/keys.ts";
import { AppConfig, DEFAULT_LIMITS } from "../src/config.ts";
import { EXPORT_PAGE_VALUES, EXPORT_SLICE_VALUES } from "../src/exports/export_service.ts";
import { makeLog } from "../src/log.ts";
import { generateSnapshot } from "../src/seed/generate.ts";
import { loadSnapshot } from "../src/seed/load.ts";
import { makeTestDatabase } from "./db.ts";
import { assertErrorBody, BASE } from "./helpers.ts";
import { unzipped } from "./import_zip_fixtures.ts";

const STORES = 30;
const db = await makeTestDatabase();
await db.run(Effect.asVoid(loadSnapshot(generateSnapshot({ stores: STORES }), { reset: false })));

// The export's page statements, counted, and failed from a chosen one on as a lost connection.
const pages = { reads: 0, failFrom: Infinity };
const isPageRead = (text: string) =>
  text.includes("FROM energy_days e") && text.includes("ANY($1::int[])");
const lostConnection = () =>
  new SqlError({
    message: "Connection error",
    cause: Object.assign(new Error("connection lost"), { code: "08006" }),
  });
const watched = Layer.effect(
  SqlClient.SqlClient,
  Effect.map(SqlClient.SqlClient, (sql) =>
    new Proxy(sql, {
      get(target, property, receiver) {
        if (property !== "unsafe") return Reflect.get(target, property, receiver);
        return (text: string, params?: ReadonlyArray<unknown>) => {
          if (!isPageRead(text)) return target.unsafe(text, params);
          pages.reads++;
          return pages.reads >= pages.failFrom
            ? Effect.fail(lostConnection())
            : target.unsafe(text, params);
        };
      },
    })),
).pipe(Layer.provide(db.layer));

const logged: Array<string> = [];
const handlerWith = (exportMs: number) =>
  makeHandler(
    Layer.merge(watched, AppConfig.make({ limits: { ...DEFAULT_LIMITS, exportMs } })),
    {
      log: makeLog({
        level: "warn",
        format: "text",
        sink: (line) => logged.push(line),
      }),
    },
  );
const app = handlerWith(DEFAULT_LIMITS.exportMs);
const { key } = await db.run(
  issueKey({ member: "streamer", permissions: ["read"], stores: null, lifetime: null }),
);

const YEAR = "start=2025-11-20&end=2026-11-20";
const DAYS = 366;
const storesPer = (values: number) => Math.max(1, Math.floor(values / DAYS));
const PAGES = Math.ceil(STORES / storesPer(EXPORT_PAGE_VALUES));
const SLICES_PER_PAGE = Math.ceil(storesPer(EXPORT_PAGE_VALUES) / storesPer(EXPORT_SLICE_VALUES));

const get = (query: string, handler = app.handler) =>
  handler(
    new Request(`${BASE}/api/v1/stores/export?${query}`, {
      headers: { authorization: `Bearer ${key}` },
    }),
  );

const reset = (failFrom = Infinity) => {
  pages.reads = 0;
  pages.failFrom = failFrom;
};

const macrotasks = async (n: number) => {
  for (let i = 0; i < n; i++) await new Promise((resolve) => setTimeout(resolve, 0));
};

Deno.test("the year's export is several pages of several slices", () => {
  assert.ok(PAGES >= 3, `${PAGES} pages`);
  assert.ok(SLICES_PER_PAGE >= 2, `${SLICES_PER_PAGE} slices a page`);
});

Deno.test("a database that fails the first page is an error answer, not a 200", async () => {
  for (const format of ["csv", "xlsx"]) {
    reset(1);
    const response = await get(`${YEAR}&format=${format}`);
    const text = await response.text();
    assertErrorBody(
      { status: response.status, headers: response.headers, body: JSON.parse(text) },
      503,
      "NOT_READY",
    );
    assert.equal(pages.reads, 1);
  }
  reset();
});

Deno.test("a failure after the first byte errors the body: the client never sees a clean end", async () => {
  for (const format of ["csv", "xlsx"]) {
    reset(3);
    const response = await get(`${YEAR}&format=${format}`);
    assert.equal(response.status, 200);
    const reader = response.body!.getReader();
    let received = 0;
    await assert.rejects(async () => {
      while (true) {
        const { done, value } = await reader.read();
        if (done) return;
        received += value.length;
      }
    }, `${format}: the body must fail, not end`);
    assert.ok(received > 0, "bytes were sent before the failure");
    assert.equal(pages.reads, 3);
  }
  reset();
});

// Waits until no page has been read for a second (five quiet checks in a row): what was asked for
// ahead has arrived, however slow or busy the machine (a page read may take longer than any fixed
// number of turns of the loop, and one quiet check proved too short beside a parallel suite).
const QUIET_CHECKS = 5;
const settled = async () => {
  let quiet = 0;
  for (let i = 0; i < 150 && quiet < QUIET_CHECKS; i++) {
    const reads = pages.reads;
    await new Promise((resolve) => setTimeout(resolve, 200));
    quiet = pages.reads === reads ? quiet + 1 : 0;
  }
};

Deno.test("the first page is read before the answer; a page only when the bytes before it are taken", async () => {
  reset();
  const response = await get(`${YEAR}&format=csv`);
  assert.equal(response.status, 200);
  assert.equal(pages.reads, 1, "the first page is read before the answer starts");
  const reader = response.body!.getReader();
  // The header and every slice of the first page.
  const taken = 1 + SLICES_PER_PAGE;
  for (let i = 0; i < taken; i++) assert.equal((await reader.read()).done, false);
  await settled();
  // Chunks are made ahead only as far as the web streams between the body and its reader hold
  // (the body's own, and the front door's): a few chunks, so the page of the last chunk made.
  const ahead = 4;
  const bound = Math.floor((taken - 1 + ahead - 1) / SLICES_PER_PAGE) + 1;
  assert.ok(bound < PAGES);
  assert.ok(pages.reads <= bound, `${pages.reads} pages read`);
  const before = pages.reads;
  await settled();
  assert.equal(pages.reads, before, "a reader that stops reading stops the reads");
  await reader.cancel();
  await macrotasks(20);
  assert.equal(pages.reads, before);
});

Deno.test("while an export is written, timers run between its slices", async () => {
  for (const format of ["csv", "xlsx"]) {
    reset();
    let ticks = 0;
    let running = true;
    const tick = () => {
      ticks++;
      if (running) setTimeout(tick, 0);
    };
    setTimeout(tick, 0);
    const response = await get(`${YEAR}&format=${format}`);
    const reader = response.body!.getReader();
    // For each chunk: the page reads and the ticks when it came.
    const seen: Array<{ reads: number; ticks: number }> = [];
    while (!(await reader.read()).done) seen.push({ reads: pages.reads, ticks });
    running = false;
    assert.equal(pages.reads, PAGES);
    // Between two chunks with no page read between them (no database I/O), a timer fired: the
    // writer let the event loop go.
    const within = seen.slice(1).filter((s, i) => s.reads === seen[i].reads);
    assert.ok(within.length >= PAGES, `${within.length} chunks without a read before them`);
    assert.ok(
      seen.slice(1).some((s, i) => s.reads === seen[i].reads && s.ticks > seen[i].ticks),
      `${format}: no timer ran between slices of one page`,
    );
  }
});

Deno.test("past the time limit the body errors and the log says why; before the answer, 503", async () => {
  const limited = handlerWith(1_500);
  try {
    // A handler builds what it runs on at its first request: a first, short export, so that the
    // limit is spent on the export under test alone.
    const warm = await get(`start=2025-01-01&end=2025-01-01&format=csv`, limited.handler);
    assert.equal(warm.status, 200);
    await warm.arrayBuffer();
    reset();
    const response = await get(`${YEAR}&format=csv`, limited.handler);
    assert.equal(response.status, 200);
    const reader = response.body!.getReader();
    assert.equal((await reader.read()).done, false);
    await new Promise((resolve) => setTimeout(resolve, 1_600));
    await assert.rejects(async () => {
      while (!(await reader.read()).done);
    });
    assert.ok(pages.reads < PAGES);
    await macrotasks(5);
    assert.ok(
      logged.some((line) => line.includes("export cut short") && line.includes("TIMEOUT")),
      logged.join("\n"),
    );
  } finally {
    await limited.dispose();
  }
  const instant = handlerWith(1);
  try {
    const response = await get(`${YEAR}&format=csv`, instant.handler);
    assertErrorBody(
      { status: response.status, headers: response.headers, body: await response.json() },
      503,
      "TIMEOUT",
    );
  } finally {
    await instant.dispose();
  }
});

// The bytes the export wrote when each page was one piece (CSV) and the workbook's parts (an XLSX
// entry's deflated bytes follow the slices, its content does not), for this seed.
// The parts every exported workbook of this seed shares.
const WORKBOOK_PARTS: Record<string, string> = {
  "[Content_Types].xml": "d8531f95cac4c9abf91766b0aca3bd32118b58fc58d62baa530250e5f498642f",
  "_rels/.rels": "9f96bb683e71c45171c7ae310bf6c37fb5a834bb9738497ac7084c42ac9c2d9a",
  "xl/workbook.xml": "08878e02947d5c1f3c356520559cc0417fafc70ebb077cabf7a310c0faf69053",
  "xl/_rels/workbook.xml.rels": "1b9254f844ea53bb82cd706cec9b74d30f9892c25f344511615f1fd67ab58ce9",
  "xl/styles.xml": "6afab3e5bec3e7bc900fb306c9da1534acf5cf00fd3b09d02693b6c8428d4829",
};

const BEFORE: Record<string, string | Record<string, string>> = {
  "start=2025-11-20&end=2026-11-20&format=csv":
    "93ba233a38c8a0b8b406b5b0bf68c83d4d49244d6283407ef2d995bf57aaf9ba",
  "start=2025-01-01&end=2025-03-31&format=csv&legacy=values&store_ids=2,3,5,8,13,21":
    "5e265d6b691c9eb3feed2b2b1492ec2bb109800efe4c85af93e5329ddaa7d1df",
  "start=2025-11-20&end=2026-11-20&format=xlsx": {
    ...WORKBOOK_PARTS,
    "xl/worksheets/sheet1.xml": "2992c844b990960abdedc791817973326a7a0f12add26d287f74a82a0c6c9bc9",
    "xl/worksheets/sheet2.xml": "729b279874f2e9ed26247debe2b1a53ec4b60421ecb42d5faff8e2d696a432cf",
    "xl/worksheets/sheet3.xml": "36ec7e156487d932dd0e3e174fb72e3329bcc80b17791fa20bb775c18c59bcf0",
    "xl/worksheets/sheet4.xml": "002131cc3378f62bdf65ad5ee30165d6634ffeed7a87f5c7d26c2a7996a7ac9b",
    "xl/worksheets/sheet5.xml": "6be063cf577553bf946aee04eb6d8637090facdd49c90ee4e69530d105cc7f68",
  },
  // The provisional legacy days of the dataset's last day left blank (layout.ts exportCell).
  "start=2025-11-20&end=2026-11-20&format=xlsx&legacy=values": {
    ...WORKBOOK_PARTS,
    "xl/worksheets/sheet1.xml": "1372cea66719a08a72edd3ce7bdc92f6109ecebe14044f0fbb856d83619371be",
    "xl/worksheets/sheet2.xml": "9a7db369294890805c824ac651ca55e1b621a6d4bf7319c23674b1198883836b",
    "xl/worksheets/sheet3.xml": "3dc3afc325c4a720b9faddb98d9db47f7e7f596503d994763990a9e838db4640",
    "xl/worksheets/sheet4.xml": "e2b067d3f762826394982016a088632b3a4257ab9b466ea682aafb73b3d72a7f",
    "xl/worksheets/sheet5.xml": "0454e4bfc7ddfa41f300f3b1a5d055699981aabf3f95f230ee810a45a258401c",
  },
};

const sha256 = async (bytes: Uint8Array) =>
  Array.from(
    new Uint8Array(await crypto.subtle.digest("SHA-256", bytes.slice())),
    (b) => b.toString(16).padStart(2, "0"),
  ).join("");

Deno.test("the files are what the one-piece writer made for this seed", async () => {
  reset();
  for (const [query, expected] of Object.entries(BEFORE)) {
    const response = await get(query);
    assert.equal(response.status, 200, query);
    const bytes = new Uint8Array(await response.arrayBuffer());
    if (typeof expected === "string") {
      assert.equal(await sha256(bytes), expected, query);
    } else {
      const parts: Record<string, string> = {};
      for (const [name, data] of unzipped(bytes)) parts[name] = await sha256(data);
      assert.deepEqual(parts, expected, query);
    }
  }
});

Deno.test({
  name: "export stream test app closes",
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    await app.dispose();
    await db.close();
  },
});
