// A store list or catalog that is not kept is built once, however many callers ask for it at the
// same moment: the others wait and are answered from the kept bytes (src/stores/store_lists.ts).
import assert from "node:assert/strict";
import { Effect, Redacted } from "effect";
import { generateSnapshot } from "../src/seed/generate.ts";
import { loadSnapshot } from "../src/seed/load.ts";
import { BASE, makeTestApp, quietLog } from "./helpers.ts";

const TOKEN = "list-build-once-metrics";

Deno.test("callers who ask at once for a list not kept share one build and get the same answer", async () => {
  const snapshot = generateSnapshot({ stores: 3 });
  const app = await makeTestApp(
    (db) => db.run(Effect.asVoid(loadSnapshot(snapshot, { reset: false }))),
    { log: quietLog, metricsToken: Redacted.make(TOKEN) },
  );
  try {
    const CALLERS = 12;
    // Each caller with a key of its own (all stores: one list for all of them).
    const keys = await Promise.all(
      Array.from({ length: CALLERS }, (_, i) => app.key(["read"], { member: `list-once-${i}` })),
    );
    const served = async () => {
      const response = await app.handler(
        new Request(`${BASE}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } }),
      );
      const text = await response.text();
      assert.equal(response.status, 200);
      // The series appears once a current read has looked for a kept answer.
      return Number(text.match(/^answer_cache_served_total (\d+)/m)?.[1] ?? 0);
    };
    for (const path of ["/api/v1/catalog", "/api/v1/stores"]) {
      const before = await served();
      const answers = await Promise.all(
        keys.map(({ key }) =>
          app.handler(
            new Request(BASE + path, { headers: { authorization: `Bearer ${key}` } }),
          ).then(async (r) => ({
            status: r.status,
            etag: r.headers.get("etag"),
            body: await r.text(),
          }))
        ),
      );
      for (const answer of answers) {
        assert.equal(answer.status, 200, path);
        assert.equal(answer.etag, answers[0].etag, path);
        assert.equal(answer.body, answers[0].body, path);
      }
      assert.equal(JSON.parse(answers[0].body).stores.length, 3, path);
      // One caller built the answer; every other one was answered from its kept bytes.
      assert.equal((await served()) - before, CALLERS - 1, path);
    }
  } finally {
    await app.close();
  }
});
