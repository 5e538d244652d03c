// A stop waits for the work of requests already answered: a write answered 503 TIMEOUT goes on to
// its end, and the database is closed only after it (src/start.ts). The front door knows that work.
import assert from "node:assert/strict";
import { makeFront } from "../src/http/front.ts";
import { apiRoutes } from "../src/http/routes.ts";
import { loadDocsPage } from "../src/http/docs_page.ts";
import { quietLog } from "./helpers.ts";

// The front door over an endpoint whose work ends when `finish` is called.
const frontOver = () => {
  let finish = () => {};
  const finished = new Promise<void>((resolve) => (finish = resolve));
  let done = false;
  const front = makeFront(
    async () => {
      await finished;
      done = true;
      return new Response('{"status":"LOGGED_OUT"}', {
        headers: { "content-type": "application/json" },
      });
    },
    { routes: apiRoutes(), requestMs: 50, bodyMs: 1_000, log: quietLog, docsPage: loadDocsPage },
  );
  return { front, finish, done: () => done };
};

const write = () =>
  new Request("http://localhost/auth/logout", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: "{}",
  });

Deno.test("a write answered 503 TIMEOUT is still work: settled waits for its end", async () => {
  const { front, finish, done } = frontOver();
  const answer = await front(write());
  assert.equal(answer.status, 503);
  assert.equal((await answer.json()).error.code, "TIMEOUT");
  assert.equal(done(), false);
  const settling = front.settled(5_000);
  setTimeout(finish, 100);
  assert.equal(await settling, true);
  assert.equal(done(), true, "the work ended before settled answered");
  assert.equal(await front.settled(10), true, "nothing is left");
});

Deno.test("settled gives up after its time when the work does not end", async () => {
  const { front, finish } = frontOver();
  const answer = await front(write());
  assert.equal(answer.status, 503);
  await answer.body?.cancel();
  assert.equal(await front.settled(100), false);
  finish();
  assert.equal(await front.settled(5_000), true);
});
