-- FFI metatypes against scalars: the same n-body acceleration on the cpu
-- backend, written with a vec3 metatype (`acc = acc + d * s`, `d:dot(d)`)
-- and with one scalar per component (issue 20's goal: the metatype form
-- within 1.1x of the scalar one).  bench/README.md, "metatypes".
--
--   luajit bench/metatypes.lua [bodies] [runs]
--
-- Both kernels read the same bytes (an array of vec3 is three doubles per
-- body, as the scalar form's flat double array is), do the same arithmetic
-- in the same order, and their results are compared bit for bit before
-- anything is timed.  Samples alternate between the two sides (T.measure);
-- figures are medians.
local T = dofile((arg and arg[0] or "bench/metatypes.lua"):gsub("[^/]*$", "") .. "timing.lua")
local ffi = require("ffi")
local gpu = require("gpujit")
gpu.use("cpu")

local N = tonumber(arg[1]) or 4096
local RUNS = tonumber(arg[2]) or 11
local DT, EPS2 = 0.01, 1e-3

ffi.cdef "typedef struct { double x, y, z; } bench_vec3;"
local vec3
vec3 = ffi.metatype("bench_vec3", {
  __add = function(a, b) return vec3(a.x + b.x, a.y + b.y, a.z + b.z) end,
  __sub = function(a, b) return vec3(a.x - b.x, a.y - b.y, a.z - b.z) end,
  __mul = function(a, b)
    if type(a) == "number" then return vec3(a * b.x, a * b.y, a * b.z) end
    return vec3(a.x * b, a.y * b, a.z * b)
  end,
  __index = { dot = function(a, b) return a.x * b.x + a.y * b.y + a.z * b.z end },
})

local meta_k = gpu.kernel(function(pos, mass, vel, n, dt, eps2)
  local i = gpu.global_id(0)
  if i < n then
    local pi = pos[i]
    local acc = vec3(0, 0, 0)
    for j = 0, n - 1 do
      local d = pos[j] - pi
      local d2 = d:dot(d) + eps2
      acc = acc + d * (mass[j] / (d2 * math.sqrt(d2)))
    end
    vel[i] = vel[i] + dt * acc
  end
end, { name = "nbody_metatype" })

local scalar_k = gpu.kernel(function(p, mass, v, n, dt, eps2)
  local i = gpu.global_id(0)
  if i < n then
    local xi, yi, zi = p[3 * i], p[3 * i + 1], p[3 * i + 2]
    local ax, ay, az = 0.0, 0.0, 0.0
    for j = 0, n - 1 do
      local dx, dy, dz = p[3 * j] - xi, p[3 * j + 1] - yi, p[3 * j + 2] - zi
      local d2 = dx * dx + dy * dy + dz * dz + eps2
      local s = mass[j] / (d2 * math.sqrt(d2))
      ax, ay, az = ax + dx * s, ay + dy * s, az + dz * s
    end
    v[3 * i] = v[3 * i] + dt * ax
    v[3 * i + 1] = v[3 * i + 1] + dt * ay
    v[3 * i + 2] = v[3 * i + 2] + dt * az
  end
end, { name = "nbody_scalar" })

local pos, vel = ffi.new("bench_vec3[?]", N), ffi.new("bench_vec3[?]", N)
local mass = ffi.new("double[?]", N)
for i = 0, N - 1 do
  local a, r = i * 2.399963, 0.2 + (i % 97) / 97
  pos[i] = vec3(r * math.cos(a), r * math.sin(a), 0.01 * ((i % 7) - 3))
  mass[i] = i == 0 and 10.0 or 1.0 / N
end
local p, v = ffi.new("double[?]", 3 * N), ffi.new("double[?]", 3 * N)
ffi.copy(p, pos, 24 * N)

local function meta() meta_k:launch(N, pos, mass, vel, N, DT, EPS2) end
local function scalar() scalar_k:launch(N, p, mass, v, N, DT, EPS2) end
-- the same velocities, bit for bit, after a few steps
for _ = 1, 3 do meta(); scalar() end
if ffi.string(vel, 24 * N) ~= ffi.string(v, 24 * N) then
  error("the metatype and the scalar n-body differ")
end
local tm, ts = T.measure(meta, scalar, 1, RUNS)
print(("n-body acceleration, %d bodies, cpu (%d runs, medians): metatype %.2f ms, scalars %.2f ms, "
  .. "metatype/scalars %.3f (goal <= 1.1)"):format(N, RUNS, tm * 1e3, ts * 1e3, tm / ts))
