-- Derivatives inside kernels (docs/autodiff.md, "Inside kernels"):
-- gpu.derivative(f, x, ...) and gpu.gradient(f, a, b, ...) on device
-- functions, each partial checked against central finite differences of the
-- kernel's own value output (double, relative error <= 1e-6) and against a
-- derivative written by hand; the value against plain LuaJIT; the refusals
-- at their lines; the disk cache; the cpu vectorizer; the PTX by ptxas.

local H = require("spec.helpers")
local ffi = require("ffi")
local gpu = H.gpu

local N = 16
local STEP = 1e-6
local TOL = 1e-6       -- against central differences
local HAND = 1e-12     -- against the hand-written derivative (same sums, other order)

local FILE = H.this_file()
local function at(marker) return FILE .. ":" .. H.line_of(marker, 2) .. ":" end

local function darr(n, f) return H.array("double", f, n) end

local function relerr(a, b)
  local s = math.max(math.abs(a), math.abs(b))
  if s < 1e-9 then return math.abs(a - b) end
  return math.abs(a - b) / s
end

local function close(got, want, tol, what)
  local r = relerr(got, want)
  if r ~= r or r > tol then   -- NaN fails too
    error(("%s: got %.17g, expected %.17g (relative error %.3g > %g)"):format(what, got,
      want, r, tol), 2)
  end
end

-- Inputs in [0.4, 1.9], away from the branches' edges below.
local function input(seed)
  return darr(N, function(i) return 0.4 + 1.5 * math.abs(math.sin(seed * 5.3 + i * 0.77)) end)
end

---------------------------------------------------------------------------
-- Device functions and their derivatives by hand.

local function poly(x) return 3 * x ^ 4 - 2 * x ^ 3 + x * x - 5 * x + 7 end
local function dpoly(x) return 12 * x ^ 3 - 6 * x ^ 2 + 2 * x - 5 end

-- A loop with a loop-carried float and a branch inside; the trip count is
-- an integer argument (passed as it is).
local function looped(x, m)
  local s, p = 0.0, x
  for k = 1, m do
    if p > 1.5 then p = p * 0.5 + 1 / k else p = p * p * 0.25 + x end
    s = s + p * k
  end
  return s
end
local function dlooped(x, m)
  local s, p, ds, dp = 0.0, x, 0.0, 1.0
  for k = 1, m do
    if p > 1.5 then p, dp = p * 0.5 + 1 / k, dp * 0.5
    else p, dp = p * p * 0.25 + x, 0.5 * p * dp + 1 end
    s, ds = s + p * k, ds + dp * k
  end
  return ds
end

-- An early return.
local function piecewise(x)
  if x < 1 then return x * x * x end
  return 2 * x - 1 + math.sqrt(x)
end
local function dpiecewise(x)
  if x < 1 then return 3 * x * x end
  return 2 + 0.5 / math.sqrt(x)
end

local function mathy(x)
  return math.exp(math.sin(x)) * math.sqrt(x) + math.pow(x, 1.5) + math.log(x) * math.cos(x)
end
local function dmathy(x)
  local e = math.exp(math.sin(x))
  return e * math.cos(x) * math.sqrt(x) + e * 0.5 / math.sqrt(x) + 1.5 * math.sqrt(x)
    + math.cos(x) / x - math.log(x) * math.sin(x)
end

-- Two arguments (gpu.gradient).
local function g2(a, b) return a * a * b + math.sin(a * b) / (1 + b * b) end
local function dg2(a, b)
  local q = 1 + b * b
  return 2 * a * b + math.cos(a * b) * b / q,
    a * a + (a * math.cos(a * b) * q - math.sin(a * b) * 2 * b) / (q * q)
end

-- Several results: the first is differentiated.
local function two(x) return x * x, 1 / x end

-- A vec3 metatype inside the function (compiled backends: sim runs the
-- function itself, whose FFI struct cannot hold a dual number).
pcall(ffi.cdef, "typedef struct { double x, y, z; } deriv_spec_vec3;")
local vec3
vec3 = ffi.metatype("deriv_spec_vec3", {
  __add = function(a, b) return vec3(a.x + b.x, a.y + b.y, a.z + b.z) end,
  __mul = function(a, s) return vec3(a.x * s, a.y * s, a.z * s) end,
  __index = { dot = function(a, b) return a.x * b.x + a.y * b.y + a.z * b.z end },
})
local function vlen(x)
  local v = vec3(x, 2 * x, 1) + vec3(1, x * x, 0) * 0.5
  return math.sqrt(v:dot(v))
end
local function dvlen(x)
  local a, b, c = x + 0.5, 2 * x + 0.5 * x * x, 1
  return (a + b * (2 + x)) / math.sqrt(a * a + b * b + c * c)
end

-- A vec3 as the active argument of gpu.gradient: its partial is a vec3.
-- dvec_e reads fields and calls a method (every backend: sim's duals reach
-- it through a proxy); dvec_pot also subtracts with the metatype's
-- operator (compiled backends: on sim the operator would build a struct
-- of duals).
pcall(ffi.cdef, "typedef struct { double x, y, z; } deriv_spec_gvec;")
pcall(ffi.cdef, "typedef struct { double x; int32_t k; } deriv_spec_mixed;")
local gvec
gvec = ffi.metatype("deriv_spec_gvec", {
  __sub = function(a, b) return gvec(a.x - b.x, a.y - b.y, a.z - b.z) end,
  __index = { dot = function(a, b) return a.x * b.x + a.y * b.y + a.z * b.z end },
})
local function vec_e(p, s) return p.x * p.x * p.y + math.sin(p.z) * p:dot(p) * s end
local function dvec_e(p, s)   -- by hand: d/dp (a vec3), d/ds
  local r2, sz = p.x * p.x + p.y * p.y + p.z * p.z, math.sin(p.z)
  return 2 * p.x * p.y + sz * 2 * p.x * s, p.x * p.x + sz * 2 * p.y * s,
    (math.cos(p.z) * r2 + sz * 2 * p.z) * s, sz * r2
end
local function vec_pot(p, c)   -- 1 / |p - c|
  local d = p - c
  return 1 / math.sqrt(d:dot(d))
end
local function dvec_pot(p, c)
  local dx, dy, dz = p.x - c.x, p.y - c.y, p.z - c.z
  local r3 = (dx * dx + dy * dy + dz * dz) ^ 1.5
  return -dx / r3, -dy / r3, -dz / r3
end

local M = 6   -- looped's trip count

local cases = {
  { name = "a polynomial", f = poly, df = dpoly },
  { name = "a loop with a branch and a loop-carried float", f = looped, df = dlooped, m = M },
  { name = "an early return", f = piecewise, df = dpiecewise },
  { name = "math.exp, sin, cos, sqrt, pow and log", f = mathy, df = dmathy },
  { name = "a function with two results (the first)", f = two, df = function(x) return 2 * x end },
  { name = "a vec3 metatype", f = vlen, df = dvlen, compiled = true },
}

-- A kernel writing f's derivative and value at x[i] (m passed on).
local function deriv_kernel(bk, f)
  return H.kernel(bk, function(x, d, v, m, n)
    local i = gpu.global_id()
    if i < n then
      local di, vi = gpu.derivative(f, x[i], m)
      d[i] = di
      v[i] = vi
    end
  end)
end

local function run(k, x, m)
  local d, v = darr(N, function() return 0 end), darr(N, function() return 0 end)
  k:launch({ global = N }, x, d, v, m, N)
  return d, v
end

-- Central differences of the kernel's value output at x.
local function fd(k, x, m)
  local _, vp = run(k, darr(N, function(i) return x[i] + STEP end), m)
  local _, vm = run(k, darr(N, function(i) return x[i] - STEP end), m)
  return darr(N, function(i) return (vp[i] - vm[i]) / (2 * STEP) end)
end

for _, bk in ipairs(H.backends) do
  describe("gpu.derivative and gpu.gradient inside kernels (" .. bk .. ")", function()
    for ci, c in ipairs(cases) do
      if not c.compiled or bk ~= "sim" then
        it("the derivative of " .. c.name, function()
          local k = deriv_kernel(bk, c.f)
          local x = input(ci)
          local m = c.m or 0
          local d, v = run(k, x, m)
          local want = fd(k, x, m)
          for i = 0, N - 1 do
            close(d[i], want[i], TOL, c.name .. " against central differences at " .. x[i])
            close(d[i], c.df(x[i], m), HAND, c.name .. " against the hand-written derivative")
            close(v[i], (c.f(x[i], m)), 1e-13, c.name .. ": the value")
          end
        end)
      end
    end

    it("the gradient of a function of two arguments", function()
      local k = H.kernel(bk, function(a, b, ga, gb, v, n)
        local i = gpu.global_id()
        if i < n then
          local p, q, r = gpu.gradient(g2, a[i], b[i])
          ga[i], gb[i], v[i] = p, q, r
        end
      end)
      local a, b = input(1), input(2)
      local function go(aa, bb)
        local ga, gb, v = darr(N, function() return 0 end), darr(N, function() return 0 end),
          darr(N, function() return 0 end)
        k:launch({ global = N }, aa, bb, ga, gb, v, N)
        return ga, gb, v
      end
      local ga, gb, v = go(a, b)
      local function shifted(arr, h) return darr(N, function(i) return arr[i] + h end) end
      local _, _, vap = go(shifted(a, STEP), b)
      local _, _, vam = go(shifted(a, -STEP), b)
      local _, _, vbp = go(a, shifted(b, STEP))
      local _, _, vbm = go(a, shifted(b, -STEP))
      for i = 0, N - 1 do
        local ha, hb = dg2(a[i], b[i])
        close(ga[i], (vap[i] - vam[i]) / (2 * STEP), TOL, "d/da against central differences")
        close(gb[i], (vbp[i] - vbm[i]) / (2 * STEP), TOL, "d/db against central differences")
        close(ga[i], ha, HAND, "d/da against the hand-written derivative")
        close(gb[i], hb, HAND, "d/db against the hand-written derivative")
        close(v[i], g2(a[i], b[i]), 1e-13, "the value")
      end
    end)

    it("the gradient with respect to a vec3 (a struct of the same type)", function()
      -- p: an element of an array of vec3 (global memory); q: a vec3 made in
      -- the kernel (private memory); s: a number
      local k = H.kernel(bk, function(ps, s, out, v, n)
        local i = gpu.global_id()
        if i < n then
          local g, gs, val = gpu.gradient(vec_e, ps[i], s[i])
          local q = gvec(ps[i].z, ps[i].x, ps[i].y)
          local h = gpu.gradient(vec_e, q, 0.5)
          out[i * 7 + 0], out[i * 7 + 1], out[i * 7 + 2], out[i * 7 + 3] = g.x, g.y, g.z, gs
          out[i * 7 + 4], out[i * 7 + 5], out[i * 7 + 6] = h.x, h.y, h.z
          v[i] = val
        end
      end)
      local function vecs(shift_f, h)
        local a = ffi.new("deriv_spec_gvec[?]", N)
        for i = 0, N - 1 do
          a[i].x, a[i].y, a[i].z = 0.5 + 0.1 * i, 1.2 - 0.05 * i, 0.3 + 0.07 * i
          if shift_f then a[i][shift_f] = a[i][shift_f] + h end
        end
        return a
      end
      local s = input(3)
      local function go(ps, ss)
        local out, v = darr(7 * N, function() return 0 end), darr(N, function() return 0 end)
        k:launch({ global = N }, ps, ss, out, v, N)
        return out, v
      end
      local ps = vecs()
      local out, v = go(ps, s)
      for fi, f in ipairs({ "x", "y", "z" }) do
        local _, vp = go(vecs(f, STEP), s)
        local _, vm = go(vecs(f, -STEP), s)
        for i = 0, N - 1 do
          close(out[i * 7 + fi - 1], (vp[i] - vm[i]) / (2 * STEP), TOL,
            "d/dp." .. f .. " against central differences")
        end
      end
      local _, vp = go(ps, darr(N, function(i) return s[i] + STEP end))
      local _, vm = go(ps, darr(N, function(i) return s[i] - STEP end))
      for i = 0, N - 1 do
        local p = ps[i]
        local hx, hy, hz, hs = dvec_e(p, s[i])
        close(out[i * 7 + 3], (vp[i] - vm[i]) / (2 * STEP), TOL, "d/ds against central differences")
        close(out[i * 7 + 0], hx, HAND, "d/dp.x against the hand-written gradient")
        close(out[i * 7 + 1], hy, HAND, "d/dp.y against the hand-written gradient")
        close(out[i * 7 + 2], hz, HAND, "d/dp.z against the hand-written gradient")
        close(out[i * 7 + 3], hs, HAND, "d/ds against the hand-written gradient")
        local qx, qy, qz = dvec_e(gvec(p.z, p.x, p.y), 0.5)
        close(out[i * 7 + 4], qx, HAND, "a vec3 made in the kernel: d/dq.x")
        close(out[i * 7 + 5], qy, HAND, "a vec3 made in the kernel: d/dq.y")
        close(out[i * 7 + 6], qz, HAND, "a vec3 made in the kernel: d/dq.z")
        close(v[i], vec_e(p, s[i]), 1e-13, "the value")
      end
    end)

    if bk ~= "sim" then
      it("the gradient with respect to a vec3 through its metatype's operators", function()
        local k = H.kernel(bk, function(ps, c, out, n)
          local i = gpu.global_id()
          if i < n then
            local g, gc = gpu.gradient(vec_pot, ps[i], c[0])
            out[i * 6], out[i * 6 + 1], out[i * 6 + 2] = g.x, g.y, g.z
            out[i * 6 + 3], out[i * 6 + 4], out[i * 6 + 5] = gc.x, gc.y, gc.z
          end
        end)
        local ps, c = ffi.new("deriv_spec_gvec[?]", N), ffi.new("deriv_spec_gvec[1]")
        c[0].x, c[0].y, c[0].z = -0.3, 0.2, 0.9
        for i = 0, N - 1 do ps[i].x, ps[i].y, ps[i].z = 0.5 + 0.1 * i, 1.2 - 0.05 * i, 0.3 end
        local out = darr(6 * N, function() return 0 end)
        k:launch({ global = N }, ps, c, out, N)
        for i = 0, N - 1 do
          local hx, hy, hz = dvec_pot(ps[i], c[0])
          close(out[i * 6], hx, HAND, "d/dp.x")
          close(out[i * 6 + 1], hy, HAND, "d/dp.y")
          close(out[i * 6 + 2], hz, HAND, "d/dp.z")
          close(out[i * 6 + 3], -hx, HAND, "d/dc.x")
          close(out[i * 6 + 4], -hy, HAND, "d/dc.y")
          close(out[i * 6 + 5], -hz, HAND, "d/dc.z")
        end
      end)
    end

    it("refuses a struct with a field that is not a float at the call's line", function()
      local function fm(m) return m.x * m.x end
      local err = H.error_of(function()
        local k = H.kernel(bk, function(ms, y, n)
          local i = gpu.global_id()
          if i < n then
            local g = gpu.gradient(fm, ms[i])   -- refused: an int32_t field
            y[i] = g.x
          end
        end)
        k:launch({ global = N }, ffi.new("deriv_spec_mixed[?]", N), darr(N, function() return 0 end), N)
      end)
      assert.matches(at("-- refused: an int32_t field"), err, 1, true)
      assert.matches("field 'k' is not a float", err, 1, true)
    end)

    it("takes constants as active arguments and passes arrays on", function()
      -- w[0], w[1]: coefficients f reads (constants: no derivative)
      local function lin(x, w) return w[0] * x * x + w[1] * x end
      local function cube(x) if x > 2 then return x * x * x end return x end
      local k = H.kernel(bk, function(x, w, y, n)
        local i = gpu.global_id()
        if i < n then
          local p, q = gpu.gradient(g2, 1.5, x[i])
          y[i] = gpu.derivative(lin, x[i], w) + 100 * gpu.derivative(cube, 2.5) + p + q
        end
      end)
      local x, w = input(5), darr(2, function(i) return 0.5 + i end)
      local y = darr(N, function() return 0 end)
      k:launch({ global = N }, x, w, y, N)
      for i = 0, N - 1 do
        local p, q = dg2(1.5, x[i])
        close(y[i], 2 * w[0] * x[i] + w[1] + 100 * 3 * 2.5 ^ 2 + p + q, HAND, "constants, arrays")
      end
    end)

    it("takes integers as numbers (the ids, an integral scalar, a literal)", function()
      local k = H.kernel(bk, function(a, y, n)
        local i = gpu.global_id()
        if i < n then
          local p, q = gpu.gradient(g2, a, i)
          y[i] = gpu.derivative(poly, i) + p + q + gpu.derivative(mathy, 2)
        end
      end)
      local y = darr(N, function() return 0 end)
      k:launch({ global = N }, 3, y, N)   -- a = 3: an integral number
      for i = 0, N - 1 do
        local p, q = dg2(3, i)
        close(y[i], dpoly(i) + p + q + dmathy(2), HAND, "integers at item " .. i)
      end
    end)

    it("is used inside a larger computation that is not differentiated", function()
      -- one Newton step x - f(x)/f'(x) per element, then a plain store
      local k = H.kernel(bk, function(x, y, n)
        local i = gpu.global_id()
        if i < n then
          local d, v = gpu.derivative(poly, x[i])
          y[i] = x[i] - v / d
        end
      end)
      local x = input(7)
      local y = darr(N, function() return 0 end)
      k:launch({ global = N }, x, y, N)
      for i = 0, N - 1 do close(y[i], x[i] - poly(x[i]) / dpoly(x[i]), 1e-12, "Newton step") end
    end)

    it("leaves the kernel's own values LuaJIT's (math.floor and math.ceil)", function()
      -- floor in f: derivative 0 (almost everywhere); ceil(-0.75) is +0 in LuaJIT
      local function stepped(x) return math.floor(4 * x) * 0.25 + x * x end
      local k = H.kernel(bk, function(x, y, z, n)
        local i = gpu.global_id()
        if i < n then
          local d, v = gpu.derivative(stepped, x[i])
          y[i] = d
          z[i] = v + 1 / math.ceil(x[i])
        end
      end)
      local x = darr(N, function(i) return -0.75 + 0.31 * i end)
      local y, z = darr(N, function() return 0 end), darr(N, function() return 0 end)
      k:launch({ global = N }, x, y, z, N)
      for i = 0, N - 1 do
        close(y[i], 2 * x[i], HAND, "the derivative of floor(4 x) / 4 + x^2")
        assert.equals(stepped(x[i]) + 1 / math.ceil(x[i]), z[i])
      end
      assert.equals(math.huge, z[0] - stepped(x[0]))   -- 1 / +0
    end)

    -- Refusals, each at its line.
    it("refuses a first result that is not a number at the call's line", function()
      local function cmp(x) return x > 1 end
      local err = H.error_of(function()
        local k = H.kernel(bk, function(x, y, n)
          local i = gpu.global_id()
          if i < n then
            local d = gpu.derivative(cmp, x[i])   -- refused: boolean result
            y[i] = d
          end
        end)
        k:launch({ global = N }, input(1), darr(N, function() return 0 end), N)
      end)
      assert.matches(at("-- refused: boolean result"), err, 1, true)
      assert.matches("only a number can be differentiated", err, 1, true)
    end)

    it("refuses a math function without a derivative rule at its line in f", function()
      local function frac(x)
        local _, fr = math.modf(x)   -- refused: modf in f
        return fr * x
      end
      local err = H.error_of(function()
        local k = H.kernel(bk, function(x, y, n)
          local i = gpu.global_id()
          if i < n then y[i] = gpu.derivative(frac, x[i]) end
        end)
        k:launch({ global = N }, input(1), darr(N, function() return 0 end), N)
      end)
      assert.matches(at("-- refused: modf in f") .. " derivative: ", err, 1, true)
    end)

    it("refuses nested derivatives at the outer call's line", function()
      local function inner(x) return gpu.derivative(poly, x) * x end
      local err = H.error_of(function()
        local k = H.kernel(bk, function(x, y, n)
          local i = gpu.global_id()
          if i < n then
            y[i] = gpu.derivative(inner, x[i])   -- refused: nested
          end
        end)
        k:launch({ global = N }, input(1), darr(N, function() return 0 end), N)
      end)
      assert.matches(at("-- refused: nested"), err, 1, true)
      assert.matches("nested derivatives are not supported", err, 1, true)
    end)

    it("refuses gpu.jvp and gpu.grad of a kernel that takes a derivative inside", function()
      local k = H.kernel(bk, function(x, y, n)
        local i = gpu.global_id()
        if i < n then
          y[i] = gpu.derivative(poly, x[i])   -- refused: outer derivative
        end
      end)
      local x, y = input(1), darr(N, function() return 0 end)
      for _, d in ipairs({ gpu.jvp(k), gpu.grad(k) }) do
        local err = H.error_of(function()
          d:launch({ global = N }, x, darr(N, function() return 1 end), y,
            darr(N, function() return 1 end), N)
        end)
        assert.matches(at("-- refused: outer derivative"), err, 1, true)
        assert.matches("is itself differentiated", err, 1, true)
      end
    end)

    -- on sim a store of a dual is an FFI conversion error, and f prints once
    -- per pass
    if bk ~= "sim" then
      it("refuses a function that writes memory or prints", function()
        local function store(x, a)
          a[0] = x
          return x
        end
        local err = H.compile_error(bk, function(x, y, n)
          local i = gpu.global_id()
          if i < n then
            y[i] = gpu.derivative(store, x[i], y)   -- refused: writes
          end
        end, { "double[]", "double[]", "int32_t" })
        H.check_compile_error(err, FILE, H.line_of("-- refused: writes"), "bad",
          { "must not write memory" })
        local function noisy(x)
          print(x)
          return x * x
        end
        err = H.compile_error(bk, function(x, y, n)
          local i = gpu.global_id()
          if i < n then
            y[i] = gpu.derivative(noisy, x[i])   -- refused: print
          end
        end, { "double[]", "double[]", "int32_t" })
        H.check_compile_error(err, FILE, H.line_of("-- refused: print"), "bad",
          { "calls print" })
      end)
    end

    if bk == "cpu" then
      it("goes through the cpu vectorizer", function()
        local notes = H.notes_of(function()
          local k = H.kernel(bk, function(x, d, v, m, n)
            local i = gpu.global_id()
            if i < n then
              local di, vi = gpu.derivative(mathy, x[i], m)
              d[i] = di
              v[i] = vi
            end
          end, { name = "deriv_vec", vectorize = true })
          local x = input(3)
          local d = run(k, x, 0)
          for i = 0, N - 1 do close(d[i], dmathy(x[i]), HAND, "vectorized") end
        end)
        assert.matches("^vectorized", notes.deriv_vec)
      end)
    end

    it("keeps kernels with different derivatives apart in the disk cache", function()
      local dir = H.tmpdir()
      local seen = {}
      local off = gpu.on_compile(function(e)
        if e.phase == "done" then seen[#seen + 1] = e.kernel .. " " .. e.cache end
      end)
      local ok, err = pcall(H.with_cache_dir, dir, function()
        for round = 1, 2 do   -- the second round loads them from disk
          for ci, c in ipairs({ cases[1], cases[4] }) do
            -- the same code, another f: another entry
            local k = gpu.kernel(function(x, d, v, m, n)
              local i = gpu.global_id()
              if i < n then
                local di, vi = gpu.derivative(c.f, x[i], m)
                d[i] = di
                v[i] = vi
              end
            end, { backend = bk, name = "dcache" .. ci })
            local x = input(ci + round)
            local d = run(k, x, 0)
            for i = 0, N - 1 do close(d[i], c.df(x[i]), HAND, c.name .. ", round " .. round) end
          end
        end
      end)
      off()
      assert(ok, err)
      if bk ~= "sim" then   -- sim compiles nothing
        assert.same({ "dcache1 written", "dcache2 written", "dcache1 hit", "dcache2 hit" }, seen)
      end
    end)
  end)
end

describe("derivatives inside kernels for cuda", function()
  it("compile to PTX that ptxas assembles", function()
    local has_cuda = false
    for _, b in ipairs(gpu.backends()) do has_cuda = has_cuda or b.name == "cuda" end
    if not has_cuda then return pending("gpujit was built without the cuda backend") end
    if not H.find_ptxas() then return pending("ptxas not found") end
    local k = gpu.kernel(function(x, d, v, m, n)
      local i = gpu.global_id()
      if i < n then
        local di, vi = gpu.derivative(looped, x[i], m)
        local p, q = gpu.gradient(g2, x[i], vi)
        d[i] = di + p * q
        v[i] = vi
      end
    end, { cache = false })
    local s = k:inspect_asm({ "double[]", "double[]", "double[]", "int32_t", "int32_t" }, "cuda")
    local ok, out = H.ptxas(s)
    assert.is_true(ok, out)
    -- a vec3 as the active argument: from an array of them and made in the kernel
    local kv = gpu.kernel(function(ps, s2, out2, n)
      local i = gpu.global_id()
      if i < n then
        local g = gpu.gradient(vec_e, ps[i], s2[i])
        local h = gpu.gradient(vec_pot, gvec(ps[i].z, ps[i].x, 1), ps[i])
        out2[i] = g.x + g.y + g.z + h.x
      end
    end, { cache = false })
    s = kv:inspect_asm({ "deriv_spec_gvec[]", "double[]", "double[]", "int32_t" }, "cuda")
    ok, out = H.ptxas(s)
    assert.is_true(ok, out)
  end)
end)
