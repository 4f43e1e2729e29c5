-- gpujit.overload: a kernel's compiled overloads, one per (target, types):
-- the cold half of a launch (layer 3 of gpujit.dispatch), of k:precompile
-- and of k:compile (gpujit.bgcompile installs through the same functions).
--
-- overload(K, tgt, tl, kinds, widened) returns K's overload for types tl on
-- target tgt (K._ov[tgt][key]), compiling it when it is new: its options
-- (compile_opts: K.opts, the environment's), the compile events
-- (GPUJIT_VERBOSE's line, gpu.on_compile's listeners), core.compile, and
-- install, which checks the parameters the core compiled and makes the
-- argument block's FFI struct at the core's offsets (make_argct).  A sim
-- overload compiles nothing.  Each new signature is recorded once in
-- K._siglist (k:signatures()).  Errors are the caller's raise, or the
-- core's message as it is.
--
-- The functions that need dispatch's state come from a factory, which
-- gpujit.dispatch calls once with
--   env()                      its environment (D.setup's table, read at
--                              each call: D.setup may replace it)
--   raise(msg)                 its error at the user's code
--   wait_pending(K, tgt, key)  true when a background compile of key was
--                              waited for (gpujit.bgcompile's)
-- and that returns them with the plain ones.
local each = pairs   -- each(t), never pairs(t), in loops: docs/reliability.md, "pairs loops"
local ffi = require("ffi")
local types = require("gpujit.types")
local events = require("gpujit.events")

local concat = table.concat
local listeners, verbose_line, event_of = events.listeners, events.line, events.event

local function record_sig(K, tl, key)
  if not K._sigkeys[key] then
    K._sigkeys[key] = true
    K._siglist[#K._siglist + 1] = tl
  end
end

-- The argument block of an overload as a packed FFI struct with the core's
-- offsets: scalar i is field a<i>, array i is a<i> (const void *) and
-- a<i>_len (int64_t).  One ctype per layout (the declaration's text), not
-- per overload: LuaJIT never frees a ctype id (65,536 per state), and a
-- process that compiles kernels for ever would run out of them (and so
-- would its own ffi.typeof).  Kept for the state's life (a weak table
-- would make a layout again, with a new id, each time it comes back): a
-- program uses as many layouts as it has distinct argument lists.
local argcts = {}
local function make_argct(K, info, tl)
  local fields, cur = {}, 0
  local params = info.params or {}
  -- after the kernel's own parameters: the plugins' buffers (arrays)
  for i = 1, math.max(#tl, #params) do
    local p = params[i]
    if p == nil then
      error("gpujit internal error: core.compile returned no layout for parameter #" .. i
        .. " of kernel " .. K.name, 0)
    end
    local off = p.offset
    if off > cur then
      fields[#fields + 1] = ("uint8_t _pad%d[%d];"):format(i, off - cur)
      cur = off
    elseif off < cur then
      error("gpujit internal error: overlapping parameters in the argument block of kernel "
        .. K.name, 0)
    end
    local isarr = p.is_array
    if isarr == nil then isarr = types.elem(tl[i]) ~= nil end
    if isarr then
      fields[#fields + 1] = ("const void *a%d; int64_t a%d_len;"):format(i, i)
      cur = cur + 16
    else
      local e = p.elem or tl[i]
      fields[#fields + 1] = ("%s a%d;"):format(e, i)
      cur = cur + types.size[e]
    end
  end
  local argsize = info.argsize or cur
  if argsize > cur then fields[#fields + 1] = ("uint8_t _tail[%d];"):format(argsize - cur) end
  if #fields == 0 then fields[1] = "uint8_t _empty[8];" end
  local decl = "struct __attribute__((packed)) { " .. concat(fields, " ") .. " }"
  local ct = argcts[decl]
  if ct == nil then
    ct = ffi.typeof(decl)
    argcts[decl] = ct
  end
  for i = 1, math.max(#tl, #params) do
    assert(ffi.offsetof(ct, "a" .. i) == params[i].offset, "argument block layout")
  end
  return ct
end

-- The vectorize option; unset: on unless GPUJIT_VECTORIZE=0 (docs/api.md;
-- read at each compile, checked by gpujit.env).
local function vectorize_of(opts)
  if opts.vectorize ~= nil then return opts.vectorize end
  return require("gpujit.env").get("GPUJIT_VECTORIZE", "compile") ~= false
end

-- Bounds-checked kernels check a Lua table's indices from 1 and other arrays
-- from 0, so the kinds of the arguments are part of the overload: "0110",
-- per argument whether it is a table (nil without boundscheck or kinds).
local function one_based_of(K, kinds)
  if not (K.opts.boundscheck and kinds) then return nil end
  local b = {}
  for i = 1, #kinds do b[i] = kinds[i].kind == "table" and "1" or "0" end
  return concat(b)
end

-- The type names as the core reads them: an array of structs is its
-- layout text (types.core_name).
local function core_types(tl)
  local out = tl
  for i = 1, #tl do
    local c = types.core_name(tl[i])
    if c ~= tl[i] then
      if out == tl then out = { unpack(tl) } end
      out[i] = c
    end
  end
  return out
end

-- A compiled overload into the kernel's in-memory cache (info: what
-- core.compile or core.compile_finish returned).
local function install(K, tl, key, info, plugins)
  K.ncompiles = K.ncompiles + 1
  for i = 1, #tl do
    local p = info.params and info.params[i]
    if p and p.type and p.type ~= types.flat(tl[i]) then   -- "float[]" for "float[][4]"
      error("gpujit internal error: core compiled parameter #" .. i .. " of kernel " .. K.name
        .. " as " .. tostring(p.type) .. ", expected " .. tl[i], 0)
    end
  end
  local argct = make_argct(K, info, tl)
  return { types = tl, key = key, info = info, argct = argct,
           handle = ffi.cast("void *", info.handle), plugins = plugins }
end

return function(deps)
  local env, raise, wait_pending = deps.env, deps.raise, deps.wait_pending

  local function compile_opts(K, tgt, one_based)
    local o = {
      bk = tgt.bk, device = tgt.dev, name = K.name,
      precision = K.opts.precision or "double",
      fastmath = K.opts.fastmath and true or false,
      boundscheck = K.opts.boundscheck and true or false,
      vectorize = vectorize_of(K.opts),
      timeout = K.opts.timeout, print_buffer = K.opts.print_buffer,
      one_based = one_based, argnames = K.pnames,
    }
    if K.opts.derivative then   -- gpujit.autodiff, src/gj_ad.h
      o.derivative, o.shadows = K.opts.derivative.mode, K.opts.derivative.shadows
    end
    if env().compile_opts then
      for k, v in each(env().compile_opts(K, tgt)) do o[k] = v end
    end
    return o
  end

  local function no_core()
    raise("the compiled core (gpujit.core) is not loaded"
      .. (env().core_error and (": " .. env().core_error) or "")
      .. "; only the \"sim\" backend is available")
  end

  -- Compile events: GPUJIT_VERBOSE's line on stderr and gpu.on_compile's
  -- callbacks, before ("start") and after ("done" or "error") each compile.
  local function notify(ev)
    if env().verbose and ev.phase ~= "start" then io.stderr:write(verbose_line(ev)) end
    for i = 1, #listeners do
      local ok, err = pcall(listeners[i], ev)
      if not ok then raise("gpu.on_compile callback: " .. tostring(err)) end
    end
  end

  local function now_ms()
    return env().clock and env().clock() or os.clock() * 1e3
  end

  local function core_compile(K, tgt, tl, opts, widened)
    if not (env().verbose or listeners[1]) then
      return pcall(env().core.compile, K.fn, core_types(tl), opts)
    end
    local ev = event_of(K, tgt, tl)
    ev.widened = widened
    notify(ev)
    local t0 = now_ms()
    local ok, info = pcall(env().core.compile, K.fn, core_types(tl), opts)
    ev.total_ms = now_ms() - t0
    events.finish(ev, ok, info)
    return ok, info, ev
  end

  -- widened: the launch's own types when tl is their join with compiled
  -- ones (gpujit.lattice), for the compile event.
  local function overload(K, tgt, tl, kinds, widened)
    local key = types.sig_key(tl)
    local one_based = one_based_of(K, kinds)
    if one_based then key = key .. "|" .. one_based end
    local per = K._ov[tgt]
    if per == nil then
      per = {}
      K._ov[tgt] = per
    end
    local ov = per[key]
    if ov then return ov end
    if wait_pending(K, tgt, key) then return overload(K, tgt, tl, kinds) end
    local ev   -- the compile event, when someone listens
    if tgt.sim then
      if K.opts.derivative then
        raise("kernel '" .. K.name .. "': derivatives (gpu.jvp, gpu.grad) are not supported on sim yet")
      end
      ov = { types = tl, key = key, sim = true }
    else
      if not env().core then no_core() end
      local opts = compile_opts(K, tgt, one_based)
      local ok, info
      ok, info, ev = core_compile(K, tgt, tl, opts, widened)
      if not ok then
        if ev then notify(ev) end
        error(info, 0)
      end
      ov = install(K, tl, key, info, opts.plugins)
    end
    per[key] = ov
    record_sig(K, tl, types.sig_key(tl))
    if ev then notify(ev) end
    return ov
  end

  return {
    record_sig = record_sig, make_argct = make_argct, one_based_of = one_based_of,
    core_types = core_types, install = install, listeners = listeners,
    compile_opts = compile_opts, no_core = no_core, notify = notify, now_ms = now_ms,
    overload = overload,
  }
end
