-- wrk script: a random store per request from a "store_id scope_id" list; prints BENCH_RESULT.
-- Arguments after "--": targets file, path template with {store} and {scope}, bearer key.

local threads = {}

function setup(thread)
  threads[#threads + 1] = thread
  thread:set("thread_no", #threads)
end

local prepared = {}

function init(args)
  local headers = {}
  if args[3] ~= nil and args[3] ~= "" then
    headers["Authorization"] = "Bearer " .. args[3]
  end
  local file = assert(io.open(args[1], "r"))
  for line in file:lines() do
    local store, scope = line:match("^(%d+)%s+(%d+)")
    if store then
      local path = args[2]:gsub("{store}", store):gsub("{scope}", scope)
      prepared[#prepared + 1] = wrk.format("GET", path, headers)
    end
  end
  file:close()
  assert(#prepared > 0, "no store_id scope_id pairs in " .. args[1])
  -- Each thread has its own Lua state; without distinct seeds they would replay one sequence.
  math.randomseed(os.time() * 97 + thread_no)
end

function request()
  return prepared[math.random(#prepared)]
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    "BENCH_RESULT requests=%d duration_us=%d bytes=%d p50_us=%d p90_us=%d p99_us=%d max_us=%d " ..
      "non2xx=%d connect=%d read=%d write=%d timeout=%d\n",
    summary.requests, summary.duration, summary.bytes,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max,
    e.status, e.connect, e.read, e.write, e.timeout))
end
