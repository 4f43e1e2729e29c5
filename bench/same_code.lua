-- The optimized IR and assembly of every bench kernel (bench/kernels.lua) for
-- the signatures the benchmarks launch (Lua-number sizes as their class, and
-- int32), on one backend: cpu, opencl (SPIR, or SPIR-V with
-- GPUJIT_OPENCL_FORMAT=spirv) or cuda (PTX; no GPU needed).  For checking
-- that a change meant to leave the generated code alone does: run it with
-- two builds and diff, e.g. from a worktree of the old commit
--   LUA_PATH=... LUA_CPATH=build/?.so luajit /path/to/bench/same_code.lua cpu > old.txt
local gpu = require("gpujit")
local K = dofile((arg[0]:gsub("[^/]*$", "")) .. "kernels.lua")
local backend = arg[1] or "cpu"
local dev = backend == "cuda" and "cuda" or nil
if not dev then gpu.use(backend) end
local F, I, L20, L31 = "float[]", "int32_t", "lua_pos20", "lua_pos31"
local sigs = {
  saxpy = { { F, F, "double", L31 }, { F, F, "double", I } },
  conv3 = { { F, F, F, L20, L20 }, { F, F, F, I, I } },
  mandel = { { "int32_t[]", L20, L20, L20 }, { "int32_t[]", I, I, I } },
  nbody = { { F, F, F, F, F, F, F, L20, "double" } },
  matmul = { { F, F, F, L20 }, { F, F, F, I } },
  matmul_tiled = { { F, F, F, L20, L20 } },
}
local names = {}
for n in pairs(sigs) do names[#names + 1] = n end
table.sort(names)
for _, n in ipairs(names) do
  local k = gpu.kernel(K[n], { name = n, precision = "single" })
  for i, s in ipairs(sigs[n]) do
    io.write("==== ", n, " ", i, " llvm\n", k:inspect_llvm(s, dev), "\n")
    io.write("==== ", n, " ", i, " asm\n", k:inspect_asm(s, dev), "\n")
  end
end
