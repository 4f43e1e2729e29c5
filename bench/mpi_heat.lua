-- examples/mpi_heat.lua at 1 and 2 ranks on this machine (issue 36): strong
-- scaling (one grid, 1 and 2 ranks), weak scaling (the rows per rank
-- fixed), the parallel efficiency and the share of a step spent in the halo
-- exchange; and the message time the performance model of
-- docs/distributed.md uses (a halo row by mpi.sendrecv, and one double).
-- On the cpu backend, the threads split (gpujit.mpi: GPUJIT_THREADS is each
-- rank's share of the CPUs).  Each configuration runs ROUNDS times,
-- interleaved; medians.
--
--   make && LUA_PATH="lua/?.lua;lua/?/init.lua;;" LUA_CPATH="build/?.so;;" \
--     luajit bench/mpi_heat.lua [rounds, default 5] [backend, default cpu]
--
-- Launcher: GJ_MPIRUN, else Open MPI's mpirun with --oversubscribe
-- --bind-to none (and --allow-run-as-root as root).  Under mpirun with
-- --pingpong NX, the script is the message benchmark's rank program.
local ROUNDS = tonumber(arg and arg[1]) or 5
local BACKEND = arg and arg[2] or "cpu"
local NX, NY, STEPS = 1024, 384, 200

if arg and arg[1] == "--pingpong" then
  local mpi = require("gpujit.mpi")
  mpi.run(function()
    local gpu = require("gpujit")
    local nx, reps = tonumber(arg[2]), 2000
    local other = 1 - mpi.rank
    local function time(sbuf, rbuf)
      mpi.barrier()
      local t0 = mpi.wtime()
      for _ = 1, reps do mpi.sendrecv(sbuf, other, rbuf, other) end
      return mpi.allreduce((mpi.wtime() - t0) / reps, "max")
    end
    local one = time(require("ffi").new("double[1]"), require("ffi").new("double[1]"))
    local a = gpu.zeros("double", 3 * nx, arg[3])
    local row = time(mpi.view(a, nx, nx), mpi.view(a, 2 * nx, nx))
    if mpi.rank == 0 then
      print(string.format("pingpong: one double %.2f us, a row of %d doubles (gpu.array on %s) "
        .. "%.2f us", one * 1e6, nx, gpu.backend(), row * 1e6))
    end
  end)
  return
end

local function sh(cmd)
  local p = assert(io.popen(cmd .. " 2>&1"))
  local out = p:read("*a")
  p:close()
  return out
end

local launcher = os.getenv("GJ_MPIRUN")
if not launcher or launcher == "" then
  local root = sh("id -u"):match("^0%s") ~= nil
  launcher = "mpirun --oversubscribe --bind-to none" .. (root and " --allow-run-as-root" or "")
end
-- yield_when_idle: a waiting rank yields its core (this machine is shared and loaded)
local env = "env -u GPUJIT_THREADS OMPI_MCA_btl_vader_single_copy_mechanism=none "
  .. "OMPI_MCA_mpi_yield_when_idle=1 "

local function median(t)
  table.sort(t)
  local n = #t
  return n % 2 == 1 and t[(n + 1) / 2] or (t[n / 2] + t[n / 2 + 1]) / 2
end

-- One run of the example: ms a step and the halo exchange's share.
local function heat(np, nx, ny)
  local out = sh(string.format("%s%s -np %d luajit examples/mpi_heat.lua %s %d %d %d",
    env, launcher, np, BACKEND, nx, ny, STEPS))
  local ms, share = out:match("([%d%.]+) ms a step, halo exchange ([%d%.]+)%%")
  if not ms then error("mpi_heat failed:\n" .. out, 0) end
  return tonumber(ms), tonumber(share)
end

local configs = {
  { name = "strong, 1 rank", np = 1, nx = NX, ny = NY },
  { name = "strong, 2 ranks", np = 2, nx = NX, ny = NY },
  { name = "weak, 1 rank", np = 1, nx = NX, ny = NY / 2 },
  { name = "weak, 2 ranks", np = 2, nx = NX, ny = NY },
}
local ms, share = {}, {}
for _, c in ipairs(configs) do ms[c], share[c] = {}, {} end
local load0 = sh("cut -d' ' -f1 /proc/loadavg"):gsub("%s+", "")
for _ = 1, ROUNDS do
  for _, c in ipairs(configs) do
    local m, s = heat(c.np, c.nx, c.ny)
    table.insert(ms[c], m)
    table.insert(share[c], s)
  end
end
local load1 = sh("cut -d' ' -f1 /proc/loadavg"):gsub("%s+", "")

print(string.format("mpi_heat on %s, %d steps (the first, which compiles, untimed); medians of %d "
  .. "rounds; load average %s at start, %s at end", BACKEND, STEPS, ROUNDS, load0, load1))
print("| run | grid | ranks | ms a step | range | halo exchange | efficiency |")
print("|---|---|---|---|---|---|---|")
local t = {}
for i, c in ipairs(configs) do
  t[i] = median(ms[c])
  local eff = ""
  if i == 2 then eff = string.format("%.2f (strong: T1 / (2 T2))", t[1] / (2 * t[2])) end
  if i == 4 then eff = string.format("%.2f (weak: T1 / T2)", t[3] / t[4]) end
  table.sort(ms[c])
  print(string.format("| %s | %dx%d | %d | %.3f | %.3f-%.3f | %.1f%% | %s |", c.name, c.nx, c.ny,
    c.np, t[i], ms[c][1], ms[c][#ms[c]], median(share[c]), eff))
end
print(sh(string.format("%s%s -np 2 luajit bench/mpi_heat.lua --pingpong %d %s", env, launcher, NX,
  BACKEND)):match("pingpong:[^\n]*"))
print(string.format("kernel: %.2f ns a point (strong, 1 rank: ms a step / %d points)",
  t[1] * 1e6 / (NX * NY), NX * NY))
