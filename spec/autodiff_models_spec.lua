-- Gradients of two model shapes (issue 31, docs/autodiff.md): a 3x3
-- convolution (with respect to the input and the weights) and a 2-layer MLP
-- (matmul + tanh, then matmul + softmax cross-entropy, chained through
-- gpu.tape).  Each gradient is checked twice: against central finite
-- differences in double (relative error <= 1e-6 per element), and against
-- adjoint kernels written by hand as plain kernels (relative 1e-12: the
-- same sums, added in another order).

local H = require("spec.helpers")
local ffi = require("ffi")
local gpu = H.gpu

local STEP = 1e-6
local TOL = 1e-6

local function darr(n, f)
  local a = ffi.new("double[?]", n)
  for i = 0, n - 1 do a[i] = f and f(i) or 0 end
  return a
end

local function len(a) return ffi.sizeof(a) / 8 end

local function copy(a)
  return darr(len(a), function(i) return a[i] end)
end

local function relerr(a, b)
  local d = math.abs(a - b)
  local s = math.max(math.abs(a), math.abs(b))
  if s < 1e-9 then return d end
  return d / s
end

local function check(got, want, tol, what)
  for e = 0, len(want) - 1 do
    local r = relerr(got[e], want[e])
    if r ~= r or r > tol then   -- NaN fails too
      error(("%s: element %d: the gradient is %.17g, expected %.17g (relative error %.3g)")
        :format(what, e, got[e], want[e], r), 2)
    end
  end
end

-- Central differences of the scalar loss(arrays) with respect to every
-- element of arrays[which].
local function fd_grad(loss, arrays, which)
  local base = arrays[which]
  return darr(len(base), function(e)
    local function at(x)
      local p = {}
      for k, a in pairs(arrays) do p[k] = copy(a) end
      p[which][e] = x
      return loss(p)
    end
    return (at(base[e] + STEP) - at(base[e] - STEP)) / (2 * STEP)
  end)
end

---------------------------------------------------------------------------
-- 3x3 convolution, "valid" (out is (W-2) x (H-2)), 2-D launch

local function conv3x3(inp, w, out, W, Hh)
  local x, y = gpu.global_id(0), gpu.global_id(1)
  if x < W - 2 and y < Hh - 2 then
    local s = 0.0
    for dy = 0, 2 do
      for dx = 0, 2 do
        s = s + w[dy * 3 + dx] * inp[(y + dy) * W + x + dx]
      end
    end
    out[y * (W - 2) + x] = s
  end
end

-- by hand: din[p] += sum of w[d] dout[o] over the outputs o that read p
local function conv3x3_adj_inp(w, dout, din, W, Hh)
  local px, py = gpu.global_id(0), gpu.global_id(1)
  if px < W and py < Hh then
    local s = 0.0
    for dy = 0, 2 do
      for dx = 0, 2 do
        local x, y = px - dx, py - dy
        if x >= 0 and x < W - 2 and y >= 0 and y < Hh - 2 then
          s = s + w[dy * 3 + dx] * dout[y * (W - 2) + x]
        end
      end
    end
    din[py * W + px] = din[py * W + px] + s
  end
end

-- by hand: dw[dy*3+dx] += sum over the outputs of dout[o] inp[o shifted]
local function conv3x3_adj_w(inp, dout, dw, W, Hh)
  local dx, dy = gpu.global_id(0), gpu.global_id(1)
  if dx < 3 and dy < 3 then
    local s = 0.0
    for y = 0, Hh - 3 do
      for x = 0, W - 3 do
        s = s + dout[y * (W - 2) + x] * inp[(y + dy) * W + x + dx]
      end
    end
    dw[dy * 3 + dx] = dw[dy * 3 + dx] + s
  end
end

---------------------------------------------------------------------------
-- 2-layer MLP: h = tanh(W1 x + b1) per (hidden unit, sample), then per
-- sample the softmax cross-entropy of z = W2 h + b2 against its label

local function dense_tanh(x, w1, b1, h, D, NH)
  local j, s = gpu.global_id(0), gpu.global_id(1)
  local acc = b1[j]
  for k = 0, D - 1 do acc = acc + w1[j * D + k] * x[s * D + k] end
  h[s * NH + j] = math.tanh(acc)
end

local function softmax_ce(h, w2, b2, label, loss, NH, NC)
  local s = gpu.global_id()
  local m = -1e300
  for c = 0, NC - 1 do      -- the largest logit (the shift cancels in the loss)
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

-- by hand: dz[s, c] = (softmax(z)_c - [c == label]) dloss[s]
local function adj_logits(h, w2, b2, label, dloss, dz, NH, NC)
  local s = gpu.global_id()
  local m = -1e300
  for c = 0, NC - 1 do
    local z = b2[c]
    for j = 0, NH - 1 do z = z + w2[c * NH + j] * h[s * NH + j] end
    m = math.max(m, z)
  end
  local se = 0.0
  for c = 0, NC - 1 do
    local z = b2[c]
    for j = 0, NH - 1 do z = z + w2[c * NH + j] * h[s * NH + j] end
    se = se + math.exp(z - m)
  end
  for c = 0, NC - 1 do
    local z = b2[c]
    for j = 0, NH - 1 do z = z + w2[c * NH + j] * h[s * NH + j] end
    local p = math.exp(z - m) / se
    if c == label[s] then p = p - 1 end
    dz[s * NC + c] = p * dloss[s]
  end
end

-- by hand: out[r * cols + q] += sum over t < T of a[t * astr + r * ar] * b[t * bstr + q * bq]
-- (the products of the layers' adjoints with their inputs and weights)
local function adj_contract(a, b, out, T, astr, ar, bstr, bq, cols, rows)
  local q, r = gpu.global_id(0), gpu.global_id(1)
  if q < cols and r < rows then
    local s = 0.0
    for t = 0, T - 1 do s = s + a[t * astr + r * ar] * b[t * bstr + q * bq] end
    out[r * cols + q] = out[r * cols + q] + s
  end
end

-- by hand: through tanh, dpre[i] = dh[i] (1 - h[i]^2)
local function adj_tanh(h, dh, dpre, n)
  local i = gpu.global_id()
  if i < n then dpre[i] = dh[i] * (1 - h[i] * h[i]) end
end

for _, bk in ipairs(H.backends) do
  describe("autodiff of model shapes (" .. bk .. ")", function()

    it("3x3 convolution: gradients of input and weights against finite differences and by hand", function()
      local W, Hh = 7, 6
      local OW, OH = W - 2, Hh - 2
      local k = H.kernel(bk, conv3x3)
      local inp = darr(W * Hh, function(i) return math.sin(0.7 * i + 0.3) end)
      local w = darr(9, function(i) return 0.5 - 0.13 * i + 0.05 * i * i end)
      local v = darr(OW * OH, function(i) return math.cos(1.1 * i) end)   -- d loss / d out
      local cfg = { global = { OW, OH } }
      -- gpu.grad: adjoints added into zeroed arrays; out's adjoint seeded with v
      local gin, gw, gout = darr(W * Hh), darr(9), copy(v)
      local out = darr(OW * OH)
      gpu.grad(k):launch(cfg, copy(inp), gin, copy(w), gw, out, gout, W, Hh)
      -- the primal result is the kernel's
      local want_out = darr(OW * OH)
      k:launch(cfg, inp, w, want_out, W, Hh)
      for e = 0, OW * OH - 1 do assert.equals(want_out[e], out[e]) end
      -- against central finite differences of <v, out>
      local function loss(p)
        local o = darr(OW * OH)
        k:launch(cfg, p.inp, p.w, o, W, Hh)
        local t = 0
        for e = 0, OW * OH - 1 do t = t + v[e] * o[e] end
        return t
      end
      local args = { inp = inp, w = w }
      check(gin, fd_grad(loss, args, "inp"), TOL, "conv3x3: d inp (finite differences)")
      check(gw, fd_grad(loss, args, "w"), TOL, "conv3x3: d w (finite differences)")
      -- against the adjoint kernels written by hand
      local hin, hw = darr(W * Hh), darr(9)
      H.kernel(bk, conv3x3_adj_inp):launch({ global = { W, Hh } }, w, v, hin, W, Hh)
      H.kernel(bk, conv3x3_adj_w):launch({ global = { 3, 3 } }, inp, v, hw, W, Hh)
      check(gin, hin, 1e-12, "conv3x3: d inp (by hand)")
      check(gw, hw, 1e-12, "conv3x3: d w (by hand)")
    end)

    it("2-layer MLP (matmul + tanh + softmax cross-entropy) through gpu.tape: "
      .. "finite differences and by hand", function()
      local S, D, NH, NC = 6, 4, 5, 3
      local k1, k2 = H.kernel(bk, dense_tanh), H.kernel(bk, softmax_ce)
      local x = darr(S * D, function(i) return math.sin(1.3 * i + 0.2) end)
      local w1 = darr(NH * D, function(i) return 0.6 * math.cos(0.9 * i + 0.4) end)
      local b1 = darr(NH, function(i) return 0.1 * i - 0.2 end)
      local w2 = darr(NC * NH, function(i) return 0.8 * math.sin(0.7 * i + 1.1) end)
      local b2 = darr(NC, function(i) return 0.05 * i end)
      local label = ffi.new("int32_t[?]", S)
      for s = 0, S - 1 do label[s] = (s * 2) % NC end
      local dloss = darr(S, function(s) return 1 + 0.25 * s end)  -- a weighted sum of the losses
      local function forward(p, h, l, t)
        local run = t and function(...) return t:launch(...) end
          or function(kk, ...) return kk:launch(...) end
        run(k1, { global = { NH, S } }, p.x, p.w1, p.b1, h, D, NH)
        run(k2, S, h, p.w2, p.b2, label, l, NH, NC)
      end
      local P = { x = x, w1 = w1, b1 = b1, w2 = w2, b2 = b2 }
      -- reverse mode through the tape: seed the losses' adjoints
      local h, l, t = darr(S * NH), darr(S), gpu.tape()
      forward(P, h, l, t)
      local G = { x = darr(S * D), w1 = darr(NH * D), b1 = darr(NH), w2 = darr(NC * NH), b2 = darr(NC) }
      t:backward({ [x] = G.x, [w1] = G.w1, [b1] = G.b1, [w2] = G.w2, [b2] = G.b2,
                   [h] = darr(S * NH), [l] = copy(dloss) })
      -- against central finite differences of sum dloss[s] loss[s]
      local function loss(p)
        local ll = darr(S)
        forward(p, darr(S * NH), ll)
        local sum = 0
        for s = 0, S - 1 do sum = sum + dloss[s] * ll[s] end
        return sum
      end
      for _, name in ipairs({ "x", "w1", "b1", "w2", "b2" }) do
        check(G[name], fd_grad(loss, P, name), TOL, "MLP: d " .. name .. " (finite differences)")
      end
      -- against the adjoints written by hand (h is the forward pass's)
      local R = { x = darr(S * D), w1 = darr(NH * D), b1 = darr(NH), w2 = darr(NC * NH), b2 = darr(NC) }
      local dz, dh, dpre = darr(S * NC), darr(S * NH), darr(S * NH)
      local ones = darr(S, function() return 1 end)
      local contract = H.kernel(bk, adj_contract)
      H.kernel(bk, adj_logits):launch(S, h, w2, b2, label, dloss, dz, NH, NC)
      -- dW2[c, j] = sum_s dz[s, c] h[s, j]; db2[c] = sum_s dz[s, c]
      contract:launch({ global = { NH, NC } }, dz, h, R.w2, S, NC, 1, NH, 1, NH, NC)
      contract:launch({ global = { 1, NC } }, dz, ones, R.b2, S, NC, 1, 1, 0, 1, NC)
      -- dh[s, j] = sum_c dz[s, c] W2[c, j]; through tanh
      contract:launch({ global = { NH, S } }, dz, w2, dh, NC, 1, NC, NH, 1, NH, S)
      H.kernel(bk, adj_tanh):launch(S * NH, h, dh, dpre, S * NH)
      -- dW1[j, k] = sum_s dpre[s, j] x[s, k]; db1[j] = sum_s dpre[s, j];
      -- dx[s, k] = sum_j dpre[s, j] W1[j, k]
      contract:launch({ global = { D, NH } }, dpre, x, R.w1, S, NH, 1, D, 1, D, NH)
      contract:launch({ global = { 1, NH } }, dpre, ones, R.b1, S, NH, 1, 1, 0, 1, NH)
      contract:launch({ global = { D, S } }, dpre, w1, R.x, NH, 1, NH, D, 1, D, S)
      for _, name in ipairs({ "x", "w1", "b1", "w2", "b2" }) do
        check(G[name], R[name], 1e-12, "MLP: d " .. name .. " (by hand)")
      end
    end)
  end)
end
