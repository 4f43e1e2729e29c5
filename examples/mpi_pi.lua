-- mpi_pi: pi by Monte Carlo on every rank of an MPI job
-- (docs/distributed.md).  Sample s (0 <= s < N) is the point
-- (gpu.uniform(seed, 2s), gpu.uniform(seed, 2s + 1)): a counter-based
-- stream, so a sample is the same number whichever rank draws it.  The
-- ranks split the samples into contiguous blocks, each work item counts
-- the hits of a chunk of its rank's block, gpu.reduce adds them up on the
-- device, and mpi.allreduce adds the ranks' counts.  The counts are whole
-- numbers, so the estimate is bit for bit the same at any rank count.
--
--   mpirun -np 3 luajit examples/mpi_pi.lua [backend] [N] [seed]
--
-- Defaults: the default backend, N = 2^20, seed 2026.
package.path = ((arg and arg[0] or ""):match("^(.*)/[^/]*$") or ".") .. "/lib/?.lua;" .. package.path
local mpi = require("gpujit.mpi")   -- first: it sets this rank's device and threads
local ex = require("example")

local function main()
  local gpu = require("gpujit")
  local backend = ex.arg(arg, 1)
  if backend then mpi.use(backend) end
  local N = tonumber(ex.arg(arg, 2, 2 ^ 20))
  local seed = tonumber(ex.arg(arg, 3, 2026))
  local CHUNK = 256   -- samples per work item

  -- this rank's block [first, last)
  local first = math.floor(N * mpi.rank / mpi.size)
  local last = math.floor(N * (mpi.rank + 1) / mpi.size)
  local items = math.ceil((last - first) / CHUNK)

  local count = gpu.kernel(function(hits, lo, hi, chunk, sd)
    local w = gpu.global_id(0)
    local s0 = lo + w * chunk
    local h = 0
    for s = s0, math.min(s0 + chunk, hi) - 1 do
      local x, y = gpu.uniform(sd, 2 * s), gpu.uniform(sd, 2 * s + 1)
      if x * x + y * y < 1 then h = h + 1 end
    end
    hits[w] = h
  end, { name = "pi_count" })

  local t0 = mpi.wtime()
  local total_hits
  if items > 0 then
    local hits = gpu.zeros("int32_t", items)
    count:launch({ global = items }, hits, first, last, CHUNK, seed)
    total_hits = mpi.reduce_all(hits, "sum")
  else
    total_hits = mpi.allreduce(0, "sum")
  end
  local t = mpi.allreduce(mpi.wtime() - t0, "max")
  local pi = 4 * total_hits / N
  if mpi.rank == 0 then
    -- five standard deviations of the estimate
    local tol = 5 * 4 * math.sqrt(math.pi / 4 * (1 - math.pi / 4) / N)
    print(ex.check("mpi_pi", math.abs(pi - math.pi) < tol, string.format(
      "%d ranks on %s, %d samples, seed %d: %d hits, pi ~ %.17g (error %.2e), %.1f ms",
      mpi.size, gpu.backend(), N, seed, total_hits, pi, pi - math.pi, t * 1e3)))
  end
end

mpi.run(main)
