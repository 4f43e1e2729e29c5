-- Shared helpers for the compiler specs.
--
--   local H = require("spec.helpers")
--
-- H.backends: the backends every spec runs its kernels on.  Default { "cpu" };
-- GPUJIT_SPEC_BACKENDS="cpu,opencl" (or "sim" while the core is being written)
-- overrides it.  A listed backend that is not available makes its tests fail,
-- never skip silently.  H.compilers is the same list without "sim" (the
-- backends that compile, so that compile errors and LLVM IR can be checked).
--
-- Expected values are always computed by plain LuaJIT: the same Lua function
-- called on the host (H.map, H.call), or the same kernel under "sim"
-- (H.differential).  Comparison (H.same) is bitwise for integers, booleans and
-- doubles (NaN == NaN, -0 ~= +0), and within a number of float ulps for float
-- (the expected value computed in double, then rounded through a float[1]).

local ffi = require("ffi")

local H = {}
H.ffi = ffi

-- Keep the specs away from the user's on-disk cache: unless the caller chose a
-- cache directory, use a fresh one under /tmp for this process.
pcall(ffi.cdef, "int setenv(const char *name, const char *value, int overwrite);")
pcall(ffi.cdef, "int getpid(void);")
if not os.getenv("GPUJIT_CACHE_DIR") then
  local dir = "/tmp/gpujit-spec-cache-" .. tostring(ffi.C.getpid())
  os.execute("mkdir -p '" .. dir .. "'")
  ffi.C.setenv("GPUJIT_CACHE_DIR", dir, 1)
  -- busted ends with os.exit, which closes nothing: remove the directories of
  -- earlier runs whose process is gone instead
  local p = io.popen("ls -d /tmp/gpujit-spec-cache-* 2>/dev/null")
  for d in p:lines() do
    local pid = d:match("(%d+)$")
    local alive = pid and io.open("/proc/" .. pid .. "/stat")
    if alive then alive:close() elseif pid then os.execute("rm -rf '" .. d .. "'") end
  end
  p:close()
end
-- True when the cache directory is the specs' own (gpu.cache.clear() is safe).
H.own_cache = (os.getenv("GPUJIT_CACHE_DIR") or ""):match("^/tmp/gpujit%-spec%-cache%-") ~= nil

local loaded, gpu_or_err = pcall(require, "gpujit")
H.gpu = loaded and gpu_or_err or setmetatable({}, {
  __index = function(_, key)
    -- Each use of the missing module reports why it is missing.
    if key == "global_id" or key == "local_id" or key == "group_id" or key == "barrier" then
      return function() return 0 end
    end
    error("gpujit did not load: " .. tostring(gpu_or_err), 2)
  end,
})
H.load_error = not loaded and tostring(gpu_or_err) or nil

-- GPUJIT_SPEC_CORE (spec/asan.sh sets it): the core this run must test.
-- Every spec fails unless that file is the gpujit/core.so mapped into this
-- process (.busted's cpath, or a stale LUA_CPATH, could load another).
do
  local want = os.getenv("GPUJIT_SPEC_CORE")
  if want and want ~= "" then
    local function real(path)
      local p = io.popen("realpath -e '" .. path .. "' 2>/dev/null")
      local r = p:read("*l")
      p:close()
      return r
    end
    local cores = {}
    local maps = assert(io.open("/proc/self/maps"))
    for l in maps:lines() do
      local f = l:match("%s(/%S*/gpujit/core%.so)$")
      if f and cores[#cores] ~= f then cores[#cores + 1] = f end
    end
    maps:close()
    local w = real(want)
    local ok = w ~= nil and #cores > 0
    for _, f in ipairs(cores) do ok = ok and real(f) == w end
    if not ok then
      error("spec/helpers.lua: GPUJIT_SPEC_CORE is " .. want .. " but this process has loaded "
        .. (#cores > 0 and table.concat(cores, ", ") or "no gpujit/core.so")
        .. (H.load_error and (" (" .. H.load_error .. ")") or ""), 0)
    end
  end
end

-- The suite-wide PTX check (spec/cuda_spec.lua runs the suite again with
-- GPUJIT_SPEC_PTX_DIR set): every kernel the suite compiles on another
-- backend is compiled to PTX for cuda as well (without a GPU, for the
-- backend's offline target), and each distinct text is written once to that
-- directory as N.ptx (N-bc.ptx for a bounds-checked kernel), or N.err with
-- the message when it does not compile.
local ptx_dir = os.getenv("GPUJIT_SPEC_PTX_DIR")
-- H.no_ptx(fn): runs fn with that harvest off (a kernel beyond every
-- GPU's limits, which the cpu runs: limits_spec's 4 MiB of gpu.shared).
local ptx_off = false
function H.no_ptx(fn)
  ptx_off = true
  local ok, err = pcall(fn)
  ptx_off = false
  if not ok then error(err, 0) end
end
if ptx_dir and loaded and H.gpu.core then
  local core = H.gpu.core
  local compile, inspect, seen, count, cuda_bk = core.compile, core.inspect, {}, 0, nil
  for _, b in ipairs(H.gpu.backends()) do
    if b.name == "cuda" then cuda_bk = b.index end
  end
  core.compile = function(fn, tl, opts)
    local res = compile(fn, tl, opts)
    if cuda_bk and opts.bk ~= cuda_bk and not ptx_off then
      local o = {}
      for k, v in pairs(opts) do o[k] = v end
      o.bk, o.device = cuda_bk, 0
      local ok, text = pcall(inspect, fn, tl, o, "asm")
      if not ok then
        text = "kernel " .. tostring(opts.name) .. " (" .. table.concat(tl, ", ") .. "): " .. tostring(text)
      end
      if not seen[text] then
        seen[text] = true
        count = count + 1
        -- the pid: spec/parts.sh's ptx run writes from several processes
        local f = assert(io.open(ptx_dir .. "/" .. ffi.C.getpid() .. "-" .. count
          .. (opts.boundscheck and "-bc" or "")
          .. (ok and ".ptx" or ".err"), "w"))
        f:write(text)
        f:close()
      end
    end
    return res
  end
end

---------------------------------------------------------------------------
-- Backends
---------------------------------------------------------------------------

H.backends, H.compilers = {}, {}
for name in (os.getenv("GPUJIT_SPEC_BACKENDS") or "cpu"):gmatch("[^,%s]+") do
  H.backends[#H.backends + 1] = name
  if name ~= "sim" then H.compilers[#H.compilers + 1] = name end
end

local avail_cache = {}
-- Is backend `bk` usable here?  Returns true, or false and why.
function H.available(bk)
  if H.load_error then return false, "gpujit did not load: " .. H.load_error end
  if avail_cache[bk] ~= nil then return avail_cache[bk], avail_cache[bk .. "?"] end
  local ok, why = true, nil
  if bk ~= "sim" then
    local okd, devs = pcall(H.gpu.devices)
    if not okd then
      ok, why = false, "gpu.devices() failed: " .. tostring(devs)
    else
      ok = false
      for _, d in ipairs(devs) do
        if d.backend == bk then ok = true end
      end
      if not ok then why = "no device of backend '" .. bk .. "' in gpu.devices()" end
    end
  end
  avail_cache[bk], avail_cache[bk .. "?"] = ok, why
  return ok, why
end

-- Fail (not skip) when a backend the specs were asked to use is missing.
function H.need(bk)
  local ok, why = H.available(bk)
  if not ok then error("backend '" .. bk .. "' is not available: " .. tostring(why), 2) end
end

-- gpu.kernel on backend bk.  opts default to { cache = false }, so that each
-- spec really compiles what it checks.
-- Features that another issue builds.  A spec that needs one runs for real
-- on the backends that have it (sim runs work-group features) and is
-- pending, with the reason, on the others.
H.features = {
  workgroups = {
    reason = "work-group features (barrier, shared and local arrays, atomics) are not compiled yet",
    has = { sim = true, cpu = true, opencl = true, cuda = true },
  },
  boundscheck = {
    reason = "boundscheck mode is not implemented on this backend",
    has = { sim = true, cpu = true, opencl = true, cuda = true },
  },
  -- Work items of a group that stop at different barriers: only backends
  -- that run a group's items themselves can see it (on a GPU it is undefined).
  divergence = {
    reason = "divergent barriers are undefined on this backend (no run-time check)",
    has = { sim = true, cpu = true },
  },
}

function H.it_with(feature, bk)
  local f = assert(H.features[feature], feature)
  local env = getfenv(2)   -- busted's it/pending live in the spec file's env
  if f.has[bk] then return env.it end
  return function(name) env.pending(name .. " [" .. f.reason .. "]") end
end

-- Is flag (a boolean field of gpu.devices() entries) true for backend bk's
-- first device?  sim has every such property.
local function device_flag(bk, flag)
  if bk == "sim" then return true end
  for _, d in ipairs(H.gpu.devices()) do
    if d.backend == bk then return d[flag] == true end
  end
  return false
end

-- Does backend bk's math.* call the host's libm, bit for bit with LuaJIT?
function H.host_math(bk) return device_flag(bk, "host_math") end

-- Tolerances (double, float ulps) for transcendental math on backend bk,
-- given the ones for backends that call the host's libm (bit for bit with
-- LuaJIT).  cuda computes with libdevice: at most 2 ulps from the correctly
-- rounded double result and 4 for float (NVIDIA's CUDA C Programming Guide,
-- "Mathematical functions"), plus the half ulp of the reference's rounding.
-- Other devices without host_math (OpenCL builtins, e.g. through SPIR-V):
-- the OpenCL C spec's bounds (section 7.4), whose largest is pow's 16 ulps.
function H.math_ulps(bk, dulps, fulps)
  if bk == "cuda" then return math.max(dulps, 3), math.max(fulps, 5) end
  if not H.host_math(bk) then return math.max(dulps, 16), math.max(fulps, 16) end
  return dulps, fulps
end

-- Does backend bk's device address host memory (FFI pointers work there)?
function H.host_shared(bk) return device_flag(bk, "host_shared") end

-- Is backend bk in GPUJIT_SPEC_BACKENDS?
function H.testing(bk)
  for _, b in ipairs(H.backends) do
    if b == bk then return true end
  end
  return false
end

-- Make bk the current device for the tests of the enclosing describe block
-- (gpu.array and friends allocate on the current device).
function H.use_in_block(bk)
  local env = getfenv(2)
  local prev
  env.before_each(function() prev = H.gpu.backend(); H.gpu.use(bk) end)
  env.after_each(function() if prev then H.gpu.use(prev) end end)
end

function H.kernel(bk, fn, opts, sig)
  H.need(bk)
  local o = { cache = false }
  for k, v in pairs(opts or {}) do o[k] = v end
  o.backend = bk
  if sig then return H.gpu.kernel(sig, fn, o) end
  return H.gpu.kernel(fn, o)
end

-- Run fn with `bk` as the current backend, restoring the previous one.
function H.with_backend(bk, fn, ...)
  H.need(bk)
  local prev = H.gpu.backend()
  H.gpu.use(bk)
  local res = { pcall(fn, ...) }
  pcall(H.gpu.use, prev)
  if not res[1] then error(res[2], 0) end
  return unpack(res, 2, table.maxn(res))
end

---------------------------------------------------------------------------
-- FFI values
---------------------------------------------------------------------------

local is64 = { int64_t = true, uint64_t = true }
H.int_types = { "int8_t", "uint8_t", "int16_t", "uint16_t", "int32_t", "uint32_t", "int64_t", "uint64_t" }
H.float_types = { "float", "double" }
H.all_types = { "int8_t", "uint8_t", "int16_t", "uint16_t", "int32_t", "uint32_t", "int64_t", "uint64_t",
  "float", "double", "bool" }

-- A value converted to C type ct as an FFI store does (a C assignment), in
-- LuaJIT's interpreter: its JIT converts out-of-range doubles differently
-- (4294967301 into an int8_t: the interpreter gives 0, a trace 5).
function H.to_ct(ct, v)
  local box = ffi.new(ct .. "[1]")
  box[0] = v
  return box[0]
end
jit.off(H.to_ct)

-- An FFI array ct[n] (0-based) filled from a Lua list (1-based) or a function
-- of the 0-based index.
function H.array(ct, src, n)
  if type(src) == "table" then n = n or #src end
  local a = ffi.new(ct .. "[?]", math.max(n, 1))
  for i = 0, n - 1 do
    if type(src) == "table" then a[i] = src[i + 1]
    elseif type(src) == "function" then a[i] = src(i)
    elseif src ~= nil then a[i] = src end
  end
  return a
end

-- A copy of an FFI array of n elements.
function H.copy(ct, a, n)
  local b = ffi.new(ct .. "[?]", math.max(n, 1))
  ffi.copy(b, a, ffi.sizeof(ct) * n)
  return b
end

local function fmt(v)
  if type(v) == "number" then
    if v ~= v then return "nan" end
    if v == 0 and 1 / v < 0 then return "-0" end
    if v == math.floor(v) and math.abs(v) < 2^53 then return string.format("%.0f", v) end
    return string.format("%.17g", v)
  end
  return tostring(v)
end
H.fmt = fmt

-- Distances in float and double ulps: gpujit.util's (nan the same as nan,
-- -0 and 0 one apart, math.huge when only one is nan).
local util = require("gpujit.util")
function H.float_ulps(a, b) return util.ulps(a, b, "float") end
function H.double_ulps(a, b) return util.ulps(a, b) end

-- In this process: point the disk cache at dir while fn runs.
function H.with_cache_dir(dir, fn)
  local old = os.getenv("GPUJIT_CACHE_DIR")
  ffi.C.setenv("GPUJIT_CACHE_DIR", dir, 1)
  local ok, err = pcall(fn)
  ffi.C.setenv("GPUJIT_CACHE_DIR", old, 1)
  if not ok then error(err, 0) end
end

-- Is `got` (read from a ct element) the same as `expected` (any Lua value,
-- converted to ct first)?  ulps: allowed distance for float/double (default
-- 0 for double, 1 for float).  Returns ok, message.
function H.same(ct, got, expected, ulps)
  local exp = expected
  if ct ~= nil then
    local ok, conv = pcall(H.to_ct, ct, expected)
    if not ok then return false, "expected value " .. fmt(expected) .. " does not convert to " .. ct end
    exp = conv
  end
  if ct == "float" or ct == "double" or (ct == nil and type(got) == "number") then
    if type(got) ~= "number" then return false, "got a " .. type(got) .. " (" .. tostring(got) .. ")" end
    local limit = ulps or ((ct == "float") and 1 or 0)
    local d = (ct == "float") and H.float_ulps(got, exp) or H.double_ulps(got, exp)
    if d <= limit then return true end
    return false, "expected " .. fmt(exp) .. ", got " .. fmt(got) .. " (" .. fmt(d) .. " ulps)"
  end
  if got == exp and type(got) == type(exp) then return true end
  if is64[ct] and type(got) == "cdata" and type(exp) == "cdata" and got == exp then return true end
  return false, "expected " .. fmt(exp) .. ", got " .. fmt(got)
end

-- Check n elements of an FFI array (0-based) or Lua table (1-based; base = 1)
-- against a list of expected values (1-based) or a function of the 0-based
-- index.  what: a label for the message.
function H.check(ct, got, expected, n, opts)
  opts = opts or {}
  local base = opts.base or 0
  local bad = {}
  for i = 0, n - 1 do
    local e = expected
    if type(expected) == "table" then e = expected[i + 1]
    elseif type(expected) == "function" then e = expected(i) end
    local ok, msg = H.same(ct, got[i + base], e, opts.ulps)
    if not ok then
      local inputs = opts.inputs and opts.inputs(i) or ""
      bad[#bad + 1] = string.format("  [%d]%s: %s", i, inputs, msg)
      if #bad >= 12 then break end
    end
  end
  if #bad > 0 then
    error(string.format("%s: %d+ mismatches (element type %s):\n%s",
      opts.what or "result", #bad, tostring(ct), table.concat(bad, "\n")), 2)
  end
  return true
end

-- fn(...) run by LuaJIT's interpreter, with no trace compiled or entered:
-- the reference for "as LuaJIT computes it" (the JIT is meant to agree, but
-- e.g. narrows x^3 to multiplications).
function H.interp(fn, ...)
  jit.flush()
  jit.off()
  local res = { pcall(fn, ...) }
  jit.on()
  if not res[1] then error(res[2], 0) end
  return unpack(res, 2, table.maxn(res))
end

---------------------------------------------------------------------------
-- Elementwise kernels: out[i] = f(a[i], b[i], ...), f a device function
---------------------------------------------------------------------------

local gpu = H.gpu

local mappers = {
  [0] = function(f)
    return function(out, n)
      local i = gpu.global_id(0)
      if i < n then out[i] = f() end
    end
  end,
  function(f)
    return function(out, a, n)
      local i = gpu.global_id(0)
      if i < n then out[i] = f(a[i]) end
    end
  end,
  function(f)
    return function(out, a, b, n)
      local i = gpu.global_id(0)
      if i < n then out[i] = f(a[i], b[i]) end
    end
  end,
  function(f)
    return function(out, a, b, c, n)
      local i = gpu.global_id(0)
      if i < n then out[i] = f(a[i], b[i], c[i]) end
    end
  end,
}

-- H.map(bk, f, spec): run out[i] = f(in1[i], in2[i], ...) on backend bk and
-- compare with f called by plain LuaJIT on the same inputs.
--   spec.out    element type of the result (default "double")
--   spec.ins    list of { ct, values } (values: Lua list), all the same length
--   spec.ulps   float/double tolerance (see H.same)
--   spec.name   kernel name; spec.opts: more kernel options
--   spec.expect optional function(...) giving the expected value instead of f
--   spec.ints   the work is integer arithmetic: an expected -0 is 0
-- Returns the result array.
function H.map(bk, f, spec)
  local ins = spec.ins or {}
  local n = spec.n or (ins[1] and #ins[1][2]) or 1
  local out_ct = spec.out or "double"
  local arrays, args = {}, {}
  local out = H.array(out_ct, nil, n)
  args[1] = out
  for j, inp in ipairs(ins) do
    arrays[j] = H.array(inp[1], inp[2], n)
    args[j + 1] = arrays[j]
  end
  args[#args + 1] = n
  local opts = { name = spec.name or "map" }
  for k, v in pairs(spec.opts or {}) do opts[k] = v end
  local k = H.kernel(bk, mappers[#ins](f), opts)
  k:launch(n, unpack(args, 1, #ins + 2))
  local ref = spec.expect or f
  local expected = H.interp(function()
    local e = {}
    for i = 0, n - 1 do
      local vals = {}
      for j = 1, #ins do vals[j] = arrays[j][i] end
      e[i + 1] = ref(unpack(vals, 1, #ins))
    end
    return e
  end)
  H.check(out_ct, out, expected, n, {
    ulps = spec.ulps,
    what = (spec.name or "map") .. " on " .. bk,
    inputs = function(i)
      local s = {}
      for j = 1, #ins do s[j] = fmt(arrays[j][i]) end
      return "(" .. table.concat(s, ", ") .. ")"
    end,
  })
  return out
end

-- A kernel of one work item that stores f(args...) into a one-element array
-- of type out_ct; args are passed as kernel arguments (Lua numbers are
-- doubles, booleans bools, cdata their type).  Returns the stored value.
local callers = {
  [0] = function(f) return function(out) out[0] = f() end end,
  function(f) return function(out, a) out[0] = f(a) end end,
  function(f) return function(out, a, b) out[0] = f(a, b) end end,
  function(f) return function(out, a, b, c) out[0] = f(a, b, c) end end,
  function(f) return function(out, a, b, c, d) out[0] = f(a, b, c, d) end end,
}
function H.call(bk, out_ct, f, ...)
  local n = select("#", ...)
  local out = ffi.new(out_ct .. "[1]")
  local k = H.kernel(bk, callers[n](f), { name = "call" })
  k:launch(1, out, ...)
  return out[0]
end

-- H.call and compare with f(...) in plain Lua.
function H.check_call(bk, out_ct, f, ...)
  local got = H.call(bk, out_ct, f, ...)
  local ok, msg = H.same(out_ct, got, H.interp(f, ...))
  if not ok then
    local a = {}
    for j = 1, select("#", ...) do a[j] = fmt((select(j, ...))) end
    error("f(" .. table.concat(a, ", ") .. ") on " .. bk .. ": " .. msg, 2)
  end
  return got
end

---------------------------------------------------------------------------
-- Differential runs: the same kernel on a backend and on "sim"
---------------------------------------------------------------------------

-- Deep-copy launch arguments so that two runs do not share memory.  FFI
-- arrays are copied with their size; Lua tables element by element; other
-- values are passed as they are.
-- The ctype info of an FFI array of structs (gpu.types), or nil.
local function struct_array(v)
  if type(v) ~= "cdata" or not H.gpu.types then return nil end
  local info = H.gpu.types.ctype_info(v)
  return info and info.struct and info.kind == "farray" and info or nil
end

-- Is v a gpu.array (not freed)?
local function garray(v)
  if type(v) ~= "cdata" or not H.gpu.types then return false end
  local info = H.gpu.types.ctype_info(v)
  return info ~= nil and info.kind == "garray" and v.ptr ~= nil
end

local function clone_arg(v)
  if garray(v) then   -- a gpu.array: its contents in a sim array
    return H.gpu.to_device(v:to_host(), nil, "sim")
  end
  if type(v) == "table" then
    local t = {}
    for k, x in pairs(v) do t[k] = x end
    return t
  end
  local si = struct_array(v)
  if si then   -- an array of structs: the same ctype, the same bytes
    local c = si.len and ffi.new(ffi.typeof(v)) or ffi.new(ffi.typeof(v), ffi.sizeof(v) / si.esize)
    ffi.copy(c, v, ffi.sizeof(v))
    return c
  end
  local ct = H.elem_ct(v)
  if ct then
    local size = ffi.sizeof(v)
    local c
    if H.is_multidim(v) then   -- the same ctype: T[?][N] with its outer count, or T[M][N]
      local T = ffi.typeof(v)
      c = select(2, pcall(ffi.new, T)) or ffi.new(T, size / ffi.sizeof(v[0]))
    else
      c = ffi.new(ct .. "[?]", size / ffi.sizeof(ct))
    end
    ffi.copy(c, v, size)
    return c
  end
  return v
end
H.clone_arg = clone_arg

-- Element type of an FFI array cdata, or nil.
-- (of its scalars for a multi-dimensional array: "double" for double[?][2])
function H.elem_ct(v)
  if type(v) ~= "cdata" then return nil end
  local s = tostring(ffi.typeof(v))
  local t = s:match("^ctype<([^%[]-)%s*%[[%d%?]*%]")
  if t and s:match("%]>$") then
    t = t:gsub("^const ", "")
    return t
  end
  return nil
end

-- Is v an FFI array of two or more dimensions?
function H.is_multidim(v)
  return type(v) == "cdata" and tostring(ffi.typeof(v)):match("%]%s*%[") ~= nil
end

-- Compare every array argument of two launches.  ulps: float tolerance.
function H.compare_args(label, got_args, ref_args, ulps, dulps)
  for j = 1, math.max(#got_args, #ref_args) do
    local g, r = got_args[j], ref_args[j]
    if garray(g) and garray(r) then g, r = g:to_host(), r:to_host() end
    if type(g) == "table" then
      local n = math.max(#g, #r)
      H.check(nil, g, function(i) return r[i + 1] end, n,
        { base = 1, ulps = dulps or 0, what = label .. ", argument #" .. j .. " (table)" })
    elseif struct_array(g) then   -- arrays of structs: byte for byte
      local esz, sz = struct_array(g).esize, ffi.sizeof(g)
      local gs, rs = ffi.string(g, sz), ffi.string(r, sz)
      if gs ~= rs then
        local at = 0
        while gs:byte(at + 1) == rs:byte(at + 1) do at = at + 1 end
        error(("%s, argument #%d (an array of %s): element %d differs (byte %d of it)"):format(
          label, j, struct_array(g).elem, math.floor(at / esz), at % esz), 2)
      end
    elseif type(g) == "cdata" then
      local ct = H.elem_ct(g)
      if ct then
        local n = ffi.sizeof(g) / ffi.sizeof(ct)
        if H.is_multidim(g) then   -- element by element in memory order
          g, r = ffi.cast("const " .. ct .. " *", g), ffi.cast("const " .. ct .. " *", r)
        end
        H.check(ct, g, function(i) return r[i] end, n, {
          ulps = (ct == "float") and (ulps or 2) or (ct == "double" and dulps or nil),
          what = label .. ", argument #" .. j .. " (" .. ct .. "[" .. n .. "])",
        })
      end
    end
  end
end

-- Run kernel function fn with launch config cfg and the given arguments on
-- backend bk and on "sim" (each on its own copy of the arguments), and check
-- that every array argument ends up the same.  opts.ulps: float tolerance
-- (default 2), opts.dulps: double tolerance (default 0: bitwise).
-- Returns the arguments of the bk run.
function H.differential(bk, fn, cfg, args, opts)
  opts = opts or {}
  local kopts = { name = opts.name or "diff" }
  for k, v in pairs(opts.kopts or {}) do kopts[k] = v end
  local n = opts.nargs or #args
  local mine, ref = {}, {}
  for j = 1, n do mine[j] = clone_arg(args[j]); ref[j] = clone_arg(args[j]) end
  local ks = H.kernel("sim", fn, kopts)
  ks:launch(cfg, unpack(ref, 1, n))
  local kb = H.kernel(bk, fn, kopts)
  kb:launch(cfg, unpack(mine, 1, n))
  H.compare_args((opts.name or "kernel") .. ": " .. bk .. " vs sim", mine, ref, opts.ulps, opts.dulps)
  return mine, ref
end

---------------------------------------------------------------------------
-- Errors and LLVM IR
---------------------------------------------------------------------------

-- The number of the line of the calling file that ends with `marker` (a
-- plain string, e.g. "--@string"); there must be exactly one.
local line_cache = {}
function H.line_of(marker, level)
  local src = debug.getinfo((level or 1) + 1, "S").source
  assert(src:sub(1, 1) == "@", "H.line_of needs a file")
  local path = src:sub(2)
  local lines = line_cache[path]
  if not lines then
    lines = {}
    for l in io.lines(path) do lines[#lines + 1] = l end
    line_cache[path] = lines
  end
  local found
  for no, l in ipairs(lines) do
    local at = l:find(marker, 1, true)
    if at and l:sub(at + #marker):match("^%s*$") and not l:find("line_of(", 1, true) then
      assert(not found, "marker " .. marker .. " appears twice in " .. path)
      found = no
    end
  end
  assert(found, "marker " .. marker .. " not found in " .. path)
  return found
end

-- The base name of the calling file ("errors_spec.lua").
function H.this_file(level)
  local src = debug.getinfo((level or 1) + 1, "S").source
  return (src:match("([^/\\]+)$"))
end

-- Call fn(...) expecting an error; return its message (a string).
function H.error_of(fn, ...)
  local ok, err = pcall(fn, ...)
  if ok then error("expected an error, but the call succeeded", 2) end
  if type(err) ~= "string" then err = tostring(err) end
  return err
end

local function lower_find(s, words)
  local ls = s:lower()
  for _, w in ipairs(words) do
    if ls:find(w:lower(), 1, true) then return true end
  end
  return false
end
H.lower_find = lower_find

-- The error of compiling fn (as kernel 'bad', on backend bk) for the
-- signature sig.
function H.compile_error(bk, fn, sig)
  return H.error_of(function() H.kernel(bk, fn, { name = "bad" }):precompile(sig) end)
end

-- Check that msg has the form "FILE:LINE: <what> (in kernel NAME)", FILE
-- being `file` (its base name; a directory before it is allowed), LINE
-- exactly `line`, NAME exactly `kname`, and <what> containing one of the
-- `words` (case-insensitive).
function H.check_compile_error(msg, file, line, kname, words)
  local pat = file:gsub("%p", "%%%0") .. ":" .. line .. ": (.-)%(in kernel " ..
    kname:gsub("%p", "%%%0") .. "[%)%s,;]"
  local what = msg:match(pat)
  if not what then
    error(string.format("error message does not match '%s:%d: <what> (in kernel %s)':\n  %s",
      file, line, kname, msg), 2)
  end
  if words and not lower_find(what, words) then
    error(string.format("error message at %s:%d names none of {%s}:\n  %s",
      file, line, table.concat(words, ", "), msg), 2)
  end
  return what
end

-- Assemble PTX text s with ptxas for the .target it names: nil when there
-- is no ptxas (/usr/local/cuda/bin, $CUDA_HOME/bin), else true or false and
-- ptxas's output.
-- ptxas on PATH, under $CUDA_HOME/bin, $CUDA_PATH/bin or /usr/local/cuda/bin;
-- nil if none.
function H.find_ptxas()
  local w = io.popen("command -v ptxas 2>/dev/null")
  local onpath = w and w:read("*l")
  if w then w:close() end
  if onpath and onpath ~= "" then return onpath end
  for _, root in ipairs({ os.getenv("CUDA_HOME") or "", os.getenv("CUDA_PATH") or "", "/usr/local/cuda" }) do
    local f = root ~= "" and io.open(root .. "/bin/ptxas")
    if f then
      f:close()
      return root .. "/bin/ptxas"
    end
  end
end

function H.ptxas(s)
  local ptxas = H.find_ptxas()
  if not ptxas then return nil end
  local target = s:match("%.target%s+(sm_%d+)") or "sm_80"
  local path = os.tmpname()
  local fh = assert(io.open(path, "w"))
  fh:write(s)
  fh:close()
  local p = assert(io.popen("'" .. ptxas .. "' -arch=" .. target .. " '" .. path
    .. "' -o /dev/null 2>&1; echo rc=$?"))
  local out = p:read("*a")
  p:close()
  os.remove(path)
  return out:find("rc=0", 1, true) ~= nil, out
end

-- Only the bodies of the functions defined in an LLVM IR module.
function H.ir_bodies(ir)
  local out, inside = {}, false
  for l in (ir .. "\n"):gmatch("([^\n]*)\n") do
    if l:match("^define ") then inside = true end
    if inside then out[#out + 1] = l end
    if l:match("^}") then inside = false end
  end
  return table.concat(out, "\n")
end

-- A small kernel that must work after an error: doubles 8 numbers.
function H.sanity(bk)
  local out = ffi.new("double[8]")
  local k = H.kernel(bk, function(o)
    local i = gpu.global_id(0)
    o[i] = 2 * i + 0.5
  end, { name = "sanity" })
  k:launch(8, out)
  for i = 0, 7 do
    if out[i] ~= 2 * i + 0.5 then
      error("sanity kernel after an error: out[" .. i .. "] = " .. fmt(out[i]), 2)
    end
  end
  return true
end

-- The files a shell glob names, sorted (none: an empty list).
function H.ls(glob)
  local out = {}
  local p = io.popen("ls " .. glob .. " 2>/dev/null")
  if p then
    for l in p:lines() do out[#out + 1] = l end
    p:close()
  end
  table.sort(out)
  return out
end

-- A fresh, empty directory under /tmp; the caller removes it (os.execute rm -rf).
function H.tmpdir()
  local d = os.tmpname()
  os.remove(d)
  assert(os.execute("mkdir -p '" .. d .. "'") == 0, "cannot make " .. d)
  return d
end

-- For a spec file: a function that makes a fresh directory (H.tmpdir) each
-- call; after each test every directory it made is removed.  Call it at the
-- file's top level with busted's after_each (a global of the spec file's
-- environment, not of this module's).
function H.scratch_dirs(after_each)
  local made = {}
  after_each(function()
    for i = #made, 1, -1 do
      os.execute("rm -rf '" .. made[i] .. "'")
      made[i] = nil
    end
  end)
  return function()
    local d = H.tmpdir()
    made[#made + 1] = d
    return d
  end
end

-- The shell command that starts luajit with this process's module paths and
-- the environment variables of the table env (may be nil).
function H.luajit_cmd(env)
  local q = function(v) return "'" .. tostring(v):gsub("'", "'\\''") .. "'" end
  local vars = ""
  for k, v in pairs(env or {}) do vars = vars .. k .. "=" .. q(v) .. " " end
  return vars .. "LUA_PATH=" .. q(package.path) .. " LUA_CPATH=" .. q(package.cpath) .. " luajit"
end

-- The constant-data specs' check: a kernel calling the device function
-- f(o, src, i) for i = 0 .. n-1 (src: n + 8 doubles of a fixed pattern) on
-- bk, and f over the same i in plain LuaJIT, o compared element by element
-- (H.check); returns the kernel.
function H.rows_vs_lua(bk, name, f, n)
  local k = H.kernel(bk, function(o, src, m)
    local i = gpu.global_id(0)
    if i < m then f(o, src, i) end
  end, { name = name })
  local src = ffi.new("double[?]", n + 8)
  for j = 0, n + 7 do src[j] = (j * 37) % 11 - 5 + j / 8 end
  local got, ref = ffi.new("double[?]", n), ffi.new("double[?]", n)
  k:launch(n, got, src, n)
  H.interp(function() for i = 0, n - 1 do f(ref, src, i) end end)
  H.check("double", got, function(i) return ref[i] end, n, { what = name .. " on " .. bk })
  return k
end

-- Run code in a child luajit (under `timeout seconds`, GPUJIT_TIMEOUT unset
-- and env added): the script is prelude, then code as the body of
-- `main(...)` called with arg (a string).  The child says what it saw in
-- lines "tag|field|field...": the result maps each tag to its fields
-- ({ tag, field, ... }; a later line with a tag replaces an earlier one),
-- text is the whole output, and res:line(tag) raises, with the output,
-- when the child printed no such line.
local child_mt = { __index = {
  line = function(r, tag)
    local l = r.lines[tag]
    if not l then error("no '" .. tag .. "' line from the child; its output:\n" .. r.text, 2) end
    return l
  end,
} }
function H.child_lines(prelude, code, arg, seconds, env)
  local path = os.tmpname()
  local f = assert(io.open(path, "w"))
  f:write(prelude or "", "local function main(...)\n", code, "\nend\nmain(",
    string.format("%q", arg), ")\n")
  f:close()
  local vars = { GPUJIT_TIMEOUT = "" }
  for k, v in pairs(env or {}) do vars[k] = v end
  local p = io.popen("timeout " .. (seconds or 120) .. " env " .. H.luajit_cmd(vars) .. " " .. path
    .. " 2>&1")
  local text = p:read("*a")
  p:close()
  os.remove(path)
  local lines = {}
  for l in text:gmatch("[^\n]+") do
    local fields = {}
    for x in (l .. "|"):gmatch("([^|]*)|") do fields[#fields + 1] = x end
    lines[fields[1]] = fields
  end
  return setmetatable({ text = text, lines = lines }, child_mt)
end

-- Build a C plugin (docs/plugins.md) from the C source text src into
-- <new temp dir>/<name>.so against src/gpujit_plugin.h and LLVM 15; returns
-- the path, or raises with the compiler's output.  The compiler runs with
-- LD_PRELOAD unset: under `make check` luajit has libasan preloaded, and
-- gcc, inheriting it, fails on LeakSanitizer's reports of its own memory.
function H.build_plugin(name, src)
  local dir = os.tmpname()
  os.remove(dir)
  assert(os.execute("mkdir -p '" .. dir .. "'") == 0)
  local c = dir .. "/" .. name .. ".c"
  local f = assert(io.open(c, "w"))
  f:write(src)
  f:close()
  local so = dir .. "/" .. name .. ".so"
  local cmd = ("env -u LD_PRELOAD cc -std=c11 -shared -fPIC -Wall -Wextra -Werror -Isrc "
    .. "$(llvm-config-15 --cflags) -o '%s' '%s' $(llvm-config-15 --ldflags) -lLLVM-15 2>&1"):format(so, c)
  local p = io.popen(cmd)
  local out = p:read("*a")
  p:close()
  local h = io.open(so, "rb")
  if not h then error("the C plugin " .. name .. " did not build:\n" .. out, 2) end
  h:close()
  return so
end

-- The note of each compile fn makes (the compile event's `note`: what the
-- cpu target's vectorizer and AoS pass did), by kernel name.
function H.notes_of(fn)
  local notes = {}
  local off = H.gpu.on_compile(function(e)
    if e.phase == "done" then notes[e.kernel] = e.note or "" end
  end)
  local ok, err = pcall(fn)
  off()
  if not ok then error(err, 0) end
  return notes
end

-- Code for H.run_isolated("opencl", H.OPENCL_STAGED .. code): PoCL shares
-- host memory; with host_register taken out of its devices' entries,
-- gpujit stages FFI arrays and tables through device buffers, as on a GPU
-- (gpu is the module loaded again, on opencl).
H.OPENCL_STAGED = [[
local core = require("gpujit.core")
local devices = core.devices
core.devices = function()
  local d = devices()
  for _, e in ipairs(d) do e.host_register = nil end
  return d
end
package.loaded.gpujit = nil
gpu = require("gpujit")
gpu.use("opencl")
]]

-- Run Lua code in a separate luajit process (for what might crash: a bad
-- write must not take the whole suite down).  The code gets `gpu` (the
-- module, its current backend set to bk) and `ffi`.  Returns the exit
-- status (true when 0) and the output, stdout and stderr together.  env: a
-- table of environment variables for the process.
function H.run_isolated(bk, code, env)
  local path = os.tmpname()
  local f = assert(io.open(path, "w"))
  f:write("local ffi = require('ffi')\nlocal gpu = require('gpujit')\ngpu.use(", string.format("%q", bk),
    ")\n", code, "\n")
  f:close()
  local p = io.popen(H.luajit_cmd(env) .. " " .. path .. " 2>&1; echo \"exit status $?\"")
  local out = p:read("*a")
  p:close()
  os.remove(path)
  local status = tonumber(out:match("exit status (%d+)%s*$"))
  return status == 0, out, status
end

-- Values used across specs.
H.doubles = { 0, -0.0, 1, -1, 0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 3, -7.25, 7.25, 1e-300, -1e-300, 1e300,
  123456.789, -98765.4321, 2^52 + 0.5, 2^53, -2^53, 1 / 3, math.pi, -math.pi, 1e10, 2^31, -2^31 - 1,
  4294967296.75, 0.1, 5e-324 }
H.specials = { math.huge, -math.huge, 0 / 0 }

-- All pairs (a, b) of two lists, as two parallel lists.
function H.pairs_of(as, bs)
  local x, y = {}, {}
  for _, a in ipairs(as) do
    for _, b in ipairs(bs) do x[#x + 1], y[#y + 1] = a, b end
  end
  return x, y
end

function H.concat(...)
  local out = {}
  for _, t in ipairs({ ... }) do
    for _, v in ipairs(t) do out[#out + 1] = v end
  end
  return out
end

-- n pseudo-random numbers (deterministic): f(k) for k = 1..n.
function H.seq(n, f)
  local t = {}
  for k = 1, n do t[k] = f(k) end
  return t
end

-- A deterministic pseudo-random generator in [0, 1).
function H.rng(seed)
  local s = seed or 12345
  return function()
    s = (s * 1103515245 + 12345) % 2147483648
    return s / 2147483648
  end
end

return H
