-- gpujit.stream: streams (gpu.stream), their launches' bookkeeping on the
-- Lua side, and synchronize (docs/api.md, "Streams").
--
-- A stream object is a table { h = the core's gj_stream (cdata, freed by its
-- finalizer, which waits first), tgt = its target, n, pk, pov, pdone,
-- pwhat, keep, nkeep, held, nheld, staged, order }.  Entry i (1..n) is a
-- launch or a copy not yet synchronized, in flat arrays (no table per
-- launch: a launch on a stream costs what the runtime's enqueue does): pk[i]
-- the kernel (false for a copy), pov[i] its overload (whose handle keeps the
-- loaded kernel alive), pdone[i] the closure to run at synchronize (the
-- release of a launch's host registrations, what finishes a copy; false:
-- none), pwhat[i] a copy's description.  keep[1..nkeep] holds what the
-- entries use (alive until synchronize), held[1..nheld] the gpu.arrays among
-- them, each counted in use (gpujit.array) once per entry.  The
-- tables and arrays the launches stage are in `staged` (by table or array,
-- one staging per stream) and `order` (as made), each with `back`, which
-- copies the result back.  A stream with launches not yet synchronized is
-- held in `busy`, so that neither it nor what its launches use can be
-- collected while they run, whatever the program drops.  synchronize waits
-- (gj_stream_wait), then for each launch in order prints its records, runs
-- its closure and notes its error, copies the stagings back, and raises
-- the first error after all of that: no launch's results are lost to an
-- earlier one's error.
local each = pairs   -- each(t), never pairs(t), in loops: docs/reliability.md, "pairs loops"
local ffi = require("ffi")
local printer = require("gpujit.printer")
require("gpujit.cdefs")

local M = {}

-- Filled by gpujit (init.lua): lib, ctx, current(fname, level) -> target,
-- resolve(device, fname, level) -> target, fail_text(K, msg) -> the message
-- a failed launch of K raises, use(v) / release(v): the gpu.array v is in
-- use by a launch (gpujit.array), is_garray(v).
local env = {}
function M.setup(e)
  env = e
end

local methods = {}
local mt = { __index = methods, __metatable = "gpu.stream" }
mt.__tostring = function(s)
  return "gpu.stream on " .. s.tgt.label .. (s.n > 0 and (" (" .. s.n .. " launches pending)") or "")
end

local live = setmetatable({}, { __mode = "k" })   -- every stream, for gpu.synchronize

-- Handles that finalizers may outlive.  A stream's or an event's core
-- handle is freed by its cdata finalizer, and at lua_close LuaJIT runs
-- every cdata finalizer first, whatever still refers to the object: a
-- program's own finalizer (a cdata's or a userdata's) that runs later and
-- uses the stream or event would use freed memory.  So the finalizer marks
-- the object's `box` closed before it frees the handle, and every use checks
-- it (M.closed): a closed stream or event raises "... is closed" instead.
-- The box, not the object, is what the finalizer refers to: a finalizer
-- that referred to its own handle's owner would keep both alive for ever.
local function closing(free, box)
  return function(h)
    box.closed = true
    free(h)
  end
end

local CLOSED = "is closed (its handle was finalized: the program is ending)"

-- Does s (a stream or an event) have a freed handle?
function M.closed(s)
  return s.box ~= nil and s.box.closed == true
end

local function check_open(s, what, level)
  if M.closed(s) then error(what .. ": the " .. (s.stream and "event" or "stream") .. " " .. CLOSED,
    level + 1) end
end
M.check_open = check_open
local busy = {}                                   -- streams with launches pending

-- gpu.stream([device]) -> a stream on the current (or the given) device.
function M.new(device)
  local tgt
  if device == nil then tgt = env.current("gpu.stream", 2)
  else tgt = env.resolve(device, "gpu.stream", 2) end
  local s = { tgt = tgt, n = 0, pk = {}, pov = {}, pdone = {}, pwhat = {}, keep = {}, nkeep = 0,
              held = {}, nheld = 0, staged = {}, order = {} }
  if not tgt.sim then
    local lib = env.lib
    local h = lib.gj_stream_new(env.ctx, tgt.bk, tgt.dev)
    if h == nil then error("gpu.stream: " .. ffi.string(lib.gj_errmsg(env.ctx)), 2) end
    s.box = {}
    s.h = ffi.gc(h, closing(lib.gj_stream_free, s.box))
  end
  live[s] = true
  return setmetatable(s, mt)
end

function M.is_stream(v)
  return type(v) == "table" and live[v] == true
end

-- A launch of K (overload ov) enqueued on s (called by the async
-- launchers, which then keep its arguments with M.keep and M.use); done: a
-- closure to run at synchronize, or false.
function M.push(s, K, ov, done)
  local n = s.n + 1
  s.n = n
  s.pk[n], s.pov[n], s.pdone[n] = K, ov, done
  if n == 1 then busy[s] = true end
end

-- v stays alive until s's synchronize.
function M.keep(s, v)
  local k = s.nkeep + 1
  s.nkeep = k
  s.keep[k] = v
end

-- The gpu.array v is in use by the last entry until s's synchronize.
function M.use(s, v)
  local k = s.nheld + 1
  s.nheld = k
  s.held[k] = v
  env.use(v)
end

-- A copy of bytes from src to dst enqueued on s (dir: 0 to the device, 1
-- to the host; gpujit.array); keep: what it uses; done: what to do at
-- synchronize (nil: nothing).  Raises on failure, with what at the front.
function M.copy(s, dst, src, bytes, dir, keep, done, what, level)
  local lib = env.lib
  if s.h == nil then error("gpujit internal error: a copy on a stream of sim", 0) end
  check_open(s, what, level + 1)
  if lib.gj_stream_copy(s.h, dst, src, bytes, dir) ~= 0 then
    error(what .. ": " .. ffi.string(lib.gj_errmsg(env.ctx)), level + 1)
  end
  M.push(s, false, false, done or false)
  s.pwhat[s.n] = what
  for i = 1, #keep do
    local v = keep[i]
    M.keep(s, v)
    if env.is_garray(v) then M.use(s, v) end
  end
end

local function sync(s)
  local n = s.n
  if n == 0 then return nil end
  if M.closed(s) then
    s.n = 0
    busy[s] = nil
    return "synchronize: the stream " .. CLOSED
  end
  local lib, ctx, h = env.lib, env.ctx, s.h
  local got = lib.gj_stream_wait(h)
  local first
  local pk, pov, pdone, pwhat = s.pk, s.pov, s.pdone, s.pwhat
  for i = 1, n do
    local K, ov, done = pk[i], pov[i], pdone[i]
    local prints = ov and ov.info and ov.info.prints
    if prints then printer.flush_stream(K, lib, h, i - 1, prints) end
    if lib.gj_stream_status(h, i - 1) ~= 0 and not first then
      local msg = ffi.string(lib.gj_errmsg(ctx))
      first = K and env.fail_text(K, msg) or (pwhat[i] .. ": " .. msg)
    end
    if done then
      local ok, err = pcall(done)
      if not ok and not first then first = tostring(err) end
    end
    pk[i], pov[i], pdone[i], pwhat[i] = nil, nil, nil, nil
  end
  local held, keep = s.held, s.keep
  for j = 1, s.nheld do
    env.release(held[j])
    held[j] = nil
  end
  for j = 1, s.nkeep do keep[j] = nil end
  s.nheld, s.nkeep = 0, 0
  -- the stagings the launches wrote, newest first: a device buffer before
  -- the table's host buffer it stages
  local order = s.order
  for i = #order, 1, -1 do
    local st = order[i]
    if st.written then
      local ok, err = pcall(st.back)
      if not ok and not first then first = tostring(err) end
    end
    order[i] = nil
  end
  s.staged = {}
  if not first and lib.gj_stream_status(h, -1) ~= 0 then
    first = "stream on " .. s.tgt.label .. ": " .. ffi.string(lib.gj_errmsg(ctx))
  end
  if not first and got ~= n then
    first = "gpujit internal error: the stream had " .. tonumber(got) .. " launches, expected " .. n
  end
  lib.gj_stream_done(h)
  s.n = 0
  busy[s] = nil
  return first
end

-- s:synchronize(): wait for every launch made on s; raises the first error.
function methods.synchronize(s)
  if getmetatable(s) ~= "gpu.stream" then
    error("bad argument #1 to 'synchronize' (gpu.stream expected, got " .. type(s)
      .. "): call it with a colon, s:synchronize()", 2)
  end
  local err = sync(s)
  if err then error(err, 0) end   -- as a launch without a stream raises it
end

-- s:pending(): the launches made on s since its last synchronize.
function methods.pending(s)
  return s.n
end

function methods.device(s)
  local c = {}
  for k, v in each(s.tgt.entry) do c[k] = v end
  return c
end

---------------------------------------------------------------------------
-- Events: s:record() -> a point in s's work.  { h = the core's event
-- (cdata, freed by its finalizer), tgt, stream } or, on sim (whose launches
-- run when they are made), { sim = true, t = the host's clock }.

local ev_methods = {}
local ev_mt = { __index = ev_methods, __metatable = "gpu.event" }
ev_mt.__tostring = function(e) return "gpu.event on " .. e.tgt.label end
local ms_out = ffi.new("double[1]")

local function is_event(v)
  return type(v) == "table" and getmetatable(v) == "gpu.event"
end

local function check_self(s, fname)
  if getmetatable(s) ~= "gpu.stream" then
    error("bad argument #1 to '" .. fname .. "' (gpu.stream expected, got " .. type(s)
      .. "): call it with a colon, s:" .. fname .. "(...)", 3)
  end
end

local function check_event(e, fname, argn)
  if not is_event(e) then
    error("bad argument #" .. argn .. " to '" .. fname .. "' (gpu.event expected, got "
      .. type(e) .. ")", 3)
  end
end

local function core_err(what)
  error(what .. ": " .. ffi.string(env.lib.gj_errmsg(env.ctx)), 3)
end

-- s:record(): an event that finishes when the work enqueued on s so far has.
function methods.record(s)
  check_self(s, "record")
  local e = { tgt = s.tgt, stream = s }
  if s.tgt.sim then
    e.sim, e.t = true, env.now()
  else
    check_open(s, "record", 2)
    local h = env.lib.gj_event_record(s.h)
    if h == nil then core_err("record") end
    e.box = {}
    e.h = ffi.gc(h, closing(env.lib.gj_event_free, e.box))
  end
  return setmetatable(e, ev_mt)
end

-- s:wait(e): what is enqueued on s from now on starts after e has finished.
function methods.wait(s, e)
  check_self(s, "wait")
  check_event(e, "wait", 2)
  check_open(s, "wait", 2)
  check_open(e, "wait", 2)
  if e.sim or s.tgt.sim then
    if not e.sim and env.lib.gj_event_sync(e.h) ~= 0 then core_err("wait") end
    return
  end
  if env.lib.gj_stream_wait_event(s.h, e.h) ~= 0 then core_err("wait") end
end

-- e:query(): has it finished?  (Never waits.)
function ev_methods.query(e)
  check_event(e, "query", 1)
  check_open(e, "query", 2)
  if e.sim then return true end
  local r = env.lib.gj_event_query(e.h)
  if r < 0 then core_err("query") end
  return r == 1
end

-- e:synchronize(): the host waits until it has finished.
function ev_methods.synchronize(e)
  check_event(e, "synchronize", 1)
  check_open(e, "synchronize", 2)
  if not e.sim and env.lib.gj_event_sync(e.h) ~= 0 then core_err("synchronize") end
end

-- start:elapsed(stop): milliseconds from start to stop, on the device's
-- clock (waits for both).
function ev_methods.elapsed(a, b)
  check_event(a, "elapsed", 1)
  check_event(b, "elapsed", 2)
  check_open(a, "elapsed", 2)
  check_open(b, "elapsed", 2)
  if a.sim or b.sim then
    if not (a.sim and b.sim) then
      error("elapsed: the events are on different devices (their clocks differ)", 2)
    end
    return (b.t - a.t) * 1e3
  end
  if env.lib.gj_event_elapsed(a.h, b.h, ms_out) ~= 0 then core_err("elapsed") end
  return ms_out[0]
end

M.is_event = is_event

-- gpu.synchronize(): every stream; then the first error, if any.
function M.synchronize_all()
  local first
  for s in each(busy) do
    local err = sync(s)
    first = first or err
  end
  return first
end

return M
