-- An error on the last rank while the others wait for it in MPI_Recv:
-- mpi.run ends the whole job with the error's message (spec/mpi/mpi_spec.lua
-- runs this under `timeout` and reads the message).  GJ_MPI_ABORT=plain:
-- the error is raised outside mpi.run, at the script's top level.
local mpi = require("gpujit.mpi")
local ffi = require("ffi")

local function main()
  mpi.barrier()
  if mpi.rank == mpi.size - 1 then
    error("deliberate failure on the last rank", 0)
  end
  mpi.recv(ffi.new("double[1]"), mpi.size - 1)   -- never sent
end

if os.getenv("GJ_MPI_ABORT") == "plain" then
  main()
  mpi.finalize()
else
  mpi.run(main)
end
