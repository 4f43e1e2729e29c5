-- spec/fuzz/grad_inner.lua: the differential fuzzer's mode for derivatives
-- inside kernels (docs/fuzzing.md, docs/autodiff.md "Inside kernels"):
-- random device functions F(p, q) of the differentiable subset (the
-- statements of spec/fuzz/grad.lua's kernels: float locals, math functions,
-- kinks, selects, if/else, early returns, for and while loops with
-- loop-carried floats, calls of device functions of one and two results),
-- differentiated in a kernel by gpu.gradient(F, x[i], a).
--
--   local GI = require("spec.fuzz.grad_inner")
--   GI.generate(seed) -> case, GI.source(cases), GI.run_batch(cases, bk),
--   GI.BATCH: as spec/fuzz/grad.lua's
--
-- The kernel stores F's value in y[i] and the two partials in y[n + i] and
-- y[2n + i].  The checks, per case and work item:
-- 1. each partial against central differences of the kernel's own value
--    output (x shifted by h, or a), step 1e-6, relative error <= 1e-6
--    (relative to max(|partial|, |difference|, 1e-3)); above it, an element
--    whose differences at steps 1e-7 and 1e-5 disagree, or whose one-sided
--    slopes do, is not smooth there (counted, not compared);
-- 2. on a compiled backend, value and partials against sim's (dual
--    numbers, another implementation of the same rules): relative 1e-9.
-- A case whose results leave [-1e8, 1e8] is skipped; a refusal is counted.

local H = require("spec.helpers")
local GR = require("spec.fuzz.grad")

local GI = {}
GI.N = 8
GI.TOL = 1e-6
GI.SIM_TOL = 1e-9
GI.STEP = 1e-6
GI.BATCH = GR.BATCH
GI.RANGE = 1e8

function GI.generate(seed)
  local r = GR.rng(seed + 7)
  local out = {}
  local ctx = { fns = {}, fns2 = {} }
  GR.devfns(r, out, ctx)
  out[#out + 1] = "local function F(p, q)"
  GR.body(r, out, "  ", { fns = ctx.fns, fns2 = ctx.fns2, dev = true, fn = true })
  out[#out + 1] = "end"
  out[#out + 1] = "K = function(a, x, y, z, n)"
  out[#out + 1] = "  local i = gpu.global_id()"
  out[#out + 1] = "  if i >= n then return end"
  out[#out + 1] = "  local dp, dq, v = gpu.gradient(F, x[i], a)"
  out[#out + 1] = "  y[i], y[n + i], y[2 * n + i] = v, dp, dq"
  out[#out + 1] = "end"
  return { seed = seed, body = table.concat(out, "\n") }
end

GI.source = GR.source

local function darr(n, f) return H.array("double", f, n) end

local function relerr(p, q)
  local d = math.abs(p - q)
  local s = math.max(math.abs(p), math.abs(q), 1e-3)
  return d / s
end

-- Inputs of a case, from its seed.
local function data(seed)
  local r = GR.rng(seed + 99991)
  local function val() return (r(2001) - 1001) / 700 end
  return { a = 0.3 + r(100) / 80, x = darr(GI.N, val) }
end

-- The kernel's results at (a, x shifted by hx): y (3 N elements).
local function launch(k, which, a, x, hx)
  local N = GI.N
  local y, z = darr(3 * N, function() return 0 end), darr(2, function() return 0 end)
  k:launch(N, which, a, darr(N, function(e) return x[e] + hx end), y, z, N)
  return y
end

local function check_one(case, which, k, ref)
  local N, D = GI.N, data(case.seed)
  local res = { fails = {}, unsmooth = 0 }
  local function fail(msg) res.fails[#res.fails + 1] = msg end
  local y = launch(k, which, D.a, D.x, 0)
  for e = 0, 3 * N - 1 do
    if y[e] ~= y[e] or math.abs(y[e]) > GI.RANGE then
      res.skipped = "results out of range"
      return res
    end
  end
  -- 1. central differences of the value, per partial (p: x, q: a)
  local function value(hx, ha, e) return launch(k, which, D.a + ha, D.x, hx)[e] end
  local function fd(q, h, e)
    if q then return (value(0, h, e) - value(0, -h, e)) / (2 * h) end
    return (value(h, 0, e) - value(-h, 0, e)) / (2 * h)
  end
  local function kink(q, e)
    local h, v0 = GI.STEP * 10, y[e]
    local up = q and value(0, h, e) or value(h, 0, e)
    local down = q and value(0, -h, e) or value(-h, 0, e)
    return relerr((up - v0) / h, (v0 - down) / h) > 1e-3
  end
  for e = 0, N - 1 do
    for _, q in ipairs({ false, true }) do
      local got = y[(q and 2 or 1) * N + e]
      local f1 = fd(q, GI.STEP, e)
      if f1 ~= f1 then
        res.unsmooth = res.unsmooth + 1
      elseif relerr(got, f1) > GI.TOL then
        local f2, f3 = fd(q, GI.STEP / 10, e), fd(q, GI.STEP * 10, e)
        if relerr(f1, f2) > GI.TOL or relerr(f1, f3) > GI.TOL or kink(q, e) then
          res.unsmooth = res.unsmooth + 1
        else
          fail(("d/d%s at item %d: gpu.gradient %.17g, central differences %.17g (steps 1e-7, "
            .. "1e-5: %.17g, %.17g)"):format(q and "a" or "x", e, got, f1, f2, f3))
        end
      end
    end
  end
  -- 2. against sim's dual numbers
  if ref then
    local ys = launch(ref, which, D.a, D.x, 0)
    for e = 0, 3 * N - 1 do
      if relerr(y[e], ys[e]) > GI.SIM_TOL then
        local what = ({ "value", "d/dx", "d/da" })[math.floor(e / N) + 1]
        fail(("%s at item %d: %.17g, sim's %.17g"):format(what, e % N, y[e], ys[e]))
      end
    end
  end
  return res
end

GI.check_one = check_one   -- (case, which, kernel, reference kernel or nil)

-- Compile a batch on bk (and on sim, the reference, for another bk).
function GI.compile(cases, bk)
  local chunk = assert(load(GI.source(cases), "=fuzz_deriv"))
  local fn = chunk(H.gpu)
  return H.kernel(bk, fn), bk ~= "sim" and H.kernel("sim", fn) or nil
end

function GI.run_alone(cases, bk)
  local out = {}
  for j, case in ipairs(cases) do
    local ok, res = pcall(function()
      local k, ref = GI.compile({ case }, bk)
      return check_one(case, 1, k, ref)
    end)
    if not ok then
      local msg = tostring(res)
      res = { fails = {}, unsmooth = 0 }
      if msg:find("derivative: ", 1, true) then res.refused = msg else res.fails[1] = "error: " .. msg end
    end
    out[j] = res
  end
  return out
end

-- Run a batch on bk: one result per case; a batch that fails to compile or
-- launch runs its cases alone.
function GI.run_batch(cases, bk)
  local ok, out = pcall(function()
    local k, ref = GI.compile(cases, bk)
    local res = {}
    for j, case in ipairs(cases) do res[j] = check_one(case, j, k, ref) end
    return res
  end)
  if ok then return out end
  return GI.run_alone(cases, bk)
end

return GI
