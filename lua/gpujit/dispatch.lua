-- gpujit.dispatch: kernel objects and the per-kernel dispatcher; the
-- generated launchers are built by gpujit.launcher.
--
-- A launch k:launch(cfg, a1, ..., an) goes through three layers:
--
-- 1. the entry, generated per kernel with the kernel's exact arity: it
--    rejects extra arguments, writes the launch shape into a reused gj_dims
--    (the entry's own, or a new one on re-entry) and calls the kernel's current launcher (a monomorphic
--    inline cache, K._ic; K._sic for launches on a stream);
-- 2. the launcher, generated per (target, marshal kinds of the arguments):
--    it checks that each argument still has the kind it was generated for
--    (type() and the FFI ctype id, no allocation), returns false when one
--    does not, and otherwise fills its reused argument block (the free
--    launch state's, or a new one's on re-entry),
--    makes the one FFI call gj_launch and copies written tables back;
-- 3. on a miss, `slow` walks a tree keyed by argument tags (type(a), or the
--    ctype id for cdata) to the launcher for this tuple, and only when there
--    is none `build` classifies the arguments, compiles the overload for
--    (types, backend, device) through core.compile if it is new
--    (gpujit.overload), and generates the launcher.
--
-- The "sim" target has the same layers; its launcher runs gpujit.sim.
local each = pairs   -- each(t), never pairs(t), in loops: docs/reliability.md, "pairs loops"
local ffi = require("ffi")
local types = require("gpujit.types")
local array = require("gpujit.array")

local D = {}

local type, tonumber, select, error, tostring = type, tonumber, select, error, tostring
local concat = table.concat

require("gpujit.cdefs")
local gj_dims = ffi.typeof("gj_dims")

-- Set by gpujit (init.lua) through D.setup:
--   core      the gpujit.core module (compile, inspect) or nil
--   lib       FFI namespace with gj_launch, gj_errmsg, gj_mem_* (or a fake)
--   ctx       the core's context (lightuserdata)
--   state     { cur = target or nil, cur_err = message when there is none }
--   resolve(device, fname, level) -> target
--   resolve_compile(device, fname, level) -> target, also compile-only ones
--   inspect_target() -> a target that can compile (not sim), or nil, why
--   compile_opts(K, tgt) -> extra fields for core.compile opts (cache_dir)
--   precompile  true: a launch compiles its signature and runs nothing
local env = { state = {} }
function D.setup(e)
  env = e
end

---------------------------------------------------------------------------
-- Errors with the position of the user's code.

local own = {}
own[debug.getinfo(1, "S").source] = true
function D.own_source(src)
  own[src] = true
end

local function is_own(info)
  local s = info.source
  return info.what == "C" or info.what == "tail" or own[s] or s:sub(1, 8) == "=[gpujit"
end

-- Raise msg at the first stack frame outside gpujit.
local function raise(msg)
  local lvl = 2
  while true do
    local info = debug.getinfo(lvl, "S")
    if info == nil then error(msg, 0) end
    if not is_own(info) then error(msg, lvl) end
    lvl = lvl + 1
  end
end
D.raise = raise

local function pname(K, i)
  local n = K.pnames[i]
  if n then return " '" .. n .. "'" end
  return ""
end

local function argerr(K, i, why)
  raise("bad argument #" .. i .. pname(K, i) .. " to kernel '" .. K.name .. "': " .. why)
end

-- A nested table (a table of tables): what to do instead.
local NESTED = ": only flat Lua tables of numbers (or of booleans) are kernel arguments; "
  .. "flatten a table of rows into one table (t[(row - 1) * width + col]) or pass one "
  .. "table per column"

local function elemerr(K, i, j, v, elem)
  argerr(K, i, "table element [" .. j .. "] is " .. types.describe(v) .. ", expected "
    .. (elem == "bool" and "a boolean" or "a number") .. (type(v) == "table" and NESTED or ""))
end

-- An FFI array of const elements that the kernel writes (every backend;
-- sim finds out at the first write).
local function const_written(K, i, text)
  argerr(K, i, "the FFI array's elements are const (" .. text .. ") and the kernel writes "
    .. "them; pass an array without const")
end

local function freed(K, i)
  argerr(K, i, "the gpu.array has been freed")
end

local function label_of(bk, dev)
  if bk == array.SIM_BK then return "sim" end
  local t = env.target_of and env.target_of(bk, dev)
  return t and t.label or ("backend " .. bk .. " device " .. dev)
end

-- A gpu.array on another device than the launch's: fine when both sides
-- address host memory, an error otherwise.
local function devcheck(K, i, a, tgt)
  if tgt.shared and array.host_accessible(a) then return end
  argerr(K, i, "the gpu.array lives on " .. label_of(a.bk, a.dev) .. ", the kernel runs on "
    .. tgt.label)
end

-- The message of a failed launch of K whose error is msg.
local function fail_text(K, msg)
  -- a timeout's message names the kernel already
  local named = "kernel '" .. K.name .. "' "
  if msg:sub(1, #named) == named then return msg end
  return msg .. " (in kernel " .. K.name .. ")"
end
D.fail_text = fail_text

local function launch_failed(K)
  error(fail_text(K, env.lib and ffi.string(env.lib.gj_errmsg(env.ctx)) or "launch failed"), 0)
end

local function dims_text(d, what)
  local n = d.ndim
  if n == 1 then return tostring(tonumber(d[what][0])) end
  local s = "{" .. tonumber(d[what][0]) .. ", " .. tonumber(d[what][1])
  if n == 3 then s = s .. ", " .. tonumber(d[what][2]) end
  return s .. "}"
end

local function barrier_fail(K, d)
  raise("kernel '" .. K.name .. "' calls gpu.barrier() and must be launched with global a "
    .. "multiple of group in every dimension (global " .. dims_text(d, "global") .. ", group "
    .. dims_text(d, "group") .. ")")
end

---------------------------------------------------------------------------
-- Launch configuration -> gj_dims (gpujit.dims).

local set_dims = require("gpujit.dims")(raise)
own[debug.getinfo(set_dims, "S").source] = true
D.set_dims = set_dims

---------------------------------------------------------------------------
-- Argument classification (cold: on a miss only): gpujit.classify.

local lattice = require("gpujit.lattice")
-- The launch's own types (classes for Lua numbers), for messages.
local function launch_types(kinds)
  local t = {}
  for i = 1, #kinds do t[i] = kinds[i].type end
  return t
end

local classify_mod = require("gpujit.classify")(raise, argerr)
local tag_of, classify = classify_mod.tag_of, classify_mod.classify
local match_sigs, sig_text = classify_mod.match_sigs, classify_mod.sig_text
D.tag_of = tag_of

---------------------------------------------------------------------------
-- Overloads, one per (target, types), and compile events: gpujit.overload.

local bg   -- gpujit.bgcompile, below
local ovl = require("gpujit.overload")({
  env = function() return env end, raise = raise,
  wait_pending = function(K, tgt, key) return bg.wait_pending(K, tgt, key) end,
})
own[debug.getinfo(ovl.overload, "S").source] = true
local record_sig, compile_opts, no_core, one_based_of = ovl.record_sig, ovl.compile_opts,
  ovl.no_core, ovl.one_based_of
local core_types, install, notify, now_ms, overload = ovl.core_types, ovl.install, ovl.notify,
  ovl.now_ms, ovl.overload
D.make_argct, D.compile_opts, D.core_types, D.listeners = ovl.make_argct, compile_opts,
  core_types, ovl.listeners

---------------------------------------------------------------------------
-- Launchers (gpujit.launcher).

local new_launchers = require("gpujit.launcher")
own[debug.getinfo(new_launchers, "S").source] = true
local streams = require("gpujit.stream")
own[debug.getinfo(streams.new, "S").source] = true
local launchers = new_launchers({
  env = function() return env end, raise = raise, argerr = argerr, elemerr = elemerr,
  freed = freed, devcheck = devcheck, launch_failed = launch_failed,
  barrier_fail = barrier_fail, label_of = label_of, tag_of = tag_of, push = streams.push, keep = streams.keep,
  use = streams.use, const_written = const_written,
})
local gen_launcher, sim_launcher = launchers.gen_launcher, launchers.sim_launcher
D.gen_launcher = gen_launcher

local function no_target()
  raise(env.state.cur_err or "no backend selected (gpu.use)")
end

-- async: the launcher for launches on a stream (gpujit.launcher), kept
-- beside the other one in the tree (node[true]); the inline cache is only
-- for launches without a stream.
-- The types a launch with args runs on tgt, the arguments' kinds, and
-- (for the compile event) the launch's own types when those are a join.
local function types_for(K, tgt, huge, args)
  local n = K.nparams
  local kinds = {}
  for i = 1, n do
    local k, why = classify(K, args[i], huge, table.maxn(args) > i)
    if not k then argerr(K, i, why) end
    kinds[i] = k
  end
  local tl, widened
  if K.sigs then
    tl = match_sigs(K, kinds, args)
  else
    tl = {}
    for i = 1, n do tl[i] = kinds[i].type end
    -- Lua-number classes as a lattice: a compiled overload that covers
    -- them, else their join with the compiled ones (gpujit.lattice); a
    -- compile of these very types in the background is waited for instead
    local ob, bgk = one_based_of(K, kinds), rawget(K, "_bg")
    if not (bgk and bgk[tgt] and bgk[tgt][types.sig_key(tl)]) then
      tl, widened = lattice.pick(K._ov[tgt], tl, ob and "|" .. ob or "")
      widened = widened == "join" and launch_types(kinds) or nil
    end
  end
  return tl, kinds, widened
end

local function build(K, tgt, huge, async, ...)
  local n = K.nparams
  local args = { ... }
  local tl, kinds, widened = types_for(K, tgt, huge, args)
  for i = 1, n do
    -- before the compile, which would type t[i][j] as indexing a number
    if kinds[i].kind == "table" and type(args[i][1]) == "table" then
      elemerr(K, i, 1, args[i][1], "double")
    end
    if kinds[i].kind == "fptr" and not tgt.shared then
      argerr(K, i, "an FFI pointer can only be passed to a device that shares host memory ("
        .. tgt.label .. " does not); pass an FFI array, a table or a gpu.array")
    end
  end
  local ov = overload(K, tgt, tl, kinds, widened)
  for i = 1, n do
    local p = ov.info and ov.info.params and ov.info.params[i]
    if kinds[i].kind == "fptr" and p and p.len_used then
      argerr(K, i, "the kernel reads its length (#), which an FFI pointer does not have; "
        .. "pass an FFI array, a table or a gpu.array")
    end
    if p and p.written ~= false and kinds[i].info and kinds[i].info.const then
      const_written(K, i, kinds[i].info.text)
    end
  end
  local L
  if env.precompile then
    L = function() end
  elseif tgt.sim then
    L = sim_launcher(K, tgt, ov, kinds)
  else
    L = gen_launcher(K, tgt, ov, kinds, async)
  end
  local node = K._tree[tgt]
  if node == nil then
    node = {}
    K._tree[tgt] = node
  end
  for i = 1, n do
    local tag = kinds[i].tag
    local nxt = node[tag]
    if nxt == nil then
      nxt = {}
      node[tag] = nxt
    end
    node = nxt
  end
  node[async] = L
  if not async then K._ic = L end
  return L
end

-- The launcher for these argument tags (async: for a launch on a stream).
local function find(K, tgt, huge, async, ...)
  local node = K._tree[tgt]
  if node ~= nil then
    for i = 1, K.nparams do
      node = node[tag_of(K, (select(i, ...)), huge)]
      if node == nil then break end
    end
    local L = node and node[async]
    if L then return L end
  end
  return build(K, tgt, huge, async, ...)
end

-- An inline-cache miss.
local function slow(K, tgt, huge, ...)
  if tgt == nil then no_target() end
  local L = find(K, tgt, huge, false, ...)
  K._ic = L
  return L
end

-- k:launch({ ..., stream = s }, ...): on s's device; returns once the
-- launch is enqueued (the sim backend runs it at once).
local function on_stream(K, d, s, run, partial, huge, ...)
  if not streams.is_stream(s) then
    raise("bad launch configuration for kernel '" .. K.name .. "': 'stream' must be a "
      .. "gpu.stream, got " .. types.describe(s))
  end
  local tgt = s.tgt
  if streams.closed(s) then
    raise("kernel '" .. K.name .. "': the stream is closed (its handle was finalized: the "
      .. "program is ending)")
  end
  if K.pin and K.pin ~= tgt then
    raise("kernel '" .. K.name .. "' runs on " .. K.pin.label .. " (its device option), the "
      .. "stream is on " .. tgt.label)
  end
  if K.opts.timeout and not tgt.sim then   -- before anything is staged (the core checks too)
    raise("kernel '" .. K.name .. "' has a timeout, which launches on a stream do not support"
      .. " (launch it without a stream)")
  end
  if not run then return end
  if tgt.sim or env.precompile then
    slow(K, tgt, huge, ...)(tgt, d, partial, huge, ...)
    return
  end
  if K._sic(tgt, d, partial, huge, s, ...) then return end
  local L = find(K, tgt, huge, true, ...)
  K._sic = L
  if not L(tgt, d, partial, huge, s, ...) then
    error("gpujit internal error: no launcher on a stream for kernel " .. K.name, 0)
  end
end

local function miss()
  return false
end

local function extra(K, ...)
  for i = 1, select("#", ...) do
    if select(i, ...) ~= nil then
      raise("bad argument #" .. (K.nparams + i) .. " to kernel '" .. K.name .. "': the kernel takes "
        .. K.nparams .. " argument" .. (K.nparams == 1 and "" or "s"))
    end
  end
end

local function selferr(K, self)
  raise("kernel '" .. K.name .. "': call launch with a colon, k:launch(cfg, ...), got "
    .. type(self) .. " as the kernel")
end

---------------------------------------------------------------------------
-- Kernel objects.

local function arglist(n)
  local a = {}
  for i = 1, n do a[i] = "a" .. i end
  return n > 0 and (", " .. concat(a, ", ")) or "", concat(a, ", ")
end

-- The launch shape is a gj_dims that the entry takes (FREE) and gives back
-- when the launch is done; a launch that starts meanwhile (re-entry, see
-- gpujit.launcher's launch states) finds none and makes its own.
local function make_entry(K)
  local pc = arglist(K.nparams)
  local code = ([[
local K, set_dims, slow, extra, selferr, S, gj_dims, select, on_stream = ...
local FREE = gj_dims()
return function(self, cfg%s, ...)
  if self ~= K then selferr(K, self) end
  if select("#", ...) ~= 0 then extra(K, ...) end
  local d = FREE or gj_dims()
  FREE = nil
  local run, partial, huge, strm = set_dims(K, d, cfg)
  if strm ~= nil then
    on_stream(K, d, strm, run, partial, huge%s)
  elseif run then
    local tgt = K.pin or S.cur
    if not K._ic(tgt, d, partial, huge%s) then slow(K, tgt, huge%s)(tgt, d, partial, huge%s) end
  end
  FREE = d
end]]):format(pc, pc, pc, pc, pc)
  local chunk = assert(load(code, "=[gpujit entry " .. K.name .. "]"))
  return chunk(K, set_dims, slow, extra, selferr, env.state, gj_dims, select, on_stream)
end

local function make_binder(K)
  local pc, plain = arglist(K.nparams)
  local code = ([[
local K = ...
return function(cfg)
  return function(%s...)
    return K.launch(K, cfg%s, ...)
  end
end]]):format(plain ~= "" and (plain .. ", ") or "", pc)
  return assert(load(code, "=[gpujit bind " .. K.name .. "]"))(K)
end

local methods = {}
local Kmt = {}
local registry = setmetatable({}, { __mode = "k" })

-- k[cfg]: a launcher bound to cfg, cached per cfg: for tables in a table
-- weak in keys and values (the closure refers to its key, so a table weak
-- in keys only would keep every cfg alive), for numbers in a bounded table.
local function bound(K, cfg)
  local cache = type(cfg) == "table" and K._bound_t or K._bound_n
  local f = cache[cfg]
  if f == nil then
    if type(cfg) == "number" then
      K._nbound = K._nbound + 1
      if K._nbound > 64 then
        K._bound_n = {}
        K._nbound = 1
        cache = K._bound_n
      end
    end
    f = K._binder(cfg)
    cache[cfg] = f
  end
  return f
end

Kmt.__index = function(K, key)
  local m = methods[key]
  if m ~= nil then return m end
  local tk = type(key)
  if tk == "table" or tk == "number" then return bound(K, key) end
  return nil
end

Kmt.__tostring = function(K)
  return "gpu.kernel '" .. K.name .. "'"
end

function D.default_name(fn)
  for k, v in each(_G) do
    if v == fn and type(k) == "string" then return k end
  end
  local info = debug.getinfo(fn, "S")
  local src = info.short_src or "?"
  src = src:match("[^/\\]+$") or src
  return src .. ":" .. (info.linedefined or 0)
end

local function nparams_of(fn)
  local info = debug.getinfo(fn, "u")
  if info and info.nparams then return info.nparams end
  return require("jit.util").funcinfo(fn).params
end

-- The most arguments a kernel takes (the core's GJ_MAXPARAMS, which its
-- plugins' buffers count against too): checked here, at gpu.kernel, for
-- every path (the entry and the launchers are generated for any count up
-- to it; docs/api.md, "Limits").
D.MAX_ARGS = 64

-- D.kernel(fn, sigs, opts, pin): sigs nil (lazy) or a list of canonical
-- signatures; opts with name set; pin: a target or nil (follow gpu.use).
function D.kernel(fn, sigs, opts, pin)
  local np = nparams_of(fn)
  -- a derivative (gpujit.autodiff) takes its shadows too: the limit is on what is launched
  local nl = opts.derivative and #opts.derivative.shadows or np
  if nl > D.MAX_ARGS then
    error("gpu.kernel: a kernel takes at most " .. D.MAX_ARGS .. " arguments, "
      .. (opts.name or D.default_name(fn)) .. " has " .. np .. " parameters"
      .. (nl ~= np and (" (" .. nl .. " with its derivative's shadows)") or "") .. " (the limit is "
      .. "gpujit's: pass arrays, a struct array or a table instead of many scalars)", 0)
  end
  local K = {
    fn = fn, name = opts.name or D.default_name(fn), opts = opts, sigs = sigs, pin = pin,
    nparams = opts.derivative and #opts.derivative.shadows or np, pnames = {}, ncompiles = 0,
    _reports = {}, _ncfg = 0, _ic = miss, _sic = miss, _tree = {}, _ov = {}, _siglist = {}, _sigkeys = {},
    _bound_t = setmetatable({}, { __mode = "kv" }), _bound_n = {}, _nbound = 0,
  }
  for i = 1, K.nparams do
    -- a derivative (gpujit.autodiff) names its shadows itself
    K.pnames[i] = opts.derivative and opts.derivative.names[i] or debug.getlocal(fn, i)
  end
  if sigs then
    for j, sig in ipairs(sigs) do
      if #sig ~= K.nparams then
        error("gpu.kernel: signature " .. (#sigs > 1 and ("#" .. j .. " ") or "") .. sig_text(sig)
          .. " has " .. #sig .. " type" .. (#sig == 1 and "" or "s") .. " but the kernel takes "
          .. K.nparams .. " parameter" .. (K.nparams == 1 and "" or "s"), 0)
      end
    end
  end
  setmetatable(K, Kmt)
  K.launch = make_entry(K)
  K._binder = make_binder(K)
  registry[K] = true
  return K
end

-- Drop every compiled overload and launcher (gpu.cache.clear).
function D.clear(K)
  K._ic, K._sic = miss, miss
  K._tree, K._ov, K._siglist, K._sigkeys = {}, {}, {}, {}
end

function D.clear_all()
  for K in each(registry) do D.clear(K) end
end

local function copy_list(t)
  local c = {}
  for i = 1, #t do c[i] = t[i] end
  return c
end

function methods.signatures(K)
  local out = {}
  for i, tl in ipairs(K._siglist) do out[i] = copy_list(tl) end
  return out
end

local function check_types(K, tl, fname)
  if tl == nil then
    if #K._siglist == 1 then return K._siglist[1] end
    if K.sigs and #K.sigs == 1 then return K.sigs[1] end
    raise(fname .. ": give the signature, a list of type names")
  end
  local ok, res = pcall(types.normalize_sig, tl, fname)
  if not ok then raise(res) end
  if #res ~= K.nparams then
    raise(fname .. ": signature " .. sig_text(res) .. " has " .. #res .. " types but kernel '"
      .. K.name .. "' takes " .. K.nparams)
  end
  return res
end

-- k:precompile(types [, device]): compile for the current (or the given)
-- target without launching.
function methods.precompile(K, tl, device)
  tl = check_types(K, tl, "precompile")
  local tgt = device ~= nil and env.resolve(device, "precompile", 2) or K.pin or env.state.cur
  if tgt == nil then no_target() end
  overload(K, tgt, tl)
  return K
end

-- k:signature_for(cfg, ...): the types k:launch(cfg, ...) would run on the
-- kernel's (or the current) device now -- the arguments' classes, an
-- overload that covers them or their join (gpujit.lattice), an eager
-- signature that fits -- for k:compile; k:compile_for(cfg, ...) compiles
-- them (k:compile's result).  Neither launches.
local function signature_for(K, cfg, ...)
  local tgt = K.pin or env.state.cur
  if tgt == nil then no_target() end
  if select("#", ...) > K.nparams then extra(K, select(K.nparams + 1, ...)) end
  local _, _, huge = set_dims(K, gj_dims(), cfg)
  return copy_list((types_for(K, tgt, huge, { ... })))
end
methods.signature_for = signature_for

function methods.compile_for(K, cfg, ...)
  return methods.compile(K, signature_for(K, cfg, ...))
end

-- k:compile(types [, opts]) and its handles (gpujit.bgcompile).
local new_bg = require("gpujit.bgcompile")
own[debug.getinfo(new_bg, "S").source] = true
bg = new_bg({ env = function() return env end, check_types = check_types, no_target = no_target,
  no_core = no_core, compile_opts = compile_opts, core_types = core_types, install = install,
  overload = overload, record_sig = record_sig, notify = notify, now_ms = now_ms, raise = raise })
methods.compile = bg.compile

-- The target that inspect and gpu.job compile for: the given device (also
-- one that compiles without launching), else the kernel's or the current
-- one, else (sim) any compiling backend.
local function compile_target(K, device, fname)
  local tgt
  if device ~= nil then
    tgt = (env.resolve_compile or env.resolve)(device, fname, 4)
  else
    tgt = K.pin or env.state.cur
  end
  if tgt == nil or tgt.sim then
    local why
    if env.inspect_target then tgt, why = env.inspect_target() else tgt = nil end
    if not tgt then raise(fname .. ": " .. (why or "no compiling backend")) end
  end
  if not env.core then no_core() end
  return tgt
end

local function inspect(K, tl, what, device, fname)
  tl = check_types(K, tl, fname)
  local tgt = compile_target(K, device, fname)
  local ok, res = pcall(env.core.inspect, K.fn, core_types(tl), compile_opts(K, tgt), what)
  if not ok then error(res, 0) end
  return res
end

-- k:report(name): what plugin `name` reported after the kernel's last
-- launch (docs/plugins.md), or nil.
function methods.report(K, name)
  return K._reports[name]
end

-- k:base(): the kernel object itself (gpujit.autodiff differentiates it;
-- an object that forwards k's methods gives k)
function methods.base(K)
  return K
end

function methods.inspect_llvm(K, tl, device)
  return inspect(K, tl, "llvm", device, "inspect_llvm")
end

function methods.inspect_asm(K, tl, device)
  return inspect(K, tl, "asm", device, "inspect_asm")
end

-- gpu.job(k, types [, device]): the compile job (a table) of k for types
-- on the current (or the given) target, after its job option and plugins.
function D.job(K, tl, device)
  tl = check_types(K, tl, "gpu.job")
  local tgt = compile_target(K, device, "gpu.job")
  local ok, res = pcall(env.core.job, K.fn, tl, compile_opts(K, tgt))
  if not ok then error(res, 0) end
  return res
end

D.methods = methods
D.overload = overload

return D
