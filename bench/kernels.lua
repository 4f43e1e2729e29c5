-- The gpujit kernels the benchmarks share (bench/bench.lua, bench/opencl_vs_c.lua,
-- bench/cuda_vs_c.lua):
-- plain Lua functions for gpu.kernel, written as a GPU programmer would, one
-- work item each.  bench/ref.c holds the same kernels in C, bench/ref_simd.c
-- mandelbrot, matmul and nbody hand-vectorized.
--   local K = dofile("bench/kernels.lua")
local gpu = require("gpujit")

local K = {}

-- y = a x + y over m elements.
function K.saxpy(y, xs, a, m)
  local i = gpu.global_id(0)
  if i < m then y[i] = a * xs[i] + y[i] end
end

-- 3x3 convolution of src (Wd x Ht) with weights wt; the border is left alone.
function K.conv3(out, src, wt, Wd, Ht)
  local x, y = gpu.global_id(0), gpu.global_id(1)
  if x >= 1 and y >= 1 and x < Wd - 1 and y < Ht - 1 then
    local s = 0.0
    for dy = -1, 1 do
      for dx = -1, 1 do
        s = s + wt[(dy + 1) * 3 + dx + 1] * src[(y + dy) * Wd + x + dx]
      end
    end
    out[y * Wd + x] = s
  end
end

-- Iterations until escape (at most maxit) of each pixel of a Wd x Ht image.
function K.mandel(out, Wd, Ht, maxit)
  local px, py = gpu.global_id(0), gpu.global_id(1)
  if px < Wd and py < Ht then
    local cr = -2.0 + 3.0 * px / Wd
    local ci = -1.5 + 3.0 * py / Ht
    local zr, zi, it = 0.0, 0.0, 0
    while it < maxit and zr * zr + zi * zi <= 4.0 do
      local t = zr * zr - zi * zi + cr
      zi = 2.0 * zr * zi + ci
      zr = t
      it = it + 1
    end
    out[py * Wd + px] = it
  end
end

-- Gravitational acceleration of body i from all nb bodies (softened by eps).
function K.nbody(ax, ay, az, xs, ys, zs, ms, nb, eps)
  local i = gpu.global_id(0)
  if i < nb then
    local xi, yi, zi = xs[i], ys[i], zs[i]
    local sx, sy, sz = 0.0, 0.0, 0.0
    for j = 0, nb - 1 do
      local dx, dy, dz = xs[j] - xi, ys[j] - yi, zs[j] - zi
      local d2 = dx * dx + dy * dy + dz * dz + eps
      local f = ms[j] / (d2 * math.sqrt(d2))
      sx = sx + f * dx
      sy = sy + f * dy
      sz = sz + f * dz
    end
    ax[i], ay[i], az[i] = sx, sy, sz
  end
end

-- C = A B (Nn x Nn, row-major), the plain triple loop: one element each.
function K.matmul(C, Am, Bm, Nn)
  local col, row = gpu.global_id(0), gpu.global_id(1)
  if col < Nn and row < Nn then
    local acc = 0.0
    for kk = 0, Nn - 1 do acc = acc + Am[row * Nn + kk] * Bm[kk * Nn + col] end
    C[row * Nn + col] = acc
  end
end

-- C = A B (Nn x Kk times Kk x Nn) in TILE x TILE tiles of shared memory:
-- launched with groups of TILE x TILE, sizes multiples of TILE.
K.TILE = 16
local TILE = K.TILE
function K.matmul_tiled(C, Am, Bm, Nn, Kk)
  local tA = gpu.shared("float", TILE * TILE)
  local tB = gpu.shared("float", TILE * TILE)
  local tx, ty = gpu.local_id(0), gpu.local_id(1)
  local col, row = gpu.global_id(0), gpu.global_id(1)
  local acc = 0.0
  for t = 0, Kk / TILE - 1 do
    tA[ty * TILE + tx] = Am[row * Kk + t * TILE + tx]
    tB[ty * TILE + tx] = Bm[(t * TILE + ty) * Nn + col]
    gpu.barrier()
    for kk = 0, TILE - 1 do acc = acc + tA[ty * TILE + kk] * tB[kk * TILE + tx] end
    gpu.barrier()
  end
  C[row * Nn + col] = acc
end

-- The shared-memory tree reduction: each group adds up a contiguous block
-- of per * RGROUP elements, each work item first every RGROUP-th (so
-- that neighbours read neighbours), then the group halves its RGROUP
-- partial sums in shared memory between barriers; sums[g] is group g's
-- sum.  Launched with groups of RGROUP over n / per work items.
K.RGROUP = 256
local RGROUP = K.RGROUP
function K.reduce_tree(sums, xs, per)
  local s = gpu.shared("float", RGROUP)
  local lid = gpu.local_id(0)
  -- (the group's first id times per, not group_id * per * RGROUP: that
  -- product's range passes 2^53, which makes it a float; docs/typing.md)
  local base = (gpu.global_id(0) - lid) * per + lid
  local acc = 0.0
  for k = 0, per - 1 do acc = acc + xs[base + k * RGROUP] end
  s[lid] = acc
  gpu.barrier()
  local step = bit.rshift(RGROUP, 1)
  while step > 0 do
    if lid < step then s[lid] = s[lid] + s[lid + step] end
    gpu.barrier()
    step = bit.rshift(step, 1)
  end
  if lid == 0 then sums[gpu.group_id(0)] = s[0] end
end

return K
