-- gpujit's side of the autodiff rows of `make bench-peers` (bench/peers_ad.py
-- drives it): the kernels of bench/ad_kernels.lua on the cpu backend, in
-- double, forward (the kernel) and gradient (gpu.grad: the forward pass and
-- the reverse, every float array active, the outputs' adjoints seeded with 1).
--
--   luajit bench/peers_ad_gpujit.lua N     -- reads "time CASE fwd|grad REPS"
--
-- First line: the checksums of a forward run and of a gradient from zeroed
-- adjoints (float64 weighted sums per array), then one JSON object per request.
local ffi = require("ffi")
local gpu = require("gpujit")
local util = require("gpujit.util")
gpu.use("cpu")
local here = (arg and arg[0] or "bench/peers_ad_gpujit.lua"):gsub("[^/]*$", "")
local AD = dofile(here .. "ad_kernels.lua")
local N = tonumber(arg[1]) or 262144
local D = AD.data(N)
local ones = ffi.new("double[?]", N)
for i = 0, N - 1 do ones[i] = 1 end

local function reply(t)
  local parts = {}
  for k, v in pairs(t) do parts[#parts + 1] = string.format("%q: %.17g", k, v) end
  io.write("{", table.concat(parts, ", "), "}\n")
  io.flush()
end

-- a weighted sum (weights 1..7), so that gradients summing to 0 still check
local function sum(a, n)
  local s = 0
  for i = 0, n - 1 do s = s + a[i] * (i % 7 + 1) end
  return s
end

local sums, run = {}, {}
for _, c in ipairs(AD.cases(D)) do
  local name, cfg, ak, ag = c[1], c[2], c[3], c[4]
  local k = gpu.kernel(AD.src[name], { name = name })
  ffi.fill(D.y, N * 8)
  k:launch(cfg, unpack(ak))
  sums[name .. ".out"] = sum(D.y, c.out)
  local g = AD.fitted_grad(k, cfg, ag)   -- a launch: adjoints zeroed after it
  for a, n in pairs(c.adj) do ffi.fill(D[a], n * 8) end
  ffi.fill(D.y, N * 8)
  ffi.copy(D.gy, ones, c.out * 8)
  g:launch(cfg, unpack(ag))
  for a, n in pairs(c.adj) do sums[name .. "." .. a] = sum(D[a], n) end
  run[name] = {
    fwd = function() k:launch(cfg, unpack(ak)) end,
    grad = function()
      ffi.copy(D.gy, ones, c.out * 8)
      g:launch(cfg, unpack(ag))
    end,
  }
end
reply(sums)
for line in io.lines() do
  local name, what, reps = line:match("^time (%S+) (%S+) (%d+)$")
  if not name then break end
  local f = run[name][what]
  local t0, c0 = util.now(), os.clock()   -- os.clock: the process's CPU time, every thread
  for _ = 1, tonumber(reps) do f() end
  reply({ wall = (util.now() - t0) / tonumber(reps), cpu = (os.clock() - c0) / tonumber(reps) })
end
