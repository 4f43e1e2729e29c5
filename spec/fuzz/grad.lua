-- spec/fuzz/grad.lua: the differential fuzzer's gradient mode (docs/fuzzing.md,
-- docs/autodiff.md): random kernels of the differentiable subset, whose
-- gradients (gpu.grad) are compared with central finite differences of the
-- kernel itself and with forward mode (gpu.jvp: <v, J u> both ways).
--
--   local GR = require("spec.fuzz.grad")
--   GR.generate(seed) -> case            { seed =, body = source of one kernel }
--   GR.run_batch(cases, bk) -> results   one per case: { fails = {msg...} ,
--                                        skipped = why | nil, refused = msg | nil,
--                                        unsmooth = elements }
--
-- A kernel is function(a, x, y, z, n), double precision: the scalar a, x
-- read at i and at neighbours (x[(i + c) % n]: their adjoints are added
-- atomically), y read at i first and written at i last, z a 2-element
-- output that gpu.atomic_add adds into.  The body has float locals, math
-- functions with safe domains (log(e*e + 0.5), asin(0.9 tanh e)...),
-- min/max/abs/floor/fmod/% (kinks), `c and e or f` selects, if/else on
-- float comparisons, an early return, numeric for loops and data-dependent
-- while loops with loop-carried floats (the reverse pass's tape), and
-- device functions of one and two results.
--
-- The checks, per case, with v a random adjoint of (y, z) and u a random
-- tangent of (a, x, y, z):
-- 1. the primal results of gpu.grad's and gpu.jvp's launches equal the
--    kernel's, bit for bit;
-- 2. <v, J u> from forward mode equals <J^T v, u> from reverse mode within
--    1e-10 of the sum of the terms' magnitudes (the same algebra);
-- 3. every element of J^T v (x, y, z and a) against central differences
--    of L = <v, (y, z) after> (step 1e-6): a relative error <= 1e-6
--    passes (relative to max(|gradient|, |difference|, 1e-3), the floor of
--    gpu.gradcheck: a rounding residue of 1e-12 where the derivative is 0
--    is no mismatch).  Above it, the element is checked at steps 1e-7 and 1e-5: when
--    those differ from the first by more than the tolerance, or the one-sided
--    differences at step 1e-5 differ by more than 1e-3 (relative), L is not smooth
--    there (a kink of abs/min/max/floor, a branch or a loop's trip count
--    changing within the step) and the element is counted as unsmooth, not
--    compared; else it is a mismatch.
-- A case whose results leave [-1e8, 1e8] (or are not finite) is skipped; a
-- derivative the compiler refuses is counted (a refusal is fine: never a
-- wrong number is the contract).  Cases are compiled BATCH at a time as one
-- kernel (its first argument picks the case); a batch the compiler refuses
-- is run again case by case.

local ffi = require("ffi")
local H = require("spec.helpers")

local GR = {}
GR.N = 8             -- work items
GR.TOL = 1e-6
GR.STEP = 1e-6
GR.BATCH = tonumber(os.getenv("GPUJIT_FUZZ_BATCH") or "") or 8
GR.RANGE = 1e8

---------------------------------------------------------------------------
-- Generator

-- A small deterministic generator (an LCG on doubles, the same on every
-- LuaJIT): r(n) in 1..n.
local function rng(seed)
  local s = (seed * 7919 + 104729) % 2147483647
  return function(n)
    s = (s * 48271) % 2147483647
    return s % n + 1
  end
end

local CONSTS = { "0.5", "1.25", "0.3", "2", "0.75", "1.5", "-0.4" }

-- An expression of depth d over the float names in vars (a list), in
-- context ctx (ctx.loop: the loop's variable j may index x; ctx.fns: the
-- device functions callable).
local function expr(r, d, vars, ctx)
  if d <= 0 or r(5) == 1 then
    local pick = r(8)
    if pick <= 4 or (ctx.dev and pick ~= 5) then return vars[r(#vars)] end
    if pick == 5 then return CONSTS[r(#CONSTS)] end
    if pick == 6 and ctx.loop then return "x[(i + " .. ctx.loop .. ") % n]" end
    if pick <= 7 then return "x[(i + " .. r(5) .. ") % n]" end
    return "a"
  end
  local function e() return expr(r, d - 1, vars, ctx) end
  local c = r(30)
  if c <= 3 then return "(" .. e() .. " + " .. e() .. ")"
  elseif c <= 5 then return "(" .. e() .. " - " .. e() .. ")"
  elseif c <= 8 then return "(" .. e() .. " * " .. e() .. ")"
  elseif c == 9 then return "(- " .. e() .. ")"
  elseif c == 10 then return "(" .. e() .. " / " .. ({ "1.7", "-0.8", ctx.dev and "1.3" or "a" })[r(3)] .. ")"
  elseif c == 11 then local q = e(); return "(" .. e() .. " / (1.5 + " .. q .. " * " .. q .. "))"
  elseif c == 12 then return "math." .. ({ "sin", "cos", "tanh", "atan" })[r(4)] .. "(" .. e() .. ")"
  elseif c == 13 then return "math.exp(math.tanh(" .. e() .. "))"
  elseif c == 14 then local q = e(); return "math.sqrt(" .. q .. " * " .. q .. " + 0.25)"
  elseif c == 15 then local q = e(); return "math." .. ({ "log", "log10" })[r(2)] .. "(" .. q .. " * " .. q
    .. " + 0.5)"
  elseif c == 16 then return "math.abs(" .. e() .. ")"
  elseif c == 17 then return "math." .. ({ "min", "max" })[r(2)] .. "(" .. e() .. ", " .. e() .. ")"
  elseif c == 18 then local q = e(); return "(math.floor(" .. q .. " * 2) * 0.1 + " .. q .. ")"
  elseif c == 19 then local q = e(); return "((" .. q .. " * " .. q .. " + 0.5) ^ "
    .. ({ "0.5", "1.5", "-0.5", "2.25" })[r(4)] .. ")"
  elseif c == 20 then return "(" .. e() .. " ^ " .. ({ "2", "3" })[r(2)] .. ")"
  elseif c == 21 then return "math." .. ({ "asin", "acos" })[r(2)] .. "(0.9 * math.tanh(" .. e() .. "))"
  elseif c == 22 then return "math." .. ({ "sinh", "cosh" })[r(2)] .. "(math.tanh(" .. e() .. "))"
  elseif c == 23 then local q = e(); return "math.atan2(" .. e() .. ", 1 + " .. q .. " * " .. q .. ")"
  elseif c == 24 then return "math.fmod(" .. e() .. ", 0.7)"
  elseif c == 25 then return "(" .. e() .. " % 0.7)"
  elseif c == 26 then
    return "(" .. e() .. " > " .. e() .. " and " .. e() .. " or " .. e() .. ")"
  elseif c <= 28 and #ctx.fns > 0 then
    local f = ctx.fns[r(#ctx.fns)]
    return "(" .. f .. "(" .. e() .. ", " .. e() .. "))"   -- one result
  end
  return "(" .. e() .. " * " .. CONSTS[r(#CONSTS)] .. " + " .. e() .. ")"
end

-- The body of one kernel: statements over float locals, then y[i] = ...
-- (ctx.fn: of a device function of p and q instead, without arrays or
-- atomics, whose early return and end return a value: spec/fuzz/grad_inner.lua)
local function body(r, out, ind, ctx)
  local vars = ctx.fn and { "p", "q" } or { "y0", "x[i]", "a" }
  local nv = 0
  local function fresh()
    nv = nv + 1
    local name = "v" .. nv
    return name
  end
  local function line(s) out[#out + 1] = ind .. s end
  local nstat = 2 + r(4)
  for _ = 1, nstat do
    local c = r(9)
    if c <= 2 or nv == 0 then
      local v = fresh()
      line("local " .. v .. " = " .. expr(r, 3, vars, ctx))
      vars[#vars + 1] = v
    elseif c == 3 then
      local v = "v" .. r(nv)
      line(v .. " = " .. expr(r, 3, vars, ctx))
    elseif c == 4 then
      local v = "v" .. r(nv)
      line("if " .. expr(r, 2, vars, ctx) .. " > " .. expr(r, 1, vars, ctx) .. " then")
      line("  " .. v .. " = " .. expr(r, 3, vars, ctx))
      line("else")
      line("  " .. v .. " = " .. expr(r, 2, vars, ctx))
      line("end")
    elseif c == 5 then
      local v = "v" .. r(nv)
      line("for j = 1, " .. r(4) .. " do")
      ctx.loop = "j"
      line("  " .. v .. " = math.sin(" .. v .. ") * 0.8 + " .. expr(r, 2, vars, ctx))
      ctx.loop = nil
      line("end")
    elseif c == 6 then
      local v = "v" .. r(nv)
      local it = "it" .. nv
      line("local " .. it .. " = 0")
      line("while " .. v .. " < " .. CONSTS[r(#CONSTS)] .. " and " .. it .. " < " .. r(5) .. " do")
      line("  " .. v .. " = " .. v .. " + 0.3 + 0.1 * math.tanh(" .. expr(r, 2, vars, ctx) .. ")")
      line("  " .. it .. " = " .. it .. " + 1")
      line("end")
    elseif c == 7 and #ctx.fns2 > 0 then
      local p, q = fresh(), fresh()
      line("local " .. p .. ", " .. q .. " = " .. ctx.fns2[r(#ctx.fns2)] .. "(" .. expr(r, 2, vars, ctx)
        .. ", " .. expr(r, 2, vars, ctx) .. ")")
      vars[#vars + 1] = p
      vars[#vars + 1] = q
    elseif c == 8 and not ctx.fn then
      line("gpu.atomic_add(z, i % 2, " .. expr(r, 2, vars, ctx) .. ")")
    elseif ctx.fn then
      line("if " .. expr(r, 2, vars, ctx) .. " > " .. CONSTS[r(#CONSTS)] .. " then")
      line("  return " .. expr(r, 2, vars, ctx))
      line("end")
    else
      line("if " .. expr(r, 2, vars, ctx) .. " > " .. CONSTS[r(#CONSTS)] .. " then")
      line("  y[i] = " .. expr(r, 2, vars, ctx))
      line("  return")
      line("end")
    end
  end
  line((ctx.fn and "return " or "y[i] = ") .. expr(r, 3, vars, ctx))
end

-- The generator's parts, for spec/fuzz/grad_inner.lua.
GR.rng, GR.body = rng, body

-- 0..2 device functions f1, f2 of (p, q) into out (each may call the
-- earlier; ctx.fns: their names, ctx.fns2: those with two results).
local function devfns(r, out, ctx)
  for f = 1, r(3) - 1 do
    local name = "f" .. f
    local two = r(2) == 1
    local fvars = { "p", "q" }
    local sub = { fns = ctx.fns, fns2 = {}, dev = true }   -- leaves: p, q and constants
    local function e() return expr(r, 2, fvars, sub) end
    out[#out + 1] = "local function " .. name .. "(p, q)"
    out[#out + 1] = "  return " .. e() .. (two and (", " .. e()) or "")
    out[#out + 1] = "end"
    if two then ctx.fns2[#ctx.fns2 + 1] = name end
    ctx.fns[#ctx.fns + 1] = name
  end
end
GR.devfns = devfns

function GR.generate(seed)
  local r = rng(seed)
  local out = {}
  local ctx = { fns = {}, fns2 = {} }
  devfns(r, out, ctx)
  out[#out + 1] = "K = function(a, x, y, z, n)"
  out[#out + 1] = "  local i = gpu.global_id()"
  out[#out + 1] = "  if i >= n then return end"
  out[#out + 1] = "  local y0 = y[i]"
  body(r, out, "  ", ctx)
  out[#out + 1] = "end"
  return { seed = seed, body = table.concat(out, "\n") }
end

-- The source of a batch: function(which, a, x, y, z, n).
function GR.source(cases)
  local out = { "local gpu = ...", "local math = math" }
  local names = {}
  for j = 1, #cases do names[j] = "k" .. j end
  out[#out + 1] = "local " .. table.concat(names, ", ")
  for j, case in ipairs(cases) do
    out[#out + 1] = "do"
    out[#out + 1] = (case.body:gsub("\nK = function", "\n" .. names[j] .. " = function")
      :gsub("^K = function", names[j] .. " = function"))
    out[#out + 1] = "end"
  end
  out[#out + 1] = "return function(which, a, x, y, z, n)"
  for j = 1, #cases do
    out[#out + 1] = "  " .. (j == 1 and "if" or "elseif") .. " which == " .. j .. " then "
      .. names[j] .. "(a, x, y, z, n)"
  end
  out[#out + 1] = "  end"
  out[#out + 1] = "end"
  return table.concat(out, "\n") .. "\n"
end

---------------------------------------------------------------------------
-- Checker

local function darr(n, f)
  local t = ffi.new("double[?]", n)
  for e = 0, n - 1 do t[e] = f(e) end
  return t
end

local function copy(t, n) return darr(n, function(e) return t[e] end) end

local function relerr(p, q)
  local d = math.abs(p - q)
  local s = math.max(math.abs(p), math.abs(q))
  if s < 1e-3 then return d / 1e-3 end   -- near 0: absolute (gpu.gradcheck's floor)
  return d / s
end

-- Inputs and directions of a case, from its seed.
local function data(seed)
  local r = rng(seed + 99991)
  local function val() return (r(2001) - 1001) / 700 end
  local N = GR.N
  return {
    a = 0.3 + r(100) / 80,
    x = darr(N, val), y = darr(N, val), z = darr(2, val),
    vy = darr(N, val), vz = darr(2, val),
    ux = darr(N, val), uy = darr(N, val), uz = darr(2, val), ua = val(),
  }
end

local function finite_range(t, n)
  for e = 0, n - 1 do
    local v = t[e]
    if v ~= v or math.abs(v) > GR.RANGE then return false end
  end
  return true
end

-- Check case number `which` of the compiled batch (kernel k, gpu.grad g,
-- gpu.jvp j).  Returns the result record.
local function check_one(case, which, k, g, jv)
  local N, D = GR.N, data(case.seed)
  local res = { fails = {}, unsmooth = 0 }
  local function fail(msg) res.fails[#res.fails + 1] = msg end
  local function run(a, x, y, z)
    local yy, zz = copy(y, N), copy(z, 2)
    k:launch(N, which, a, copy(x, N), yy, zz, N)
    return yy, zz
  end
  local y1, z1 = run(D.a, D.x, D.y, D.z)
  if not (finite_range(y1, N) and finite_range(z1, 2)) then
    res.skipped = "results out of range"
    return res
  end
  local function L(a, x, y, z)
    local yy, zz = run(a, x, y, z)
    local s = 0
    for e = 0, N - 1 do s = s + D.vy[e] * yy[e] end
    return s + D.vz[0] * zz[0] + D.vz[1] * zz[1]
  end
  -- reverse mode
  local gx, gy, gz, ga = darr(N, function() return 0 end), copy(D.vy, N), copy(D.vz, 2), ffi.new("double[1]")
  local yr, zr = copy(D.y, N), copy(D.z, 2)
  g:launch(N, which, D.a, ga, copy(D.x, N), gx, yr, gy, zr, gz, N)
  -- forward mode
  local yf, zf, ty, tz = copy(D.y, N), copy(D.z, 2), copy(D.uy, N), copy(D.uz, 2)
  jv:launch(N, which, D.a, D.ua, copy(D.x, N), copy(D.ux, N), yf, ty, zf, tz, N)
  -- 1. the primal results
  for e = 0, N - 1 do
    for _, w in ipairs({ { "gpu.grad", yr }, { "gpu.jvp", yf } }) do
      if y1[e] ~= w[2][e] then
        fail(("%s's y[%d] %.17g, the kernel's %.17g"):format(w[1], e, w[2][e], y1[e]))
      end
    end
  end
  for e = 0, 1 do
    if math.abs(z1[e] - zr[e]) > 1e-12 * math.max(1, math.abs(z1[e])) then   -- atomics: any order
      fail(("gpu.grad's z[%d] %.17g, the kernel's %.17g"):format(e, zr[e], z1[e]))
    end
  end
  -- 2. <v, J u> both ways
  local lhs, rhs, mag = 0, ga[0] * D.ua, math.abs(ga[0] * D.ua)
  for e = 0, N - 1 do
    lhs = lhs + D.vy[e] * ty[e]
    mag = mag + math.abs(D.vy[e] * ty[e]) + math.abs(gx[e] * D.ux[e]) + math.abs(gy[e] * D.uy[e])
    rhs = rhs + gx[e] * D.ux[e] + gy[e] * D.uy[e]
  end
  for e = 0, 1 do
    lhs = lhs + D.vz[e] * tz[e]
    rhs = rhs + gz[e] * D.uz[e]
    mag = mag + math.abs(D.vz[e] * tz[e]) + math.abs(gz[e] * D.uz[e])
  end
  local gap = math.abs(lhs - rhs)
  if gap ~= gap or gap > 1e-10 * math.max(mag, 1e-3) then   -- NaN fails too
    fail(("<v, J u>: forward mode %.17g, reverse mode %.17g"):format(lhs, rhs))
  end
  -- 3. each element against central differences
  local function at(set, t)
    local a, x, y, z = D.a, copy(D.x, N), copy(D.y, N), copy(D.z, 2)
    a = set(a, x, y, z, t)
    return L(a, x, y, z)
  end
  local function fd(set, h)
    return (at(set, h) - at(set, -h)) / (2 * h)
  end
  -- a kink within the step: the one-sided slopes differ (a symmetric kink,
  -- min(u, v) at u = v, gives steady central differences of the mean slope)
  local function kink(set)
    local h, l0 = GR.STEP * 10, at(set, 0)
    return relerr((at(set, h) - l0) / h, (l0 - at(set, -h)) / h) > 1e-3
  end
  local function elem(name, got, set)
    local f1 = fd(set, GR.STEP)
    if f1 ~= f1 then res.unsmooth = res.unsmooth + 1; return end
    if relerr(got, f1) <= GR.TOL then return end
    local f2, f3 = fd(set, GR.STEP / 10), fd(set, GR.STEP * 10)
    if relerr(f1, f2) > GR.TOL or relerr(f1, f3) > GR.TOL or kink(set) then
      res.unsmooth = res.unsmooth + 1
      return
    end
    fail(("d%s: gpu.grad %.17g, central differences %.17g (steps 1e-7, 1e-5: %.17g, %.17g)")
      :format(name, got, f1, f2, f3))
  end
  elem("a", ga[0], function(a, _, _, _, t) return a + t end)
  for e = 0, N - 1 do
    elem("x[" .. e .. "]", gx[e], function(a, x, _, _, t) x[e] = x[e] + t; return a end)
    elem("y[" .. e .. "]", gy[e], function(a, _, y, _, t) y[e] = y[e] + t; return a end)
  end
  for e = 0, 1 do
    elem("z[" .. e .. "]", gz[e], function(a, _, _, z, t) z[e] = z[e] + t; return a end)
  end
  return res
end

GR.check_one = check_one
GR.data = data

-- Compile the batch's kernel and its derivatives on bk (a is active).
function GR.compile(cases, bk)
  local chunk = assert(load(GR.source(cases), "=fuzz_grad"))
  local fn = chunk(H.gpu)
  local k = H.kernel(bk, fn)
  return k, H.gpu.grad(k, { "a" }), H.gpu.jvp(k, { "a" })
end

-- Run a batch on backend bk: one result per case.  A batch that fails to
-- compile or launch (a refusal, say) runs its cases alone.
function GR.run_batch(cases, bk)
  local ok, out = pcall(function()
    local k, g, jv = GR.compile(cases, bk)
    local res = {}
    for j, case in ipairs(cases) do res[j] = check_one(case, j, k, g, jv) end
    return res
  end)
  if ok then return out end
  return GR.run_alone(cases, bk)
end

function GR.run_alone(cases, bk)
  local out = {}
  for j, case in ipairs(cases) do
    local ok, res = pcall(function()
      local k, g, jv = GR.compile({ case }, bk)
      return check_one(case, 1, k, g, jv)
    end)
    if not ok then
      local msg = tostring(res)
      res = { fails = {}, unsmooth = 0 }
      if msg:find("derivative: ", 1, true) then
        res.refused = msg
      else
        res.fails[1] = "error: " .. msg
      end
    end
    out[j] = res
  end
  return out
end

return GR
