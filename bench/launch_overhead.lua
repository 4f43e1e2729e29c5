-- Cache-hit launch overhead through k:launch, one work item, median of 7
-- rounds of 1e6 launches.  Run: make && LUA_PATH="lua/?.lua;lua/?/init.lua;;"
-- LUA_CPATH="build/?.so;;" luajit bench/launch_overhead.lua
-- (The full benchmark harness with ratios against C is issue 8's.)
local gpu = require("gpujit")
local ffi = require("ffi")

local k = gpu.kernel(function(o, n)
  local i = gpu.global_id(0)
  if i < n then o[i] = i end
end)
local o = ffi.new("double[1]")
k:launch(1, o, 1)
local t = {}
for r = 1, 7 do
  local N = 1000000
  local c = os.clock()
  for _ = 1, N do k:launch(1, o, 1) end
  t[r] = (os.clock() - c) / N * 1e9
end
table.sort(t)
print(string.format("backend %s: launch of 1 work item through k:launch, median %.0f ns",
  gpu.backend(), t[4]))
