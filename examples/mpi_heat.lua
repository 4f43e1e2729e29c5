-- mpi_heat: the 2-D heat equation on every rank of an MPI job
-- (docs/distributed.md).  The NX x NY grid is cut into blocks of whole
-- rows, one per rank; each rank keeps its rows and one halo row above and
-- below in a gpu.array, and every step it exchanges halo rows with its two
-- neighbours (mpi.sendrecv on views of the array), then updates its rows
-- with an explicit 5-point kernel.  The edges of the grid stay fixed.
--
--   mpirun -np 3 luajit examples/mpi_heat.lua [backend] [NX] [NY] [steps]
--
-- Defaults: the default backend, 256 x 96, 100 steps.  NY must be a
-- multiple of the rank count.  Every point's update is the same sum of the
-- same doubles whatever the decomposition, so the final field is bit for
-- bit the single-rank one: rank 0 gathers it and prints a hash of its
-- bytes (spec/mpi/mpi_spec.lua compares the hashes of 1, 2 and 3 ranks), a
-- checksum, the time of a step and the share of it spent in the halo
-- exchange (the first step, which compiles the kernel, is not timed).
-- GJ_HEAT_OUT=file: rank 0 also writes the field's bytes there.
package.path = ((arg and arg[0] or ""):match("^(.*)/[^/]*$") or ".") .. "/lib/?.lua;" .. package.path
local mpi = require("gpujit.mpi")   -- first: it sets this rank's device and threads
local ffi = require("ffi")
local ex = require("example")

local function main()
  local gpu = require("gpujit")
  local backend = ex.arg(arg, 1)
  if backend then mpi.use(backend) end
  local NX = tonumber(ex.arg(arg, 2, 256))
  local NY = tonumber(ex.arg(arg, 3, 96))
  local steps = tonumber(ex.arg(arg, 4, 100))
  if NY % mpi.size ~= 0 then
    error(string.format("mpi_heat: NY = %d is not a multiple of the %d ranks", NY, mpi.size), 0)
  end
  local rows = NY / mpi.size       -- this rank's rows
  local row0 = mpi.rank * rows     -- the global index of its first row
  local alpha = 0.2

  -- One step: new from old, over this rank's rows (local rows 1..rows;
  -- row 0 and rows + 1 are the halos).
  local step = gpu.kernel(function(new, old, nx, nrows, r0, ny, a)
    local i, jl = gpu.global_id(0), gpu.global_id(1) + 1
    if i < nx and jl <= nrows then
      local k = jl * nx + i
      local gj = r0 + jl - 1
      if i == 0 or i == nx - 1 or gj == 0 or gj == ny - 1 then
        new[k] = old[k]
      else
        new[k] = old[k] + a * ((old[k - 1] + old[k + 1]) + (old[k - nx] + old[k + nx]) - 4 * old[k])
      end
    end
  end, { name = "heat_step" })

  -- The initial field: a hot square and a warm stripe, by global position.
  local n = (rows + 2) * NX
  local init = ffi.new("double[?]", n)
  for jl = 1, rows do
    local gj = row0 + jl - 1
    for i = 0, NX - 1 do
      local hot = (i > NX / 4 and i < NX / 2 and gj > NY / 4 and gj < NY / 2) and 100 or 0
      init[jl * NX + i] = hot + (i % 17 == 3 and 25 or 0)
    end
  end
  local u, v = gpu.to_device(init), gpu.to_device(init)
  local up = mpi.rank > 0 and mpi.rank - 1 or mpi.PROC_NULL
  local down = mpi.rank < mpi.size - 1 and mpi.rank + 1 or mpi.PROC_NULL
  local cfg = { global = { NX, rows }, group = { 64, 1 } }

  local t_halo, t0 = 0, mpi.wtime()
  for s = 1, steps do
    if s == 2 then t_halo, t0 = 0, mpi.wtime() end   -- the first step compiles: not timed
    local h0 = mpi.wtime()
    -- my first row up, the row below me into my bottom halo; and back
    mpi.sendrecv(mpi.view(u, NX, NX), up, mpi.view(u, (rows + 1) * NX, NX), down, 1, 1)
    mpi.sendrecv(mpi.view(u, rows * NX, NX), down, mpi.view(u, 0, NX), up, 2, 2)
    t_halo = t_halo + (mpi.wtime() - h0)
    step:launch(cfg, v, u, NX, rows, row0, NY, alpha)
    u, v = v, u
  end
  gpu.synchronize()
  local t_total = mpi.wtime() - t0

  local field = mpi.gather(mpi.view(u, NX, rows * NX), 0)
  local halo_share = mpi.allreduce(t_halo, "max") / mpi.allreduce(t_total, "max")
  local step_ms = mpi.allreduce(t_total, "max") / math.max(steps - 1, 1) * 1e3
  if mpi.rank == 0 then
    local h, sum = 0, 0
    local bytes = ffi.cast("const uint8_t *", field)
    for i = 0, NX * NY * 8 - 1 do h = (h * 31 + bytes[i]) % 4294967296 end
    for i = 0, NX * NY - 1 do sum = sum + field[i] end
    local out = os.getenv("GJ_HEAT_OUT")
    if out and out ~= "" then
      local fh = assert(io.open(out, "wb"))
      fh:write(ffi.string(field, NX * NY * 8))
      fh:close()
    end
    print(ex.check("mpi_heat", sum > 0 and sum == sum, string.format(
      "%d ranks on %s, %dx%d, %d steps: hash %08x, sum %.17g, %.3f ms a step, halo exchange %.1f%%",
      mpi.size, gpu.backend(), NX, NY, steps, h, sum, step_ms, 100 * halo_share)))
  end
end

mpi.run(main)
