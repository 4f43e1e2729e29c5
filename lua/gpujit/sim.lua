-- gpujit.sim: the "sim" backend.  It runs a kernel's own Lua function work
-- item by work item, one work group after another, so that every kernel has
-- a reference result that LuaJIT itself computes.
--
-- Each work item of a group runs in a coroutine (a small pool of them is
-- reused from item to item): gpu.barrier() is a yield, and a group resumes
-- its items round by round, so every item reaches a barrier before any goes
-- past it.  gpu.shared() hands the k-th call of every item of a group the
-- group's k-th array.  Atomics are plain read-modify-write (the simulator is
-- sequential, so they are exact).  Numbers stay Lua doubles.
--
-- The intrinsic functions below are also the values of gpu.global_id etc.;
-- the compiler core recognizes them by identity.
local bit = require("bit")
local ffi = require("ffi")
local types = require("gpujit.types")

local M = {}

local type, tonumber, error, tostring = type, tonumber, error, tostring
local co_create, co_resume, co_yield = coroutine.create, coroutine.resume, coroutine.yield
local unpack = unpack
local tobit = bit.tobit

local DONE, BARRIER = {}, {}

-- The work item that runs now: { gid = {[0]=x,y,z}, lid = {...},
-- group = { gid = {...}, shared = {...} }, launch = {...}, nshared = k }.
local cur = nil

local function outside(name)
  error("gpu." .. name .. " called outside a kernel", 3)
end

local function baddim(name, d)
  error("gpu." .. name .. ": dimension must be 0, 1 or 2, got " .. tostring(d), 3)
end

-- The id functions differ only in the table of the work item they read.
-- Each is its own function object: the compiler knows them by identity.
local function id_function(name, ids_of)
  return function(d)
    local w = cur
    if w == nil then outside(name) end
    local v = ids_of(w)[d or 0]
    if v == nil then baddim(name, d) end
    return v
  end
end

M.global_id = id_function("global_id", function(w) return w.gid end)
M.local_id = id_function("local_id", function(w) return w.lid end)
M.group_id = id_function("group_id", function(w) return w.group.gid end)
M.group_size = id_function("group_size", function(w) return w.launch.lsize end)
M.num_groups = id_function("num_groups", function(w) return w.launch.ngroups end)
M.global_size = id_function("global_size", function(w) return w.launch.gsize end)

local function shape(t, ndim)
  if ndim == 1 then return tostring(t[0]) end
  local s = "{" .. t[0] .. ", " .. t[1]
  if ndim == 3 then s = s .. ", " .. t[2] end
  return s .. "}"
end

function M.barrier()
  local w = cur
  if w == nil then outside("barrier") end
  local L = w.launch
  if L.partial then
    error("gpu.barrier(): kernel '" .. L.name .. "' must be launched with global a multiple of "
      .. "group in every dimension (global " .. shape(L.gsize, L.ndim) .. ", group "
      .. shape(L.lsize, L.ndim) .. ")", 2)
  end
  co_yield(BARRIER)
end

local function check_count(name, n)
  if type(n) ~= "number" or n < 0 or n % 1 ~= 0 then
    error("gpu." .. name .. ": size must be a non-negative integer, got " .. tostring(n), 3)
  end
end

local function ctype_key(ctype)
  if type(ctype) == "string" then return types.scalar(ctype) or ctype end
  if type(ctype) == "cdata" then return tonumber(ctype) end
  error("gpu.shared: ctype must be a type name or an FFI ctype, got " .. type(ctype), 3)
end

-- Bounds-checked launches (boundscheck): an array becomes a proxy that
-- checks every index and raises the compiled backends' message at the
-- kernel's line.  A userdata, so that # works on it.
local function oob(i, n, base, what, level)
  local msg = "index " .. tostring(i) .. " is out of bounds for " .. what .. " (length " .. n
  if n > 0 then msg = msg .. ", valid indices " .. base .. ".." .. (n - 1 + base) end
  error(msg .. ")", level)
end

-- dims: the dimensions below the first of a multi-dimensional array (its
-- rows are checked too, each message naming its dimension); level: the
-- dimension a is (1 when omitted).
function M.checked(a, n, base, what, dims, level)
  local p = newproxy(true)
  local mt = getmetatable(p)
  level = level or 1
  local label = dims and ("dimension " .. level .. " of " .. what) or what
  local rows = dims and level <= #dims
  -- a number, or an integer cdata (int64_t, uint64_t: FFI arrays take it)
  local function ok(i)
    if type(i) == "cdata" then i = tonumber(i) end
    return type(i) == "number" and i >= base and i < n + base
  end
  mt.__index = function(_, i)
    if not ok(i) then oob(i, n, base, label, 3) end
    if rows then return M.checked(a[i], dims[level], 0, what, dims, level + 1) end
    return a[i]
  end
  mt.__newindex = function(_, i, v)
    if not ok(i) then oob(i, n, base, label, 3) end
    if type(v) == "userdata" then   -- a row, checked: its array (a[y] = b[x] copies it)
      local m = getmetatable(v)
      if type(m) == "table" and m.array ~= nil then v = m.array end
    end
    a[i] = v
  end
  mt.__len = function() return n end
  mt.__tostring = function() return "checked " .. what end
  mt.array = a
  -- for the atomics, whose index must fail at the kernel's line too
  mt.ok, mt.n, mt.base, mt.what = ok, n, base, label
  return p
end

-- An atomic's index on a checked array (the error at the kernel's line).
local function check_atomic(a, i)
  local mt = getmetatable(a)
  if not mt.ok(i) then oob(i, mt.n, mt.base, mt.what, 4) end
end

local function new_array(name, ctype, n)
  local ok, ct = pcall(types.vla, ctype)
  if not ok then
    error("gpu." .. name .. ": bad element type " .. tostring(ctype) .. ": " .. tostring(ct), 3)
  end
  local a = ct(n)
  if cur.launch.checked then
    a = M.checked(a, n, 0, name == "shared" and "a gpu.shared array" or "a gpu.local_array")
  end
  return a
end

-- Never compiled into a trace: LuaJIT 2.1.0-beta3's allocation sinking
-- turns a sunk VLA of 8-byte elements (gpu.local_array("int64_t", 1) in a
-- loop of launches) into wrong values and segmentation faults; `-O-sink`
-- or this makes them go away (the sim backend is for debugging).
jit.off(new_array)

function M.shared(ctype, n)
  local w = cur
  if w == nil then outside("shared") end
  check_count("shared", n)
  local k = w.nshared + 1
  w.nshared = k
  local G = w.group
  local a = G.shared[k]
  local key = ctype_key(ctype)
  if a == nil then
    a = new_array("shared", ctype, n)
    G.shared[k], G.skey[k], G.sn[k] = a, key, n
  elseif G.skey[k] ~= key or G.sn[k] ~= n then
    error("gpu.shared: call #" .. k .. " asks for (" .. tostring(ctype) .. ", " .. n
      .. ") but another work item of the group asked for (" .. tostring(G.skey[k]) .. ", "
      .. G.sn[k] .. ")", 2)
  end
  return a
end

function M.local_array(ctype, n)
  if cur == nil then outside("local_array") end
  check_count("local_array", n)
  return new_array("local_array", ctype, n)
end

-- Atomics.  The element type decides the wrapping: FFI stores of an
-- out-of-range double into int32_t give INT_MIN, so int32 results are
-- wrapped with bit.tobit; smaller and unsigned types wrap in the store;
-- 64-bit integers are cdata and wrap in their own arithmetic.
local function elem_of(a)
  if type(a) == "userdata" then a = getmetatable(a).array end
  if type(a) == "cdata" then
    local info = types.ctype_info(a)
    if info then return info.elem end
  end
  return nil
end

local function store(a, i, v)
  if elem_of(a) == "int32_t" then v = tobit(v) end
  a[i] = v
end

-- An atomic's operand as the element type holds it (kernels.md, "Work
-- groups"): a whole number modulo 2^bits, as the compiled code converts an
-- integer operand; another number as a store into the array converts it.
-- (A whole number the compiled code holds as a double, beyond the element's
-- range, it converts as a store: sim, whose numbers are all doubles, cannot
-- tell the two apart.)  Tables (no element type) keep the number.
local scratch = {}
local function operand(a, v)
  local e = elem_of(a)
  if e == nil or type(v) ~= "number" then return v end
  if v % 1 == 0 and v > -2 ^ 63 and v < 2 ^ 63 then
    if e == "int32_t" then return tobit(v) end
    if e == "uint32_t" then return v % 4294967296 end
  end
  local sc = scratch[e]
  if sc == nil then
    sc = ffi.new(e .. "[1]")
    scratch[e] = sc
  end
  sc[0] = v
  return sc[0]
end

local function atomic(name, op)
  M[name] = function(a, i, v)
    if cur == nil then outside(name) end
    if type(a) == "userdata" then check_atomic(a, i) end
    local old = a[i]
    store(a, i, op(old, operand(a, v)))
    return old
  end
end

atomic("atomic_add", function(o, v) return o + v end)
atomic("atomic_sub", function(o, v) return o - v end)
atomic("atomic_min", function(o, v) if v < o then return v end return o end)
atomic("atomic_max", function(o, v) if v > o then return v end return o end)
atomic("atomic_and", function(o, v) return bit.band(o, v) end)
atomic("atomic_or", function(o, v) return bit.bor(o, v) end)
atomic("atomic_xor", function(o, v) return bit.bxor(o, v) end)
atomic("atomic_xchg", function(_, v) return v end)

function M.atomic_cas(a, i, expected, new)
  if cur == nil then outside("atomic_cas") end
  if type(a) == "userdata" then check_atomic(a, i) end
  local old = a[i]
  if old == operand(a, expected) then store(a, i, new) end
  return old
end

-- gpu.derivative(f, x, ...) and gpu.gradient(f, a, b, ...) (docs/autodiff.md,
-- "Inside kernels"): dual numbers, gpujit.adsim's, which sets M.inner_ad
-- when it is loaded (with gpujit).  They also work outside kernels.
local function pass(...) return ... end
local function inner_ad(name)
  M[name] = function(...)
    return pass(M.inner_ad[name](...))   -- not a tail call: errors name the caller's line
  end
end
inner_ad("derivative")
inner_ad("gradient")

M.intrinsics = {
  "global_id", "local_id", "group_id", "group_size", "num_groups", "global_size",
  "barrier", "shared", "local_array",
  "atomic_add", "atomic_sub", "atomic_min", "atomic_max", "atomic_and", "atomic_or",
  "atomic_xor", "atomic_xchg", "atomic_cas", "derivative", "gradient",
}

---------------------------------------------------------------------------
-- Running a launch.

-- The group size the simulator picks when the launch gives none: per
-- dimension the largest divisor of global that is at most 64 (1-D), 8 (2-D)
-- or 4 (3-D), so that a kernel with barriers always runs.
local function pick_group(g, ndim)
  local cap = ndim == 1 and 64 or ndim == 2 and 8 or 4
  if g <= cap then return g > 0 and g or 1 end
  for s = cap, 1, -1 do
    if g % s == 0 then return s end
  end
  return 1
end
M.pick_group = pick_group

local function where(w, ndim)
  if ndim == 1 then return tostring(w.gid[0]) end
  local s = "(" .. w.gid[0] .. ", " .. w.gid[1]
  if ndim == 3 then s = s .. ", " .. w.gid[2] end
  return s .. ")"
end

-- assert and error in kernels: while a work item runs, the globals assert
-- and error (see run) raise a FAIL table naming the call's file:line and
-- message; the item ends there, the launch goes on, and the smallest
-- failing work item (the linear global id, the compiled backends' order)
-- is raised after it, in the compiled backends' words (src/gj_fault.c).
local FAIL = {}

local function linear(w)
  local gs = w.launch.gsize
  return w.gid[0] + gs[0] * (w.gid[1] + gs[1] * w.gid[2])
end

local function fail_text(f, L)
  return f.where .. ": " .. f.text .. " (work item " .. string.format("%d", f.item)
    .. ") (in kernel " .. L.name .. ")"
end

local function rethrow(msg, w, L)
  if type(msg) == "string" then
    msg = msg .. " (in kernel '" .. L.name .. "', sim work item " .. where(w, L.ndim) .. ")"
  end
  error(msg, 0)
end

-- Run fn over a launch.  global, group: {[0]=x, y, z} (group nil or
-- group[0] == 0: the simulator chooses); ndim 1..3; argv[1..nargs] are
-- passed to every work item as they are; checked: gpu.shared and
-- gpu.local_array arrays are bounds-checked (M.checked).
local function run_items(fn, ndim, global, group, argv, nargs, name, checked)
  local gsize = { [0] = global[0], global[1] or 1, global[2] or 1 }
  if ndim < 2 then gsize[1] = 1 end
  if ndim < 3 then gsize[2] = 1 end
  local lsize = {}
  if group == nil or group[0] == 0 then
    for d = 0, 2 do lsize[d] = pick_group(gsize[d], ndim) end
  else
    for d = 0, 2 do lsize[d] = d < ndim and group[d] or 1 end
  end
  local ngroups, partial = {}, false
  for d = 0, 2 do
    local g, l = gsize[d], lsize[d]
    if l < 1 or l % 1 ~= 0 then error("sim: bad group size " .. tostring(l), 0) end
    ngroups[d] = math.ceil(g / l)
    if g % l ~= 0 then partial = true end
  end
  if gsize[0] * gsize[1] * gsize[2] == 0 then return end
  local L = { fn = fn, argv = argv, nargs = nargs or #argv, name = name or "?", ndim = ndim,
              gsize = gsize, lsize = lsize, ngroups = ngroups, partial = partial,
              checked = checked }

  local function body()
    while true do
      L.fn(unpack(L.argv, 1, L.nargs))
      co_yield(DONE)
    end
  end

  local pool, recs, st = {}, {}, {}
  local saved = cur
  local lsx, lsy, lsz = lsize[0], lsize[1], lsize[2]
  local gsx, gsy, gsz = gsize[0], gsize[1], gsize[2]
  for gz = 0, ngroups[2] - 1 do
    for gy = 0, ngroups[1] - 1 do
      for gx = 0, ngroups[0] - 1 do
        local G = { gid = { [0] = gx, gy, gz }, shared = {}, skey = {}, sn = {} }
        local m = 0
        for lz = 0, lsz - 1 do
          local z = gz * lsz + lz
          if z < gsz then
            for ly = 0, lsy - 1 do
              local y = gy * lsy + ly
              if y < gsy then
                for lx = 0, lsx - 1 do
                  local x = gx * lsx + lx
                  if x < gsx then
                    m = m + 1
                    local w = recs[m]
                    if w == nil then
                      w = { gid = {}, lid = {}, launch = L }
                      recs[m] = w
                    end
                    w.gid[0], w.gid[1], w.gid[2] = x, y, z
                    w.lid[0], w.lid[1], w.lid[2] = lx, ly, lz
                    w.group, w.nshared = G, 0
                    st[m] = nil
                  end
                end
              end
            end
          end
        end
        -- Rounds: every live item runs to its next barrier or to its end.
        while true do
          local nbar, ndone = 0, 0
          for k = 1, m do
            if st[k] ~= DONE then
              local co = pool[k]
              if co == nil then
                co = co_create(body)
                pool[k] = co
              end
              local w = recs[k]
              cur = w
              local ok, r = co_resume(co)
              cur = saved
              if not ok and type(r) == "table" and r.kind == FAIL then
                pool[k] = nil
                r.item = linear(w)
                if L.fail == nil or r.item < L.fail.item then L.fail = r end
                r = DONE
              elseif not ok then
                pool[k] = nil
                rethrow(r, w, L)
              end
              st[k] = r
              if r == BARRIER then nbar = nbar + 1 else ndone = ndone + 1 end
            end
          end
          if nbar == 0 then break end
          if ndone > 0 and L.fail then error(fail_text(L.fail, L), 0) end
          if ndone > 0 then
            error("gpu.barrier(): in kernel '" .. L.name .. "', work group " .. where(G, ndim)
              .. ": " .. ndone .. " work item(s) ended while " .. nbar
              .. " waited at a barrier (a barrier must be reached by every work item of"
              .. " the group)", 0)
          end
        end
      end
    end
  end
  if L.fail then error(fail_text(L.fail, L), 0) end
end

-- print in kernels: what the work items print is kept, then written by the
-- global print in work-item order (the linear global id), each item's calls
-- in their order, as the compiled backends do (lua/gpujit/printer.lua).  A
-- kernel that holds print in an upvalue of its own prints at once.
-- Calls from gpujit's own modules (their argument checks) are Lua's.
local OWN = (debug.getinfo(1, "S").source or ""):match("^@(.*[/\\])sim%.lua$")

local function kernel_call()
  if cur == nil then return nil end
  local info = debug.getinfo(3, "Sl")
  local src = info and info.source or "?"
  if OWN and src:sub(2, #OWN + 1) == OWN then return nil end
  src = (src:sub(1, 1) == "@" or src:sub(1, 1) == "=") and src:sub(2) or info.short_src
  return src .. ":" .. (info and info.currentline or 0)
end

local real_assert, real_error = _G.assert, _G.error
local function k_assert(v, msg, ...)
  if not v then
    local at = kernel_call()
    if at then
      error({ kind = FAIL, where = at, text = msg == nil and "assertion failed!"
              or "assertion failed: " .. tostring(msg) }, 0)
    end
  end
  return real_assert(v, msg, ...)
end
local function k_error(msg, ...)
  local at = select("#", ...) == 0 and kernel_call()
  if at then error({ kind = FAIL, where = at, text = tostring(msg) }, 0) end
  return real_error(msg, ...)
end

local function run(fn, ndim, global, group, argv, nargs, name, checked)
  local real, lines = _G.print, {}
  local out = require("gpujit.printer").out()
  _G.assert, _G.error = k_assert, k_error
  _G.print = function(...)
    local w = cur
    if w == nil then return real(...) end
    local gs = w.launch.gsize
    lines[#lines + 1] = { item = w.gid[0] + gs[0] * (w.gid[1] + gs[1] * w.gid[2]),
                          seq = #lines + 1, n = select("#", ...), ... }
  end
  local ok, err = pcall(run_items, fn, ndim, global, group, argv, nargs, name, checked)
  _G.print = real
  _G.assert, _G.error = real_assert, real_error
  table.sort(lines, function(a, b)
    if a.item ~= b.item then return a.item < b.item end
    return a.seq < b.seq
  end)
  for _, l in ipairs(lines) do out(unpack(l, 1, l.n)) end
  if not ok then error(err, 0) end
end

-- Launches with a timeout (gpu.kernel's timeout, GPUJIT_TIMEOUT): a count
-- hook looks at the clock, and at the SIGINT count of the compiled core's
-- handler (M.sigint, set by gpujit when the core is loaded), every 1000
-- instructions and stops the launch with an error.  Hooks do not run in
-- compiled traces, so the launch runs interpreted: the JIT is off for it
-- and its traces are flushed (every trace: LuaJIT flushes all or one
-- function's), and the JIT's state and the previous hook are restored after.
local STOP = {}
M.sigint = nil   -- { begin = fn -> 0|-1, finish = fn, count = fn -> n }

local function watched(name, timeout, ...)
  local now = require("gpujit.util").now
  local t0 = now()
  local deadline = t0 + timeout
  local sig = M.sigint
  local sig_on = sig ~= nil and sig.begin() == 0
  local n0 = sig_on and sig.count()
  local reason
  local function hook()
    if reason then error(STOP, 0) end
    if sig_on and sig.count() ~= n0 then reason = "interrupted"
    elseif now() >= deadline then reason = "timeout" end
    if reason then error(STOP, 0) end
  end
  local oh, om, oc = debug.gethook()
  local jit_on = jit.status()
  jit.off()
  jit.flush()
  debug.sethook(hook, "", 1000)
  local ok, err = pcall(run, ...)
  debug.sethook(oh, om, oc)
  if jit_on then jit.on() end
  if sig_on then
    if not reason and sig.count() ~= n0 then reason = "interrupted" end
    sig.finish()
  end
  if reason == "interrupted" then
    error("kernel '" .. tostring(name) .. "' interrupted", 0)
  elseif reason == "timeout" then
    error(("kernel '%s' timed out after %.3g s (timeout = %g)"):format(
      tostring(name), now() - t0, timeout), 0)
  end
  if not ok then error(err, 0) end
end

-- Run fn over a launch (see run); timeout: seconds, or nil.
function M.run(fn, ndim, global, group, argv, nargs, name, checked, timeout)
  if timeout then
    return watched(name, timeout, fn, ndim, global, group, argv, nargs, name, checked)
  end
  return run(fn, ndim, global, group, argv, nargs, name, checked)
end

-- Is a work item running now (for tests and for gpujit.array)?
function M.active()
  return cur ~= nil
end

return M
