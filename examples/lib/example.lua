-- What the gallery examples share: the backend argument, where output files
-- go, and the self-check that ends the process with status 1.  (The clock
-- and result checks are gpujit.util's, installed with the module.)
--
--   local ex = require("example")            -- examples/lib on package.path
--   local gpu = ex.gpu(require("gpujit"), arg)   -- on arg[1]'s backend, if given
--
-- The script's own `arg` and `require("gpujit")` are passed in, so that a
-- script run with another arg or gpujit (spec/differential_spec.lua runs
-- every example with a gpujit that compares each kernel with sim) gets those.
local ex = {}

-- gpu, switched to the backend named by the script's first argument
-- ("cpu", "opencl", "sim", ...; none or "" keeps the default).
function ex.gpu(gpu, args)
  local name = ex.arg(args, 1)
  if name then gpu.use(name) end
  return gpu
end

-- The script's argument i (args: its `arg`), or default when it is absent
-- or "".
function ex.arg(args, i, default)
  local v = args and args[i]
  if v == nil or v == "" then return default end
  return v
end

-- A path for an output file: in $GPUJIT_EXAMPLE_OUT (make examples sets
-- build/examples) or the current directory.
function ex.out(file)
  return (os.getenv("GPUJIT_EXAMPLE_OUT") or ".") .. "/" .. file
end

-- The folder of the running example (args: its `arg`).
function ex.dir(args)
  return (args and args[0] or ""):match("^(.*)/[^/]*$") or "."
end

-- The example's verdict: a line to print when ok; else an error (the
-- process exits with status 1).
function ex.check(name, ok, detail)
  if not ok then error(name .. ": WRONG, " .. detail, 0) end
  return name .. ": ok, " .. detail
end

return ex
