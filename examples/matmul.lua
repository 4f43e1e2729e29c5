-- matmul: C = A * B with tiles in work-group shared memory: each group of
-- TILE x TILE work items loads one tile of A and one of B into gpu.shared
-- arrays, waits at gpu.barrier(), multiplies them, and moves on.
--
--   luajit examples/matmul.lua [backend] [n]
--
-- n need not be a multiple of TILE: the launch is rounded up and the tiles
-- are padded with zeros.  The entries are small integers, so every sum is
-- exact in float and must equal plain LuaJIT's.
package.path = ((arg and arg[0] or ""):match("^(.*)/[^/]*$") or ".") .. "/lib/?.lua;" .. package.path
local ffi = require("ffi")
local ex = require("example")
local util = require("gpujit.util")
local gpu = ex.gpu(require("gpujit"), arg)

local TILE = 16
local N = tonumber(ex.arg(arg, 2, 200))

local matmul = gpu.kernel(function(c, a, b, n)
  local ta = gpu.shared("float", TILE * TILE)
  local tb = gpu.shared("float", TILE * TILE)
  local tx, ty = gpu.local_id(0), gpu.local_id(1)
  local col, row = gpu.global_id(0), gpu.global_id(1)
  local acc = 0.0
  for t = 0, math.floor((n + TILE - 1) / TILE) - 1 do
    local ac, br = t * TILE + tx, t * TILE + ty
    ta[ty * TILE + tx] = (row < n and ac < n) and a[row * n + ac] or 0
    tb[ty * TILE + tx] = (br < n and col < n) and b[br * n + col] or 0
    gpu.barrier()
    for k = 0, TILE - 1 do acc = acc + ta[ty * TILE + k] * tb[k * TILE + tx] end
    gpu.barrier()
  end
  if row < n and col < n then c[row * n + col] = acc end
end, { name = "matmul" })

local a, b, c = ffi.new("float[?]", N * N), ffi.new("float[?]", N * N), ffi.new("float[?]", N * N)
for i = 0, N * N - 1 do
  a[i] = (i * 7) % 17 - 8
  b[i] = (i * 5) % 13 - 6
end
local global = math.ceil(N / TILE) * TILE
local t0 = util.now()
matmul:launch({ global = { global, global }, group = { TILE, TILE } }, c, a, b, N)
local t1 = util.now()

local bad = 0
for i = 0, N - 1 do
  for j = 0, N - 1 do
    local s = 0
    for k = 0, N - 1 do s = s + a[i * N + k] * b[k * N + j] end
    if c[i * N + j] ~= s then bad = bad + 1 end
  end
end
print(ex.check("matmul", bad == 0, string.format(
  "%s, %dx%d in %dx%d tiles, %.1f ms (first launch, compile included), %d entries differ from "
    .. "plain LuaJIT", gpu.backend(), N, N, TILE, TILE, (t1 - t0) * 1e3, bad)))
