-- gpujit.autodiff: derivatives of kernels (docs/autodiff.md, docs/api.md).
--
--   local AD = require("gpujit.autodiff")(dispatch, raise, on_sim)
--   (on_sim(K): does kernel K launch on the sim backend? there the
--   derivatives run on dual numbers, gpujit.adsim)
--   AD.jvp(k [, scalars]) -> a derivative object d; d:launch(cfg, ...)
--   AD.grad(k [, scalars]) -> likewise, reverse mode
--
-- A derivative's launch takes the kernel's arguments, each array of float
-- or double followed by its shadow (an array of the same kind, or nil:
-- inactive), and each scalar parameter named in `scalars` followed by its
-- tangent (a number; nil or 0: inactive).  Reverse mode (grad): the
-- shadows are adjoint arrays, added into (+=); a scalar's adjoint is added
-- into element 0 of the array that follows it (or nil).  Per pattern of active arguments
-- it keeps one kernel object of gpujit.dispatch (the same classification,
-- launchers, in-memory and disk caches), compiled with the options
-- derivative = "forward" and shadows = "0101..", the whole argument list's
-- pattern (src/gj_ad.h), whose launch takes the primals and the active
-- shadows in that order.
local each = pairs   -- each(t), never pairs(t), in loops: docs/reliability.md, "pairs loops"
local ffi = require("ffi")
local types = require("gpujit.types")
local concat, unpack = table.concat, unpack

return function(dispatch, raise, on_sim)
  -- its errors at the caller's line, as the dispatcher's are
  if dispatch.own_source then dispatch.own_source(debug.getinfo(1, "S").source) end
  local AD = {}
  local ADS = require("gpujit.adsim")(raise, dispatch.set_dims)
  local methods = {}
  local Dmt = { __index = methods }

  -- An array with a shadow: of float or double, or of structs (their
  -- float fields have tangents; a struct passed alone does not).
  local function float_array(a)
    local ta = type(a)
    if ta == "table" then return true end
    if ta ~= "cdata" then return false end
    local info = types.ctype_info(a)
    if info == nil or info.kind == "scalar" then return false end
    if info.struct ~= nil then return not info.byref end
    return info.elem == "float" or info.elem == "double"
  end

  local function float_scalar(a)
    if type(a) == "number" then return true end
    if type(a) ~= "cdata" then return false end
    local info = types.ctype_info(a)
    return info ~= nil and info.kind == "scalar" and (info.elem == "float" or info.elem == "double")
  end

  -- The kernel object for one pattern of shadows.
  local function inner(D, pattern)
    local k = D._inner[pattern]
    if k then return k end
    local K = D.kernel
    local opts = {}
    for name, v in each(K.opts) do opts[name] = v end
    local names, j = {}, 0
    for i = 1, #pattern do
      if pattern:sub(i, i) == "0" then
        j = j + 1
        names[i] = K.pnames[j]
      elseif pattern:sub(i, i) == "2" then
        names[i] = "tape"
      else
        names[i] = "d" .. tostring(K.pnames[j])
      end
    end
    opts.derivative = { mode = D.mode, shadows = pattern, names = names }
    opts.name = K.name .. "'" .. D.mode
    k = dispatch.kernel(K.fn, nil, opts, K.pin)
    D._inner[pattern] = k
    return k
  end

  -- The arrays with a shadow and the shadows must be distinct: a derivative
  -- that saw one array under two names would add tangents or adjoints for
  -- two where there is one (Enzyme assumes the same).  Compared by address.
  local uintptr = ffi.typeof("uintptr_t")
  local function no_alias(K, out, pattern)
    local seen = {}
    for i = 1, #out do
      local a = out[i]
      local active = pattern:sub(i, i) == "1" or pattern:sub(i + 1, i + 1) == "1"
      if active and (type(a) == "table" or (type(a) == "cdata" and float_array(a))) then
        local key = a
        if type(a) == "cdata" then   -- an FFI array by address; else (a gpu.array) itself
          local ok, p = pcall(ffi.cast, uintptr, a)
          if ok then key = tonumber(p) end
        end
        if seen[key] then
          raise("derivative of kernel '" .. K.name .. "': arguments #" .. seen[key] .. " and #"
            .. i .. " (with their shadows) are the same array: a derivative needs distinct "
            .. "arrays")
        end
        seen[key] = i
      end
    end
  end

  function methods:launch(cfg, ...)
    local K = self.kernel
    local n = select("#", ...)
    local args = { ... }
    local out, pattern, pos = {}, {}, 1
    local ct = K.opts.precision == "single" and "float" or "double"
    for j = 1, K.nparams do
      local a = args[pos]
      local name = K.pnames[j]
      local info = type(a) == "cdata" and types.ctype_info(a)
      if info and info.dims then   -- docs/autodiff.md, "Not supported"
        raise("bad argument #" .. pos .. " to derivative of kernel '" .. K.name .. "' ("
          .. tostring(name) .. "): a multi-dimensional array (" .. types.describe(a)
          .. ") cannot be an argument of a derivative yet; pass it as a one-dimensional array")
      end
      pos = pos + 1
      if self.scalars[name] then
        local d = args[pos]
        pos = pos + 1
        if not float_scalar(a) then
          raise("bad argument #" .. (pos - 2) .. " to derivative of kernel '" .. K.name .. "' ("
            .. tostring(name) .. "): a number expected, got " .. type(a))
        end
        out[#out + 1] = ffi.new(ct, a)
        pattern[#pattern + 1] = "0"
        if self.mode == "reverse" then
          -- the adjoint is added into element 0 of an array, or nil
          if d ~= nil and not float_array(d) then
            raise("bad argument #" .. (pos - 1) .. " to gradient of kernel '" .. K.name
              .. "' (d" .. tostring(name) .. "): a scalar's adjoint goes into an array of one "
              .. "float or double (or nil), got " .. type(d))
          end
          if d ~= nil then
            out[#out + 1] = d
            pattern[#pattern + 1] = "1"
          end
        elseif d ~= nil and d ~= 0 then
          if not float_scalar(d) then
            raise("bad argument #" .. (pos - 1) .. " to derivative of kernel '" .. K.name
              .. "' (d" .. tostring(name) .. "): the tangent must be a number or nil, got " .. type(d))
          end
          out[#out + 1] = ffi.new(ct, d)
          pattern[#pattern + 1] = "1"
        end
      elseif float_array(a) then
        local d = args[pos]
        pos = pos + 1
        out[#out + 1] = a
        pattern[#pattern + 1] = "0"
        if d ~= nil then
          if not float_array(d) then
            raise("bad argument #" .. (pos - 1) .. " to derivative of kernel '" .. K.name
              .. "' (d" .. tostring(name) .. "): the shadow of an array of floats must be an "
              .. "array of floats or nil, got " .. type(d))
          end
          out[#out + 1] = d
          pattern[#pattern + 1] = "1"
        end
      else
        out[#out + 1] = a
        pattern[#pattern + 1] = "0"
      end
    end
    if pos <= n then
      raise("bad argument #" .. pos .. " to derivative of kernel '" .. K.name
        .. "': it takes " .. (pos - 1) .. " arguments with these shadows")
    end
    no_alias(K, out, concat(pattern))
    if on_sim and on_sim(K) then   -- dual numbers (gpujit.adsim)
      return ADS.launch(self, cfg, out, concat(pattern))
    end
    if self.mode == "reverse" then   -- the tape (src/gj_ad.h), last
      out[#out + 1] = self:tape_buffer(type(cfg) == "table" and cfg.stream or nil)
      pattern[#pattern + 1] = "2"
    end
    local k = inner(self, concat(pattern))
    return k:launch(cfg, unpack(out, 1, #out))
  end

  -- d:inspect_llvm(types [, device]) and d:inspect_asm: as k's, for k's
  -- own type list; every array of floats and every named scalar active.
  local function inspect(self, what, tl, device)
    local K = self.kernel
    if type(tl) ~= "table" or #tl ~= K.nparams then
      raise("derivative of kernel '" .. K.name .. "':" .. what .. ": a list of the kernel's "
        .. K.nparams .. " argument types expected")
    end
    local full, pattern = {}, {}
    for j = 1, K.nparams do
      local t = tl[j]
      full[#full + 1] = t
      pattern[#pattern + 1] = "0"
      local e = types.elem(t)
      if e and types.core_name(t) ~= t then e = "double" end   -- an array of structs
      if self.scalars[K.pnames[j]] then
        if t ~= "float" and t ~= "double" then
          raise("derivative of kernel '" .. K.name .. "': scalar '" .. tostring(K.pnames[j])
            .. "' must be float or double, got " .. tostring(t))
        end
        full[#full + 1] = self.mode == "reverse" and (t .. "[]") or t
        pattern[#pattern + 1] = "1"
      elseif e == "float" or e == "double" then
        full[#full + 1] = t
        pattern[#pattern + 1] = "1"
      end
    end
    if self.mode == "reverse" then
      full[#full + 1] = "uint8_t[]"
      pattern[#pattern + 1] = "2"
    end
    local k = inner(self, concat(pattern))
    return k[what](k, full, device)
  end

  function methods:inspect_llvm(tl, device) return inspect(self, "inspect_llvm", tl, device) end
  function methods:inspect_asm(tl, device) return inspect(self, "inspect_asm", tl, device) end

  -- Reverse mode's tape: the bytes the stacks of loops get, for all the
  -- work items of a launch together (gpu.grad's tape option).  One for the
  -- launches that wait, and one per stream (kept while the stream lives):
  -- launches on one stream run one after the other, launches on two
  -- streams may run at once and must not share a tape.
  local DEFAULT_TAPE = 16 * 1024 * 1024
  function methods:tape_buffer(stream)
    if stream ~= nil then
      local per = self._stream_tapes
      if per == nil then
        per = setmetatable({}, { __mode = "k" })
        self._stream_tapes = per
      end
      local t = per[stream]
      if t == nil then
        t = ffi.new("uint8_t[?]", self.tape_bytes)
        per[stream] = t
      end
      return t
    end
    local t = self._tape
    if t == nil then
      t = ffi.new("uint8_t[?]", self.tape_bytes)
      self._tape = t
    end
    return t
  end

  -- One derivative object per kernel, mode, scalars and tape size, kept by
  -- the kernel (k._ad: they live and go together): its compiled kernels
  -- and its tape are reused (gpu.tape asks for each launch's).

  local function new(k, scalars, mode, fname, opts)
    if type(k) ~= "table" or type(k.base) ~= "function" then
      raise(fname .. ": a kernel (gpu.kernel) expected, got " .. type(k))
    end
    k = k:base()   -- through an object that forwards a kernel's methods
    local set = {}
    for i, s in ipairs(scalars or {}) do
      local ok = false
      for j = 1, k.nparams do ok = ok or k.pnames[j] == s end
      if not ok then
        raise(fname .. ": scalar #" .. i .. " '" .. tostring(s) .. "' is not a parameter of kernel '"
          .. k.name .. "'")
      end
      set[s] = true
    end
    local tape = opts and opts.tape or DEFAULT_TAPE
    if type(tape) ~= "number" or tape < 8 or tape % 1 ~= 0 then
      raise(fname .. ": tape must be a whole number of bytes >= 8, got " .. tostring(tape))
    end
    local key = mode .. "|" .. concat(scalars or {}, ",") .. "|" .. tape
    local per = rawget(k, "_ad")
    if per == nil then
      per = {}
      rawset(k, "_ad", per)
    end
    local d = per[key]
    if d == nil then
      d = setmetatable({ kernel = k, mode = mode, scalars = set, _inner = {},
                         tape_bytes = tape }, Dmt)
      per[key] = d
    end
    return d
  end

  AD.has_shadow = float_array   -- does a derivative's launch follow a with a shadow?

  function AD.jvp(k, scalars)
    return new(k, scalars, "forward", "gpu.jvp")
  end

  function AD.grad(k, scalars, opts)
    return new(k, scalars, "reverse", "gpu.grad", opts)
  end

  return AD
end
