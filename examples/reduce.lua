-- reduce: the sum of n numbers in two launches of one work-group kernel:
-- each group of 256 work items adds a slice of the input in shared memory
-- (a tree with barriers), then one group adds the groups' partial sums.
--
--   luajit examples/reduce.lua [backend] [n]
--
-- Checks the sum against plain LuaJIT (integers in doubles: exact) and
-- exits with status 1 when it differs.
package.path = ((arg and arg[0] or ""):match("^(.*)/[^/]*$") or ".") .. "/lib/?.lua;" .. package.path
local ffi = require("ffi")
local ex = require("example")
local gpu = ex.gpu(require("gpujit"), arg)

local GROUP = 256
local N = tonumber(ex.arg(arg, 2, 65536))

-- Each work item first adds the elements i, i + global size, ... of its
-- slice (a grid-stride loop), so any n fits in a fixed number of groups.
local group_sums = gpu.kernel(function(out, x, n)
  local s = gpu.shared("double", GROUP)
  local lid = gpu.local_id(0)
  local acc = 0.0
  local i = gpu.global_id(0)
  while i < n do
    acc = acc + x[i]
    i = i + gpu.global_size(0)
  end
  s[lid] = acc
  gpu.barrier()
  local step = GROUP / 2
  while step > 0 do
    if lid < step then s[lid] = s[lid] + s[lid + step] end
    gpu.barrier()
    step = math.floor(step / 2)
  end
  if lid == 0 then out[gpu.group_id(0)] = s[0] end
end, { name = "group_sums" })

local groups = 64
local x = ffi.new("double[?]", N)
for i = 0, N - 1 do x[i] = (i * 7919) % 1000 end
local partial = ffi.new("double[?]", groups)
local total = ffi.new("double[1]")

group_sums:launch({ global = groups * GROUP, group = GROUP }, partial, x, N)
group_sums:launch({ global = GROUP, group = GROUP }, total, partial, groups)

local want = 0
for i = 0, N - 1 do want = want + x[i] end
print(ex.check("reduce", total[0] == want, string.format(
  "%s, sum of %d numbers = %.17g (plain LuaJIT: %.17g)",
  gpu.backend(), N, total[0], want)))
