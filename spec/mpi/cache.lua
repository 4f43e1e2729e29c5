-- N ranks on one fresh disk cache (GPUJIT_CACHE_DIR, made by
-- spec/mpi/mpi_spec.lua): under mpi.node_first one rank of the node
-- compiles a kernel and the others load it from the cache; then every rank
-- compiles another kernel at the same moment: one compiles, the others
-- wait for its entry (the cache's compile lock), every result is right and
-- no entry is damaged.  On each compiling backend.
local mpi = require("gpujit.mpi")
package.path = "./?.lua;" .. package.path
local C = require("spec.mpi.check")

mpi.run(function()
  local gpu = require("gpujit")
  local ffi = require("ffi")
  C.eq(gpu.cache.stats().entries, 0, "the cache directory starts empty")
  -- every rank looks before any compiles: node_first lets local rank 0 go
  -- ahead without waiting, and a rank that started late saw its entry
  mpi.barrier()
  local function stats() return gpu.cache.stats() end
  for _, bk in ipairs(C.backends) do
    if bk ~= "sim" then
      mpi.use(bk)
      -- one compiles, the others hit
      local k = gpu.kernel(function(a, s) local i = gpu.global_id(0) a[i] = a[i] * s + i end,
        { name = "mpi_cache_first" })
      local a = ffi.new("double[16]")
      for i = 0, 15 do a[i] = i end
      local s0 = stats()
      mpi.node_first(function() k:launch({ global = 16 }, a, 3) end)
      local s1 = stats()
      C.eq(a[5], 5 * 3 + 5, bk .. ": the kernel's result")
      if mpi.local_rank == 0 then
        C.eq(s1.compiles - s0.compiles, 1, bk .. ": local rank 0 compiles")
        C.eq(s1.hits - s0.hits, 0, bk .. ": local rank 0 finds nothing")
      else
        C.eq(s1.compiles - s0.compiles, 0, bk .. ": the other ranks compile nothing")
        C.eq(s1.hits - s0.hits, 1, bk .. ": the other ranks hit the entry")
      end
      C.eq(mpi.allreduce(s1.compiles - s0.compiles, "sum"), 1, bk .. ": one compile in the job")
      -- all at once: the entry's compile lock (src/gj_cache.c) makes one
      -- rank compile while the others wait for the entry
      local add = function(x, s) local i = gpu.global_id(0) x[i] = x[i] + s end
      local k2 = gpu.kernel(add, { name = "mpi_cache_together" })
      mpi.barrier()
      local s1b = stats()
      k2:launch({ global = 16 }, a, 1)
      C.eq(a[15], 15 * 3 + 15 + 1, bk .. ": compiled together: the result")
      mpi.barrier()
      local s2 = stats()
      C.eq(mpi.allreduce(s2.compiles - s1b.compiles, "sum"), 1,
        bk .. ": compiled together: one compile in the job")
      C.eq(mpi.allreduce(s2.hits - s1b.hits, "sum"), mpi.size - 1,
        bk .. ": compiled together: the others hit")
      C.eq(s2.rejected, 0, bk .. ": no entry read back damaged")
      C.eq(s2.write_errors, 0, bk .. ": no write failed")
      -- the entry they wrote is sound: a new kernel of it loads from disk
      local k3 = gpu.kernel(add, { name = "mpi_cache_again" })
      k3:launch({ global = 16 }, a, 1)
      local s3 = stats()
      C.eq(a[15], 15 * 3 + 15 + 2, bk .. ": the entry's kernel result")
      C.eq({ s3.hits - s2.hits, s3.compiles - s2.compiles }, { 1, 0 },
        bk .. ": a new kernel of the function hits, compiles nothing")
    end
  end
  mpi.barrier()
  C.ok(stats().entries >= 1, "entries were written")
  C.done("cache")
end)
