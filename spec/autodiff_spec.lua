-- Derivatives of kernels (docs/autodiff.md): forward mode (gpu.jvp) against
-- central finite differences computed in double with the kernel itself, and
-- the constructs it refuses, each a compile error at its line.

local H = require("spec.helpers")
local ffi = require("ffi")
local gpu = H.gpu

local N = 16
local STEP = 1e-6
local TOL = 1e-6

local function darr(n, f)
  local a = ffi.new("double[?]", n)
  for i = 0, n - 1 do a[i] = f(i) end
  return a
end

local function copy(a, n)
  return darr(n, function(i) return a[i] end)
end

-- Deterministic inputs away from 0 and from the branches' edges.
local function input(seed)
  return darr(N, function(i) return 0.35 + 0.9 * math.abs(math.sin(seed * 7.1 + i * 1.3)) end)
end

local function direction(seed)
  return darr(N, function(i) return math.cos(seed * 3.7 + i * 0.7) end)
end

local function relerr(a, b)
  local d = math.abs(a - b)
  local s = math.max(math.abs(a), math.abs(b))
  if s < 1e-9 then return d end
  return d / s
end

-- Run kernel k on (the scalar a, arrays xs..., n) where the arrays listed in
-- `out` are written; returns copies of the outputs.
local function run(k, a, arrays, outs)
  local args = {}
  for i, arr in ipairs(arrays) do args[i] = copy(arr, N) end
  if a ~= nil then
    k:launch({ global = N }, a, unpack(args)) -- (a, arrays..., n)
  end
  local res = {}
  for j, idx in ipairs(outs) do res[j] = args[idx] end
  return res
end

-- Central differences of the outputs along (da, dxs) at (a, xs), in double.
local function fd(k, a, da, arrays, dirs, outs)
  local plus, minus = {}, {}
  for i, arr in ipairs(arrays) do
    local d = dirs[i]
    if type(arr) == "cdata" and d then
      plus[i] = darr(N, function(e) return arr[e] + STEP * d[e] end)
      minus[i] = darr(N, function(e) return arr[e] - STEP * d[e] end)
    else
      plus[i], minus[i] = arr, arr
    end
  end
  local rp = run(k, a + STEP * (da or 0), plus, outs)
  local rm = run(k, a - STEP * (da or 0), minus, outs)
  local res = {}
  for j = 1, #outs do
    res[j] = darr(N, function(e) return (rp[j][e] - rm[j][e]) / (2 * STEP) end)
  end
  return res
end

local function check_close(got, want, what)
  for e = 0, N - 1 do
    local r = relerr(got[e], want[e])
    if r ~= r or r > TOL then   -- NaN fails too
      error(("%s: element %d: the derivative gives %.17g, finite differences %.17g "
        .. "(relative error %.3g)"):format(what, e, got[e], want[e], r), 2)
    end
  end
end

-- y[i] = a * x[i] + y[i]
local function saxpy(a, x, y, n)
  local i = gpu.global_id()
  if i < n then y[i] = a * x[i] + y[i] end
end

-- if/else on a varying condition and a data-dependent while loop with
-- loop-carried floats
local function branchy(a, x, y, n)
  local i = gpu.global_id()
  if i < n then
    local v = x[i]
    local s, p = 0.0, 1.0
    if v > 0.8 then
      v = v * v * a
    else
      v = a / (v + 1)
    end
    local it = 0
    while s < v and it < 50 do   -- the trip count depends on v
      s = s + 0.25 + 0.1 * p
      p = p * 0.9 + v * 0.01
      it = it + 1
    end
    y[i] = s * p + v
  end
end

-- every math function of the kernel subset that has a rule
local function mathy(a, x, y, n)
  local i = gpu.global_id()
  if i < n then
    local v = x[i]
    local r = math.sqrt(v) + math.exp(v * 0.5) + math.log(v) + math.sin(v * a)
      + math.cos(v) + math.tan(v * 0.5) + math.tanh(v) + math.abs(v - 0.7)
      + math.min(v, 0.9) + math.max(v * a, 0.5) + math.floor(v * 3) * v
      + v ^ 2.5 + a ^ v + math.atan(v) + math.asin(v * 0.5) + math.acos(v * 0.5)
      + math.sinh(v) + math.cosh(v) + math.log10(v) + math.atan2(v, a) + math.fmod(v * 7, a)
      + v % 0.3 - v / a
    y[i] = r * y[i]
  end
end

local cases = {
  { name = "saxpy", fn = saxpy, a = 2.5 },
  { name = "if/else and a data-dependent while loop", fn = branchy, a = 1.7 },
  { name = "math functions", fn = mathy, a = 1.3 },
}

for _, bk in ipairs(H.backends) do
  describe("autodiff (" .. bk .. ")", function()
    if bk == "sim" then
      it("says that derivatives are not supported on sim yet", function()
        H.need(bk)
        local k = H.kernel(bk, saxpy)
        local jk = gpu.jvp(k, { "a" })
        local x, y = input(1), input(2)
        local ok, err = pcall(jk.launch, jk, { global = N }, 2.0, 1, x, x, y, y, N)
        assert.is_false(ok)
        assert.matches("not supported on sim yet", tostring(err), 1, true)
      end)
      return
    end

    for ci, c in ipairs(cases) do
      it("jvp of " .. c.name .. " matches central finite differences (x, y and a)", function()
        local k = H.kernel(bk, c.fn)
        local jk = gpu.jvp(k, { "a" })
        local x, y = input(ci), input(ci + 10)
        local dx, dy, da = direction(ci), direction(ci + 5), 0.75
        -- the kernel itself, for the finite differences: (a, x, y, n)
        local function runk(kk, a, xx, yy)
          kk:launch({ global = N }, a, xx, yy, N)
        end
        local K = { launch = function(_, cfg, a, xx, yy) return k:launch(cfg, a, xx, yy, N) end }
        local want = fd(K, c.a, da, { x, y }, { dx, dy }, { 2 })[1]
        -- forward mode: y's tangent comes out in dy
        local yy, dyy = copy(y, N), copy(dy, N)
        jk:launch({ global = N }, c.a, da, copy(x, N), copy(dx, N), yy, dyy, N)
        check_close(dyy, want, c.name)
        -- the primal result is the kernel's
        local yk = copy(y, N)
        runk(k, c.a, copy(x, N), yk)
        for e = 0, N - 1 do assert.equals(yk[e], yy[e]) end
      end)
    end

    it("treats arguments without a shadow as constants", function()
      local k = H.kernel(bk, saxpy)
      local jk = gpu.jvp(k)        -- a is not active
      local x, y = input(3), input(4)
      local dy = darr(N, function() return 0 end)
      jk:launch({ global = N }, 2.0, x, nil, y, dy, N)   -- x inactive: dy = 0 + 0
      for e = 0, N - 1 do assert.equals(0, dy[e]) end
      local dx = direction(3)
      jk:launch({ global = N }, 2.0, x, dx, y, dy, N)    -- dy = 2 dx + dy
      for e = 0, N - 1 do assert.near(2 * dx[e], dy[e], 1e-15) end
    end)

    it("refuses an intrinsic without a derivative rule at its line", function()
      local k = H.kernel(bk, function(x, y, n)
        local i = gpu.global_id()
        if i < n then
          local _, f = math.modf(x[i])   -- the line the error names
          y[i] = f
        end
      end)
      local jk = gpu.jvp(k)
      local x, y = input(1), input(2)
      local ok, err = pcall(jk.launch, jk, { global = N }, x, copy(x, N), y, copy(y, N), N)
      assert.is_false(ok)
      assert.matches("autodiff_spec.lua:186: derivative: ", tostring(err), 1, true)
    end)

    it("refuses atomics on an array with a shadow at its line", function()
      local k = H.kernel(bk, function(x, y, n)
        local i = gpu.global_id()
        if i < n then
          gpu.atomic_add(y, 0, x[i])   -- the line the error names
        end
      end)
      local jk = gpu.jvp(k)
      local x, y = input(1), input(2)
      local ok, err = pcall(jk.launch, jk, { global = N }, x, copy(x, N), y, copy(y, N), N)
      assert.is_false(ok)
      assert.matches("autodiff_spec.lua:201: derivative: an atomic operation", tostring(err), 1, true)
    end)

    it("refuses a float in local memory at its line", function()
      local k = H.kernel(bk, function(x, y, n)
        local i = gpu.global_id()
        if i < n then
          local t = gpu.local_array("double", 2)
          t[0] = x[i]                -- the line the error names
          y[i] = t[0] * 2
        end
      end)
      local jk = gpu.jvp(k)
      local x, y = input(1), input(2)
      local ok, err = pcall(jk.launch, jk, { global = N }, x, copy(x, N), y, copy(y, N), N)
      assert.is_false(ok)
      assert.matches("autodiff_spec.lua:216: derivative: a float kept in local", tostring(err), 1, true)
    end)

    it("keeps derivative kernels apart from the kernel in the disk cache", function()
      local dir = os.tmpname()
      os.remove(dir)
      H.with_cache_dir(dir, function()
        local k = gpu.kernel(saxpy, { backend = bk })
        local x, y = input(1), input(2)
        k:launch({ global = N }, 2.0, x, y, N)
        local jk = gpu.jvp(k, { "a" })
        local dy = darr(N, function() return 0 end)
        jk:launch({ global = N }, 2.0, 1, x, nil, y, dy, N)   -- dy = x
        for e = 0, N - 1 do assert.equals(x[e], dy[e]) end
      end)
    end)
  end)
end
