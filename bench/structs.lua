-- Arrays of structs (AoS) against one array per field (SoA): the same
-- particle update on the cpu backend (issue 20's goal: AoS within 1.1x of
-- SoA).  bench/README.md, "structs".
--
--   luajit bench/structs.lua [particles] [runs]
--
-- Both kernels do the same arithmetic on the same values (float fields,
-- Lua-number sizes and constants, as a user writes them); the results are
-- compared bit for bit before anything is timed.  Samples alternate between
-- the two sides (T.measure); figures are medians.
--
-- Where it stands (2026-11-26, EPYC with AVX-512, 2 shared cores; medians
-- in bench/RESULTS.md): "select" AoS/SoA about 1.1 (0.99-1.11), "store"
-- about 0.7-0.75; before the cpu target's store groups (targets/native_aos.c)
-- 2.1-2.4 for both.  LLVM 15's loop vectorizer stored a struct element whose
-- store group has a gap (vx is read, not written) or sits under an if with
-- scatters; the pass now sinks the if's stores and stores vx back, so both
-- AoS kernels use wide loads and stores.  The floor for "select": AoS moves
-- 32 bytes a particle (in and out), SoA 28 (four loads, three stores): 1.14
-- when memory-bound.  "store"'s SoA keeps its if as masked stores (the pass
-- cannot prove y and vy apart: two arrays), so AoS beats it there.
local T = dofile((arg and arg[0] or "bench/structs.lua"):gsub("[^/]*$", "") .. "timing.lua")
local ffi = require("ffi")
local gpu = require("gpujit")
gpu.use("cpu")

local N = tonumber(arg[1]) or 4 * 1024 * 1024
local RUNS = tonumber(arg[2]) or 11
local DT, G = 1 / 60, 9.81

ffi.cdef("typedef struct { float x, y, vx, vy; } bench_particle;")

-- Two forms of one update: "store": fields updated in place, then a
-- conditional store (the bounce); "select": the bounce on locals, then
-- every store unconditional.
local kernels = {
  store = {
    aos = function(p, n, dt, g)
      local i = gpu.global_id(0)
      if i < n then
        local q = p[i]
        q.vy = q.vy - g * dt
        q.x = q.x + q.vx * dt
        q.y = q.y + q.vy * dt
        if q.y < 0 then q.y = -q.y; q.vy = -q.vy * 0.5 end
      end
    end,
    soa = function(x, y, vx, vy, n, dt, g)
      local i = gpu.global_id(0)
      if i < n then
        vy[i] = vy[i] - g * dt
        x[i] = x[i] + vx[i] * dt
        y[i] = y[i] + vy[i] * dt
        if y[i] < 0 then y[i] = -y[i]; vy[i] = -vy[i] * 0.5 end
      end
    end,
  },
  select = {
    aos = function(p, n, dt, g)
      local i = gpu.global_id(0)
      if i < n then
        local q = p[i]
        local v = q.vy - g * dt
        local yy = q.y + v * dt
        if yy < 0 then yy = -yy; v = -v * 0.5 end
        q.x = q.x + q.vx * dt
        q.y = yy
        q.vy = v
      end
    end,
    soa = function(x, y, vx, vy, n, dt, g)
      local i = gpu.global_id(0)
      if i < n then
        local v = vy[i] - g * dt
        local yy = y[i] + v * dt
        if yy < 0 then yy = -yy; v = -v * 0.5 end
        x[i] = x[i] + vx[i] * dt
        y[i] = yy
        vy[i] = v
      end
    end,
  },
}

local p = ffi.new("bench_particle[?]", N)
local x, y = ffi.new("float[?]", N), ffi.new("float[?]", N)
local vx, vy = ffi.new("float[?]", N), ffi.new("float[?]", N)
for i = 0, N - 1 do
  local q = p[i]
  q.x, q.y, q.vx, q.vy = (i % 1000) * 0.01, 1 + (i % 37) * 0.05, ((i * 7) % 11 - 5) * 0.1, (i % 13) * 0.2
  x[i], y[i], vx[i], vy[i] = q.x, q.y, q.vx, q.vy
end

for _, form in ipairs({ "store", "select" }) do
  local aos_k = gpu.kernel(kernels[form].aos, { name = "aos_" .. form, precision = "single" })
  local soa_k = gpu.kernel(kernels[form].soa, { name = "soa_" .. form, precision = "single" })
  local function aos() aos_k:launch(N, p, N, DT, G) end
  local function soa() soa_k:launch(N, x, y, vx, vy, N, DT, G) end
  -- the same results, bit for bit, after a few steps
  for _ = 1, 3 do aos(); soa() end
  for i = 0, N - 1 do
    local q = p[i]
    if q.x ~= x[i] or q.y ~= y[i] or q.vx ~= vx[i] or q.vy ~= vy[i] then
      error(("%s: AoS and SoA differ at particle %d"):format(form, i))
    end
  end
  local ta, ts = T.measure(aos, soa, 1, RUNS)
  print(("particle update (%s), %d particles, cpu (%d runs, medians): AoS %.2f ms, SoA %.2f ms, "
    .. "AoS/SoA %.3f (goal <= 1.1)"):format(form, N, RUNS, ta * 1e3, ts * 1e3, ta / ts))
end
