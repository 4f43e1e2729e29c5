-- gpujit.adsim: derivatives of kernels on the sim backend (docs/autodiff.md,
-- "On sim"), by dual numbers.
--
--   local ADS = require("gpujit.adsim")(raise, set_dims)
--   ADS.launch(D, cfg, out, pattern)   D: a derivative object of
--                                      gpujit.autodiff; out, pattern: its
--                                      launch's arguments with shadows
--
-- sim runs the kernel's own Lua function; here it runs it on dual numbers
-- (an FFI struct { double v, d } with arithmetic and comparison metamethods)
-- while the math table's functions are replaced by ones that take duals
-- (restored afterwards, whatever happens): an array with a shadow is passed
-- as a proxy whose reads give (x[i], dx[i]) and whose writes store the
-- value into x[i] and the tangent into dx[i]; a float scalar with a
-- tangent is a dual; every other argument is as the sim launcher passes it.
-- The rules are the compiled backends' (src/gj_ad_*.c, docs/autodiff.md).
--
-- Forward mode (gpu.jvp) is one such run.  Reverse mode (gpu.grad) is the
-- transposed Jacobian of the whole launch, column by column: for each
-- element of an array with an adjoint and each scalar with one, a forward
-- run with tangent 1 there (from the arguments as they were) gives J e_c,
-- and the new adjoint of that element is <J e_c, the adjoints given>
-- (a scalar's is added into element 0 of its array) -- the memory
-- semantics of the compiled reverse mode (a read adds into the array's
-- adjoint, a write takes it and zeroes it), one run per element: a
-- reference for specs, not a fast path.  The arrays end with the kernel's
-- results.  Arrays with a shadow must be FFI arrays of float or double
-- (arrays of structs are refused); math.modf has no derivative (refused
-- where it is called, as on the other backends).
local each = pairs   -- each(t), never pairs(t), in loops: docs/reliability.md, "pairs loops"
local ffi = require("ffi")
local types = require("gpujit.types")
local sim = require("gpujit.sim")

-- ffi.metatype takes a ctype once per LuaJIT state, and a second copy of
-- the module (package.loaded cleared, as specs and hosts do) must work: the
-- ctype is made once, kept in the registry, with metamethods that call the
-- newest copy's (registry[KEY][name .. "_mt"]).
local KEY = "gpujit.adsim"
local function metatype_once(name, ctname, mt)
  local reg = debug.getregistry()
  local r = reg[KEY]
  if r == nil then r = {}; reg[KEY] = r end
  r[name .. "_mt"] = mt
  if r[name] == nil then
    local fwd = {}
    for k in each(mt) do
      fwd[k] = function(...) return r[name .. "_mt"][k](...) end
    end
    r[name] = ffi.metatype(ctname, fwd)
  end
  return r[name]
end

return function(raise, set_dims)
  local M = {}

  pcall(ffi.cdef, "typedef struct { double v, d; } gj_dual;")
  local dual

  -- The value atomic_add returns from an array with a shadow: refused where
  -- it is used (an operand, a store, a comparison), as on the other backends.
  pcall(ffi.cdef, "typedef struct { double v; } gj_dual_poison;")
  local poison
  local function refuse_poison(level)
    error("derivative: the value atomic_add returns (the element before the add, which "
      .. "depends on the order of the work items) has no derivative", level + 1)
  end
  local function parts(x)
    if type(x) == "number" then return x, 0 end
    if ffi.istype(poison, x) then refuse_poison(3) end
    return x.v, x.d
  end
  local function isdual(x) return type(x) == "cdata" and ffi.istype(dual, x) end
  local function val(x)
    if isdual(x) then return x.v end
    return x
  end
  local function mk(v, d)
    if d == 0 then return v end   -- no tangent: a plain number
    return dual(v, d)
  end

  local floor, log = math.floor, math.log
  local mt = {
    __add = function(a, b)
      local x, dx = parts(a); local y, dy = parts(b)
      return mk(x + y, dx + dy)
    end,
    __sub = function(a, b)
      local x, dx = parts(a); local y, dy = parts(b)
      return mk(x - y, dx - dy)
    end,
    __mul = function(a, b)
      local x, dx = parts(a); local y, dy = parts(b)
      return mk(x * y, dx * y + x * dy)
    end,
    __div = function(a, b)
      local x, dx = parts(a); local y, dy = parts(b)
      local q = x / y
      return mk(q, (dx - q * dy) / y)
    end,
    __mod = function(a, b)   -- x - floor(x/y) y
      local x, dx = parts(a); local y, dy = parts(b)
      return mk(x % y, dx - floor(x / y) * dy)
    end,
    __pow = function(a, b)
      local x, dx = parts(a); local y, dy = parts(b)
      local p = x ^ y
      local d = y * x ^ (y - 1) * dx
      if dy ~= 0 then d = d + log(x) * p * dy end
      return mk(p, d)
    end,
    __unm = function(a) return dual(-a.v, -a.d) end,
    __lt = function(a, b) return val(a) < val(b) end,
    __le = function(a, b) return val(a) <= val(b) end,
    __eq = function(a, b)
      local x, y = val(a), val(b)
      return type(x) == "number" and type(y) == "number" and x == y
    end,
    __tostring = function(a) return tostring(a.v) end,
  }
  dual = metatype_once("dual", "gj_dual", mt)
  local pmt = {}
  for _, k in ipairs({ "__add", "__sub", "__mul", "__div", "__mod", "__pow", "__unm", "__lt", "__le",
    "__eq", "__concat", "__len", "__call" }) do
    pmt[k] = function() refuse_poison(2) end
  end
  poison = metatype_once("poison", "gj_dual_poison", pmt)

  -- The math functions on duals: f(x) with derivative df(x).
  local orig = {}
  for k, f in each(math) do orig[k] = f end
  local function unary(f, df)
    return function(x, ...)
      if not isdual(x) then return f(x, ...) end
      return mk(f(x.v), df(x.v) * x.d)
    end
  end
  local sqrt, sin, cos, tanh, exp = orig.sqrt, orig.sin, orig.cos, orig.tanh, orig.exp
  local R = {
    sqrt = unary(sqrt, function(v) return 0.5 / sqrt(v) end),
    exp = unary(exp, exp),
    log10 = unary(orig.log10, function(v) return 1 / (v * log(10)) end),
    sin = unary(sin, cos),
    cos = unary(cos, function(v) return -sin(v) end),
    tan = unary(orig.tan, function(v) local t = orig.tan(v); return 1 + t * t end),
    asin = unary(orig.asin, function(v) return 1 / sqrt(1 - v * v) end),
    acos = unary(orig.acos, function(v) return -1 / sqrt(1 - v * v) end),
    atan = unary(orig.atan, function(v) return 1 / (1 + v * v) end),
    sinh = unary(orig.sinh, orig.cosh),
    cosh = unary(orig.cosh, orig.sinh),
    tanh = unary(tanh, function(v) local t = tanh(v); return 1 - t * t end),
    abs = unary(orig.abs, function(v) return v > 0 and 1 or v < 0 and -1 or 0 end),
    floor = function(x) return floor(val(x)) end,            -- tangent 0
    ceil = function(x) return orig.ceil(val(x)) end,
  }
  function R.log(x, b)
    if b ~= nil then return R.log(x) / R.log(b) end
    if not isdual(x) then return log(x) end
    return mk(log(x.v), x.d / x.v)
  end
  function R.atan2(y, x)
    if not (isdual(y) or isdual(x)) then return orig.atan2(y, x) end
    local yv, dy = parts(y); local xv, dx = parts(x)
    return mk(orig.atan2(yv, xv), (xv * dy - yv * dx) / (xv * xv + yv * yv))
  end
  function R.fmod(x, y)
    if not (isdual(x) or isdual(y)) then return orig.fmod(x, y) end
    local xv, dx = parts(x); local yv, dy = parts(y)
    local q = xv / yv
    q = q < 0 and orig.ceil(q) or floor(q)
    return mk(orig.fmod(xv, yv), dx - q * dy)
  end
  function R.pow(x, y) return mt.__pow(x, y) end
  local function pick(less)   -- min/max: left to right, at a tie the earlier
    return function(r, ...)
      for j = 1, select("#", ...) do
        local c = select(j, ...)
        if less(val(c), val(r)) then r = c end
      end
      return r
    end
  end
  R.min = pick(function(p, q) return p < q end)
  R.max = pick(function(p, q) return p > q end)
  function R.modf(x)
    if isdual(x) then
      error("derivative: orig.modf has no derivative (its fraction is built from the float's bits)", 2)
    end
    return orig.modf(x)
  end

  -- The arrays passed with a shadow (proxies, below).
  local shadowed = setmetatable({}, { __mode = "k" })

  -- The gpu functions replaced during a run: atomic_add's result on an
  -- array with a shadow is refused where used; a float stored into local or
  -- shared memory with a tangent is refused (as on the other backends,
  -- which refuse floats there).
  local G = {}
  local function memory(name)
    return function(...)
      local arr = sim[name](...)
      return setmetatable({}, {
        __index = function(_, i) return arr[i] end,
        __newindex = function(_, i, v)
          if isdual(v) then
            error("derivative: a float kept in local or shared memory (gpu.local_array, "
              .. "gpu.shared) with a derivative: not supported yet", 2)
          end
          arr[i] = v
        end,
      })
    end
  end
  G.local_array, G.shared = memory("local_array"), memory("shared")
  function G.atomic_add(a, i, v)
    local old = sim.atomic_add(a, i, v)
    if shadowed[a] then return poison(0) end
    return old
  end

  -- Run fn with the math table's functions taking duals, and the gpu
  -- table's of G; restored after.
  local function with_duals(fn, ...)
    local gpu = package.loaded["gpujit"]
    local gsave = {}
    for k, f in each(R) do math[k] = f end   -- luacheck: ignore 122
    if type(gpu) == "table" then
      for k, f in each(G) do gsave[k], gpu[k] = gpu[k], f end
    end
    local res = { pcall(fn, ...) }
    for k in each(R) do math[k] = orig[k] end   -- luacheck: ignore 122
    for k, f in each(gsave) do gpu[k] = f end
    if not res[1] then error(res[2], 0) end
    return unpack(res, 2, table.maxn(res))
  end

  -- An array with a shadow (or, d nil, a float array without one, whose
  -- stores keep the value alone).
  local function proxy(a, d)
    local p = setmetatable({}, {
      __index = function(_, i)
        if d == nil then return a[i] end
        return mk(a[i], d[i])
      end,
      __newindex = function(_, i, v)
        local x, dx = parts(v)
        a[i] = x
        if d ~= nil then d[i] = dx end
      end,
    })
    if d ~= nil then shadowed[p] = true end
    return p
  end

  local function finfo(a)
    if type(a) ~= "cdata" then return nil end
    local info = types.ctype_info(a)
    if info == nil or info.kind == "scalar" then return nil end
    return info
  end

  -- The kernel's arguments for a forward run: out/pattern as gpujit.autodiff
  -- builds them (each '1' the shadow of the argument before it).
  local function argv_of(K, out, pattern)
    local argv = {}
    local i = 1
    while i <= #out do
      local a = out[i]
      local sh = pattern:sub(i + 1, i + 1) == "1"
      local d = sh and out[i + 1] or nil
      local info = finfo(a)
      if info then
        if info.struct ~= nil and sh then
          raise("derivative of kernel '" .. K.name .. "' on sim: argument #" .. (#argv + 1)
            .. " is an array of structs: not supported on sim yet")
        end
        if info.elem == "float" or info.elem == "double" then a = proxy(a, d) end
      elseif type(a) == "cdata" then   -- a scalar, as the sim launcher gives it
        a = tonumber(a)
        if d ~= nil then a = mk(a, tonumber(d)) end
      elseif type(a) == "table" and sh then
        raise("derivative of kernel '" .. K.name .. "' on sim: argument #" .. (#argv + 1)
          .. " is a Lua table with a shadow: pass FFI arrays on sim")
      end
      argv[#argv + 1] = a
      i = i + (sh and 2 or 1)
    end
    return argv
  end

  local function forward(K, cfg, out, pattern)
    local argv = argv_of(K, out, pattern)
    -- a gj_dims of its own (the dispatcher's entries take and give back theirs)
    local d = ffi.new("gj_dims")
    local run = set_dims(K, d, cfg)
    if not run then return end
    local ndim = d.ndim
    local global = { [0] = tonumber(d.global[0]), tonumber(d.global[1]), tonumber(d.global[2]) }
    local group = { [0] = tonumber(d.group[0]), tonumber(d.group[1]), tonumber(d.group[2]) }
    with_duals(sim.run, K.fn, ndim, global, group, argv, #argv, K.name, K.opts.boundscheck,
      K.opts.timeout)
  end

  -- The bytes of FFI array a (nil when FFI does not know them).
  local function bytes_of(a)
    if type(a) ~= "cdata" or finfo(a) == nil then return nil end
    return ffi.sizeof(a)
  end

  local function reverse(K, cfg, out, pattern)
    -- every FFI array as it was (each run starts from it)
    local saved = {}
    for i, a in ipairs(out) do
      local n = bytes_of(a)
      if n then
        local c = ffi.new("uint8_t[?]", n)
        ffi.copy(c, a, n)
        saved[i] = { c = c, n = n }
      end
    end
    local function restore()
      for i, s in each(saved) do ffi.copy(out[i], s.c, s.n) end
    end
    -- the active coordinates: elements of primal arrays with an adjoint,
    -- scalars with one; and the adjoints given
    local act, given = {}, {}
    local fout, fpat = {}, {}
    for i = 1, #out do
      fout[i], fpat[i] = out[i], pattern:sub(i, i)
      if pattern:sub(i + 1, i + 1) == "1" then
        local a, g = out[i], out[i + 1]
        local info = finfo(a)
        if info then
          if info.struct ~= nil then
            raise("derivative of kernel '" .. K.name .. "' on sim: argument #" .. i
              .. " is an array of structs: not supported on sim yet")
          end
          if not saved[i] then
            raise("derivative of kernel '" .. K.name .. "' on sim: argument with an adjoint #" .. i
              .. " must be an FFI array of float or double of known length")
          end
          local len = saved[i].n / ffi.sizeof(info.elem)
          local gc = ffi.new("double[?]", len)
          for e = 0, len - 1 do gc[e] = g[e] end
          given[i] = { g = gc, len = len, tan = ffi.new("double[?]", len) }
          for e = 0, len - 1 do act[#act + 1] = { i = i, e = e } end
        else
          given[i] = { scalar = true }
          act[#act + 1] = { i = i }
        end
      end
    end
    local results = {}
    for c, co in ipairs(act) do
      restore()
      -- the forward run's arguments: tangent 1 at coordinate co
      for i = 1, #out do
        local g = given[i]
        if g and not g.scalar then
          ffi.fill(g.tan, g.len * 8)
          if co.i == i then g.tan[co.e] = 1 end
          fout[i + 1] = g.tan
        elseif g then
          fout[i + 1] = co.i == i and 1 or 0
        end
      end
      forward(K, cfg, fout, table.concat(fpat))
      local s = 0
      for _, g in each(given) do
        if not g.scalar then
          for e = 0, g.len - 1 do s = s + g.tan[e] * g.g[e] end
        end
      end
      results[c] = s
    end
    restore()
    -- the primal results, then the adjoints
    local plain = {}
    local i = 1
    while i <= #out do
      plain[#plain + 1] = out[i]
      i = i + (pattern:sub(i + 1, i + 1) == "1" and 2 or 1)
    end
    for j, a in ipairs(plain) do
      if type(a) == "cdata" and finfo(a) == nil then plain[j] = tonumber(a) end
    end
    K:launch(cfg, unpack(plain, 1, #plain))
    for c, co in ipairs(act) do
      local adj = out[co.i + 1]
      if co.e then adj[co.e] = results[c] else adj[0] = adj[0] + results[c] end
    end
  end

  -- gpu.derivative(f, x, ...) and gpu.gradient(f, a, b, ...) inside a kernel
  -- (sim.derivative, sim.gradient; docs/autodiff.md, "Inside kernels"): f
  -- runs on duals once per active argument (x alone; each argument of
  -- gradient) with tangent 1 there, the partials are the tangents of its
  -- first result, and the value (the last result) is f's plain call.  As on
  -- the compiled backends: nested derivatives and derivatives in a kernel
  -- that is itself differentiated are refused.
  local NESTED, depth = {}, 0
  -- Struct v with the dual d in field fname: a proxy whose field reads give
  -- d there and v's values elsewhere, and whose other keys are v's (its
  -- metatype's methods, called with the proxy).  The metatype's operators
  -- cannot take it (they build a struct, which cannot hold a dual): an
  -- error at the using line, as is a store into it.
  local function seeded(what, v, fname, d)
    local function no_op()
      error(what .. ": on sim, the struct that is differentiated supports field reads and "
        .. "methods only (its metatype's operators would build a struct of dual numbers)", 2)
    end
    local pmeta = {
      __index = function(_, key)
        if key == fname then return d end
        return v[key]
      end,
      __newindex = function()
        error(what .. ": a store into the struct that is differentiated (an active argument "
          .. "of gpu.gradient or gpu.derivative)", 2)
      end,
    }
    for _, op in ipairs({ "__add", "__sub", "__mul", "__div", "__mod", "__pow", "__unm",
      "__lt", "__le", "__eq", "__concat", "__len", "__call" }) do
      pmeta[op] = no_op
    end
    return setmetatable({}, pmeta)
  end
  local function inner(name, gradient)
    local what = "gpu." .. name
    return function(f, ...)
      local n = select("#", ...)
      if type(f) ~= "function" then
        error(what .. ": argument 1 is a " .. type(f) .. ", not a device function (a Lua "
          .. "function the kernel can call)", 3)
      end
      if n < 1 then
        error(what .. " expects a device function and at least one number, got 1 argument", 3)
      end
      if depth > 0 then error(NESTED, 0) end
      if math.sqrt == R.sqrt then
        error("gpu.derivative or gpu.gradient in a kernel that is itself differentiated "
          .. "(gpu.jvp, gpu.grad, a tape) is not supported yet", 3)
      end
      local args = { ... }
      local nact = gradient and n or 1
      local st = {}   -- per active struct argument: its type's entry
      for k = 1, nact do
        local e = types.struct_of_value(args[k])
        if e then
          for _, fd in ipairs(e.fields) do
            if fd.count or not types.is_float[fd.type] then
              error(what .. ": argument " .. (k + 1) .. " is " .. e.name .. ", whose field '"
                .. fd.name .. "' is not a float: only a struct of float fields (float, double) "
                .. "has a gradient", 3)
            end
          end
          st[k] = e
        elseif type(args[k]) ~= "number" then
          error(what .. ": argument " .. (k + 1) .. " is a " .. type(args[k]) .. ", not a float "
            .. "number: only floats have a derivative", 3)
        end
      end
      local out, bad = {}, nil
      local function pass(k, seed)
        local a = { unpack(args, 1, n) }
        a[k] = seed
        local r = f(unpack(a, 1, n))
        if isdual(r) then return r.d end
        if type(r) ~= "number" then bad = type(r) end
        return 0
      end
      depth = depth + 1
      local ok, err = pcall(with_duals, function()
        for k = 1, nact do
          if st[k] then   -- one pass per field, the struct's partials a new struct
            local v = args[k]
            local r = ffi.new(types.struct_ctype(st[k]))
            for _, fd in ipairs(st[k].fields) do
              r[fd.name] = pass(k, seeded(what, v, fd.name, dual(v[fd.name], 1)))
            end
            out[k] = r
          else
            out[k] = pass(k, dual(args[k], 1))
          end
        end
      end)
      depth = depth - 1
      if not ok then
        if err == NESTED then
          error(what .. ": the device function takes a derivative itself (gpu.derivative or "
            .. "gpu.gradient): nested derivatives are not supported", 3)
        end
        error(err, 0)
      end
      if bad then
        error(what .. ": the first result of the device function is a " .. bad .. ": only a "
          .. "number can be differentiated", 3)
      end
      out[nact + 1] = (f(...))
      return unpack(out, 1, nact + 1)
    end
  end
  sim.inner_ad = { derivative = inner("derivative", false), gradient = inner("gradient", true) }

  function M.launch(D, cfg, out, pattern)
    if D.mode == "reverse" then return reverse(D.kernel, cfg, out, pattern) end
    return forward(D.kernel, cfg, out, pattern)
  end

  return M
end
