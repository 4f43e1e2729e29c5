-- gpujit.adtape: host-side drivers over derivative kernels (docs/autodiff.md):
-- gpu.gradcheck (reverse mode against central finite differences) and
-- gpu.tape (launches recorded, then their gradients in reverse order).
--
--   local T = require("gpujit.adtape")(AD, raise)   -- AD: gpujit.autodiff
--   T.gradcheck(k | { k, scalars =, rtol =, step = }, cfg, ...) -> true | false, why
--   T.tape() -> tape; tape:launch(k, cfg, ...); tape:backward(adjoints); tape:clear()
--
-- Both take FFI arrays (their length from ffi.sizeof) for the arguments a
-- derivative gives a shadow (arrays of float, double or structs); gradcheck
-- checks those of float or double and the named scalars, and keeps arrays
-- of structs constant.  Other arguments are passed as they are.
local each = pairs   -- each(t), never pairs(t), in loops: docs/reliability.md, "pairs loops"
local ffi = require("ffi")
local types = require("gpujit.types")
local unpack = unpack

return function(AD, raise)
  local T = {}

  -- An FFI array of float or double whose length FFI knows: its element
  -- type and length; else nil.
  local function farray(a)
    if type(a) ~= "cdata" then return nil end
    local info = types.ctype_info(a)
    if not info or info.kind ~= "farray" or (info.elem ~= "float" and info.elem ~= "double") then
      return nil
    end
    local bytes = ffi.sizeof(a)
    if not bytes then return nil end
    return info.elem, math.floor(bytes / ffi.sizeof(info.elem))
  end

  local function clone(a, elem, n)
    local c = ffi.new(elem .. "[?]", n)
    ffi.copy(c, a, n * ffi.sizeof(elem))
    return c
  end

  -- An argument that a derivative's launch follows with a shadow
  -- (gpujit.autodiff): its bytes when it is an FFI array whose size FFI
  -- knows; else an error naming it (what, j).
  local function shadowed_bytes(a, what, j)
    if not AD.has_shadow(a) then return nil end
    local bytes = type(a) == "cdata" and ffi.sizeof(a)
    if not bytes then
      raise(what .. ": argument #" .. j .. " is an array with a derivative that is not an FFI "
        .. "array of known length (a Lua table, a gpu.array or a pointer): pass an FFI array")
    end
    return bytes
  end

  -- A copy of FFI array a (any element type) of the given bytes.
  local function clone_any(a, bytes)
    local ct = ffi.typeof(a)
    local ok, c = pcall(ffi.new, ct)
    if not ok then c = ffi.new(ct, bytes / ffi.sizeof(a[0])) end
    ffi.copy(c, a, bytes)
    return c
  end

  ---------------------------------------------------------------------------
  -- gpu.gradcheck

  -- The loss of one launch: sum over the active arrays of <w_j, a_j after>.
  local function loss(k, cfg, args, act, seeds, plain)
    local run = {}
    for j = 1, #args do run[j] = args[j] end
    for j, bytes in each(plain) do run[j] = clone_any(args[j], bytes) end
    for _, a in ipairs(act) do
      if a.n then run[a.j] = clone(args[a.j], a.elem, a.n) end
    end
    k:launch(cfg, unpack(run, 1, #args))
    local L = 0
    for _, a in ipairs(act) do
      if a.n then
        local r, w = run[a.j], seeds[a.j]
        for e = 0, a.n - 1 do L = L + w[e] * r[e] end
      end
    end
    return L
  end

  function T.gradcheck(spec, cfg, ...)
    local k, scalars, rtol, step = spec, nil, 1e-6, 1e-6
    if type(spec) == "table" and spec.fn == nil then
      k, scalars = spec[1], spec.scalars
      rtol, step = spec.rtol or rtol, spec.step or step
    end
    local g = AD.grad(k, scalars)
    local nargs = select("#", ...)
    local args = { ... }
    local act, seeds, named = {}, {}, {}
    for _, s in ipairs(scalars or {}) do named[s] = true end
    local plain = {}   -- arrays with a derivative that are not checked (of structs)
    for j = 1, k.nparams do
      local elem, n = farray(args[j])
      local bytes = not named[k.pnames[j]] and shadowed_bytes(args[j], "gpu.gradcheck", j)
      if bytes and not elem then plain[j] = bytes end
      if named[k.pnames[j]] then
        if type(args[j]) ~= "number" then
          raise("gpu.gradcheck: argument #" .. j .. " (" .. k.pnames[j] .. ") must be a number")
        end
        act[#act + 1] = { j = j }
      elseif elem then
        act[#act + 1] = { j = j, elem = elem, n = n }
        local w = ffi.new("double[?]", n)
        for e = 0, n - 1 do w[e] = math.sin(1.3 * e + 0.7 * j + 0.4) end
        seeds[j] = w
      end
    end
    -- reverse mode: the adjoints of the inputs of sum <w_j, a_j after>
    local gargs, grads, m = {}, {}, 0
    for j = 1, nargs do
      local a
      for _, x in ipairs(act) do if x.j == j then a = x end end
      local v = args[j]
      if a and a.n then
        v = clone(v, a.elem, a.n)
        grads[j] = ffi.new(a.elem .. "[?]", a.n)
        for e = 0, a.n - 1 do grads[j][e] = seeds[j][e] end
      elseif a then
        grads[j] = ffi.new("double[1]")
      elseif plain[j] then
        v = clone_any(v, plain[j])
      end
      m = m + 1
      gargs[m] = v
      if a or plain[j] then   -- its adjoint; plain: nil, a constant
        m = m + 1
        gargs[m] = grads[j]
      end
    end
    g:launch(cfg, unpack(gargs, 1, m))
    -- central differences, element by element
    for _, a in ipairs(act) do
      for e = 0, (a.n or 1) - 1 do
        local x0 = a.n and args[a.j][e] or args[a.j]
        local h = step * math.max(1, math.abs(x0))
        local function at(x)
          local p = { unpack(args, 1, nargs) }
          if a.n then
            p[a.j] = clone(args[a.j], a.elem, a.n)
            p[a.j][e] = x
          else
            p[a.j] = x
          end
          return loss(k, cfg, p, act, seeds, plain)
        end
        local fd = (at(x0 + h) - at(x0 - h)) / (2 * h)
        local got = grads[a.j][e]
        local d, s = math.abs(got - fd), math.max(math.abs(got), math.abs(fd))
        if d ~= d or d > rtol * math.max(s, 1e-3) then
          return false, ("gpu.gradcheck: kernel '%s', argument #%d (%s)%s: the gradient is %.17g, "
            .. "central finite differences %.17g"):format(k.name, a.j, tostring(k.pnames[a.j]),
            a.n and (", element " .. e) or "", got, fd)
        end
      end
    end
    return true
  end

  ---------------------------------------------------------------------------
  -- gpu.tape

  local Tape = {}
  Tape.__index = Tape

  -- Record a launch and run it: every FFI array of floats among the
  -- arguments is copied first (the reverse pass restores it).
  function Tape:launch(k, cfg, ...)
    local n = select("#", ...)
    local args = { ... }
    local saved = {}
    for j = 1, n do
      local bytes = shadowed_bytes(args[j], "gpu.tape", j)
      if bytes then
        local c = ffi.new("uint8_t[?]", bytes)
        ffi.copy(c, args[j], bytes)
        saved[j] = { arr = args[j], copy = c, bytes = bytes }
      end
    end
    self.records[#self.records + 1] = { k = k, cfg = cfg, args = args, n = n, saved = saved }
    return k:launch(cfg, ...)
  end

  -- adjoints: { [array] = its adjoint array }, added into (zero them, and
  -- seed the outputs' adjoints, first).  The launches' gradients run in
  -- reverse order, each on its arguments as they were before it; the
  -- arrays hold their final values again afterwards.
  function Tape:backward(adjoints)
    local final = {}
    for _, r in ipairs(self.records) do
      for _, s in each(r.saved) do
        if not final[s.arr] then
          local c = ffi.new("uint8_t[?]", s.bytes)
          ffi.copy(c, s.arr, s.bytes)
          final[s.arr] = c
        end
      end
    end
    for i = #self.records, 1, -1 do
      local r = self.records[i]
      local g = r.grad or AD.grad(r.k)
      r.grad = g
      local gargs, m = {}, 0
      for j = 1, r.n do
        local a = r.args[j]
        local s = r.saved[j]
        if s then ffi.copy(a, s.copy, s.bytes) end
        m = m + 1
        gargs[m] = a
        if s then   -- its adjoint, or nil: inactive
          m = m + 1
          gargs[m] = adjoints[a]
        end
      end
      g:launch(r.cfg, unpack(gargs, 1, m))
    end
    for _, r in ipairs(self.records) do
      for _, s in each(r.saved) do
        local f = final[s.arr]
        if f then ffi.copy(s.arr, f, s.bytes) end
      end
    end
  end

  function Tape:clear()
    self.records = {}
  end

  function T.tape()
    return setmetatable({ records = {} }, Tape)
  end

  return T
end
