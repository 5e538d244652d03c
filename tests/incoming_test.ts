// A request without a body reaches the front door without a web Request: its headers, read from
// node:http's raw ones, must read as a web Headers object made from the same ones reads them.
import assert from "node:assert/strict";
import { FastCheck as fc } from "effect";
import { appendHeaders, BodilessRequest, RawHeaders } from "../src/http/incoming.ts";

const NAMES = [
  "Authorization",
  "authorization",
  "If-None-Match",
  "Cookie",
  "cookie",
  "Host",
  "Accept-Encoding",
  "X-Custom",
  "content-length",
  "Transfer-Encoding",
];
// Field values as node:http gives them: visible characters and inner spaces or tabs, sometimes
// with whitespace around them.
const value = fc.tuple(
  fc.constantFrom("", " ", "\t", "  "),
  fc.stringMatching(/^[\x21-\x7e]([\x20-\x7e\t]{0,20}[\x21-\x7e])?$/),
  fc.constantFrom("", " ", "\t"),
).map(([a, b, c]) => a + b + c);
const raw = fc.array(fc.tuple(fc.constantFrom(...NAMES), value), { maxLength: 12 });

Deno.test("raw headers read as a web Headers object reads them: any case, repeats joined, trimmed", () => {
  fc.assert(
    fc.property(raw, (pairs) => {
      const flat = pairs.flat();
      const ours = new RawHeaders(flat);
      const web = new Headers(pairs);
      for (const name of [...NAMES, "X-Absent", "AUTHORIZATION"]) {
        assert.equal(ours.get(name), web.get(name), name);
        assert.equal(ours.has(name), web.has(name), name);
      }
      // Appended to a Request's (for the HttpApi), they are the same headers, from either form.
      for (const from of [ours, web]) {
        const request = new Request("http://service.test/");
        appendHeaders(from, request.headers);
        assert.deepEqual([...request.headers], [...web]);
      }
    }),
    { numRuns: 500 },
  );
});

Deno.test("a request without a body keeps its method, URL and headers, and has no body", () => {
  const request = new BodilessRequest("GET", "http://service.test/api/v1/stores?x=1", [
    "Authorization",
    "Bearer k",
    "If-None-Match",
    '"a"',
  ]);
  assert.equal(request.method, "GET");
  assert.equal(request.url, "http://service.test/api/v1/stores?x=1");
  assert.equal(request.body, null);
  assert.equal(request.headers.get("authorization"), "Bearer k");
  assert.equal(request.headers.get("if-none-match"), '"a"');
  assert.equal(request.headers.get("cookie"), null);
});
