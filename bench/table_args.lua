-- What a Lua-table argument costs on the cpu backend (docs/api.md,
-- "Arguments and types"): x[i] = x[i] * 2 + 1 over n doubles as a kernel
-- launched with a Lua table, the plain LuaJIT loop over the same table, the
-- kernel with an FFI array and with a gpu.array.  Medians of `runs` calls.
--
--   luajit bench/table_args.lua [n] [runs]
--
-- 2026-12-07, 2-core VM under a load of 12: table 2.3 ms, LuaJIT loop 1.05
-- ms, FFI array 0.30-0.44 ms, gpu.array 0.47-0.52 ms for n = 1M (issue 32
-- measured the table at 6.4 against the loop's 1.6 ms on a quiet one).
local gpu = require("gpujit")
local ffi = require("ffi")
local util = require("gpujit.util")

local n = tonumber(arg[1]) or 1000000
local runs = tonumber(arg[2]) or 21
gpu.use("cpu")

local t = {}
for i = 1, n do t[i] = i * 0.5 end
local a = ffi.new("double[?]", n)
for i = 0, n - 1 do a[i] = i * 0.5 end
local ga = gpu.to_device(a, "double")

local kt = gpu.kernel(function(x, m)
  local i = gpu.global_id(0) + 1
  if i <= m then x[i] = x[i] * 2 + 1 end
end)
local ka = gpu.kernel(function(x, m)
  local i = gpu.global_id(0)
  if i < m then x[i] = x[i] * 2 + 1 end
end)
local function loop()
  for i = 1, n do t[i] = t[i] * 2 + 1 end
end

local rows = {
  { "Lua table argument", function() kt:launch(n, t, n) end },
  { "plain LuaJIT loop over the table", loop },
  { "FFI array argument", function() ka:launch(n, a, n) end },
  { "gpu.array argument", function() ka:launch(n, ga, n); gpu.synchronize() end },
}
for _, r in ipairs(rows) do
  print(("%-34s %8.3f ms"):format(r[1], util.time(r[2], runs, 2) * 1e3))
end
