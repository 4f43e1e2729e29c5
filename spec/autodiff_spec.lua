-- Derivatives of kernels (docs/autodiff.md): forward mode (gpu.jvp) against
-- central finite differences computed in double with the kernel itself, and
-- the constructs it refuses, each a compile error at its line.

local H = require("spec.helpers")
local ffi = require("ffi")
local gpu = H.gpu

local N = 16
local STEP = 1e-6
local TOL = 1e-6

-- The line of this file holding marker (the refusals name their line).
local SELF = debug.getinfo(1, "S").source:sub(2)
local function line_of(marker)
  local n = 0
  for l in io.lines(SELF) do
    n = n + 1
    if l:find(marker, 1, true) then return "autodiff_spec.lua:" .. n .. ":" end
  end
  error("no line with " .. marker)
end

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
    while s < v and it < 50 do   -- the trip count depends on v; loop (reverse)
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

-- if/else on a varying condition, an early return, no loop
local function branches(a, x, y, n)
  local i = gpu.global_id()
  if i >= n then return end
  local v = x[i]
  local w
  if v > 0.8 then
    w = v * v * a - math.exp(v) / a
  elseif v > 0.6 then
    w = math.sin(v * a)
  else
    w = a / (v + 1)
  end
  y[i] = w * y[i] + v
end

-- nested loops with loop-carried floats, a branch inside, reads of x in
-- the loop
local function loops(a, x, y, n)
  local i = gpu.global_id()
  if i < n then
    local acc = 0.5
    for j = 1, 3 do
      for q = 1, j do
        acc = acc + math.sin(acc * x[i]) * a / q
        if acc > 1.5 then acc = acc * 0.75 end
      end
    end
    y[i] = acc * y[i]
  end
end

-- device functions, one with two results
local function polar(r, t) return r * math.cos(t), r * math.sin(t) end
local function norm2(p, q) return p * p + q * q end
local function devfn(a, x, y, n)
  local i = gpu.global_id()
  if i < n then
    local u, v = polar(x[i], a)
    y[i] = norm2(u, v * 2) * y[i]
  end
end

-- a device function of two results whose first is a constant at the call:
-- its aggregate { 3.375, undef } with the second inserted (the fuzzer's
-- seed 167, once refused as "a float taken from an aggregate")
local function pair(p, q) return p, math.log10((0.75 + q) * (0.75 + q) + 0.5) end
local function constfirst(a, x, y, n)
  local i = gpu.global_id()
  if i < n then
    local v = (pair(1.5 ^ 3, x[i] * a))
    local _, w = pair(2.0, x[i] + a)
    y[i] = v * w * y[i]
  end
end

-- a vec3 FFI metatype: operators and a method, compiled as device functions
pcall(ffi.cdef, "typedef struct { double x, y, z; } ad_spec_vec3;")
local vec3
vec3 = ffi.metatype("ad_spec_vec3", {
  __sub = function(p, q) return vec3(p.x - q.x, p.y - q.y, p.z - q.z) end,
  __len = function(p) return math.sqrt(p:dot(p)) end,
  __index = { dot = function(p, q) return p.x * q.x + p.y * q.y + p.z * q.z end },
})

-- the n-body potential energy of body i: sum over j ~= i of m_j / |p_i - p_j|
local function energy(pos, m, e, n)
  local i = gpu.global_id()
  if i < n then
    local s = 0.0
    for j = 0, n - 1 do
      if j ~= i then s = s + m[j] / #(pos[i] - pos[j]) end
    end
    e[i] = s
  end
end

local cases = {
  { name = "saxpy", fn = saxpy, a = 2.5 },
  { name = "if/else and a data-dependent while loop", fn = branchy, a = 1.7 },
  { name = "math functions", fn = mathy, a = 1.3 },
  { name = "device functions (two results)", fn = devfn, a = 0.7 },
  { name = "a device function's constant first result", fn = constfirst, a = 0.6 },
}

for _, bk in ipairs(H.backends) do
  describe("autodiff (" .. bk .. ")", function()
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
          local _, f = math.modf(x[i])   -- refused: modf
          y[i] = f
        end
      end)
      local jk = gpu.jvp(k)
      local x, y = input(1), input(2)
      local ok, err = pcall(jk.launch, jk, { global = N }, x, copy(x, N), y, copy(y, N), N)
      assert.is_false(ok)
      assert.matches(line_of("refused: modf") .. " derivative: ", tostring(err), 1, true)
    end)

    it("refuses the value atomic_add returns at its line", function()
      local k = H.kernel(bk, function(x, y, n)
        local i = gpu.global_id()
        if i < n then
          local old = gpu.atomic_add(y, 0, x[i])   -- refused: atomic (forward)
          x[i] = old                               -- sim: refused where used (forward)
        end
      end)
      local jk = gpu.jvp(k)
      local x, y = input(1), input(2)
      local ok, err = pcall(jk.launch, jk, { global = N }, x, copy(x, N), y, copy(y, N), N)
      assert.is_false(ok)
      local at = bk == "sim" and "sim: refused where used (forward)" or "refused: atomic (forward)"
      assert.matches(line_of(at) .. " derivative: the value atomic_add returns",
        tostring(err), 1, true)
    end)

    it("refuses a float in local memory at its line", function()
      local k = H.kernel(bk, function(x, y, n)
        local i = gpu.global_id()
        if i < n then
          local t = gpu.local_array("double", 4)
          t[i % 4] = x[i]            -- refused: local memory
          y[i] = t[i % 4] * 2        -- (an index SROA cannot resolve)
        end
      end)
      local jk = gpu.jvp(k)
      local x, y = input(1), input(2)
      local ok, err = pcall(jk.launch, jk, { global = N }, x, copy(x, N), y, copy(y, N), N)
      assert.is_false(ok)
      assert.matches(line_of("refused: local memory") .. " derivative: a float kept in local",
        tostring(err), 1, true)
    end)

    local function dot(a, b)
      local t = 0
      for e = 0, N - 1 do t = t + a[e] * b[e] end
      return t
    end

    local grad_cases = {
      { name = "saxpy", fn = saxpy, a = 2.5 },
      { name = "if/else with an early return", fn = branches, a = 1.7 },
      { name = "math functions", fn = mathy, a = 1.3 },
      { name = "a data-dependent while loop with loop-carried floats", fn = branchy, a = 1.7 },
      { name = "nested for loops with a branch inside", fn = loops, a = 0.9 },
      { name = "device functions (two results)", fn = devfn, a = 0.7 },
      { name = "a device function's constant first result", fn = constfirst, a = 0.6 },
    }
    for ci, c in ipairs(grad_cases) do
      it("grad of " .. c.name .. " matches finite differences and forward mode (x, y and a)", function()
        local k = H.kernel(bk, c.fn)
        local gk, jk = gpu.grad(k, { "a" }), gpu.jvp(k, { "a" })
        local x, y = input(ci + 20), input(ci + 30)
        local v = direction(ci + 40)          -- the adjoint of the output y
        -- reverse: adjoints accumulate into zeroed arrays
        local gx, gy = darr(N, function() return 0 end), copy(v, N)
        local ga = ffi.new("double[1]")
        local yr = copy(y, N)
        gk:launch({ global = N }, c.a, ga, copy(x, N), gx, yr, gy, N)
        -- the primal results are the kernel's
        local yk = copy(y, N)
        k:launch({ global = N }, c.a, copy(x, N), yk, N)
        for e = 0, N - 1 do assert.equals(yk[e], yr[e]) end
        -- each element against central differences (work item i reads x[i]
        -- and y[i] only, so J is diagonal in x and y)
        local K = { launch = function(_, cfg, a, xx, yy) return k:launch(cfg, a, xx, yy, N) end }
        local ones, zeros = darr(N, function() return 1 end), darr(N, function() return 0 end)
        local fx = fd(K, c.a, 0, { x, y }, { ones, zeros }, { 2 })[1]
        local fy = fd(K, c.a, 0, { x, y }, { zeros, ones }, { 2 })[1]
        local fa = fd(K, c.a, 1, { x, y }, { zeros, zeros }, { 2 })[1]
        check_close(gx, darr(N, function(e) return v[e] * fx[e] end), c.name .. ": dx")
        check_close(gy, darr(N, function(e) return v[e] * fy[e] end), c.name .. ": dy")
        local want_a = dot(v, fa)
        assert(relerr(ga[0], want_a) <= TOL, ("%s: da %.17g, finite differences %.17g")
          :format(c.name, ga[0], want_a))
        -- <v, J u> both ways: forward mode's J u, reverse mode's J^T v
        local ux, uy, ua = direction(ci + 50), direction(ci + 60), -0.6
        local ju = copy(uy, N)
        jk:launch({ global = N }, c.a, ua, copy(x, N), copy(ux, N), copy(y, N), ju, N)
        local lhs, rhs = dot(v, ju), dot(gx, ux) + dot(gy, uy) + ga[0] * ua
        assert(relerr(lhs, rhs) <= 1e-12, ("%s: <v, J u> %.17g forward, %.17g reverse")
          :format(c.name, lhs, rhs))
      end)
    end

    it("grad adds into the adjoints (+=) and takes nil as inactive", function()
      local k = H.kernel(bk, saxpy)
      local gk = gpu.grad(k, { "a" })
      local x, y = input(5), input(6)
      local gx = darr(N, function() return 1 end)     -- not zeroed: added into
      local gy = darr(N, function() return 2 end)
      gk:launch({ global = N }, 3.0, nil, x, gx, copy(y, N), gy, N)
      for e = 0, N - 1 do
        assert.equals(1 + 2 * 3.0, gx[e])            -- dx += dy * a
        assert.equals(2, gy[e])                      -- zeroed by the write, += 2 by the read
      end
    end)

    local function refused(fn, pattern, scalars, ...)
      local k = H.kernel(bk, fn)
      local gk = gpu.grad(k, scalars)
      local ok, err = pcall(gk.launch, gk, { global = N }, ...)
      assert.is_false(ok)
      assert.matches(pattern, tostring(err), 1, true)
    end

    if bk ~= "sim" then   -- sim keeps no tape (gpujit.adsim)
      it("launches on two streams at once each get a tape of their own", function()
        local n = 20000
        local function inp(seed)
          return darr(n, function(i) return 0.35 + 0.9 * math.abs(math.sin(seed * 7.1 + i * 1.3)) end)
        end
        local k = H.kernel(bk, branchy)
        local gk = gpu.grad(k, { "a" })
        local x = { inp(1), inp(2) }
        local function grad_of(j, cfg)
          local da, dx = ffi.new("double[1]"), darr(n, function() return 0 end)
          gk:launch(cfg, 1.7, da, x[j], dx, darr(n, function() return 0 end),
            darr(n, function(i) return 1 + (i % 3) * j end), n)
          return da, dx
        end
        local ref = { { grad_of(1, { global = n }) }, { grad_of(2, { global = n }) } }
        local s = { gpu.stream(bk), gpu.stream(bk) }
        local got = {}
        for _ = 1, 4 do
          for j = 1, 2 do got[#got + 1] = { j, grad_of(j, { global = n, stream = s[j] }) } end
        end
        s[1]:synchronize()
        s[2]:synchronize()
        for _, g in ipairs(got) do
          local j, da, dx = g[1], g[2], g[3]
          -- (a's adjoint sums every work item's part: in whatever order
          -- the threads add them, so not bit for bit)
          assert(math.abs(da[0] - ref[j][1][0]) <= 1e-12 * math.abs(ref[j][1][0]),
            ("stream %d: da %.17g, expected %.17g"):format(j, da[0], ref[j][1][0]))
          for i = 0, n - 1 do
            if dx[i] ~= ref[j][2][i] then
              error(("stream %d: dx[%d] %.17g, expected %.17g"):format(j, i, dx[i], ref[j][2][i]))
            end
          end
        end
      end)

  it("fails a launch whose loops need more tape than gpu.grad's tape option gives, at the loop", function()
        local k = H.kernel(bk, branchy)
        local gk = gpu.grad(k, { "a" }, { tape = 8 + N * 8 * 4 })   -- a few entries per stack
        local ok, err = pcall(gk.launch, gk, { global = N }, 1.7, ffi.new("double[1]"), input(1),
          copy(input(1), N), input(2), input(3), N)
        assert.is_false(ok)
        assert.matches(line_of("loop (reverse)") .. " index %d+ is out of bounds for the reverse%-mode tape",
          tostring(err))
        -- with the default tape the same launch works
        local gk2 = gpu.grad(k, { "a" })
        gk2:launch({ global = N }, 1.7, ffi.new("double[1]"), input(1), copy(input(1), N), input(2),
          input(3), N)
        -- a loop with reads (computed again by the reverse) and its variable
        -- on the tape: too small a tape is the same error (the reverse, which
        -- would read what was not kept, is skipped)
        local dense = H.kernel(bk, function(w, x, y, n)
          local i = gpu.global_id()
          if i < n then
            local s = 0.0
            for j = 0, 3 do s = s + w[j] * x[(i * 4 + j) % n] end   -- tape: dense
            y[i] = math.tanh(s)
          end
        end)
        local function dense_grad(bytes)
          local gd = gpu.grad(dense, nil, { tape = bytes })
          return pcall(gd.launch, gd, { global = N }, input(4), copy(input(4), N), input(5),
            copy(input(5), N), input(6), copy(input(6), N), N)
        end
        ok, err = dense_grad(8 + N * 8)
        assert.is_false(ok)
        assert.matches(line_of("tape: dense") .. " index %d+ is out of bounds for the reverse%-mode tape",
          tostring(err))
        -- the index is the deepest entry the stacks asked for (the loop's 4
        -- iterations: index 3), not the first one past the end, so a tape
        -- (index + 1) / length times as large holds (docs/api.md).  3 entries
        -- per work item: the loop keeps one stack (its variable; its reads are
        -- computed again) of 3 entries, or two of 1
        local bytes = 8 + N * 8 * 3
        ok, err = dense_grad(bytes)
        assert.is_false(ok)
        local index, length = tostring(err):match("index (%d+) is out of bounds for the reverse%-mode tape "
          .. "%(gpu%.grad's tape option%) %(length (%d+)")
        assert.are.equal(3, tonumber(index))
        assert.is_true(tonumber(length) >= 1 and tonumber(length) < 4)
        assert.is_true((dense_grad(8 + math.ceil((bytes - 8) * (index + 1) / length))))
      end)
    end

    if bk ~= "sim" then   -- sim: the exact Jacobian of the launch (gpujit.adsim)
  it("refuses a read of an array after a write to it at the read's line", function()
        refused(function(x, y, n)
          local i = gpu.global_id()
          if i < n then
            y[i] = x[i] * 2
            y[i] = y[i] + x[i]         -- refused: read after write
          end
        end, line_of("refused: read after write")
          .. " derivative: reverse mode: a read of an array after a write",
          nil, input(1), copy(input(1), N), input(2), input(3), N)
      end)
    end

    it("refuses the value atomic_add returns in reverse mode at its line", function()
      refused(function(x, y, n)
        local i = gpu.global_id()
        if i < n then
          local old = gpu.atomic_add(y, 0, x[i])   -- refused: atomic (reverse)
          x[i] = old                               -- sim: refused where used (reverse)
        end
      end, line_of(bk == "sim" and "sim: refused where used (reverse)" or "refused: atomic (reverse)")
        .. " derivative: the value atomic_add returns",
        nil, input(1), copy(input(1), N), input(2), input(3), N)
    end)

    it("differentiates atomic_add (a reduction): gradcheck, and forward against reverse", function()
      local k = H.kernel(bk, function(a, x, y, n)
        local i = gpu.global_id()
        if i < n then gpu.atomic_add(y, i % 3, a * x[i] * x[i]) end
      end)
      local x, y = input(7), input(8)
      local ok, why = gpu.gradcheck({ k, scalars = { "a" } }, N, 1.3, x, y, N)
      assert.is_true(ok, why)
      local v, ux, uy = direction(1), direction(2), direction(3)
      local ju = copy(uy, N)
      gpu.jvp(k, { "a" }):launch({ global = N }, 1.3, 0.4, copy(x, N), copy(ux, N), copy(y, N), ju, N)
      local gx, gy, ga = darr(N, function() return 0 end), copy(v, N), ffi.new("double[1]")
      gpu.grad(k, { "a" }):launch({ global = N }, 1.3, ga, copy(x, N), gx, copy(y, N), gy, N)
      local lhs, rhs = dot(v, ju), dot(gx, ux) + dot(gy, uy) + ga[0] * 0.4
      assert(relerr(lhs, rhs) <= 1e-12, ("<v, J u> %.17g forward, %.17g reverse"):format(lhs, rhs))
    end)

    it("adds read adjoints plainly only in 1-D launches: 2-D items that share x[i] add them all", function()
      local k = H.kernel(bk, function(x, out, n)
        local i = gpu.global_id()
        if i < n then gpu.atomic_add(out, 0, x[i] * x[i]) end
      end)
      local gk = gpu.grad(k)
      local x = input(9)
      for _, shape in ipairs({ { N }, { N, 4 }, { N, 2, 3 } }) do
        local copies = (shape[2] or 1) * (shape[3] or 1)
        local gx, gout = darr(N, function() return 0 end), ffi.new("double[1]", 0.5)
        gk:launch({ global = shape }, x, gx, ffi.new("double[1]"), gout, N)
        for e = 0, N - 1 do
          assert.near(copies * 2 * x[e] * 0.5, gx[e], 1e-12 * copies)
        end
      end
    end)

    if bk ~= "sim" then   -- arrays of structs on sim: refused (below)
  it("grad of the vec3 n-body energy with respect to positions and masses (finite differences)", function()
        local k = H.kernel(bk, energy)
        local n = 6
        local pos = ffi.new("ad_spec_vec3[?]", n)
        for i = 0, n - 1 do pos[i].x, pos[i].y, pos[i].z = math.cos(i), math.sin(1.7 * i), 0.3 * i end
        local m = darr(n, function(i) return 1 + 0.1 * i end)
        local function total(p, mm)
          local e = darr(n, function() return 0 end)
          k:launch({ global = n }, p, mm, e, n)
          local t = 0
          for i = 0, n - 1 do t = t + e[i] end
          return t
        end
        local gp, gm = ffi.new("ad_spec_vec3[?]", n), darr(n, function() return 0 end)
        gpu.grad(k):launch({ global = n }, pos, gp, m, gm, darr(n, function() return 0 end),
          darr(n, function() return 1 end), n)
        for i = 0, n - 1 do
          for _, f in ipairs({ "x", "y", "z" }) do
            local p1, p2 = ffi.new("ad_spec_vec3[?]", n), ffi.new("ad_spec_vec3[?]", n)
            ffi.copy(p1, pos, ffi.sizeof(pos))
            ffi.copy(p2, pos, ffi.sizeof(pos))
            p1[i][f], p2[i][f] = pos[i][f] + 1e-6, pos[i][f] - 1e-6
            local want = (total(p1, m) - total(p2, m)) / 2e-6
            assert(relerr(gp[i][f], want) <= TOL, ("d pos[%d].%s: %.17g, finite differences %.17g")
              :format(i, f, gp[i][f], want))
          end
          local m1, m2 = copy(m, n), copy(m, n)
          m1[i], m2[i] = m[i] + 1e-6, m[i] - 1e-6
          local want = (total(pos, m1) - total(pos, m2)) / 2e-6
          assert(relerr(gm[i], want) <= TOL, ("d m[%d]: %.17g, finite differences %.17g")
            :format(i, gm[i], want))
        end
      end)
    end

    if bk == "sim" then
      it("says that arrays of structs with a shadow are not supported on sim yet", function()
        local k = H.kernel(bk, energy)
        local pos, gp = ffi.new("ad_spec_vec3[?]", 2), ffi.new("ad_spec_vec3[?]", 2)
        local ok, err = pcall(function()
          gpu.grad(k):launch({ global = 2 }, pos, gp, input(1), copy(input(1), N), input(2), input(3), 2)
        end)
        assert.is_false(ok)
        assert.matches("is an array of structs: not supported on sim yet", tostring(err), 1, true)
      end)
    end

    it("refuses one array passed twice (with shadows): aliasing", function()
      local k = H.kernel(bk, saxpy)
      local x, dx = input(1), input(2)
      for _, d in ipairs({ gpu.jvp(k), gpu.grad(k) }) do
        local ok, err = pcall(d.launch, d, { global = N }, 2.0, x, dx, x, copy(dx, N), N)
        assert.is_false(ok)
        assert.matches("are the same array", tostring(err), 1, true)
        ok, err = pcall(d.launch, d, { global = N }, 2.0, x, dx, copy(x, N), dx, N)
        assert.is_false(ok)
        assert.matches("are the same array", tostring(err), 1, true)
      end
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
