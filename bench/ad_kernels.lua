-- The kernels and data of the autodiff benchmarks (bench/autodiff.lua, and
-- gpujit's side of bench/peers_ad.py, which writes the same shapes for JAX
-- and Warp): saxpy, a dense 8->1 layer with tanh, a 3x3 convolution, and the
-- MLP's softmax cross-entropy layer, in double.
--   local AD = dofile("bench/ad_kernels.lua")
--   AD.src.NAME: the kernel's function; AD.data(n): the arrays for n work
--   items; AD.cases(D): per kernel { name, cfg, kernel args, grad args }
local gpu = require("gpujit")
local ffi = require("ffi")
local AD = {}

local src = {}
AD.src = src
src.saxpy = function(a, x, y, n)
  local i = gpu.global_id()
  if i < n then y[i] = a * x[i] + y[i] end
end
src.mlp = function(w, x, y, n)   -- a dense 8->1 layer with tanh per item
  local i = gpu.global_id()
  if i < n then
    local s = 0.0
    for j = 0, 7 do s = s + w[j] * x[i * 8 + j] end
    y[i] = math.tanh(s)
  end
end
-- a 3x3 convolution over a square image of about n pixels (2-D launch;
-- spec/autodiff_models_spec.lua), gradients of input and weights
src.conv3x3 = function(inp, wt, out, W, H)
  local px, py = gpu.global_id(0), gpu.global_id(1)
  if px < W - 2 and py < H - 2 then
    local s = 0.0
    for dy = 0, 2 do
      for dx = 0, 2 do s = s + wt[dy * 3 + dx] * inp[(py + dy) * W + px + dx] end
    end
    out[py * (W - 2) + px] = s
  end
end
-- the MLP's output layer: 8 hidden -> 4 logits, softmax cross-entropy per
-- sample (spec/autodiff_models_spec.lua, softmax_ce)
src.softmax_ce = function(h, w2, b2, label, loss, NH, NC)
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
end
-- The inputs: x[i] = (i % 17) / 100 (n x 8: the dense layer's and the
-- softmax layer's inputs, the image's pixels), weights from j, labels i % 4;
-- outputs and adjoints zero.
function AD.data(N)
  local D = { N = N, S = math.floor(math.sqrt(N)) }
  D.x = ffi.new("double[?]", N * 8); D.y = ffi.new("double[?]", N)
  D.gx = ffi.new("double[?]", N * 8); D.gy = ffi.new("double[?]", N)
  D.w, D.gw = ffi.new("double[8]"), ffi.new("double[8]")
  D.w9, D.g9 = ffi.new("double[9]"), ffi.new("double[9]")
  D.w2, D.gw2 = ffi.new("double[32]"), ffi.new("double[32]")
  D.b2, D.gb2 = ffi.new("double[4]"), ffi.new("double[4]")
  D.label = ffi.new("int32_t[?]", N)
  for i = 0, N * 8 - 1 do D.x[i] = (i % 17) * 0.01 end
  for j = 0, 7 do D.w[j] = 0.1 * j end
  for j = 0, 8 do D.w9[j] = 0.1 * j - 0.3 end
  for j = 0, 31 do D.w2[j] = math.sin(j) * 0.5 end
  for i = 0, N - 1 do D.label[i] = i % 4 end
  return D
end

-- Per kernel: its name, launch configuration, the kernel's arguments and
-- the gradient's (every float array active), and the adjoint arrays.
function AD.cases(D)
  local N, S = D.N, D.S
  local x, y, gx, gy = D.x, D.y, D.gx, D.gy
  return {
    { "saxpy", N, {2.0, x, y, N}, {2.0, x, gx, y, gy, N}, out = N, adj = { gx = N, gy = N } },
    { "mlp", N, {D.w, x, y, N}, {D.w, D.gw, x, gx, y, gy, N}, out = N, adj = { gw = 8, gx = N * 8 } },
    { "conv3x3", { global = { S - 2, S - 2 } }, {x, D.w9, y, S, S}, {x, gx, D.w9, D.g9, y, gy, S, S},
      out = (S - 2) * (S - 2), adj = { gx = S * S, g9 = 9 } },
    { "softmax_ce", N, {x, D.w2, D.b2, D.label, y, 8, 4},
      {x, gx, D.w2, D.gw2, D.b2, D.gb2, D.label, y, gy, 8, 4}, out = N,
      adj = { gx = N * 8, gw2 = 32, gb2 = 4 } },
  }
end

-- gpu.grad(k) with a tape the launch fits in: a launch that runs out says
-- "index I ... (length L": each stack needed I + 1 entries and had L
-- (docs/api.md).  Returns the derivative and the tape's bytes.
function AD.fitted_grad(k, cfg, args)
  local bytes = 8 + 64 * 1024
  for _ = 1, 8 do
    local g = gpu.grad(k, nil, { tape = bytes })
    local ok, err = pcall(g.launch, g, cfg, unpack(args))
    if ok then return g, bytes end
    local i, l = tostring(err):match("index (%d+) is out of bounds for the reverse%-mode tape %(gpu%.grad's "
      .. "tape option%) %(length (%d+)")
    if not i then error(err, 0) end
    i, l = tonumber(i), tonumber(l)
    bytes = 8 + (l > 0 and math.ceil((bytes - 8) * (i + 1) / l) or (bytes - 8) * 2 * (i + 1))
  end
  error("no tape fits the launch of " .. k.name)
end

return AD
