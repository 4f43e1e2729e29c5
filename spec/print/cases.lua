-- Kernels that print, run by spec/print_spec.lua in a child process:
--   luajit spec/print/cases.lua BACKEND CASE
-- writes what the launch prints (and "--" lines around it) on stdout.
local gpu = require("gpujit")
local ffi = require("ffi")
local be, case = arg[1], arg[2]

local function helper(x, y)
  print("helper", x, y)
  return x + y
end

local C = {}

C.values = function()
  local k = gpu.kernel(function(o, a, s)
    local i = gpu.global_id(0)
    local v = a[i]
    print(i, v, v * 0.5, -v, v / 0, v == 2, nil, "text", s, 0 / 0 ~= 0 / 0)
    o[i] = v
  end, { backend = be })
  k:launch(5, ffi.new("double[5]"), ffi.new("int32_t[5]", 0, 1, 2, -3, 7), 2.5)
end

C.types = function()
  local k = gpu.kernel(function(l, u, f, b)
    local i = gpu.global_id(0)
    print(l[i], l[i] + 1, u[i], f[i], b[i], 2 ^ 53, -(2 ^ 31), 1e300 * 10, -0.0)
  end, { backend = be })
  k:launch(2, ffi.new("int64_t[2]", 7, -9007199254740993LL), ffi.new("uint8_t[2]", 255, 3),
    ffi.new("float[2]", 0.1, -2.5), ffi.new("bool[2]", true, false))
end

C.order = function()   -- work-item order, each item's calls in order; 2-D
  local k = gpu.kernel(function(n)
    local x, y = gpu.global_id(0), gpu.global_id(1)
    for j = 1, 2 do
      if (x + y + j) % 2 == 0 then print("x", x, "y", y, "j", j) end
    end
    if x == n then print(helper(x, y)) end
  end, { backend = be })
  k:launch({ global = { 3, 4 } }, 1)
end

C.barrier = function()
  local k = gpu.kernel(function(o)
    local l, i = gpu.local_id(0), gpu.global_id(0)
    local t = gpu.shared("int32_t", 4)
    t[l] = i * 10
    print("before", i)
    gpu.barrier()
    print("after", i, t[(l + 1) % 4])
    o[i] = t[l]
  end, { backend = be })
  k:launch({ global = 8, group = 4 }, ffi.new("int32_t[8]"))
end

C.overflow = function()
  local k = gpu.kernel(function(n)
    local i = gpu.global_id(0)
    if i < n then print("line", i) end
  end, { backend = be, print_buffer = 64 })
  k:launch(1, 1)           -- one record (24 bytes) fits
  print("--")
  k:launch(10, 10)         -- two fit, eight do not
end

C.table = function()   -- a Lua table argument and a value read from it
  local k = gpu.kernel(function(t)
    local i = gpu.global_id(0)
    print(i, t[i + 1])
  end, { backend = be })
  k:launch(3, { 1.5, -0.0, 3 })
end

print("-- " .. case)
C[case]()
print("-- end")
