-- inspect: what each backend would compile a kernel with (its compile job,
-- docs/plugins.md), and what a plugin sees at each stage of the pipeline.
--
--   luajit examples/inspect.lua [backend]
--
-- For every backend that can compile here (cpu, opencl when a device is
-- present, cuda even without a GPU: it compiles PTX offline) prints the job
-- of a saxpy kernel: target triple, CPU or sm, features, address spaces,
-- libraries, the pass pipeline and the gj.* intrinsics the job lowers.
-- Then, on the given (or default) backend, a small Lua plugin prints one
-- line per stage it runs at, and the kernel is launched and checked.

local ffi = require("ffi")
local gpu = require("gpujit")

local function saxpy(y, x, a)
  local i = gpu.global_id()
  y[i] = a * x[i] + y[i]
end
local types = { "float[]", "float[]", "float" }
local k = gpu.kernel(saxpy, { name = "saxpy" })

local function intrinsics_of(text)
  local names = {}
  for name in text:gmatch("define[^@]*@(gj%.[%w_.]+)%(") do names[#names + 1] = name end
  return table.concat(names, " ")
end

local function show(backend)
  local ok, job = pcall(gpu.job, k, types, backend)
  if not ok then
    print(("== %s: cannot compile here (%s)"):format(backend, job))
    return
  end
  print("== " .. backend)
  print("  triple       " .. job.triple)
  print("  cpu          " .. job.cpu)
  local feats = job.features
  if #feats > 72 then feats = feats:sub(1, 69) .. "..." end
  print("  features     " .. (feats ~= "" and feats or "(none)"))
  print(("  addr spaces  global %d, shared %d, local %d"):format(job.address_spaces.global,
    job.address_spaces.shared, job.address_spaces["local"]))
  print("  work groups  " .. (job.serial_groups and "serial (one thread runs a group)" or "concurrent"))
  for _, lib in ipairs(job.libraries) do
    print("  library      " .. lib.path .. " (when a " .. lib.prefix .. "* function is called)")
  end
  print("  passes       " .. job.passes)
  print("  codegen      " .. job.opt_level)
  print("  target id    " .. (job.target_id ~= "" and job.target_id or "(none)"))
  local intr = intrinsics_of(job.intrinsics)
  if #intr > 100 then intr = intr:sub(1, 97) .. "..." end
  print("  intrinsics   " .. intr)
end

local seen = {}
for _, b in ipairs(gpu.backends()) do
  if b.name ~= "sim" and not seen[b.name] then
    seen[b.name] = true
    show(b.name)
  end
end

-- A plugin that reports each stage, applied to one kernel.
local backend = arg and arg[1]
if backend then gpu.use(backend) end
gpu.plugin({
  name = "show_stages",
  job = function(job) print("  job        passes " .. job.passes) end,
  frontend = function(info)
    for _, f in ipairs(info.functions) do
      print(("  frontend   %s(%s) at %s:%d"):format(f.name, table.concat(f.params, ", "), f.source, f.line))
    end
  end,
  ir = function(text) print(("  ir         %d lines of LLVM IR"):format(select(2, text:gsub("\n", "")))) end,
  optimize = function(passes) print("  optimize   " .. passes) end,
  optimized = function(text) print(("  optimized  %d lines"):format(select(2, text:gsub("\n", "")))) end,
  emit = function(art) print(("  emit       %d bytes"):format(#art)) end,
})
print("== stages of kernel saxpy on " .. gpu.backend())
local kp = gpu.kernel(saxpy, { name = "saxpy", plugins = { "show_stages" }, cache = false })
local n = 1000
local x, y = ffi.new("float[?]", n), ffi.new("float[?]", n)
for i = 0, n - 1 do x[i], y[i] = i, 1 end
kp:launch(n, y, x, 2)
for i = 0, n - 1 do
  if y[i] ~= 2 * i + 1 then
    error(("y[%d] = %g, expected %g"):format(i, y[i], 2 * i + 1))
  end
end
print("ok: " .. n .. " elements checked")
