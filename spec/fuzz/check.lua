-- spec/fuzz/check.lua: run a generated kernel (spec/fuzz/gen.lua) on a
-- compiling backend and on the oracle, and compare (docs/fuzzing.md).
--
-- The oracle is LuaJIT's interpreter running the kernel's own function work
-- item after work item (the sim backend) with the JIT off: the interpreter
-- and the JIT disagree on a few conversions (typing.md), and gpujit follows
-- the interpreter.  Integer and double arrays must match bit for bit (NaN
-- equal to NaN whatever its payload); float arrays within C.FLOAT_ULPS ulps
-- or an absolute error of C.FLOAT_REL * max(|expected|, C.FLOAT_SCALE); with
-- precision = "lua" (docs/typing.md) bit for bit as well.

local ffi = require("ffi")
local H = require("spec.helpers")
local GG = require("spec.fuzz.gen_groups")
local G = require("spec.fuzz.gen")

local C = {}
C.FLOAT_ULPS = 4
C.FLOAT_REL = 2 ^ -18
C.FLOAT_SCALE = 1000
-- Cases compiled together by run_batch: a compile (LLVM, PoCL's build) has a
-- fixed cost of tens of milliseconds that a batch pays once.
C.BATCH = tonumber(os.getenv("GPUJIT_FUZZ_BATCH") or "") or 8   -- docs/fuzzing.md

-- The kernel function of a case (its source compiled by LuaJIT), or nil and
-- the load error.
-- A case is a generated tree (gen.lua) or a reproducer, which holds the
-- source itself (case.source).
function C.kernel_fn(case, src)
  src = src or case.source or GG.source(case)
  local chunk, err = load(src, "=" .. (case.chunkname or "fuzz_kernel"))
  if not chunk then return nil, err end
  local ok, fn = pcall(chunk, H.gpu)
  if not ok then return nil, fn end
  return fn
end

-- Fresh launch arguments (the arrays filled from case.data) for backend bk
-- (default: the oracle's, "sim"): FFI arrays, Lua tables, or gpu.arrays on
-- bk's device (GG.layout).
function C.args(case, bk)
  local d = case.data
  local a = { case.N, d.s }
  for _, sp in ipairs(GG.layout(case)) do
    local vals = d[sp.name]
    local arr
    if sp.box == "md" then   -- rows of G.MD_COLS, the data flat
      local w = G.MD_COLS
      arr = ffi.new(sp.ct .. "[?][" .. w .. "]", math.max(math.floor(#vals / w), 1))
      for j = 1, #vals do arr[math.floor((j - 1) / w)][(j - 1) % w] = vals[j] end
    elseif sp.box == "struct" then   -- four values per element, in field order
      arr = ffi.new(sp.ct .. "[?]", math.max(math.floor(#vals / 4), 1))
      for j = 1, #vals do arr[math.floor((j - 1) / 4)][G.FIELDS[(j - 1) % 4 + 1]] = vals[j] end
    elseif sp.box == "table" then
      arr = {}
      for j = 1, #vals do arr[j] = vals[j] end
    else
      arr = ffi.new(sp.ct .. "[?]", math.max(#vals, 1))
      for j = 1, #vals do arr[j - 1] = vals[j] end
      if sp.box == "garray" then arr = H.gpu.to_device(arr, sp.ct, bk or "sim") end
    end
    a[#a + 1] = arr
  end
  return a
end

-- The number of arguments of a case's kernel.
local function nparams(case) return 2 + #GG.layout(case) end

-- GPUJIT_FUZZ_NARROW=0|1 sets the compile job's narrow_ints (docs/typing.md,
-- "32-bit integers") on every backend: the 32-bit path on the cpu and PoCL.
local NARROW = os.getenv("GPUJIT_FUZZ_NARROW")
local function kopts(case)
  local o = { name = case.name or "fuzz", precision = case.precision, cache = false }
  if NARROW then o.job = function(j) j.narrow_ints = NARROW == "1" end end
  return o
end

-- pcall(f, ...) with what the kernel prints kept (gpujit.printer.write):
-- lines as print writes them (a NaN's sign is not compared, as in arrays),
-- then pcall's results.
local printer = require("gpujit.printer")
local function printing(f, ...)
  local lines = {}
  printer.write = function(...)
    local t = {}
    for j = 1, select("#", ...) do t[j] = tostring((select(j, ...))) end
    lines[#lines + 1] = (table.concat(t, "\t"):gsub("%-nan", "nan"))
  end
  local res = { pcall(f, ...) }
  printer.write = nil
  return lines, unpack(res, 1, table.maxn(res))
end

-- A kernel's assert or error (docs/api.md, "assert and error in kernels"):
-- "FILE:LINE: assertion failed: MSG (work item N) (in kernel NAME)" without
-- FILE:LINE (a batch kernel's lines are not the case's own), or nil when
-- msg is not one.
local function kernel_failure(msg)
  local what = msg:match("^.-:%d+: (.* %(work item %d+%)) %(in kernel [^()]*%)$")
  return what
end

-- Run on the oracle: the argument list after the launch (its field printed:
-- the lines the kernel printed; its field failed: the kernel's assert or
-- error, without its line, when an item failed one), or nil and the error.
function C.oracle(case, fn)
  local args = C.args(case)
  local k = H.kernel("sim", fn, kopts(case))
  jit.flush()
  jit.off()
  local lines, ok, err = printing(k.launch, k, GG.cfg(case), unpack(args, 1, nparams(case)))
  jit.on()
  if not ok then
    args.failed = kernel_failure(tostring(err))
    if not args.failed then return nil, tostring(err) end
  end
  args.printed = lines
  return args
end

local du = ffi.new("union { double d; uint64_t u; }")
local function dbits(v) du.d = v; return du.u end
local fu = ffi.new("union { float f; uint32_t u; }")
local function fbits(v) fu.f = v; return fu.u end

-- Compare one element; returns nil when equal, else a message.
-- dulps: the ulps a double may differ by (0 but for a case that calls
-- transcendental math on a device without the host's libm: C.compare).
-- exactf: floats too bit for bit (precision = "lua", where dulps is 0).
local function differ(ct, got, exp, dulps, exactf)
  if ct == "double" then
    if got ~= got and exp ~= exp then return nil end
    if dbits(got) == dbits(exp) then return nil end
    if dulps and dulps > 0 and H.double_ulps(got, exp) <= dulps then return nil end
  elseif ct == "float" then
    if got ~= got and exp ~= exp then return nil end
    if exactf then
      if fbits(got) == fbits(exp) then return nil end
      return ("expected %s (0x%08x), got %s (0x%08x), bit for bit with precision = \"lua\""):format(
        H.fmt(tonumber(exp)), fbits(exp), H.fmt(tonumber(got)), fbits(got))
    end
    if H.float_ulps(got, exp) <= C.FLOAT_ULPS then return nil end
    if math.abs(got - exp) <= C.FLOAT_REL * math.max(math.abs(exp), C.FLOAT_SCALE) then return nil end
  elseif got == exp then
    return nil
  end
  return "expected " .. H.fmt(tonumber(exp)) .. ", got " .. H.fmt(tonumber(got))
end

-- An array argument after the launch as a 0-based array and its length:
-- a Lua table shifted by one, a gpu.array read back.
local function host(arr, ct)
  if type(arr) == "table" then
    return setmetatable({}, { __index = function(_, i) return arr[i + 1] end }), #arr
  end
  if ffi.istype(ct .. "[?]", arr) then return arr, ffi.sizeof(arr) / ffi.sizeof(ct) end
  local info = H.gpu.types.ctype_info(arr)
  if info and info.kind == "farray" and info.dims then   -- a multi-dimensional FFI array: flat
    return ffi.cast(ct .. " *", arr), ffi.sizeof(arr) / ffi.sizeof(ct)
  end
  local h = arr:to_host()
  return h, #arr
end

-- Two FFI arrays of G.STRUCT, field by field (padding left out): nil, or
-- a message naming the first elements that differ.
local function compare_structs(name, g, r, exactf)
  local bad = {}
  for i = 0, ffi.sizeof(r) / ffi.sizeof(G.STRUCT) - 1 do
    for _, f in ipairs(G.FIELDS) do
      local m = differ(G.FIELD_CT[f], g[i][f], r[i][f], nil, exactf)
      if m then
        bad[#bad + 1] = string.format("%s[%d].%s (%s): %s", name, i, f, G.FIELD_CT[f], m)
        if #bad >= 4 then return table.concat(bad, "; ") end
      end
    end
  end
  return #bad > 0 and table.concat(bad, "; ") or nil
end

-- Does the case's kernel call a transcendental math function (whose
-- results are the device's math library's where it is not the host's)?
local LIBM = { exp = true, log = true, log10 = true, sin = true, cos = true, tan = true,
  asin = true, acos = true, atan = true, sinh = true, cosh = true, tanh = true, atan2 = true,
  pow = true }
local function uses_libm(case)
  for f in (case.source or GG.source(case)):gmatch("math%.(%w+)%s*%(") do
    if LIBM[f] then return true end
  end
  return false
end

-- Compare the arrays of two argument lists of a case: nil, or a message
-- naming the first array that differs.  Doubles are compared bit for bit,
-- except that in a kernel calling math.log and the like they may differ by
-- the ulps of backend bk's math library where it is not the host's (cuda:
-- libdevice, at most 2 ulps; H.math_ulps, as spec/math_spec.lua).
function C.compare(got, ref, case, bk)
  local dulps = bk and not H.host_math(bk) and uses_libm(case) and H.math_ulps(bk, 0, 0) or 0
  local exactf = case.precision == "lua" and dulps == 0
  for j, sp in ipairs(GG.layout(case)) do
    local name, ct = sp.name, sp.ct
    if sp.box == "struct" then
      local m = compare_structs(name, got[j + 2], ref[j + 2], exactf)
      if m then return name, m end
      goto next_array
    end
    local g, n = host(got[j + 2], ct)
    local r = host(ref[j + 2], ct)
    local bad = {}
    for i = 0, n - 1 do
      local m = differ(ct, g[i], r[i], dulps, exactf)
      if m then
        bad[#bad + 1] = string.format("%s[%d] (%s): %s", name, i, ct, m)
        if #bad >= 4 then break end
      end
    end
    if #bad > 0 then return name, table.concat(bad, "; ") end
    ::next_array::
  end
  return nil
end

-- Launch compiled kernel k (pre: arguments put before the case's own, the
-- batch index) on a fresh copy of the case's arguments and compare with the
-- oracle's ref.  nil, or a failure { class = ..., msg = ... }:
--   class "mismatch:<array>", "compile" (an error naming the kernel, raised
--   at the first launch), "launch" (any other error of the launch).
local function launch_compare(k, case, ref, pre)
  local args = C.args(case, k.opts.backend)
  local lines, ok, err
  if pre == nil then
    lines, ok, err = printing(k.launch, k, GG.cfg(case), unpack(args, 1, nparams(case)))
  else
    lines, ok, err = printing(k.launch, k, GG.cfg(case), pre, unpack(args, 1, nparams(case)))
  end
  if ref.failed then
    -- an item failed an assert: the same message and smallest failing item
    -- (the writes and prints of the launch are unspecified)
    local got = not ok and kernel_failure(tostring(err))
    if got == ref.failed then return nil end
    return { class = "mismatch:assert", msg = ("expected the launch to fail with %q, got %s"):format(
      ref.failed, ok and "no error" or ("%q"):format(tostring(err))) }
  end
  if not ok then
    local msg = tostring(err)
    -- compile errors name the kernel: "file:line: what (in kernel NAME)"
    local class = msg:find("(in kernel", 1, true) and "compile" or "launch"
    return { class = class, msg = msg }
  end
  local arr, msg = C.compare(args, ref, case, k.opts.backend)
  if arr then return { class = "mismatch:" .. arr, msg = msg } end
  if ref.printed and table.concat(lines, "\n") ~= table.concat(ref.printed, "\n") then
    for j = 1, math.max(#lines, #ref.printed) do
      if lines[j] ~= ref.printed[j] then
        return { class = "mismatch:print", msg = ("printed line %d: %q, expected %q"):format(
          j, tostring(lines[j]), tostring(ref.printed[j])) }
      end
    end
  end
  return nil
end

-- Run one case on backend bk.  Returns nil when it agrees with the oracle,
-- or a failure (launch_compare); or nil and why the case is not a valid
-- kernel (it does not load, or the oracle raises an error).  ref: the
-- oracle's arguments when already computed.
function C.run(case, bk, ref)
  local fn, lerr = C.kernel_fn(case)
  if not fn then return nil, "load: " .. lerr end
  if not ref then
    local oerr
    ref, oerr = C.oracle(case, fn)
    if not ref then return nil, "oracle: " .. oerr end
  end
  local ok, k = pcall(H.kernel, bk, fn, kopts(case))
  if not ok then return { class = "compile", msg = tostring(k) } end
  return launch_compare(k, case, ref, nil)
end

-- Run several cases of one precision compiled as one kernel
-- (gen.batch_source) on each backend of the list.  Returns a list with, per
-- case, { invalid = why } or { fails = { {bk, class, msg}, ... } }.  Cases
-- the oracle rejects are left out of the batch.
function C.run_batch(cases, backends)
  local res, valid, refs = {}, {}, {}
  for j, case in ipairs(cases) do
    local fn, why = C.kernel_fn(case)
    local ref
    if fn then ref, why = C.oracle(case, fn) end
    if ref then
      valid[#valid + 1] = case
      refs[#valid] = ref
      res[j] = { fails = {} }
    else
      res[j] = { invalid = why }
    end
  end
  if #valid == 0 then return res end
  local chunk = assert(load(GG.batch_source(valid), "=fuzz_batch"))
  local wrapper = chunk(H.gpu)
  local at = {}
  for j = 1, #cases do if res[j].fails then at[#at + 1] = j end end
  for _, bk in ipairs(backends) do
    local ok, k = pcall(H.kernel, bk, wrapper, kopts(valid[1]))
    for v = 1, #valid do
      local f = { class = "compile", msg = tostring(k) }
      if ok then f = launch_compare(k, valid[v], refs[v], v) end
      if f then
        f.bk = bk
        local list = res[at[v]].fails
        list[#list + 1] = f
      end
    end
  end
  return res
end

-- Run a case on each backend of the list against one oracle run.  Returns
-- a list of { bk = ..., class = ..., msg = ... } (empty when all agree), or
-- nil and why the case is not a valid kernel (it fails to load, or the
-- oracle raises an error).
function C.run_all(case, backends)
  local fn, lerr = C.kernel_fn(case)
  if not fn then return nil, "load: " .. lerr end
  local ref, oerr = C.oracle(case, fn)
  if not ref then return nil, "oracle: " .. oerr end
  local fails = {}
  for _, bk in ipairs(backends) do
    local f = C.run(case, bk, ref)
    if f then
      f.bk = bk
      fails[#fails + 1] = f
    end
  end
  return fails
end

-- The same failure, for the shrinker: same class, and for errors the same
-- message once numbers (lines, values) are taken out.
function C.same_failure(a, b)
  if a.class ~= b.class then return false end
  if a.class:sub(1, 8) == "mismatch" then return true end
  local function norm(m) return (m:gsub("%d+", "#"):sub(1, 200)) end
  return norm(a.msg) == norm(b.msg)
end

-- Does the case still fail on bk the way `want` did?
function C.still_fails(case, bk, want)
  local ok, f = pcall(C.run, case, bk)
  if not ok or not f then return false end
  return C.same_failure(f, want)
end

return C
