-- gpujit: Lua functions as GPU (and CPU) kernels.  The user contract is
-- docs/api.md (from ../shared/API.md); this file is the API surface, the rest lives in
--   gpujit.dispatch  kernels, dispatch on argument types, generated launchers
--   gpujit.types     type names, FFI ctypes and Lua values
--   gpujit.array     device arrays
--   gpujit.sim       the "sim" backend and the intrinsic functions
--   gpujit.loadcore  requires the compiled core, once
--   gpujit.devices   the registry of backends, devices and targets
-- and in the compiled core, gpujit.core (build/gpujit/core.so).
local each = pairs   -- each(t), never pairs(t), in loops: docs/reliability.md, "pairs loops"
local ffi = require("ffi")
local types = require("gpujit.types")
local sim = require("gpujit.sim")
local array = require("gpujit.array")
local dispatch = require("gpujit.dispatch")
local plugins = require("gpujit.plugins")
local util = require("gpujit.util")
require("gpujit.cdefs")
local rng = require("gpujit.rng")
local streams = require("gpujit.stream")
local envvars = require("gpujit.env")
local keys = require("gpujit.keys")

local gpu = { _VERSION = "0.1.0" }

dispatch.own_source(debug.getinfo(1, "S").source)
dispatch.own_source(debug.getinfo(array.array, "S").source)
dispatch.own_source(debug.getinfo(types.normalize, "S").source)
dispatch.own_source(debug.getinfo(require("gpujit.classify"), "S").source)

local raise = dispatch.raise

---------------------------------------------------------------------------
-- The core.

local core, core_error, lib, ctx
do
  local loaded = require("gpujit.loadcore")
  core, core_error = loaded.core, loaded.error
end

if core then
  local path = core.path or package.searchpath("gpujit.core", package.cpath)
  local ok, l = pcall(ffi.load, path)
  if ok then
    lib, ctx = l, core.ctx
    -- the sim backend's launches with a timeout count SIGINTs with the core's handler
    sim.sigint = {
      begin = function() return l.gj_sigint_begin() end,
      finish = function() l.gj_sigint_end() end,
      count = function() return tonumber(l.gj_sigint_count()) end,
    }
  else
    core_error = "cannot load " .. tostring(path) .. " through the FFI: " .. tostring(l)
    core = nil
  end
end

-- Every GPUJIT_* variable read at load, checked before anything reads it
-- (gpujit.env: an invalid value is an error of require("gpujit")).
envvars.check_all(lib)

gpu.core = core
gpu.core_error = core_error
if core and core.lnum_classes then types.set_lnum_classes(core.lnum_classes()) end

---------------------------------------------------------------------------
-- Backends, devices and targets (gpujit.devices).

local R = require("gpujit.devices").open(core, core_error)
local sim_entry, targets, backends, copy = R.sim_entry, R.targets, R.backends, R.copy
local sim_target, target_of, resolve = R.sim_target, R.target_of, R.resolve
local resolve_compile, default_target, inspect_target =
  R.resolve_compile, R.default_target, R.inspect_target

-- The current target.  Without GPUJIT_BACKEND it is the default device,
-- chosen when first read (which opens every backend), so that a script
-- whose first word is gpu.use("cpu") opens the cpu backend only.
local S = setmetatable({ cur_err = nil }, { __index = function(s, k)
  if k == "cur" and rawget(s, "lazy") then
    s.lazy = nil
    local t = default_target()
    s.cur = t
    return t
  end
end })

do
  local want = os.getenv("GPUJIT_BACKEND")
  if want and want ~= "" then
    local t, err = resolve(want, "GPUJIT_BACKEND=" .. want, nil)
    if t then S.cur = t else S.cur_err = err end
  else
    S.lazy = true
  end
end

function gpu.devices()
  R.open_all()
  local out = {}
  for _, t in ipairs(targets) do out[#out + 1] = copy(t.entry) end
  out[#out + 1] = copy(sim_entry)
  return out
end

function gpu.backends()
  R.open_all()
  local out = {}
  for _, b in ipairs(backends) do out[#out + 1] = copy(b) end
  return out
end

-- gpu.use("cpu" | "cuda:1" | "sim" | entry [, index]) -> the device entry.
function gpu.use(device, index)
  local t = resolve(device, "gpu.use", 2, index)
  S.cur, S.cur_err, S.lazy = t, nil, nil
  return copy(t.entry)
end

function gpu.backend()
  return S.cur and S.cur.backend or nil
end

function gpu.device()
  return S.cur and copy(S.cur.entry) or nil
end

-- gpu.synchronize(): every stream's launches (gpujit.stream), then the
-- current device; raises the first error.
function gpu.synchronize()
  local err = streams.synchronize_all()
  local t = S.cur
  if t and not t.sim and lib.gj_sync(ctx, t.bk, t.dev) ~= 0 then
    err = err or ("gpu.synchronize: " .. ffi.string(lib.gj_errmsg(ctx)))
  end
  if err then error(err, 0) end
end

---------------------------------------------------------------------------
-- Cache.

local cache_dir = envvars.cache_dir   -- nil: no directory (gpujit.env)

local function cache_enabled()
  return envvars.get("GPUJIT_CACHE", "gpu.cache") ~= false and cache_dir() ~= nil
end

-- The directory, for export and import, which need one.
local function need_dir(what)
  local d = cache_dir()
  if not d then
    error("gpu.cache." .. what .. ": no disk cache directory (GPUJIT_CACHE_DIR, XDG_CACHE_HOME and "
      .. "HOME are unset): set GPUJIT_CACHE_DIR", 3)
  end
  return d
end

local function cache_core(what)
  if not (core and core.cache_stats) then
    error("gpu.cache." .. what .. ": the compiled core (gpujit.core) is not loaded", 3)
  end
  return core
end

local function check_file(what, file)
  if type(file) ~= "string" or file == "" then
    error("gpu.cache." .. what .. ": expected a file name, got " .. type(file), 3)
  end
end

-- The disk cache (src/gj_cache.h).  Counters are this Lua state's; bytes
-- and entries are the directory's, shared with every process using it.
gpu.cache = {
  dir = cache_dir,
  enabled = cache_enabled,
  -- Forget every compiled overload and remove every entry of the directory;
  -- returns how many entries were removed.
  clear = function()
    dispatch.clear_all()
    local d = cache_dir()
    return d and cache_core("clear").cache_clear(d) or 0
  end,
  -- Without a directory: this state's counters, no bytes or entries, dir nil.
  stats = function()
    local d = cache_dir()
    local s = cache_core("stats").cache_stats(d or "")
    s.dir = d
    s.enabled = cache_enabled()
    return s
  end,
  -- Every sound entry of the directory into one file; returns how many.
  export = function(file)
    check_file("export", file)
    local ok, n = pcall(cache_core("export").cache_export, need_dir("export"), file)
    if not ok then error("gpu.cache.export: " .. tostring(n), 2) end
    return n
  end,
  -- The entries of a bundle into the directory; returns how many were
  -- imported and how many were rejected (damaged, or of another format).
  import = function(file)
    check_file("import", file)
    local ok, n, rejected = pcall(cache_core("import").cache_import, need_dir("import"), file)
    if not ok then error("gpu.cache.import: " .. tostring(n), 2) end
    return n, rejected
  end,
}

---------------------------------------------------------------------------
-- Kernels.

local known_opts = {
  name = "string", backend = true, device = true, cache = "boolean", fastmath = "boolean",
  precision = "string", boundscheck = "boolean",
  plugins = "table", job = true, timeout = true, print_buffer = "number",
  vectorize = "boolean",
}

-- A timeout: seconds > 0 (finite, below 1e9), or false (none, whatever
-- GPUJIT_TIMEOUT says).  GPUJIT_TIMEOUT applies to kernels that do not say:
-- unset or empty is no timeout; anything else must be such a number.
local function timeout_of(o, level)
  local t = o.timeout
  if t == false then return nil end
  if t ~= nil then
    if type(t) ~= "number" or not (t > 0 and t < 1e9) then
      error("gpu.kernel: option 'timeout' must be a number of seconds > 0 (or false), got "
        .. (type(t) == "number" and tostring(t) or type(t)), level + 1)
    end
    return t
  end
  return envvars.get("GPUJIT_TIMEOUT", "gpu.kernel", level + 1)
end

-- The options table (nil: none) checked and copied, with the environment's
-- defaults (GPUJIT_BOUNDSCHECK, GPUJIT_TIMEOUT) filled in: every way of
-- making a kernel comes through here.
local function check_opts(opts)
  if opts == nil then opts = {} end
  if type(opts) ~= "table" then
    error("gpu.kernel: options must be a table, got " .. type(opts), 3)
  end
  local o = {}
  for k, v in each(opts) do
    local want = known_opts[k]
    if k == "async" then
      error("gpu.kernel: option 'async' was removed: launch on a stream instead, "
        .. "k:launch({ global = n, stream = s }, ...) with s = gpu.stream(), and call "
        .. "s:synchronize()", 3)
    end
    if want == nil then
      local near = keys.closest(k, known_opts)
      error("gpu.kernel: unknown option '" .. tostring(k) .. "'"
        .. (near and (" (did you mean '" .. near .. "'?)") or ""), 3)
    end
    if want ~= true and type(v) ~= want then
      error("gpu.kernel: option '" .. k .. "' must be a " .. want .. ", got " .. type(v), 3)
    end
    o[k] = v
  end
  plugins.check_kernel_opts(o, 3)
  if o.boundscheck == nil then o.boundscheck = envvars.get("GPUJIT_BOUNDSCHECK", "gpu.kernel", 3) end
  o.timeout = timeout_of(o, 3)
  local pb = o.print_buffer
  if pb ~= nil and not (pb >= 64 and pb <= 2 ^ 30 and pb % 1 == 0) then
    error("gpu.kernel: option 'print_buffer' must be a whole number of bytes in 64 .. 2^30, got "
      .. tostring(pb), 3)
  end
  local p = o.precision
  if p ~= nil and p ~= "double" and p ~= "single" and p ~= "lua" then
    error("gpu.kernel: option 'precision' must be \"double\", \"single\" or \"lua\", got \""
      .. p .. "\"", 3)
  end
  return o
end

local function pin_of(o)
  if o.backend ~= nil then
    local idx = type(o.device) == "number" and o.device or nil
    return resolve(o.backend, "gpu.kernel", 3, idx)
  elseif type(o.device) == "table" or type(o.device) == "string" then
    return resolve(o.device, "gpu.kernel", 3)
  elseif type(o.device) == "number" then
    local cur = S.cur
    if not cur then error("gpu.kernel: " .. tostring(S.cur_err), 3) end
    return resolve(cur.backend, "gpu.kernel", 3, o.device)
  elseif o.device ~= nil then
    error("gpu.kernel: option 'device' must be a number or an entry of gpu.devices()", 3)
  end
  return nil
end

local function normalize_sigs(sig)
  if type(sig[1]) == "table" then
    local out = {}
    for i, s in ipairs(sig) do out[i] = types.normalize_sig(s, "gpu.kernel: signature #" .. i) end
    return out
  end
  return { types.normalize_sig(sig, "gpu.kernel: signature") }
end

-- gpu.kernel(fn [, opts]) or gpu.kernel(sig, fn [, opts]).
function gpu.kernel(a, b, c)
  local fn, sig, opts
  if type(a) == "function" then
    fn, opts = a, b
  elseif type(a) == "table" and type(b) == "function" then
    sig, fn, opts = a, b, c
  elseif type(a) == "table" then
    error("bad argument #2 to 'kernel' (function expected, got " .. type(b)
      .. "): gpu.kernel(signature, fn [, opts])", 2)
  else
    error("bad argument #1 to 'kernel' (function expected, got " .. type(a)
      .. "): gpu.kernel(fn [, opts]) or gpu.kernel(signature, fn [, opts])", 2)
  end
  local o = check_opts(opts)
  local sigs
  if sig then
    local ok, res = pcall(normalize_sigs, sig)
    if not ok then error(res, 2) end
    sigs = res
  end
  local pin = pin_of(o)
  local ok, K = pcall(dispatch.kernel, fn, sigs, o, pin)
  if not ok then error(K, 2) end
  if sigs then
    local tgt = pin or S.cur
    if tgt then
      for _, s in ipairs(sigs) do dispatch.overload(K, tgt, s) end
    end
  end
  return K
end

---------------------------------------------------------------------------
-- Device arrays.

local function current(fname, level)
  if S.cur == nil then error(fname .. ": " .. tostring(S.cur_err), level + 1) end
  return S.cur
end

array.setup({
  lib = lib, ctx = ctx, current = current, resolve = resolve, target_of = target_of,
  sim_target = sim_target,
})

-- Random numbers (gpujit.rng): Lua functions that kernels compile as device
-- functions and the host calls as they are.
gpu.philox4x32 = rng.philox4x32
gpu.uniform = rng.uniform
gpu.uniform_float = rng.uniform_float
gpu.normal = rng.normal

-- Streams (gpujit.stream).
streams.setup({
  lib = lib, ctx = ctx, current = current, resolve = resolve,
  fail_text = dispatch.fail_text, use = array.use, is_garray = array.is_garray,
  release = array.release, now = util.now,
})
gpu.stream = streams.new
array.set_streams(streams)

gpu.array = array.array
gpu.zeros = array.zeros
gpu.to_device = array.to_device

---------------------------------------------------------------------------
-- The dispatcher's view of all this.

dispatch.setup({
  core = core, core_error = core_error, lib = lib, ctx = ctx, state = S,
  resolve = resolve, resolve_compile = resolve_compile, target_of = target_of,
  inspect_target = inspect_target,
  compile_opts = function(K)
    return { cache_dir = K.opts.cache ~= false and cache_enabled() and cache_dir() or nil,
             plugins = plugins.active(K) }
  end,
  -- GPUJIT_PRECOMPILE=1 (bin/gpujit-precompile): launches compile their
  -- signature, and stop there.
  precompile = envvars.get("GPUJIT_PRECOMPILE") == true,
  -- GPUJIT_VERBOSE=1: a line on stderr per compile (docs/api.md)
  verbose = envvars.get("GPUJIT_VERBOSE") == true,
  clock = function() return util.now() * 1e3 end,
})

-- gpu.on_compile(fn): fn(event) before and after each compile (docs/api.md);
-- returns a function that unregisters fn.
function gpu.on_compile(fn)
  if type(fn) ~= "function" then
    error("bad argument #1 to 'on_compile' (function expected, got " .. type(fn) .. ")", 2)
  end
  local list = dispatch.listeners
  list[#list + 1] = fn
  return function()
    for i = #list, 1, -1 do
      if list[i] == fn then table.remove(list, i) return true end
    end
    return false
  end
end

---------------------------------------------------------------------------
-- Plugins and compile jobs (docs/plugins.md).

plugins.setup({ core = core, lib = lib, ctx = ctx, changed = dispatch.clear_all })
gpu.plugin = plugins.register
gpu.load_plugin = plugins.load
gpu.remove_plugin = plugins.remove
gpu.plugins = plugins.list

-- gpu.job(kernel, types [, device]): the compile job as a table.
function gpu.job(k, tl, device)
  if getmetatable(k) == nil or type(k) ~= "table" or not k.fn then
    error("gpu.job: expected a kernel (gpu.kernel), got " .. type(k), 2)
  end
  return dispatch.job(k, tl, device)
end

---------------------------------------------------------------------------
-- Intrinsics: real Lua functions (answered by the sim backend while it runs
-- a kernel) that the core recognizes by identity when it compiles one.

for _, name in ipairs(sim.intrinsics) do
  gpu[name] = sim[name]
end
if core and core.intrinsic then
  core.intrinsic(print, "print")   -- print in kernels (gpujit.printer)
  core.intrinsic(type, "type")     -- a string constant while typing (metatypes)
  core.intrinsic(assert, "assert") -- assert and error in kernels (src/gj_cg_assert.c)
  core.intrinsic(error, "error")
  for _, name in ipairs(sim.intrinsics) do
    core.intrinsic(gpu[name], name)
  end
end

---------------------------------------------------------------------------
-- Parallel primitives (gpujit.prims and a module per concern, each
-- listing its functions in `api`; docs/api.md).

local prims = require("gpujit.prims")
prims.setup({ gpu = gpu, ctx = ctx, current = current, target_of = target_of })
gpu.reduce, gpu.scan = prims.reduce, prims.scan
for _, m in ipairs({ "prims_map", "prims_sort", "prims_select", "prims_segment", "hashgrid" }) do
  for name, f in each(require("gpujit." .. m).api) do gpu[name] = f end
end

do   -- derivatives of kernels (docs/autodiff.md)
  local AD = require("gpujit.autodiff")(dispatch, raise, function(K)   -- does K run on sim?
    local t = K.pin or S.cur
    return t ~= nil and t.sim == true
  end)
  gpu.jvp, gpu.grad = AD.jvp, AD.grad
  local T = require("gpujit.adtape")(AD, raise)
  gpu.gradcheck, gpu.tape = T.gradcheck, T.tape
end
gpu.types = types
gpu._raise = raise

return gpu
