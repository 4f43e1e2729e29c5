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
local function run(name, k, g, args_k, args_g, cfg)
  cfg = cfg or N
  local c0 = util.now(); k:launch(cfg, unpack(args_k)); local ck = util.now() - c0
  c0 = util.now(); g:launch(cfg, unpack(args_g)); local cg = util.now() - c0
  local tk, tg = {}, {}
  for r = 1, 15 do
    tk[r] = t(function() k:launch(cfg, unpack(args_k)) end)
    tg[r] = t(function() g:launch(cfg, unpack(args_g)) end)
  end
  table.sort(tk); table.sort(tg)
  print(("%s n=%d: kernel %.3f ms, derivative %.3f ms, ratio %.2f (first launches: %.0f ms, %.0f ms)")
    :format(name, N, tk[8] * 1e3, tg[8] * 1e3, tg[8] / tk[8], ck * 1e3, cg * 1e3))
end
run("saxpy", saxpy, gpu.grad(saxpy), {2.0, x, y, N}, {2.0, x, gx, y, gy, N})
run("saxpy jvp", saxpy, gpu.jvp(saxpy), {2.0, x, y, N}, {2.0, x, gx, y, gy, N})
run("saxpy grad, x inactive", saxpy, gpu.grad(saxpy), {2.0, x, y, N}, {2.0, x, nil, y, gy, N})
run("mlp", mlp, gpu.grad(mlp, nil, { tape = 256 * 1024 * 1024 }), {w, x, y, N}, {w, gw, x, gx, y, gy, N})

-- a 3x3 convolution over a square image of about N pixels (2-D launch;
-- spec/autodiff_models_spec.lua), gradients of input and weights
local conv = gpu.kernel(function(inp, wt, out, W, H)
  local px, py = gpu.global_id(0), gpu.global_id(1)
  if px < W - 2 and py < H - 2 then
    local s = 0.0
    for dy = 0, 2 do
      for dx = 0, 2 do s = s + wt[dy * 3 + dx] * inp[(py + dy) * W + px + dx] end
    end
    out[py * (W - 2) + px] = s
  end
end, { name = "conv3x3" })
local S = math.floor(math.sqrt(N))
local w9, g9 = ffi.new("double[9]"), ffi.new("double[9]")
for j = 0, 8 do w9[j] = 0.1 * j - 0.3 end
run("conv3x3", conv, gpu.grad(conv, nil, { tape = 256 * 1024 * 1024 }), {x, w9, y, S, S},
  {x, gx, w9, g9, y, gy, S, S}, { global = { S - 2, S - 2 } })
-- the MLP's output layer: 8 hidden -> 4 logits, softmax cross-entropy per
-- sample (spec/autodiff_models_spec.lua, softmax_ce)
local ce = gpu.kernel(function(h, w2, b2, label, loss, NH, NC)
  local s = gpu.global_id()
  local m = -1e300
  for c = 0, NC - 1 do
    local z = b2[c]
    for j = 0, NH - 1 do z = z + w2[c * NH + j] * h[s * NH + j] end
    m = math.max(m, z)
  end
  local se, zl = 0.0, 0.0
  for c = 0, NC - 1 do
    local z = b2[c]
    for j = 0, NH - 1 do z = z + w2[c * NH + j] * h[s * NH + j] end
    se = se + math.exp(z - m)
    if c == label[s] then zl = z end
  end
  loss[s] = math.log(se) + m - zl
end, { name = "softmax_ce" })
local w2, gw2 = ffi.new("double[32]"), ffi.new("double[32]")
local b2, gb2 = ffi.new("double[4]"), ffi.new("double[4]")
local label = ffi.new("int32_t[?]", N)
for j = 0, 31 do w2[j] = math.sin(j) * 0.5 end
for i = 0, N - 1 do label[i] = i % 4 end
run("mlp softmax_ce", ce, gpu.grad(ce, nil, { tape = 1024 * 1024 * 1024 }), {x, w2, b2, label, y, 8, 4},
  {x, gx, w2, gw2, b2, gb2, label, y, gy, 8, 4})
