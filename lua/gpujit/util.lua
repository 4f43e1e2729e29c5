-- gpujit.util: what scripts around kernels need (docs/api.md, "gpujit.util"):
-- a monotonic clock, a median timing, and result checks that compare arrays
-- bitwise or within a number of ulps and say where and by how much they
-- differ.  Plain LuaJIT; it does not load the compiled core.
--
--   local util = require("gpujit.util")
--   local t = util.time(function() k:launch(n, x, y) end, 11)   -- median seconds
--   util.check("float", y, want, n, { ulps = 1 })                -- error if not
local ffi = require("ffi")

local M = {}

-- Private, asm-labelled names (docs/api.md, "FFI names"): gpujit claims no
-- libc name in ffi.C, so a program's own `clock_gettime` declaration, before
-- or after require("gpujit"), keeps its standard types.
pcall(ffi.cdef, "struct gj_util_timespec { long tv_sec; long tv_nsec; };")
pcall(ffi.cdef, [[int gj_util_clock_gettime(int clk, struct gj_util_timespec *ts)
  asm("clock_gettime");]])
local ts = ffi.new("struct gj_util_timespec")
local CLOCK_MONOTONIC = 1

-- Seconds on the monotonic wall clock (CLOCK_MONOTONIC): for intervals only.
-- os.clock() is CPU time, which adds up every thread of the cpu backend's pool.
function M.now()
  ffi.C.gj_util_clock_gettime(CLOCK_MONOTONIC, ts)
  return tonumber(ts.tv_sec) + tonumber(ts.tv_nsec) * 1e-9
end
local now = M.now

-- The median of a list of numbers (the list is left as it is; the lower
-- middle element for an even count).
function M.median(list)
  if type(list) ~= "table" or #list == 0 then
    error("bad argument #1 to 'median' (non-empty list of numbers expected)", 2)
  end
  local c = {}
  for i = 1, #list do c[i] = list[i] end
  table.sort(c)
  return c[math.floor((#c + 1) / 2)]
end

-- Seconds per call of fn: `warmup` calls (default 1: compiles, first-touch
-- costs) not timed, then the median of `runs` (default 5) timed calls.
-- Returns the median and the list of samples.
function M.time(fn, runs, warmup)
  if type(fn) ~= "function" then
    error("bad argument #1 to 'time' (function expected, got " .. type(fn) .. ")", 2)
  end
  runs = runs or 5
  if type(runs) ~= "number" or runs < 1 then
    error("bad argument #2 to 'time' (positive number of runs expected)", 2)
  end
  for _ = 1, warmup or 1 do fn() end
  local t = {}
  for r = 1, runs do
    local t0 = now()
    fn()
    t[r] = now() - t0
  end
  return M.median(t), t
end

---------------------------------------------------------------------------
-- Comparing numbers.

local fu = ffi.new("union { float f; int32_t i; }")
local du = ffi.new("union { double d; int64_t i; }")

local function fmt(v)
  if type(v) == "number" then
    if v ~= v then return "nan" end
    if v == math.floor(v) and math.abs(v) < 2 ^ 53 then return string.format("%.0f", v) end
    return string.format("%.17g", v)
  end
  return tostring(v)
end

-- The distance in units in the last place between a and b as floats
-- (ctype "float") or doubles (default): 0 when they are the same number
-- (nan counts as the same as nan; -0 and 0 are 1 ulp apart), math.huge when
-- only one is nan.
function M.ulps(a, b, ctype)
  a, b = tonumber(a), tonumber(b)
  if a ~= a or b ~= b then return (a ~= a and b ~= b) and 0 or math.huge end
  if ctype == "float" then
    fu.f = a; local ia = fu.i
    fu.f = b; local ib = fu.i
    if ia < 0 then ia = -1 - (ia + 2147483648) end
    if ib < 0 then ib = -1 - (ib + 2147483648) end
    return math.abs(ia - ib)
  end
  du.d = a; local ia = du.i
  du.d = b; local ib = du.i
  local min = -9223372036854775807LL - 1
  if ia < 0 then ia = -1 - (ia - min) end
  if ib < 0 then ib = -1 - (ib - min) end
  local d = ia - ib
  if d < 0 then d = -d end
  return tonumber(d)
end

local is_float = { float = true, double = true }

-- Element i (0-based) of an FFI array or a Lua table (1-based: t[i + 1]),
-- or f(i) for a function.
local function elem(a, i)
  local ta = type(a)
  if ta == "function" then return a(i) end
  if ta == "table" then return a[i + 1] end
  return a[i]
end

local function length_of(a)
  if type(a) == "table" then return #a end
  if type(a) == "cdata" then
    local base = tostring(ffi.typeof(a)):match("^ctype<(.-)%s*%[[%d?]*%]>$")
    local ok, n = pcall(function() return ffi.sizeof(a) / ffi.sizeof(base) end)
    if base and ok then return n end
  end
  return nil
end

-- Compare n elements of got with expected (each an FFI array, a Lua table or,
-- for expected, a function of the 0-based index) as ctype elements.
--   opts.ulps: the distance allowed for float/double (default 0: bitwise,
--     so -0 ~= 0 and nan == nan);
--   opts.label: a name for the message (default "result").
-- Returns true, or false and a message naming the first differing index,
-- both values, their distance, and how many elements differ.
function M.compare(ctype, got, expected, n, opts)
  if type(ctype) ~= "string" then
    error("bad argument #1 to 'compare' (element type name expected, got " .. type(ctype) .. ")", 2)
  end
  n = n or length_of(got)
  if type(n) ~= "number" then
    error("bad argument #4 to 'compare' (element count expected: got has no length)", 2)
  end
  opts = opts or {}
  local ulps, label = opts.ulps or 0, opts.label or "result"
  local box = ffi.new(ctype .. "[1]")
  local bad, first, fg, fe, fd = 0, nil, nil, nil, nil
  for i = 0, n - 1 do
    local g, e = elem(got, i), elem(expected, i)
    box[0] = e            -- the expected value as the element type
    e = box[0]
    local d
    if is_float[ctype] then
      d = M.ulps(g, e, ctype)
    else
      d = (g == e) and 0 or math.huge
    end
    if d > ulps then
      bad = bad + 1
      if not first then first, fg, fe, fd = i, g, e, d end
    end
  end
  if bad == 0 then return true end
  local dist = is_float[ctype] and (", " .. fmt(fd) .. " ulps apart") or ""
  return false, string.format("%s[%d] is %s, expected %s%s (%d of %d %s elements differ%s)",
    label, first, fmt(fg), fmt(fe), dist, bad, n, ctype,
    is_float[ctype] and (", " .. fmt(ulps) .. " ulps allowed") or "")
end

-- compare, raising the message as an error (at the caller's line) when the
-- arrays differ; returns true otherwise.
function M.check(ctype, got, expected, n, opts)
  local ok, msg = M.compare(ctype, got, expected, n, opts)
  if not ok then error(msg, 2) end
  return true
end

return M
