-- SPIR-V on the opencl backend (targets/spirv.c, docs/backends.md).
-- Debian's PoCL takes SPIR and no SPIR-V, so these specs ask for SPIR-V
-- with GPUJIT_OPENCL_FORMAT=spirv in child processes: gpujit then emits
-- SPIR-V (checked by spirv-val), and translates it back to SPIR for PoCL,
-- which runs it.  The last spec runs the whole suite that way.
local H = require("spec.helpers")
local gpu = H.gpu

if not H.testing("opencl") then return end

local q = function(v) return "'" .. tostring(v):gsub("'", "'\\''") .. "'" end

local function on_path(tool)
  local p = io.popen("command -v " .. tool .. " 2>/dev/null")
  local out = p:read("*a")
  p:close()
  return out ~= ""
end
local tools = on_path("llvm-spirv-15") and on_path("spirv-val") and on_path("spirv-dis")
local no_tools = "needs llvm-spirv-15 and spirv-tools (make deps installs them)"

local function it_tools(name, fn)
  if tools then return it(name, fn) end
  return pending(name .. " [" .. no_tools .. "]")
end

local SPIRV = { GPUJIT_OPENCL_FORMAT = "spirv" }

-- Run code on opencl with env (default SPIRV); returns its output,
-- asserting it exited 0.  GPUJIT_OPENCL_FORMAT is "" (each device's own
-- format) unless env sets it: this file also runs inside the SPIR-V run.
local function child(code, env)
  local e = { GPUJIT_OPENCL_FORMAT = "" }
  for k, v in pairs(env or SPIRV) do e[k] = v end
  local ok, out = H.run_isolated("opencl", code, e)
  assert(ok, out)
  return out
end

local saxpy = [[
local function saxpy(y, x, a)
  local i = gpu.global_id(0)
  y[i] = a * x[i] + y[i]
end
]]

describe("opencl: SPIR-V", function()
  setup(function() H.need("opencl") end)

  it("each device lists its program format and whether math.* is the host's", function()
    for _, d in ipairs(gpu.devices()) do
      if d.backend == "cpu" then
        assert.are.equal("object", d.format)
        assert.is_true(d.host_math)
      end
    end
    -- PoCL: SPIR, with the host's libm; asked for SPIR-V, its own builtins
    local out = child([[
      for _, d in ipairs(gpu.devices()) do
        if d.backend == "opencl" then print(d.format, d.host_math) end
      end]], {})
    assert.is_truthy(out:find("^spir\ttrue"), out)
    out = child([[print(gpu.device().format, gpu.device().host_math)]])
    assert.is_truthy(out:find("^spirv\tfalse"), out)
  end)

  it("GPUJIT_OPENCL_FORMAT names a format the device takes, or the device says why not", function()
    local code = saxpy .. [[
      local ok, err = pcall(gpu.job, gpu.kernel(saxpy), { "float[]", "float[]", "float" })
      print(ok, err)]]
    -- not a format at all: require("gpujit") refuses it (gpujit.env)
    local ok, out = H.run_isolated("opencl", code, { GPUJIT_OPENCL_FORMAT = "bogus" })
    assert.is_false(ok, out)
    assert.is_truthy(out:find("require('gpujit'): GPUJIT_OPENCL_FORMAT='bogus' is not valid: it takes "
      .. "one of spir, spirv, ptx", 1, true), out)
    out = child(code, { GPUJIT_OPENCL_FORMAT = "ptx" })
    assert.is_truthy(out:find("GPUJIT_OPENCL_FORMAT=ptx, and it is not NVIDIA's", 1, true), out)
    out = child(code, { GPUJIT_OPENCL_FORMAT = "spir" })
    assert.is_truthy(out:find("^true"), out)
  end)

  it_tools("the job is SPIR's with format spirv, the translator's options and its identity", function()
    local out = child(saxpy .. [[
      local j = gpu.job(gpu.kernel(saxpy), { "float[]", "float[]", "float" })
      print(j.format .. "|" .. j.features .. "|" .. j.triple .. "|" .. j.target_id)
      local types = { "float[]", "float[]", "float" }
      print(pcall(gpu.job, gpu.kernel(saxpy, { job = { format = "spir" } }), types))
      print(pcall(gpu.job, gpu.kernel(saxpy, { job = { features = "-o /tmp/x" } }),
        { "float[]", "float[]", "float" }))]])
    assert.is_truthy(out:find("spirv|--spirv-max-version=1.0|spir64-unknown-unknown|", 1, true), out)
    -- the translator's BLAKE3 is part of the key; PoCL takes it back as SPIR
    assert.is_truthy(out:find("|llvm%-spirv %x+|via SPIR"), out)
    assert.is_truthy(out:find("job.format cannot be changed", 1, true), out)
    -- features are checked when the kernel compiles (next spec), not here
    assert.is_truthy(out:find("\ntrue", 1, true), out)
  end)

  it_tools("inspect_asm is spirv-dis's text: both entry points, a kernel's capabilities", function()
    local out = child(saxpy .. [[
      io.write(gpu.kernel(saxpy, { name = "sx" }):inspect_asm({ "float[]", "float[]", "float" }))
      local k = gpu.kernel(saxpy, { job = { features = "-o /tmp/x" } })
      print(pcall(k.inspect_asm, k, { "float[]", "float[]", "float" }))]])
    assert.is_truthy(out:find("; Generator: Khronos LLVM/SPIR-V Translator", 1, true), out)
    assert.is_truthy(out:find("OpCapability Kernel", 1, true), out)
    assert.is_truthy(out:find("OpMemoryModel Physical64 OpenCL", 1, true), out)
    assert.is_truthy(out:find('OpEntryPoint Kernel %%%d+ "gj_kernel"'), out)
    assert.is_truthy(out:find('OpEntryPoint Kernel %%%d+ "gj_kernel_exact"'), out)
    assert.is_truthy(out:find("BuiltIn GlobalInvocationId", 1, true), out)
    assert.is_truthy(out:find("each a --spirv-* option; not '-o'", 1, true), out)
  end)

  it_tools("runs kernels through SPIR-V: shared memory, barriers, atomics, saturating conversions", function()
    -- the same launch on cpu and on opencl through SPIR-V must agree
    local out = child([[
      local n = 1024
      local x = ffi.new("double[?]", n)
      for i = 0, n - 1 do x[i] = (i % 37) * 0.5 - 4 end
      x[3], x[4], x[5], x[6] = 0 / 0, 1e300, -1e300, 2^31 + 0.5
      -- a float atomic add (a CAS loop in SPIR-V), a 64-bit one, shared memory,
      -- and numbers stored into int32_t (saturating conversions)
      local function mix(hf, hl, toint, xs)
        local t = gpu.shared("double", 64)
        local l, i = gpu.local_id(0), gpu.global_id(0)
        t[l] = xs[i]
        gpu.barrier()
        local v = t[63 - l]
        toint[i] = v
        if v == v and v < 1e10 and v > -1e10 then
          gpu.atomic_add(hf, v % 4, 0.25)
          gpu.atomic_add(hl, 0, i)
        end
      end
      local asm = gpu.kernel(mix):inspect_asm({ "float[]", "int64_t[]", "int32_t[]", "double[]" })
      print("cas", asm:find("OpAtomicCompareExchange", 1, true) ~= nil,
        "fadd", asm:find("OpAtomicFAdd", 1, true) ~= nil,
        "sat", asm:find("SaturatedConversion", 1, true) ~= nil,
        "barrier", asm:find("OpControlBarrier", 1, true) ~= nil,
        "loopmerge", asm:find("OpLoopMerge", 1, true) ~= nil)
      local res = {}
      for _, bk in ipairs({ "opencl", "cpu" }) do
        gpu.use(bk)
        local r = { hf = ffi.new("float[4]"), hl = ffi.new("int64_t[1]"), ti = ffi.new("int32_t[?]", n) }
        gpu.kernel(mix):launch({ global = n, group = 64 }, r.hf, r.hl, r.ti, x)
        res[bk] = r
      end
      local a, b, bad = res.opencl, res.cpu, 0
      for i = 0, n - 1 do if a.ti[i] ~= b.ti[i] then bad = bad + 1 end end
      for i = 0, 3 do if a.hf[i] ~= b.hf[i] then bad = bad + 1 end end
      print("bad", bad, "sum", tonumber(a.hl[0]) == tonumber(b.hl[0]) and tonumber(b.hl[0]) > 0,
        "nan", a.ti[63 - 3], "big", a.ti[63 - 4], b.ti[63 - 4])]])
    assert.is_truthy(out:find("cas\ttrue\tfadd\tfalse\tsat\ttrue\tbarrier\ttrue\tloopmerge\tfalse",
      1, true), out)
    assert.is_truthy(out:find("bad\t0\tsum\ttrue", 1, true), out)
  end)

  it_tools("names a missing or failing translator, and invalid SPIR-V; the module goes on", function()
    local dir = H.tmpdir()
    local function script(name, body)
      local path = dir .. "/" .. name
      local f = assert(io.open(path, "w"))
      f:write("#!/bin/sh\n", body, "\n")
      f:close()
      os.execute("chmod +x " .. q(path))
      return path
    end
    -- a translator that fails, and one whose output is not valid SPIR-V
    local failing = script("failing", "echo 'cannot translate: reasons' >&2; exit 3")
    local garbage = script("garbage", [[
out=; while [ $# -gt 0 ]; do if [ "$1" = -o ]; then out=$2; fi; shift; done
printf '\003\002\043\007\000\000\001\000\000\000\000\000\005\000\000\000' > "$out"
printf '\000\000\000\000\001\000\000\000' >> "$out"]])
    local code = saxpy .. [[
      local y, x = ffi.new("float[4]", 1, 1, 1, 1), ffi.new("float[4]", 1, 2, 3, 4)
      local k = gpu.kernel(saxpy, { name = "sx" })
      print(pcall(k.launch, k, 4, y, x, 2))
      gpu.use("cpu")
      gpu.kernel(saxpy):launch(4, y, x, 2)
      print("after", y[3])]]
    local out = child(code, { GPUJIT_OPENCL_FORMAT = "spirv", GPUJIT_LLVM_SPIRV = dir .. "/none" })
    assert.is_truthy(out:find("GPUJIT_LLVM_SPIRV=" .. dir .. "/none is not an executable file", 1, true), out)
    assert.is_truthy(out:find("after\t9", 1, true), out)
    out = child(code, { GPUJIT_OPENCL_FORMAT = "spirv", GPUJIT_LLVM_SPIRV = failing })
    assert.is_truthy(out:find("translating to SPIR-V: failing failed (exit status 3):\n"
      .. "cannot translate: reasons", 1, true), out)
    assert.is_truthy(out:find("after\t9", 1, true), out)
    out = child(code, { GPUJIT_OPENCL_FORMAT = "spirv", GPUJIT_LLVM_SPIRV = garbage })
    assert.is_truthy(out:find("the translator made invalid SPIR-V", 1, true), out)
    assert.is_truthy(out:find("spirv-val failed", 1, true), out)
    assert.is_truthy(out:find("after\t9", 1, true), out)
    os.execute("rm -rf " .. q(dir))
  end)

  it_tools("the cache keeps the device binary: a new process loads it without the translator", function()
    local dir = H.tmpdir()
    local code = saxpy .. [[
      local y, x = ffi.new("float[4]", 1, 1, 1, 1), ffi.new("float[4]", 1, 2, 3, 4)
      gpu.kernel(saxpy, { name = "sx", cache = true }):launch(4, y, x, 2)
      local s = gpu.cache.stats()
      print("y3", y[3], "hits", s.hits, "compiles", s.compiles)]]
    local env = { GPUJIT_OPENCL_FORMAT = "spirv", GPUJIT_CACHE_DIR = dir }
    local out = child(code, env)
    assert.is_truthy(out:find("y3\t9\thits\t0\tcompiles\t1", 1, true), out)
    out = child(code, env)
    assert.is_truthy(out:find("y3\t9\thits\t1", 1, true), out)
    -- SPIR and SPIR-V builds of one kernel are two entries
    out = child(code, { GPUJIT_CACHE_DIR = dir })
    assert.is_truthy(out:find("y3\t9\thits\t0", 1, true), out)
    os.execute("rm -rf " .. q(dir))
  end)

  -- The suite again on opencl, every kernel through SPIR-V; each module is
  -- checked by spirv-val before PoCL gets it back as SPIR.  Math differs
  -- from LuaJIT's within OpenCL's bounds there (host_math false).
  it_tools("the whole suite runs through SPIR-V, every module valid", function()
    if os.getenv("GPUJIT_OPENCL_FORMAT") then return pending("inside the SPIR-V run itself") end
    if (" " .. (os.getenv("GJ_SPEC_RUNS") or "") .. " "):find(" spirv ", 1, true) then
      return pending("spec/parts.sh runs it: its 'spirv' run, a part per spec file")
    end
    local t0 = os.time()
    local busted = os.getenv("BUSTED") or "/usr/bin/busted"
    local env = { GPUJIT_OPENCL_FORMAT = "spirv", GPUJIT_SPEC_BACKENDS = "opencl" }
    local p = assert(io.popen(H.luajit_cmd(env) .. " " .. q(busted)
      .. " --exclude-pattern=cuda_spec -o TAP spec 2>&1"))
    local out = p:read("*a")
    p:close()
    local fails = {}
    for line in out:gmatch("[^\n]+") do
      if line:find("^not ok") then fails[#fails + 1] = line end
    end
    local plan = tonumber(out:match("\n1%.%.(%d+)"))
    local oks = select(2, out:gsub("\nok ", ""))
    print(string.format("\n[opencl SPIR-V run: %s specs, %d passed, %d failed, %d s]",
      tostring(plan), oks, #fails, os.time() - t0))
    assert.is_truthy(plan, "the SPIR-V run did not finish:\n" .. out:sub(-2000))
    assert.are.same({}, fails, out:sub(-3000))
    assert.is_true(oks >= 500, "only " .. oks .. " specs passed")
  end)
end)
