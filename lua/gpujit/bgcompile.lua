-- gpujit.bgcompile: k:compile(types [, opts]) and its handles
-- (docs/api.md, "Compiling in the background").
--
-- An async compile runs its front half (typing, codegen: everything that
-- reads Lua values) in core.compile_start, on this thread, and its back
-- half (LLVM's optimizer and code generation, the device's build) on the
-- context's compile worker (src/gj_bg.h).  The handle is kept in
-- K._bg[target][signature key] until it is finished; a launch of that
-- signature (gpujit.overload's overload) waits for it through wait_pending
-- instead of compiling again.  Finishing a handle installs the overload
-- in the kernel's in-memory cache exactly as a synchronous compile does.
local events = require("gpujit.events")

return function(I)
  local B = {}
  local env = I.env

  local H = {}
  H.__index = H

  local function copy(t)
    local c = {}
    for i = 1, #t do c[i] = t[i] end
    return c
  end

  local function pending_of(K, tgt)
    local bgk = rawget(K, "_bg")
    if bgk == nil then
      bgk = {}
      rawset(K, "_bg", bgk)
    end
    local per = bgk[tgt]
    if per == nil then
      per = {}
      bgk[tgt] = per
    end
    return per
  end

  -- Take the result of h's compile (waiting for it): the overload
  -- installed, or the error kept.  Raises nothing.
  local function finish(h)
    local c = h._c
    if c == nil then return end
    h._c = nil
    local K, tgt = h.kernel, h._tgt
    local ok, info = pcall(env().core.compile_finish, c)
    pending_of(K, tgt)[h._key] = nil
    local ev = h._ev
    if ev then ev.total_ms = I.now_ms() - h._t0 end
    if ok then
      local per = K._ov[tgt]
      if per == nil then
        per = {}
        K._ov[tgt] = per
      end
      ok, info = pcall(function()
        if per[h._key] == nil then
          per[h._key] = I.install(K, h.types, h._key, info, nil)
          I.record_sig(K, h.types, h._key)
        end
        return info
      end)
    end
    if ok then
      h.status_ = "ready"
    else
      h.status_, h.error_ = "failed", tostring(info)
    end
    if ev then
      events.finish(ev, ok, info)
      pcall(I.notify, ev)   -- a callback's error is not the compile's
    end
  end

  -- h:done(): true once the compile has finished, successfully or not.
  function H.done(h)
    if h._c == nil then return true end
    if not env().core.compile_done(h._c) then return false end
    finish(h)
    return true
  end

  -- h:wait(): waits for the compile; raises its error (as a synchronous
  -- compile would: file:line, the kernel's name); returns the kernel.
  function H.wait(h)
    finish(h)
    if h.status_ == "failed" then error(h.error_, 0) end
    return h.kernel
  end

  -- h:status(): "compiling", "ready", or "failed" and the error; never waits.
  function H.status(h)
    h:done()
    return h.status_, h.error_
  end

  H.__tostring = function(h)
    return "gpu.compile handle of kernel '" .. h.kernel.name .. "' (" .. h:status() .. ")"
  end

  local function handle(K, tl, status)
    return setmetatable({ kernel = K, types = copy(tl), status_ = status }, H)
  end

  -- dispatch.lua: a launch of a signature still compiling waits for it;
  -- true when there was one (its result is installed or its error kept).
  function B.wait_pending(K, tgt, key)
    local bgk = rawget(K, "_bg")
    local h = bgk and bgk[tgt] and bgk[tgt][key]
    if not h then return false end
    finish(h)
    if h.status_ == "failed" then error(h.error_, 0) end
    return true
  end

  -- k:compile(types [, opts]): opts.async (compile in the background and
  -- return at once), opts.device (else the kernel's or the current one).
  function B.compile(K, tl, opts)
    if opts ~= nil and type(opts) ~= "table" then
      I.raise("compile: opts must be a table, got " .. type(opts))
    end
    opts = opts or {}
    tl = I.check_types(K, tl, "compile")
    local e = env()
    local tgt = opts.device ~= nil and e.resolve(opts.device, "compile", 2) or K.pin or e.state.cur
    if tgt == nil then I.no_target() end
    local key = require("gpujit.types").sig_key(tl)
    local per = pending_of(K, tgt)
    if per[key] then return per[key] end            -- compiling already
    local done = K._ov[tgt] and K._ov[tgt][key]
    if done or not opts.async or tgt.sim then
      if not done then I.overload(K, tgt, tl) end   -- raises a compile error
      return handle(K, tl, "ready")
    end
    if not e.core then I.no_core() end
    local copts = I.compile_opts(K, tgt)
    local ev
    if e.verbose or events.listeners[1] then
      ev = events.event(K, tgt, tl)
      ev.async = true
      I.notify(ev)
    end
    local t0 = I.now_ms()
    local ok, c = pcall(e.core.compile_start, K.fn, I.core_types(tl), copts)
    if not ok then I.raise(tostring(c)) end
    local h = handle(K, tl, "compiling")
    h._c, h._tgt, h._key, h._ev, h._t0 = c, tgt, key, ev, t0
    per[key] = h
    return h
  end

  return B
end
