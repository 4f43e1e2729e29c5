-- gpu.gradcheck and gpu.tape (lua/gpujit/adtape.lua, docs/autodiff.md), and
-- the PTX of derivative kernels assembled by ptxas.

local H = require("spec.helpers")
local ffi = require("ffi")
local gpu = H.gpu

local N = 8

local function darr(n, f)
  local a = ffi.new("double[?]", n)
  for i = 0, n - 1 do a[i] = f(i) end
  return a
end

local function copy(a)
  local n = ffi.sizeof(a) / 8
  return darr(n, function(i) return a[i] end)
end

-- one step of N pendulums: reads before writes, a nonlinear update
local function step(x, v, dt, n)
  local i = gpu.global_id()
  if i < n then
    local nv = v[i] - dt * math.sin(x[i])
    v[i] = nv
    x[i] = x[i] + dt * nv
  end
end

local function saxpy(a, x, y, n)
  local i = gpu.global_id()
  if i < n then y[i] = a * math.sin(x[i]) + y[i] * y[i] end
end

for _, bk in ipairs(H.backends) do
  describe("gpu.gradcheck and gpu.tape (" .. bk .. ")", function()

    it("gradcheck passes for a right gradient (arrays and a scalar)", function()
      local k = H.kernel(bk, saxpy)
      local x = darr(N, function(i) return 0.1 + 0.1 * i end)
      local y = darr(N, function(i) return 1 + i end)
      local ok, why = gpu.gradcheck({ k, scalars = { "a" } }, N, 1.5, x, y, N)
      assert.is_true(ok, why)
      -- it worked on copies: the arguments are as they were
      for i = 0, N - 1 do assert.equals(1 + i, y[i]) end
    end)

    it("gradcheck passes for a dense layer whose input rows are the work item's own", function()
      -- x[i * 4 + j], j = 0, 3: plain adds into dx in a 1-D launch (docs/autodiff.md,
      -- "arrays"); in a 2-D launch two work items read each row: atomic adds
      local k = H.kernel(bk, function(w, x, y, n)
        local i, r = gpu.global_id(0), gpu.global_id(1)
        if i < n then
          local s = 0.0
          for j = 0, 3 do s = s + w[j] * x[i * 4 + j] * (r + 1) end
          y[r * n + i] = math.tanh(s)
        end
      end)
      local w = darr(4, function(j) return 0.3 - 0.2 * j end)
      local x = darr(4 * N, function(i) return math.sin(i) end)
      for _, cfg in ipairs({ N, { global = { N, 2 } } }) do
        local ok, why = gpu.gradcheck(k, cfg, w, x, darr(2 * N, function() return 0 end), N)
        assert.is_true(ok, why)
      end
    end)

    it("gradcheck passes for counted loops and loops that are not (src/gj_ad_loop.c)", function()
      -- counted, reversed by their variable: nested constant bounds; not: a
      -- break, a return inside, a negative step, a bound that is the outer variable
      local loops = {
        nested = function(w, x, y, n)
          local i = gpu.global_id()
          if i < n then
            local s = x[i]
            for j = 0, 2 do for k = 0, 3 do s = math.sin(s * w[j * 4 + k]) + s end end
            y[i] = s
          end
        end,
        brk = function(w, x, y, n)
          local i = gpu.global_id()
          if i < n then
            local s = 0.0
            for j = 0, 5 do
              s = s + w[j] * x[i] * j
              if s > 2.5 then break end
            end
            y[i] = s * s
          end
        end,
        ret = function(w, x, y, n)
          local i = gpu.global_id()
          if i < n then
            local s = 0.0
            for j = 0, 5 do
              s = s + w[j] * x[i]
              if s > 1.7 then y[i] = s; return end
            end
            y[i] = -s
          end
        end,
        neg = function(w, x, y, n)
          local i = gpu.global_id()
          if i < n then
            local s = 1.0
            for j = 5, 0, -1 do s = s * (1 + 0.1 * w[j] * x[i]) end
            y[i] = s
          end
        end,
        tri = function(w, x, y, n)
          local i = gpu.global_id()
          if i < n then
            local s = 0.0
            for j = 0, 4 do
              for k = 0, j do s = s + w[k] * math.sin(x[i] + j) end
              s = s * 0.9
            end
            y[i] = s
          end
        end,
      }
      for _, name in ipairs({ "nested", "brk", "ret", "neg", "tri" }) do
        local k = H.kernel(bk, loops[name])
        local ok, why = gpu.gradcheck(k, N, darr(12, function(j) return 0.2 + 0.1 * j end),
          darr(N, function(i) return 0.3 + 0.25 * i end), darr(N, function() return 0 end), N)
        assert.is_true(ok, name .. ": " .. tostring(why))
      end
    end)

    it("gradcheck names the first argument and element that differ", function()
      -- floor's derivative is 0, but x[1] * 10 = 3 sits on a step
      local k = H.kernel(bk, function(x, y, n)
        local i = gpu.global_id()
        if i < n then y[i] = math.floor(x[i] * 10) end
      end)
      local ok, why = gpu.gradcheck(k, 4, darr(4, function(i) return ({ 0.25, 0.3, 0.45, 0.55 })[i + 1] end),
        darr(4, function() return 0 end), 4)
      assert.is_false(ok)
      assert.matches("argument #1 (x), element 1:", why, 1, true)
    end)

    it("a 100-step tape gives the gradient of the whole program (finite differences)", function()
      local k = H.kernel(bk, step)
      local function sim(x0, v0, keep)
        local x, v = copy(x0), copy(v0)
        local t = gpu.tape()
        for _ = 1, 100 do
          if keep then t:launch(k, N, x, v, 0.05, N) else k:launch(N, x, v, 0.05, N) end
        end
        return x, v, t
      end
      local x0 = darr(N, function(i) return 0.1 + 0.3 * i end)
      local v0 = darr(N, function(i) return math.cos(i) * 0.3 end)
      local x, v, t = sim(x0, v0, true)
      local xf, vf = copy(x), copy(v)
      -- loss = sum x_final + 0.5 sum v_final: seed the adjoints
      local gx, gv = darr(N, function() return 1 end), darr(N, function() return 0.5 end)
      t:backward({ [x] = gx, [v] = gv })
      -- the arrays hold their final values again
      for i = 0, N - 1 do
        assert.equals(xf[i], x[i])
        assert.equals(vf[i], v[i])
      end
      local function L(xx, vv)
        local a, b = sim(xx, vv, false)
        local s = 0
        for i = 0, N - 1 do s = s + a[i] + 0.5 * b[i] end
        return s
      end
      local h = 1e-6
      for _, which in ipairs({ { x0, gx, "x" }, { v0, gv, "v" } }) do
        local base, g, name = which[1], which[2], which[3]
        for e = 0, N - 1 do
          local p, m = copy(base), copy(base)
          p[e], m[e] = p[e] + h, m[e] - h
          local fd
          if name == "x" then fd = (L(p, v0) - L(m, v0)) / (2 * h)
          else fd = (L(x0, p) - L(x0, m)) / (2 * h) end
          local r = math.abs(g[e] - fd) / math.max(math.abs(fd), 1e-6)
          assert(r <= 1e-6, ("d%s[%d]: tape %.17g, finite differences %.17g"):format(name, e, g[e], fd))
        end
      end
    end)
  end)
end

describe("derivative kernels for cuda", function()
  it("compile to PTX that ptxas assembles (forward and reverse)", function()
    local has_cuda = false
    for _, b in ipairs(gpu.backends()) do has_cuda = has_cuda or b.name == "cuda" end
    if not has_cuda then return pending("gpujit was built without the cuda backend") end
    if not H.find_ptxas() then return pending("ptxas not found") end
    local k = gpu.kernel(saxpy, { cache = false })
    local tl = { "double", "double[]", "double[]", "int32_t" }
    for _, d in ipairs({ gpu.jvp(k, { "a" }), gpu.grad(k, { "a" }) }) do
      local s = d:inspect_asm(tl, "cuda")
      local ok, out = H.ptxas(s)
      assert.is_true(ok, out)
    end
    -- reverse mode adds the adjoints of reads atomically
    assert.is_truthy(gpu.grad(k, { "a" }):inspect_asm(tl, "cuda"):find("atom.global.add.f64", 1, true))
  end)
end)
