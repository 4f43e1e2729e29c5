-- Derivative kernels against the kernel (docs/autodiff.md, "Cost"; issue
-- 31's bounds: a reverse pass <= 3x the kernel's time, an adjoint's cold
-- compile <= 3x the kernel's).
--   LUA_PATH="lua/?.lua;lua/?/init.lua;;" LUA_CPATH="build/?.so;;" \
--     luajit bench/autodiff.lua [backend] [n] [rounds] [cases]
-- cases: a comma-separated list of the kernels to measure (saxpy, mlp,
-- conv3x3, softmax_ce; default all of them), launches and cold compiles.
-- Times: the median of `rounds` (15) interleaved rounds of the kernel's and
-- its derivative's launch on n work items (262144: the softmax layer's tape
-- is then 1.3 GB).  Reverse mode's tape is sized for the launch by the
-- rule of docs/api.md: a launch that runs out names the entries it needed.
-- Cold compiles: in each of 5 rounds, a fresh kernel and the adjoint of
-- another fresh one, with the disk cache off (the kernel option
-- cache = false, which derivatives inherit), timed by gpu.on_compile's
-- total_ms; the medians are printed.  bench/peers.py runs the same shapes
-- beside JAX and Warp (`make bench-peers`).
local gpu = require("gpujit")
local util = require("gpujit.util")
gpu.use(arg[1] or "cpu")
local N = tonumber(arg[2]) or 262144
local ROUNDS = tonumber(arg[3]) or 15

local here = (arg and arg[0] or "bench/autodiff.lua"):gsub("[^/]*$", "")
local AD = dofile(here .. "ad_kernels.lua")
local function kernel(name, opts)
  local o = { name = name }
  for k, v in pairs(opts or {}) do o[k] = v end
  return gpu.kernel(AD.src[name], o)
end

local D = AD.data(N)
local S, x, y, gy = D.S, D.x, D.y, D.gy
local cases = AD.cases(D)
if arg[4] then
  local want, kept = {}, {}
  for name in arg[4]:gmatch("[^,]+") do want[name] = true end
  for _, c in ipairs(cases) do if want[c[1]] then kept[#kept + 1] = c end end
  cases = kept
end
local fitted_grad = AD.fitted_grad

local function median(t)
  local s = {}
  for i, v in ipairs(t) do s[i] = v end
  table.sort(s)
  local m = #s
  return m % 2 == 1 and s[(m + 1) / 2] or (s[m / 2] + s[m / 2 + 1]) / 2
end
local function timed(f) local t0 = util.now() f() return util.now() - t0 end

print(("autodiff: backend %s, n = %d work items (conv3x3: %dx%d), medians of %d interleaved rounds")
  :format(gpu.backend and gpu.backend() or (arg[1] or "cpu"), N, S - 2, S - 2, ROUNDS))
local function run(label_, k, d, cfg, args_k, args_d)
  local tk, td = {}, {}
  k:launch(cfg, unpack(args_k)); d:launch(cfg, unpack(args_d))   -- compiled, warm
  for r = 1, ROUNDS do
    tk[r] = timed(function() k:launch(cfg, unpack(args_k)) end)
    td[r] = timed(function() d:launch(cfg, unpack(args_d)) end)
  end
  local mk, md = median(tk), median(td)
  print(("  %-24s kernel %9.3f ms  derivative %9.3f ms  ratio %6.2f")
    :format(label_, mk * 1e3, md * 1e3, md / mk))
  return md / mk
end
print("launch times:")
for _, c in ipairs(cases) do
  local name, cfg, ak, ag = c[1], c[2], c[3], c[4]
  local k = kernel(name)
  local g, bytes = fitted_grad(k, cfg, ag)
  local r = run(name .. " grad", k, g, cfg, ak, ag)
  c.ratio = r
  if bytes > 8 + 64 * 1024 then
    print(("  %-24s (tape %.0f MB, sized by the launch's own message)"):format("", bytes / 1e6))
  end
  if name == "saxpy" then
    run("saxpy jvp", k, gpu.jvp(k), cfg, ak, ag)
    run("saxpy grad, x inactive", k, g, cfg, ak, {2.0, x, nil, y, gy, N})
  end
end

-- Cold compiles, disk cache off.  A small launch (64 work items, or 8x8)
-- compiles; gpu.on_compile's total_ms is the compile alone.
local compiled = {}
local off = gpu.on_compile(function(e)
  if e.phase == "done" then
    assert(e.cache == "off", "cold compile expected, the disk cache said " .. tostring(e.cache))
    compiled[#compiled + 1] = e.total_ms
  end
end)
local function compile_ms(f)
  compiled = {}
  f()
  assert(#compiled == 1, "one compile expected, got " .. #compiled)
  return compiled[1]
end
local small = { saxpy = 64, mlp = 64, conv3x3 = { global = { 8, 8 } }, softmax_ce = 64 }
print("cold compiles (disk cache off), medians of 5 rounds, each a fresh kernel:")
local worst = 0
for _, c in ipairs(cases) do
  local name, ak, ag = c[1], c[3], c[4]
  local tk, tg = {}, {}
  for r = 1, 5 do
    tk[r] = compile_ms(function() kernel(name, { cache = false }):launch(small[name], unpack(ak)) end)
    local g = gpu.grad(kernel(name, { cache = false }))
    tg[r] = compile_ms(function() g:launch(small[name], unpack(ag)) end)
  end
  local mk, mg = median(tk), median(tg)
  worst = math.max(worst, mg / mk)
  print(("  %-24s kernel %7.0f ms  adjoint %7.0f ms  ratio %5.2f"):format(name, mk, mg, mg / mk))
end
off()
local over = {}
for _, c in ipairs(cases) do
  if c.ratio > 3 then over[#over + 1] = ("%s %.1fx"):format(c[1], c.ratio) end
end
print(("issue 31's bounds: reverse <= 3x the kernel: %s; adjoint's cold compile <= 3x: %s (worst %.2fx)")
  :format(#over == 0 and "holds" or "over for " .. table.concat(over, ", "),
          worst <= 3 and "holds" or "over", worst))
