-- The cuda backend (runtimes/cuda*.c, targets/ptx_cuda.c, targets/ptx.c).  Three parts:
--   * what runs anywhere: the backend's listing, PTX compiled without a
--     device (inspect_asm) and what it contains, the errors of a machine
--     without a GPU;
--   * the PTX of every kernel the suite compiles, assembled by ptxas;
--   * what needs an NVIDIA GPU: pending, with the reason, where there is none.
-- The shared specs run on cuda too with GPUJIT_SPEC_BACKENDS=cuda (on a GPU).
local H = require("spec.helpers")
local ffi = H.ffi
local gpu = H.gpu

local function cuda_entry()
  for _, b in ipairs(gpu.backends()) do
    if b.name == "cuda" then return b end
  end
end

local function cuda_devices()
  local out = {}
  for _, d in ipairs(gpu.devices()) do
    if d.backend == "cuda" then out[#out + 1] = d end
  end
  return out
end

local has_device = #cuda_devices() > 0
local no_device = "needs an NVIDIA GPU and its driver (" .. tostring((cuda_entry() or {}).error) .. ")"

-- busted's it, or pending with the reason where there is no CUDA device.
local function it_gpu(name, fn)
  if has_device then return it(name, fn) end
  return pending(name .. " [" .. no_device .. "]")
end

local q = function(v) return "'" .. tostring(v):gsub("'", "'\\''") .. "'" end
local lua_env = "LUA_PATH=" .. q(package.path) .. " LUA_CPATH=" .. q(package.cpath)

-- Run Lua code in a fresh luajit with extra environment; returns its output.
local function run_lua(env, code)
  local p = assert(io.popen("env " .. env .. " " .. lua_env .. " luajit -e " .. q(code) .. " 2>&1"))
  local out = p:read("*a")
  p:close()
  return out
end

local function file_exists(path)
  local f = io.open(path, "r")
  if f then f:close() end
  return f ~= nil
end

local find_ptxas = H.find_ptxas

local function ptx(fn, types, name)
  return gpu.kernel(fn, { name = name or "k", cache = false }):inspect_asm(types, "cuda")
end

describe("cuda backend without a device", function()
  it("is listed; without a device it is unavailable for launching, with the reason", function()
    local b = assert(cuda_entry(), "cuda is compiled in")
    if has_device then
      assert.is_true(b.available)
    else
      assert.is_false(b.available)
      assert.is_true(b.offline)
      assert.is_truthy(b.error:find("libcuda.so.1", 1, true) or b.error:find("no CUDA device", 1, true)
        or b.error:find("cuInit", 1, true), b.error)
      assert.is_truthy(b.error:find("compile to PTX", 1, true), b.error)
    end
  end)

  it("compiles to PTX anywhere: an entry, ids from the special registers, the guard on the size", function()
    local s = ptx(function(y, x, a)
      local i = gpu.global_id(0)
      y[i] = a * x[i] + gpu.global_size(0)
    end, { "float[]", "float[]", "float" }, "saxpy")
    assert.is_truthy(s:find(".version 7.5", 1, true), s)
    assert.is_truthy(s:find(".target sm_%d%d"), s)
    assert.is_truthy(s:find(".visible .entry gj_kernel(", 1, true), s)
    for _, reg in ipairs({ "%tid.x", "%ctaid.x", "%ntid.x" }) do
      assert.is_truthy(s:find(reg, 1, true), reg)
    end
    -- a block beyond the real size returns: a compare with a parameter and a branch
    assert.is_truthy(s:find("setp%.[lg][te]%.u64"), s)
    assert.is_truthy(s:find("ld.global.f32", 1, true) and s:find("st.global.f32", 1, true), s)
  end)

  it("targets sm_80 without a device, or GPUJIT_CUDA_ARCH's architecture", function()
    if has_device then return pending("a CUDA device is present: the target is its architecture") end
    local code = "local gpu = require('gpujit'); io.write(gpu.kernel(function(a) a[0] = 1 end)"
      .. ":inspect_asm({ 'int32_t[]' }, 'cuda'):match('%.target (sm_%d+)'))"
    assert.are.equal("sm_80", run_lua("-u GPUJIT_CUDA_ARCH", code))
    assert.are.equal("sm_70", run_lua("GPUJIT_CUDA_ARCH=sm_70", code))
    assert.are.equal("sm_86", run_lua("GPUJIT_CUDA_ARCH=90", code))  -- capped at what LLVM 15 knows
    local bad = run_lua("GPUJIT_CUDA_ARCH=volta", code)
    -- gpujit.env checks it at require, as every GPUJIT_* variable
    assert.is_truthy(bad:find("GPUJIT_CUDA_ARCH='volta' is not valid: it takes sm_XX", 1, true), bad)
  end)

  it("compiles work groups: bar.sync, .shared arrays, native float and double atomics", function()
    local s = ptx(function(out, x, d)
      local t = gpu.shared("float", 64)
      local l = gpu.local_id(0)
      t[l] = x[gpu.global_id(0)]
      gpu.barrier()
      gpu.atomic_add(out, 0, t[63 - l])
      gpu.atomic_add(d, 0, 1.5)
    end, { "float[]", "float[]", "double[]" }, "groups")
    assert.is_truthy(s:find("bar.sync", 1, true), s)
    assert.is_truthy(s:find(".shared .align %d+ .b8 [%w_$]+%[256%]"), s)
    assert.is_truthy(s:find("st.shared.f32", 1, true), s)
    assert.is_truthy(s:find("atom.global.add.f32", 1, true), s)
    assert.is_truthy(s:find("atom.global.add.f64", 1, true), s)
    assert.is_falsy(s:find("atom.global.cas", 1, true), s)
  end)

  it("links libdevice's math into the module: no __nv_ function or extern is left", function()
    local s = ptx(function(y, x)
      local i = gpu.global_id(0)
      y[i] = math.sin(x[i]) + math.exp(x[i]) + math.atan2(x[i], 2) + math.fmod(x[i], 3) + x[i] ^ 1.5
    end, { "double[]", "double[]" }, "mathk")
    assert.is_falsy(s:find("__nv_", 1, true), s)
    assert.is_falsy(s:find(".extern", 1, true), s)
    assert.is_truthy(s:find("fma.rn.f64", 1, true), s)   -- the polynomials are in the module
    -- what is still a call (libdevice's slow paths) is a function of the module
    for name in s:gmatch("%.func%s+%b()%s*([%w_$]+)") do
      assert.is_truthy(s:find("%.func%s+%b()%s*" .. name:gsub("%$", "%%$") .. "%("), name)
    end
  end)

  it("bounds-checked kernels: the fault record is one more parameter, claimed with atom.cas; "
    .. "unchecked kernels have neither", function()
    local f = function(y, x, n)
      local i = gpu.global_id(0)
      y[i] = x[i + n] * 2
    end
    local types = { "float[]", "float[]", "int32_t" }
    local plain = gpu.kernel(f, { name = "plain", cache = false }):inspect_asm(types, "cuda")
    local checked = gpu.kernel(f, { name = "checked", cache = false, boundscheck = true })
      :inspect_asm(types, "cuda")
    local function nparams(s) return select(2, s:gsub("%.param %.[%w]+ gj_kernel_param_%d+", "")) end
    assert.are.equal(nparams(plain) + 1, nparams(checked))
    -- the first fault wins: a compare-and-swap of the site from 0, then the other fields
    assert.is_truthy(checked:find("atom.global.cas.b32", 1, true), checked)
    assert.is_truthy(checked:find("st.global.u64", 1, true), checked)
    assert.is_falsy(plain:find("atom.global", 1, true), plain)
    local ptxas = find_ptxas()
    if not ptxas then return pending("ptxas not found: the checked PTX was compiled, not assembled") end
    local ok, out = H.ptxas(checked)
    assert.is_true(ok, out)
  end)

  it("without libdevice, simple math still compiles and the rest is a clear compile error", function()
    local code = "local gpu = require('gpujit')\n"
      .. "local ok = gpu.kernel(function(a) a[0] = math.sqrt(a[0]) + math.floor(a[1]) end)\n"
      .. "  :inspect_asm({ 'double[]' }, 'cuda')\n"
      .. "local k = gpu.kernel(function(a) a[0] = math.sin(a[0]) end, { name = 'sink' })\n"
      .. "local okk, err = pcall(k.inspect_asm, k, { 'double[]' }, 'cuda')\n"
      .. "io.write(tostring(ok:find('sqrt.rn.f64', 1, true) ~= nil), '|', tostring(okk), '|', err)"
    local out = run_lua("GPUJIT_LIBDEVICE=/nonexistent/libdevice.10.bc", code)
    assert.is_truthy(out:find("^true|false|"), out)
    assert.is_truthy(out:find("math.sin.f64 is not supported", 1, true), out)
    assert.is_truthy(out:find("no libdevice at GPUJIT_LIBDEVICE=/nonexistent", 1, true), out)
    assert.is_truthy(out:find("sink", 1, true), out)
  end)

  it("allocating, using or pinning a kernel to cuda without a device: Lua errors; gpujit goes on", function()
    if has_device then return pending("a CUDA device is present") end
    local msg = H.error_of(gpu.array, "float", 4, "cuda")
    assert.is_truthy(msg:find("cuda", 1, true) and msg:find("not available", 1, true), msg)
    msg = H.error_of(gpu.kernel, function(a) a[0] = 1 end, { backend = "cuda" })
    assert.is_truthy(msg:find("not available", 1, true), msg)
    msg = H.error_of(gpu.use, "cuda")
    assert.is_truthy(msg:find("not available", 1, true), msg)
    local k = gpu.kernel(function(a) a[0] = 1 end, { name = "offline" })
    msg = H.error_of(k.precompile, k, { "double[]" }, "cuda")
    assert.is_truthy(msg:find("not available", 1, true), msg)
    assert.is_truthy(k:inspect_llvm({ "double[]" }, "cuda"):find("nvptx64-nvidia-cuda", 1, true))
    H.sanity(H.backends[1] ~= "sim" and H.backends[1] or "cpu")
  end)

  it("names the driver's errors: the toolkit's stub libcuda gives CUDA_ERROR_STUB_LIBRARY", function()
    local stub
    for _, root in ipairs({ os.getenv("CUDA_HOME") or "", "/usr/local/cuda" }) do
      local path = root .. "/lib64/stubs/libcuda.so"
      if root ~= "" and file_exists(path) then stub = path end
    end
    if not stub then return pending("no CUDA toolkit stub library (lib64/stubs/libcuda.so) here") end
    if has_device then return pending("a real driver is installed") end
    local dir = os.tmpname()
    os.remove(dir)
    os.execute("mkdir -p " .. q(dir) .. " && ln -s " .. q(stub) .. " " .. q(dir .. "/libcuda.so.1"))
    local out = run_lua("LD_LIBRARY_PATH=" .. q(dir),
      "for _, b in ipairs(require('gpujit').backends()) do\n"
      .. "  if b.name == 'cuda' then io.write(b.error) end\nend")
    os.execute("rm -rf " .. q(dir))
    assert.is_truthy(out:find("cuda: cuInit failed: CUDA_ERROR_STUB_LIBRARY", 1, true), out)
  end)
end)

describe("cuda: the PTX of every kernel of the suite", function()
  -- Runs the suite again on the first compiling backend with
  -- GPUJIT_SPEC_PTX_DIR set (spec/helpers.lua), then assembles each PTX.
  -- That run is also the suite with the cpu backend's work-item vectorizer
  -- off (GPUJIT_VECTORIZE=0; PTX does not depend on it): with the main run,
  -- every kernel spec passes vectorized and scalar (issue 24), so it must
  -- pass whole.
  it("compiles to PTX, and ptxas assembles it for its .target without errors; the suite passes "
    .. "with the vectorizer off", function()
    if os.getenv("GPUJIT_SPEC_PTX_DIR") then return pending("inside the PTX run itself") end
    if os.getenv("GJ_SKIP_PTX_CHECK") then
      return pending("GJ_SKIP_PTX_CHECK: a GPU session (spec/gpu_session.sh) leaves it to make test")
    end
    local host = H.compilers[1] == "cuda" and (H.compilers[2] or "cpu") or (H.compilers[1] or "cpu")
    local t0 = os.time()
    -- spec/parts.sh ran the suite as its "ptx" run, a part per spec file (each
    -- part's result is its own): only the PTX that run left is checked here.
    local dir, ok_n = os.getenv("GJ_SPEC_PTX_FROM"), "(spec/parts.sh's ptx run)"
    if dir then
      -- each process of that run wrote its own distinct texts: one of each is kept
      -- (without make check's libasan preload: sort's own leak would be reported)
      assert(os.execute("cd " .. q(dir) .. " && env -u LD_PRELOAD sh -c "
        .. q("md5sum -- *.ptx 2>/dev/null | sort | awk 'seen[$1]++ { print $2 }' | xargs -r rm -f --")) == 0)
    else
      dir = os.tmpname()
      os.remove(dir)
      assert(os.execute("mkdir -p " .. q(dir)) == 0)
      local busted = os.getenv("BUSTED") or "/usr/bin/busted"   -- spec/run.sh's
      local p = assert(io.popen("env GPUJIT_SPEC_PTX_DIR=" .. q(dir) .. " GPUJIT_SPEC_BACKENDS=" .. host
        .. " GPUJIT_VECTORIZE=0 " .. lua_env .. " luajit " .. q(busted)
        .. " --exclude-pattern=cuda_spec spec 2>&1"))
      local out = p:read("*a")
      p:close()
      local fail_n, err_n
      ok_n, fail_n, err_n = out:match("(%d+) success[es]* / (%d+) failures? / (%d+) errors? / %d+ pending")
      assert.is_truthy(ok_n, "the suite's run did not finish:\n" .. out:sub(-2000))
      assert.is_true(tonumber(fail_n) + tonumber(err_n) == 0,
        "the suite with GPUJIT_VECTORIZE=0 on " .. host .. ": " .. fail_n .. " failures, " .. err_n
        .. " errors:\n" .. out:sub(-3000))
    end
    local ls = assert(io.popen("ls " .. q(dir)))
    local nptx, nbc, errs = 0, 0, {}
    for name in ls:lines() do
      if name:match("%.ptx$") then nptx = nptx + 1 end
      if name:match("%-bc%.ptx$") then nbc = nbc + 1 end
      if name:match("%.err$") then
        local f = assert(io.open(dir .. "/" .. name))
        errs[#errs + 1] = f:read("*a")
        f:close()
      end
    end
    ls:close()
    local ptxas = find_ptxas()
    local failures = ""
    if ptxas then
      -- two at a time (the machine is shared), each for the .target it names;
      -- without make check's libasan preload (ptxas is not ours: under it,
      -- each of the ~1,400 processes ran several times slower)
      local sh = "f=$1; a=$(sed -n 's/^\\.target //p' \"$f\"); " .. q(ptxas)
        .. " -arch=$a \"$f\" -o /dev/null 2>&1 || echo \"ptxas failed on $f\""
      local px = assert(io.popen("ls " .. q(dir) .. "/*.ptx | env -u LD_PRELOAD xargs -P 2 -n 1 sh -c "
        .. q(sh) .. " _ 2>&1"))
      failures = px:read("*a")
      px:close()
    end
    if not os.getenv("GJ_SPEC_PTX_FROM") then os.execute("rm -rf " .. q(dir)) end
    print(string.format("\n[cuda PTX check: %d distinct kernels (%d bounds-checked) from the %s run "
      .. "with the vectorizer off (%s specs passed), %s, %d s]",
      nptx, nbc, host, ok_n, ptxas and "assembled by ptxas" or "no ptxas", os.time() - t0))
    assert.are.same({}, errs)
    -- 106 distinct kernels from about 490 compiles when this was written
    assert.is_true(nptx >= 80, "only " .. nptx .. " kernels recorded")
    -- boundscheck_spec's kernels (and the fuzzers' checked ones) are among them
    assert.is_true(nbc >= 10, "only " .. nbc .. " bounds-checked kernels recorded")
    assert.are.equal("", failures)
    if not ptxas then
      pending("ptxas not found (PATH, $CUDA_HOME/bin, /usr/local/cuda/bin): the PTX was compiled, "
        .. "not assembled")
    end
  end)
end)

describe("cuda backend on a device", function()
  local function dev0() return cuda_devices()[1] end

  it_gpu("lists each device: name, architecture, memory, SMs, group limits; not host-shared", function()
    for i, d in ipairs(cuda_devices()) do
      assert.are.equal(i - 1, d.index)
      assert.are.equal("gpu", d.type)
      assert.are.equal("NVIDIA", d.vendor)
      assert.is_truthy(d.arch:match("^sm_%d+$"), d.arch)
      assert.is_true(d.memory > 0 and d.compute_units > 0 and d.max_group >= 256)
      assert.is_false(d.host_shared)
    end
    -- a GPU is the default device
    assert.are.equal("cuda", run_lua("-u GPUJIT_BACKEND", "io.write(require('gpujit').backend())"))
  end)

  it_gpu("runs saxpy; items beyond the global size never run; global_size is the real one", function()
    local n = 1000
    local y = H.array("float", function(i) return i end, n + 64)
    local x = H.array("float", function(i) return 2 * i end, n)
    local k = H.kernel("cuda", function(yy, xx, a)
      local i = gpu.global_id(0)
      yy[i] = a * xx[i] + yy[i] + gpu.global_size(0) * 0
    end, { name = "saxpy" })
    k:launch({ global = n, group = 64 }, y, x, 3)
    for i = 0, n - 1 do assert.are.equal(7 * i, y[i]) end
    local out = ffi.new("double[?]", 3 * 5 * 2)
    H.kernel("cuda", function(o)
      local i, j, l = gpu.global_id(0), gpu.global_id(1), gpu.global_id(2)
      o[(l * 5 + j) * 3 + i] = gpu.global_size(0) * 100 + gpu.global_size(1) * 10 + gpu.global_size(2)
    end, { name = "dims3" }):launch({ global = { 3, 5, 2 } }, out)
    for i = 0, 29 do assert.are.equal(352, out[i]) end
  end)

  it_gpu("runs a kernel with shared memory, a barrier and float atomics", function()
    local n = 4096
    local x = H.array("float", function(i) return i % 7 end, n)
    local hist = ffi.new("float[7]")
    H.kernel("cuda", function(h, xs)
      local t = gpu.shared("float", 256)
      local l = gpu.local_id(0)
      t[l] = xs[gpu.global_id(0)]
      gpu.barrier()
      gpu.atomic_add(h, t[255 - l], 1)
    end, { name = "hist" }):launch({ global = n, group = 256 }, hist, x)
    for v = 0, 6 do
      local want = 0
      for i = 0, n - 1 do if x[i] == v then want = want + 1 end end
      assert.are.equal(want, hist[v])
    end
  end)

  it_gpu("names driver errors and the call; the module keeps working", function()
    local msg = H.error_of(gpu.array, "uint8_t", 2 * dev0().memory, "cuda")
    assert.is_truthy(msg:find("cuMemAlloc", 1, true) and msg:find("CUDA_ERROR_OUT_OF_MEMORY", 1, true), msg)
    local k = H.kernel("cuda", function(o) o[0] = 1 end, { name = "biggroup" })
    msg = H.error_of(function() k:launch({ global = 4096, group = 2048 }, ffi.new("double[1]")) end)
    assert.is_truthy(msg:find("exceeds the device maximum", 1, true), msg)
    H.sanity("cuda")
  end)

  it_gpu("bounds checks on the device: the fault comes back; each launch starts from a clean record",
  function()
    local line = H.line_of("--@cuda-past")
    local k = H.kernel("cuda", function(dst, src, n)
      local i = gpu.global_id(0)
      dst[i] = src[i + n] --@cuda-past
    end, { name = "cuda_bc", boundscheck = true })
    local src, dst = ffi.new("float[64]"), ffi.new("float[64]")
    for i = 0, 63 do src[i] = i end
    local msg = H.error_of(k.launch, k, 64, dst, src, 63)
    assert.is_truthy(msg:find(":" .. line .. ": index %d+ is out of bounds for argument 2 'src' %(length 64"),
      msg)
    k:launch(64, dst, src, 0)          -- in range: no stale fault from the launch before
    for i = 0, 63 do assert.are.equal(i, dst[i]) end
    msg = H.error_of(k.launch, k, 64, dst, src, 1)
    assert.is_truthy(msg:find("index 64 is out of bounds", 1, true), msg)
    H.sanity("cuda")
  end)

  it_gpu("a sticky error (an illegal address): a Lua error that says so, then the device refuses at once "
    .. "with the reason, and the rest of gpujit keeps working", function()
    -- in a child process: the context stays unusable for the rest of it
    local out = run_lua("GPUJIT_BACKEND=cuda", [[
      local gpu = require('gpujit')
      local k = gpu.kernel(function(a) local i = gpu.global_id(0); a[i + 2 ^ 40] = 1 end,
        { name = 'wild', backend = 'cuda', cache = false })
      local ok, e1 = pcall(k.launch, k, 32, gpu.array('float', 32, 'cuda'))
      local ok2, e2 = pcall(gpu.array, 'float', 4, 'cuda')
      local o = require('ffi').new('double[4]')
      gpu.kernel(function(x) x[gpu.global_id(0)] = 7 end, { backend = 'cpu' }):launch(4, o)
      io.write(tostring(ok), '|', tostring(ok2), '|', o[3], '\n', e1, '\n', e2)]])
    assert.is_truthy(out:find("^false|false|7\n"), out)
    assert.is_truthy(out:find("CUDA_ERROR_ILLEGAL_ADDRESS", 1, true), out)
    assert.is_truthy(out:find("a sticky error: device 0's context is now unusable", 1, true), out)
    assert.is_truthy(out:find("device 0's context is unusable after a sticky error", 1, true), out)
    assert.is_truthy(out:find("restart the process", 1, true), out)
  end)

  it_gpu("leaves the calling thread's current context as it was", function()
    -- the driver's current context before and after a launch, through the FFI
    ffi.cdef("int cuCtxGetCurrent(void **c);")
    local cu = ffi.load("libcuda.so.1")
    local before = ffi.new("void *[1]")
    cu.cuCtxGetCurrent(before)
    H.sanity("cuda")
    local after = ffi.new("void *[1]")
    cu.cuCtxGetCurrent(after)
    assert.is_true(before[0] == after[0])
  end)
end)
