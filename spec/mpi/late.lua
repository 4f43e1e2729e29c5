-- gpujit loaded before gpujit.mpi: the cpu backend's pool already has its
-- size, so mpi.threads reports that size (and local rank 0 warns on stderr
-- when it is not the rank's share; spec/mpi/mpi_spec.lua reads it).
local gpu = require("gpujit")
local mpi = require("gpujit.mpi")
package.path = "./?.lua;" .. package.path
local C = require("spec.mpi.check")

mpi.run(function()
  local pool
  for _, d in ipairs(gpu.devices()) do
    if d.backend == "cpu" then pool = d.compute_units end
  end
  C.ok(pool ~= nil, "a cpu device")
  C.eq(mpi.threads, pool, "mpi.threads is the pool's size")
  C.eq(os.getenv("GPUJIT_THREADS"), nil, "GPUJIT_THREADS left unset")
  local share = mpi.thread_share(mpi.node_cpus, mpi.local_rank, mpi.local_size)
  if mpi.rank == 0 then print("late: share " .. share .. " pool " .. pool) end
  C.done("late")
end)
