-- What the gallery examples share: the backend argument, where output files
-- go, a clock, and the self-check that ends the process with status 1.
--
--   local ex = require("example")     -- examples/lib on package.path
--   local gpu = ex.gpu()              -- gpujit on arg[1]'s backend, if given
local ffi = require("ffi")

local ex = {}

-- gpujit, switched to the backend named by the script's first argument
-- ("cpu", "opencl", "sim", ...; none or "" keeps the default).
function ex.gpu()
  local gpu = require("gpujit")
  local name = ex.arg(1)
  if name then gpu.use(name) end
  return gpu
end

-- The script's argument i, or default when it is absent or "".
function ex.arg(i, default)
  local v = arg and arg[i]
  if v == nil or v == "" then return default end
  return v
end

-- A path for an output file: in $GPUJIT_EXAMPLE_OUT (make examples sets
-- build/examples) or the current directory.
function ex.out(file)
  return (os.getenv("GPUJIT_EXAMPLE_OUT") or ".") .. "/" .. file
end

-- The folder of the running example (to find files next to it).
function ex.dir()
  return (arg and arg[0] or ""):match("^(.*)/[^/]*$") or "."
end

pcall(ffi.cdef, [[
  struct gj_example_timespec { long tv_sec; long tv_nsec; };
  int clock_gettime(int clk, struct gj_example_timespec *ts);
]])
local ts = ffi.new("struct gj_example_timespec")
-- Wall-clock seconds (CLOCK_MONOTONIC).
function ex.now()
  ffi.C.clock_gettime(1, ts)
  return tonumber(ts.tv_sec) + tonumber(ts.tv_nsec) * 1e-9
end

-- The example's verdict: prints it, and exits with status 1 when wrong.
function ex.check(name, ok, detail)
  if ok then
    print(name .. ": ok, " .. detail)
  else
    io.stderr:write(name .. ": WRONG, " .. detail .. "\n")
    os.exit(1)
  end
end

return ex
