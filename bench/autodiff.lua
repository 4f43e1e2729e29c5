-- Derivative kernels against the kernel (docs/autodiff.md, "Cost"): the
-- median of 15 interleaved rounds of the kernel and of its gpu.grad (and
-- gpu.jvp) launch, on n work items; the first launch of each (which
-- compiles, unless the disk cache has it) is printed too.
--   LUA_PATH="lua/?.lua;lua/?/init.lua;;" LUA_CPATH="build/?.so;;" \
--     luajit bench/autodiff.lua [backend] [n]
local gpu = require("gpujit")
local ffi = require("ffi")
local util = require("gpujit.util")
gpu.use(arg[1] or "cpu")
local N = tonumber(arg[2]) or 1000000
local saxpy = gpu.kernel(function(a, x, y, n)
  local i = gpu.global_id()
  if i < n then y[i] = a * x[i] + y[i] end
end, { name = "saxpy" })
local mlp = gpu.kernel(function(w, x, y, n)   -- a dense 8->1 layer with tanh per item
  local i = gpu.global_id()
  if i < n then
    local s = 0.0
    for j = 0, 7 do s = s + w[j] * x[i * 8 + j] end
    y[i] = math.tanh(s)
  end
end, { name = "mlp" })
local x = ffi.new("double[?]", N * 8); local y = ffi.new("double[?]", N)
local gx = ffi.new("double[?]", N * 8); local gy = ffi.new("double[?]", N)
local w, gw = ffi.new("double[8]"), ffi.new("double[8]")
for i = 0, N * 8 - 1 do x[i] = (i % 17) * 0.01 end
for j = 0, 7 do w[j] = 0.1 * j end
local function t(f) local t0 = util.now() f() return util.now() - t0 end
local function run(name, k, g, args_k, args_g)
  local c0 = util.now(); k:launch(N, unpack(args_k)); local ck = util.now() - c0
  c0 = util.now(); g:launch(N, unpack(args_g)); local cg = util.now() - c0
  local tk, tg = {}, {}
  for r = 1, 15 do
    tk[r] = t(function() k:launch(N, unpack(args_k)) end)
    tg[r] = t(function() g:launch(N, unpack(args_g)) end)
  end
  table.sort(tk); table.sort(tg)
  print(("%s n=%d: kernel %.3f ms, derivative %.3f ms, ratio %.2f (first launches: %.0f ms, %.0f ms)")
    :format(name, N, tk[8] * 1e3, tg[8] * 1e3, tg[8] / tk[8], ck * 1e3, cg * 1e3))
end
run("saxpy", saxpy, gpu.grad(saxpy), {2.0, x, y, N}, {2.0, x, gx, y, gy, N})
run("saxpy jvp", saxpy, gpu.jvp(saxpy), {2.0, x, y, N}, {2.0, x, gx, y, gy, N})
run("saxpy grad, x inactive", saxpy, gpu.grad(saxpy), {2.0, x, y, N}, {2.0, x, nil, y, gy, N})
run("mlp", mlp, gpu.grad(mlp, nil, { tape = 256 * 1024 * 1024 }), {w, x, y, N}, {w, gw, x, gx, y, gy, N})
