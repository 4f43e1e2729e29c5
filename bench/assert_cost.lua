-- The cost of an assert that never fails (docs/api.md, "assert and error in
-- kernels"; docs/reliability.md): each kernel with and without
-- `assert(x[i] >= -1e300, ...)`, launched in turns (plain, assert, plain,
-- ...) so that both see the same machine load, `runs` times each; prints
-- the median ms of each and their ratio.
--   luajit bench/assert_cost.lua [backends (cpu,opencl)] [runs (15)] [n (2^22)]
-- saxpy: y[i] = a * x[i] + y[i] (the cpu's plain kernel is vectorized by LLVM,
-- the assert's is not: docs/api.md); poly: 16 steps of a polynomial per item
-- (the body dominates); dev: saxpy whose assert is in a device function
-- (the check after the call too).
local gpu = require("gpujit")
local util = require("gpujit.util")

local backends = {}
for b in (arg[1] or "cpu,opencl"):gmatch("[^,]+") do backends[#backends + 1] = b end
local RUNS = tonumber(arg[2]) or 15
local N = tonumber(arg[3]) or 2 ^ 22

local function saxpy_plain(y, x, a, n)
  local i = gpu.global_id(0)
  if i < n then y[i] = a * x[i] + y[i] end
end
local function saxpy_assert(y, x, a, n)
  local i = gpu.global_id(0)
  if i < n then
    assert(x[i] >= -1e300, "x too small")
    y[i] = a * x[i] + y[i]
  end
end
local function poly_plain(y, x, a, n)
  local i = gpu.global_id(0)
  if i < n then
    local v, s = x[i], 0
    for _ = 1, 16 do s = s * v + a end
    y[i] = s
  end
end
local function poly_assert(y, x, a, n)
  local i = gpu.global_id(0)
  if i < n then
    local v, s = x[i], 0
    assert(v >= -1e300, "x too small")
    for _ = 1, 16 do s = s * v + a end
    y[i] = s
  end
end
local function checked(v)
  assert(v >= -1e300, "x too small")
  return v
end
local function dev_assert(y, x, a, n)
  local i = gpu.global_id(0)
  if i < n then y[i] = a * checked(x[i]) + y[i] end
end

local CASES = {
  { "saxpy", saxpy_plain, saxpy_assert },
  { "poly", poly_plain, poly_assert },
  { "dev", saxpy_plain, dev_assert },
}

print(("%-8s %-6s %10s %10s %7s"):format("backend", "kernel", "plain ms", "assert ms", "ratio"))
for _, bk in ipairs(backends) do
  local x, y = gpu.array("double", N, bk), gpu.array("double", N, bk)
  gpu.fill(x, 0.5)
  gpu.fill(y, 0)
  for _, c in ipairs(CASES) do
    local kp = gpu.kernel(c[2], { backend = bk, cache = false })
    local ka = gpu.kernel(c[3], { backend = bk, cache = false })
    kp:launch(N, y, x, 0.25, N)   -- compile, first touch
    ka:launch(N, y, x, 0.25, N)
    local tp, ta = {}, {}
    for r = 1, RUNS do
      local t0 = util.now()
      kp:launch(N, y, x, 0.25, N)
      local t1 = util.now()
      ka:launch(N, y, x, 0.25, N)
      tp[r], ta[r] = t1 - t0, util.now() - t1
    end
    local mp, ma = util.median(tp), util.median(ta)
    print(("%-8s %-6s %10.3f %10.3f %7.2f"):format(bk, c[1], mp * 1e3, ma * 1e3, ma / mp))
  end
end
