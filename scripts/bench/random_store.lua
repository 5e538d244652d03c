-- wrk script: per request a random store from a "store_id scope_id" list and a random window from
-- a "start end" list; prints BENCH_RESULT.
-- Arguments after "--": targets file, path template with {store}, {scope}, {start} and {end},
-- bearer key (empty: none), windows file (absent: the template names no window).

local threads = {}

function setup(thread)
  threads[#threads + 1] = thread
  thread:set("thread_no", #threads)
end

local headers = {}
-- The template with each pair's store and scope in it; each window's start and end.
local paths = {}
local starts = {}
local ends = {}
-- With one window or none every request is known in advance: made once.
local prepared = nil

local function lines(name, pattern, each)
  local file = assert(io.open(name, "r"))
  for line in file:lines() do
    local a, b = line:match(pattern)
    if a then each(a, b) end
  end
  file:close()
end

function init(args)
  if args[3] ~= nil and args[3] ~= "" then
    headers["Authorization"] = "Bearer " .. args[3]
  end
  lines(args[1], "^(%d+)%s+(%d+)", function(store, scope)
    paths[#paths + 1] = args[2]:gsub("{store}", store):gsub("{scope}", scope)
  end)
  assert(#paths > 0, "no store_id scope_id pairs in " .. args[1])
  if args[4] ~= nil and args[4] ~= "" then
    lines(args[4], "^(%d%d%d%d%-%d%d%-%d%d)%s+(%d%d%d%d%-%d%d%-%d%d)", function(s, e)
      starts[#starts + 1] = s
      ends[#ends + 1] = e
    end)
    assert(#starts > 0, "no start end windows in " .. args[4])
  end
  if #starts <= 1 then
    prepared = {}
    for i, path in ipairs(paths) do
      if #starts == 1 then path = path:gsub("{start}", starts[1]):gsub("{end}", ends[1]) end
      prepared[i] = wrk.format("GET", path, headers)
    end
  end
  -- Each thread has its own Lua state; without distinct seeds they would replay one sequence.
  math.randomseed(os.time() * 97 + thread_no)
end

function request()
  if prepared then return prepared[math.random(#prepared)] end
  local w = math.random(#starts)
  local path = paths[math.random(#paths)]:gsub("{start}", starts[w]):gsub("{end}", ends[w])
  return wrk.format("GET", path, headers)
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
