-- Every collective on numbers and on each buffer kind, ranges included:
-- allreduce (sum, min, max), reduce_all, bcast, gather, allgather,
-- barrier; then the device by node-local rank and the cpu thread split.
-- Run by spec/mpi/mpi_spec.lua (GJ_MPI_SPEC_DIR: a folder for the barrier).
local mpi = require("gpujit.mpi")
package.path = "./?.lua;" .. package.path
local C = require("spec.mpi.check")

mpi.run(function()
  local gpu = require("gpujit")
  local r, n = mpi.rank, mpi.size
  local root = n - 1

  -- numbers
  C.eq(mpi.allreduce(r + 1, "sum"), n * (n + 1) / 2, "allreduce sum of numbers")
  C.eq(mpi.allreduce(r + 1, "+"), n * (n + 1) / 2, "allreduce + of numbers")
  C.eq(mpi.allreduce(r - 0.5, "min"), -0.5, "allreduce min of numbers")
  C.eq(mpi.allreduce(r - 0.5, "max"), n - 1.5, "allreduce max of numbers")
  C.eq(mpi.bcast(r == root and 2.75 or 0, root), 2.75, "bcast of a number")
  C.eq(mpi.bcast(r == root, root), true, "bcast of a boolean")
  C.eq(mpi.bcast(r == 0 and "from rank 0" or "", 0), "from rank 0", "bcast of a string")
  local g = mpi.gather(r * 2, root)
  if r == root then
    local want = {}
    for i = 1, n do want[i] = (i - 1) * 2 end
    C.eq(g, want, "gather of numbers on the root")
  else
    C.eq(g, nil, "gather of numbers elsewhere")
  end
  local ag = mpi.allgather(r + 0.25)
  C.eq(#ag, n, "allgather of numbers: one per rank")
  C.eq(ag[n], n - 0.75, "allgather of numbers: the last rank's")
  C.raises(function() mpi.allreduce(1, "prod") end, "op must be", "an unknown op")
  C.raises(function() mpi.bcast(1, n) end, "root must be a rank", "a bad root")

  for _, K in ipairs(require("spec.mpi.kinds")) do
    local what = K.name
    local function list(f) local t = {} for i = 1, 4 do t[i] = f(i) end return t end
    local mine = list(function(i) return r * 10 + i end)
    -- allreduce in place, whole and on a range
    local sum_all = 0
    for q = 0, n - 1 do sum_all = sum_all + q * 10 end
    local b = K.make(mine)
    C.ok(mpi.allreduce(b, "sum") == b, what .. ": allreduce returns its buffer")
    C.eq(K.get(b), list(function(i) return sum_all + n * i end), what .. ": allreduce sum")
    b = K.make(mine)
    mpi.allreduce(b, "min")
    C.eq(K.get(b), list(function(i) return i end), what .. ": allreduce min")
    b = K.make(mine)
    mpi.allreduce(mpi.view(b, 1, 2), "max")
    C.eq(K.get(b), { r * 10 + 1, (n - 1) * 10 + 2, (n - 1) * 10 + 3, r * 10 + 4 },
      what .. ": allreduce max of a range")
    -- bcast of a range
    b = K.make(mine)
    mpi.bcast(mpi.view(b, 2), root)
    C.eq(K.get(b), { r * 10 + 1, r * 10 + 2, root * 10 + 3, root * 10 + 4 },
      what .. ": bcast of a range")
    -- gather and allgather of a range (elements 2 and 3 of each rank)
    local function gathered(out)
      local t = out   -- a table from a table, else an FFI array
      if type(out) == "cdata" then
        t = {}
        for i = 1, 2 * n do t[i] = tonumber(out[i - 1]) end
      end
      return t
    end
    local want = {}
    for q = 0, n - 1 do want[2 * q + 1], want[2 * q + 2] = q * 10 + 2, q * 10 + 3 end
    local got = mpi.gather(mpi.view(K.make(mine), 1, 2), root)
    if r == root then
      C.eq(gathered(got), want, what .. ": gather of a range on the root")
    else
      C.eq(got, nil, what .. ": gather elsewhere")
    end
    C.eq(gathered(mpi.allgather(mpi.view(K.make(mine), 1, 2))), want, what .. ": allgather")
    -- into a given output of the same kind
    local out = K.make(list(function() return 0 end))
    if 2 * n <= 4 then
      mpi.allgather(mpi.view(K.make(mine), 1, 2), out)
      C.eq(K.get(out), { unpack(want, 1, 4) }, what .. ": allgather into a buffer")
    else
      C.raises(function() mpi.allgather(mpi.view(K.make(mine), 1, 2), out) end,
        "the output holds 4 elements", what .. ": allgather into a short buffer")
    end
    -- reduce_all of a gpu.array: gpu.reduce on the device, then the ranks
    if K.backend then
      local a = K.make(mine)
      C.eq(mpi.reduce_all(a, "sum"), 4 * sum_all + 10 * n, what .. ": reduce_all sum")
      C.eq(mpi.reduce_all(a, "max"), (n - 1) * 10 + 4, what .. ": reduce_all max")
    end
  end

  -- barrier: every rank's file exists after it
  local dir = assert(os.getenv("GJ_MPI_SPEC_DIR"), "GJ_MPI_SPEC_DIR is not set")
  local fh = assert(io.open(dir .. "/rank" .. r, "w"))
  fh:close()
  mpi.barrier()
  for q = 0, n - 1 do
    local f = io.open(dir .. "/rank" .. q)
    C.ok(f ~= nil, "rank " .. q .. "'s file after the barrier")
    if f then f:close() end
  end

  -- ranks and devices
  C.ok(mpi.local_rank >= 0 and mpi.local_rank < mpi.local_size, "local_rank in [0, local_size)")
  C.eq(mpi.allreduce(1, "sum"), n, "size")
  C.eq(mpi.allreduce(mpi.local_size == n and 1 or 0, "min"), 1, "one node: every rank is local")
  C.eq(mpi.device_index(5, 2), 1, "device_index(5, 2)")
  C.eq(mpi.device_index(3, 4), 3, "device_index(3, 4)")
  C.eq(mpi.device_index(4, 4), 0, "device_index(4, 4)")
  C.eq(mpi.device_index(0, 0), nil, "device_index with no device")
  for _, bk in ipairs(C.backends) do
    local count = 0
    for _, d in ipairs(gpu.devices()) do count = count + (d.backend == bk and 1 or 0) end
    local e = mpi.use(bk)
    C.eq(e.backend, bk, bk .. ": mpi.use's backend")
    C.eq(e.index, mpi.local_rank % count, bk .. ": the device of local rank " .. mpi.local_rank)
    C.eq(gpu.device().index, e.index, bk .. ": current after mpi.use")
  end
  -- the cpu threads: this rank's share of the node's CPUs
  C.eq(mpi.thread_share(8, 0, 3), 3, "thread_share(8, 0, 3)")
  C.eq(mpi.thread_share(8, 2, 3), 2, "thread_share(8, 2, 3)")
  C.eq(mpi.thread_share(2, 2, 3), 1, "thread_share(2, 2, 3): at least one")
  C.eq(os.getenv("GPUJIT_THREADS"), tostring(mpi.threads), "GPUJIT_THREADS is the share")
  C.ok(mpi.threads <= mpi.thread_share(mpi.node_cpus, mpi.local_rank, mpi.local_size),
    "threads within the share")
  local total = mpi.allreduce(mpi.threads, "sum")
  C.ok(total <= math.max(mpi.node_cpus, n), "the shares of the node add up to at most its CPUs")
  for _, d in ipairs(gpu.devices()) do
    if d.backend == "cpu" then C.eq(d.compute_units, mpi.threads, "the cpu backend's threads") end
  end
  C.eq(type(mpi.cuda_aware), "boolean", "cuda_aware")
  C.eq(mpi.impl, "openmpi", "the implementation (Debian's Open MPI)")
  C.done("collectives")
end)
