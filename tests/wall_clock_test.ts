// A zone's wall clock at an instant, as the quality check (a device report's local day) and the
// console read it: the same as the platform's time zone data gives, at every second, across
// daylight-saving transitions and in zones with half- and quarter-hour offsets.
import assert from "node:assert/strict";
import { FastCheck as fc } from "effect";
import { wallAt } from "../src/domain/wall_clock.ts";

const ZONES = [
  "Asia/Shanghai",
  "UTC",
  "America/New_York",
  "Europe/London",
  "Australia/Lord_Howe",
  "Asia/Kathmandu",
  "America/St_Johns",
  "Pacific/Chatham",
  "America/Santiago",
] as const;

// The platform's reading, made here on its own.
const intlWall = (ms: number, zone: string) => {
  const parts = Object.fromEntries(
    new Intl.DateTimeFormat("en-US", {
      timeZone: zone,
      hourCycle: "h23",
      year: "numeric",
      month: "2-digit",
      day: "2-digit",
      hour: "2-digit",
      minute: "2-digit",
      second: "2-digit",
    }).formatToParts(ms).filter((p) => p.type !== "literal").map((p) => [p.type, Number(p.value)]),
  );
  return {
    year: parts.year,
    month: parts.month,
    day: parts.day,
    hour: parts.hour === 24 ? 0 : parts.hour,
    minute: parts.minute,
    second: parts.second,
  };
};

Deno.test("the wall clock of a zone at any instant is the platform's reading", () => {
  fc.assert(
    fc.property(
      fc.integer({ min: Date.UTC(1950, 0, 1), max: Date.UTC(2100, 0, 1) }),
      fc.constantFrom(...ZONES),
      (ms, zone) => assert.deepEqual(wallAt(ms, zone), intlWall(ms, zone)),
    ),
    { numRuns: 3000 },
  );
});

Deno.test("every second around a change of offset reads as the platform's", () => {
  const changes: ReadonlyArray<readonly [string, string]> = [
    ["America/New_York", "2026-03-08T07:00:00Z"],
    ["America/New_York", "2026-11-01T06:00:00Z"],
    ["Europe/London", "2026-03-29T01:00:00Z"],
    ["Europe/London", "2026-10-25T01:00:00Z"],
    ["Australia/Lord_Howe", "2026-04-04T15:00:00Z"],
    ["Pacific/Chatham", "2026-04-04T14:00:00Z"],
    // Changes off the quarter hours: local mean time to a standard offset.
    ["Asia/Shanghai", "1900-12-31T15:54:17Z"],
    ["Europe/Amsterdam", "1937-06-30T23:40:28Z"],
  ];
  for (const [zone, at] of changes) {
    const change = Date.parse(at);
    for (let ms = change - 3_600_000; ms <= change + 3_600_000; ms += 1000) {
      assert.deepEqual(
        wallAt(ms, zone),
        intlWall(ms, zone),
        `${zone} ${new Date(ms).toISOString()}`,
      );
    }
  }
});

Deno.test("instants within a second read as that second", () => {
  const at = Date.parse("2026-11-20T15:59:59Z");
  assert.deepEqual(wallAt(at + 999, "Asia/Shanghai"), {
    year: 2026,
    month: 11,
    day: 20,
    hour: 23,
    minute: 59,
    second: 59,
  });
  assert.deepEqual(wallAt(at + 1000, "Asia/Shanghai"), {
    year: 2026,
    month: 11,
    day: 21,
    hour: 0,
    minute: 0,
    second: 0,
  });
});
