-- gpujit.stream: streams (gpu.stream), their launches' bookkeeping on the
-- Lua side, and synchronize (docs/api.md, "Streams").
--
-- A stream object is a table { h = the core's gj_queue (cdata, freed by its
-- finalizer, which waits first), tgt = its target, n, pend, staged, order }.
-- Each launch on it (gpujit.launcher's async launchers) pushes an entry: the
-- kernel, its overload (whose handle keeps the loaded kernel alive), the
-- closure that releases its host registrations, and its arguments; each
-- copy on it (gpujit.array) one with the closure that finishes it.  The
-- tables and arrays the launches stage are in `staged` (by table or array,
-- one staging per stream) and `order` (as made), each with `back`, which
-- copies the result back.  A stream with launches not yet synchronized is
-- held in `busy`, so that neither it nor what its launches use can be
-- collected while they run, whatever the program drops.  synchronize waits
-- (gj_stream_wait), then for each launch in order prints its records, runs
-- its closure and notes its error, copies the stagings back, and raises
-- the first error after all of that: no launch's results are lost to an
-- earlier one's error.
local ffi = require("ffi")
local printer = require("gpujit.printer")
require("gpujit.cdefs")

local M = {}

-- Filled by gpujit (init.lua): lib, ctx, current(fname, level) -> target,
-- resolve(device, fname, level) -> target, fail_text(K, msg) -> the message
-- a failed launch of K raises, hold(v) / release(v): a gpu.array v is in use
-- by a launch (gpujit.array).
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
local busy = {}                                   -- streams with launches pending

-- gpu.stream([device]) -> a stream on the current (or the given) device.
function M.new(device)
  local tgt
  if device == nil then tgt = env.current("gpu.stream", 2)
  else tgt = env.resolve(device, "gpu.stream", 2) end
  local s = { tgt = tgt, n = 0, pend = {}, staged = {}, order = {} }
  if not tgt.sim then
    local lib = env.lib
    local h = lib.gj_stream_new(env.ctx, tgt.bk, tgt.dev)
    if h == nil then error("gpu.stream: " .. ffi.string(lib.gj_errmsg(env.ctx)), 2) end
    s.h = ffi.gc(h, lib.gj_stream_free)
  end
  live[s] = true
  return setmetatable(s, mt)
end

function M.is_stream(v)
  return type(v) == "table" and live[v] == true
end

-- A launch enqueued on s (called by the async launchers).
function M.push(s, K, ov, done, keep)
  local n = s.n + 1
  s.n = n
  s.pend[n] = { K = K, ov = ov, done = done, keep = keep }
  for i = 1, #keep do env.hold(keep[i]) end
  busy[s] = true
end

-- A copy of bytes from src to dst enqueued on s (dir: 0 to the device, 1
-- to the host; gpujit.array); keep: what it uses; done: what to do at
-- synchronize (nil: nothing).  Raises on failure, with what at the front.
function M.copy(s, dst, src, bytes, dir, keep, done, what, level)
  local lib = env.lib
  if s.h == nil then error("gpujit internal error: a copy on a stream of sim", 0) end
  if lib.gj_stream_copy(s.h, dst, src, bytes, dir) ~= 0 then
    error(what .. ": " .. ffi.string(lib.gj_errmsg(env.ctx)), level + 1)
  end
  local n = s.n + 1
  s.n = n
  s.pend[n] = { done = done, keep = keep, what = what }
  for i = 1, #keep do env.hold(keep[i]) end
  busy[s] = true
end

local function sync(s)
  local n = s.n
  if n == 0 then return nil end
  local lib, ctx, h = env.lib, env.ctx, s.h
  local got = lib.gj_stream_wait(h)
  local first
  for i = 1, n do
    local e = s.pend[i]
    local prints = e.ov and e.ov.info and e.ov.info.prints
    if prints then printer.flush_stream(e.K, lib, h, i - 1, prints) end
    if lib.gj_stream_status(h, i - 1) ~= 0 and not first then
      local msg = ffi.string(lib.gj_errmsg(ctx))
      first = e.K and env.fail_text(e.K, msg) or (e.what .. ": " .. msg)
    end
    if e.done then
      local ok, err = pcall(e.done)
      if not ok and not first then first = tostring(err) end
    end
    for j = 1, #e.keep do env.release(e.keep[j]) end
    s.pend[i] = nil
  end
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
  for k, v in pairs(s.tgt.entry) do c[k] = v end
  return c
end

-- gpu.synchronize(): every stream; then the first error, if any.
function M.synchronize_all()
  local first
  for s in pairs(busy) do
    local err = sync(s)
    first = first or err
  end
  return first
end

return M
