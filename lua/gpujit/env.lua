-- gpujit.env: every GPUJIT_* environment variable the module reads, with
-- its parser, in one table (docs/api.md, "Environment variables").
--
-- The rule, the same for each: unset or empty is the default; a value
-- that does not parse is a Lua error naming the variable, the value and
-- what it takes (never ignored, never a guess).  It is raised where the
-- variable is read: by require("gpujit") for those read once at load
-- (M.check_all; the C parts read them later, and find them valid), by
-- gpu.kernel for GPUJIT_TIMEOUT and GPUJIT_BOUNDSCHECK, and by each compile
-- for GPUJIT_VECTORIZE (M.get, which reads the environment each time).
local each = pairs   -- each(t), never pairs(t), in loops: docs/reliability.md, "pairs loops"
local ffi = require("ffi")

local M = {}

local lower = string.lower

-- Parsers: text (not empty) -> value, or nil and what the variable takes.
local truth = { ["1"] = true, ["true"] = true, yes = true, on = true,
                ["0"] = false, ["false"] = false, no = false, off = false }

local function boolean(s)
  local v = truth[lower(s)]
  if v == nil then return nil, "1 or 0 (also true/false, yes/no, on/off)" end
  return v
end

local function any_text(s) return s end

local function seconds(s)
  local v = s:match("^%s*[%d%.eE+-]+%s*$") and tonumber(s)
  if not (v and v > 0 and v < 1e9) then return nil, "a number of seconds > 0 (e.g. 2 or 0.5)" end
  return v
end

local function threads(s)
  local v = s:match("^%d+$") and tonumber(s)
  if not (v and v <= 4096) then
    return nil, "a whole number of threads, 1 to 4096 (0: one per CPU)"
  end
  return v
end

local function verbose(s)
  local b = truth[lower(s)]
  if b ~= nil then return b end
  if s:match("^%d+$") then return tonumber(s) > 0 end
  return nil, "1 or 0 (also true/false, yes/no, on/off)"
end

local function one_of(list)
  local set = {}
  for _, w in ipairs(list) do set[w] = true end
  local want = "one of " .. table.concat(list, ", ")
  return function(s)
    if set[s] then return s end
    return nil, want
  end
end

local dump_words = { llvm = true, asm = true, module = true }
local function dump(s)
  for w in (s .. ","):gmatch("([^,]*),") do
    if not dump_words[w] then return nil, "a comma-separated list of llvm, asm, module" end
  end
  return s
end

local function cuda_arch(s)
  if s:match("^sm_%d+a?$") or s:match("^compute_%d+a?$") or s:match("^%d+$") then return s end
  return nil, "sm_XX, compute_XX or XX (e.g. sm_80)"
end

-- The disk cache's size: the core's own parser (src/gj_cache.c), so that
-- what is accepted here is what the cache reads.
require("gpujit.cdefs")
local size_out = ffi.new("uint64_t[1]")
local core_lib   -- set by M.setup
local function size(s)
  local want = "a size in bytes (1000000, 1e9, or with K, M or G: 512M, 1.5G)"
  if not core_lib then return s end   -- no core: nothing reads it
  if core_lib.gj_cache_parse_size(s, size_out) ~= 0 then return nil, want end
  return tonumber(size_out[0])
end

-- name -> { parse, when }: when is "load" (checked by require("gpujit"))
-- or what reads it later ("gpu.kernel", "compile").
local vars = {
  GPUJIT_BACKEND = { parse = any_text, when = "load" },        -- gpu.use's rules (init.lua)
  GPUJIT_THREADS = { parse = threads, when = "load" },         -- runtimes/pool.c
  GPUJIT_CUDA_ARCH = { parse = cuda_arch, when = "load" },     -- runtimes/cuda.c
  GPUJIT_LIBDEVICE = { parse = any_text, when = "load" },      -- a path
  GPUJIT_BOUNDSCHECK = { parse = boolean, when = "gpu.kernel" },
  GPUJIT_VECTORIZE = { parse = boolean, when = "compile" },
  GPUJIT_TIMEOUT = { parse = seconds, when = "gpu.kernel" },
  GPUJIT_DUMP = { parse = dump, when = "load" },               -- src/gj_pipeline.c
  GPUJIT_VERBOSE = { parse = verbose, when = "load" },
  GPUJIT_CACHE_DIR = { parse = any_text, when = "load" },      -- a path
  GPUJIT_CACHE = { parse = boolean, when = "load" },
  GPUJIT_CACHE_MAX = { parse = size, when = "load" },          -- src/gj_cache.c
  GPUJIT_PRECOMPILE = { parse = boolean, when = "load" },
  GPUJIT_PLUGIN_PATH = { parse = any_text, when = "load" },    -- templates
  GPUJIT_OPENCL_FORMAT = { parse = one_of({ "spir", "spirv", "ptx" }), when = "load" },
  GPUJIT_LLVM_SPIRV = { parse = any_text, when = "load" },     -- a path
  GPUJIT_LD = { parse = any_text, when = "load" },             -- a path (targets/native_link.c)
  -- read by require("gpujit.mpi") (lua/gpujit/mpi_abi.lua), not by gpujit itself
  GPUJIT_MPI_LIB = { parse = any_text, when = "gpujit.mpi" },  -- a library's name or path
  GPUJIT_MPI_CUDA_AWARE = { parse = boolean, when = "gpujit.mpi" },
}
M.vars = vars

-- The value of variable name (nil: unset or empty, the default); an
-- invalid one raises "<who>: GPUJIT_X='v' is not valid: it takes ..." at
-- level (default: the caller's caller; 0: no position).
function M.get(name, who, level)
  local d = vars[name]
  if not d then
    error("gpujit internal error: no environment variable " .. tostring(name) .. " in gpujit.env", 2)
  end
  local s = os.getenv(name)
  if s == nil or s == "" then return nil end
  local v, want = d.parse(s)
  if v == nil then
    error((who or "gpujit") .. ": " .. name .. "='" .. s .. "' is not valid: it takes " .. want,
      level == 0 and 0 or (level or 2) + 1)
  end
  return v
end

-- GPUJIT_* names the repository's scripts and specs use; gpujit reads none.
local SCRIPTS = {
  GPUJIT_SPEC_BACKENDS = true, GPUJIT_SPEC_CORE = true, GPUJIT_SPEC_CPATH = true,
  GPUJIT_SPEC_PTX_DIR = true, GPUJIT_EXAMPLE_OUT = true, GPUJIT_FUZZ_SPEC_N = true,
  GPUJIT_FUZZ_BATCH = true, GPUJIT_FUZZ_OUT = true, GPUJIT_FUZZ_VERBOSE = true,
  GPUJIT_FUZZ_NARROW = true,
  GPUJIT_LUA_DIR = true, GPUJIT_CPATH_DIR = true,
}

-- libc's environ under a private name (a user's own declaration of
-- `environ`, of whatever type, must not clash with gpujit's)
pcall(ffi.cdef, [[extern char **gj_env_environ asm("environ");]])

-- A GPUJIT_* variable of the environment that gpujit does not know (a
-- misspelt name: GPUJIT_BOUNDCHECK) is not an error, since other programs
-- may share the prefix, but it is never silent: one line on stderr per
-- state, with the name meant when one is close.
local function warn_unknown()
  local ok, envp = pcall(function() return ffi.C.gj_env_environ end)
  if not ok or envp == nil then return end
  local i = 0
  while envp[i] ~= nil do
    local name = ffi.string(envp[i]):match("^(GPUJIT_[^=]*)=")
    if name and not vars[name] and not SCRIPTS[name] then
      local near = require("gpujit.keys").closest(name, vars)
      io.stderr:write("gpujit: warning: ", name, " is not a variable gpujit reads",
        near and (" (did you mean " .. near .. "?)") or "", "; it is ignored\n")
    end
    i = i + 1
  end
end

-- Every variable read at load, checked (require("gpujit") calls it), and
-- unknown GPUJIT_* names reported.
function M.check_all(lib)
  core_lib = lib
  warn_unknown()
  local names = {}
  for name, d in each(vars) do
    if d.when == "load" then names[#names + 1] = name end
  end
  table.sort(names)
  for _, name in ipairs(names) do M.get(name, "require('gpujit')", 0) end
end

-- The disk cache's directory: GPUJIT_CACHE_DIR, else $XDG_CACHE_HOME/gpujit,
-- else $HOME/.cache/gpujit, else nil (neither set: a daemon, a container,
-- env -i): no disk cache.  Never the current directory, and never a
-- guessable name under /tmp, where another user could put entries first
-- (entries are machine code that gpujit loads).
function M.cache_dir()
  local d = M.get("GPUJIT_CACHE_DIR", "gpu.cache")
  if d then return d end
  d = os.getenv("XDG_CACHE_HOME")
  if d and d ~= "" then return d .. "/gpujit" end
  d = os.getenv("HOME")
  if d and d ~= "" then return d .. "/.cache/gpujit" end
  return nil
end

return M
