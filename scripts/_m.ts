const rss = () =>
  Math.round(Number(/VmRSS:\s+(\d+)/.exec(Deno.readTextFileSync("/proc/self/status"))![1]) / 1024);
const mu = () => {
  const m = Deno.memoryUsage();
  return `rss ${rss()} heapUsed ${Math.round(m.heapUsed / 1048576)} heapTotal ${
    Math.round(m.heapTotal / 1048576)
  } ext ${Math.round(m.external / 1048576)}`;
};
console.log("start", mu());
await import("effect/Effect");
console.log("effect/Effect", mu());
await import("@effect/platform/HttpApiBuilder");
console.log("HttpApiBuilder", mu());
await import("@effect/platform/HttpApiScalar");
console.log("HttpApiScalar", mu());
await import("@effect/sql-pg/PgClient");
console.log("PgClient", mu());
await import("pg");
console.log("pg", mu());
await import("@electric-sql/pglite");
console.log("pglite", mu());
await import("../src/app.ts");
console.log("app", mu());
await import("../src/main.ts").catch(() => {});
