-- Limits checked before they hurt (issue 33, items 4, 6 and 9;
-- docs/reliability.md "Limits"): unknown keys of a launch configuration,
-- the device's limits on a launch's shape and local memory (PoCL aborts
-- the process beyond them), and device-function chains deeper than the C
-- stack.  What could crash runs in a child process, so that a crash fails
-- the spec instead of ending busted.
local H = require("spec.helpers")
local ffi = require("ffi")
local gpu = H.gpu

-- Run code in a child luajit (gpu loaded, backend bk) under `timeout`,
-- after `ulimit -s stack_kib` when given; returns ok, output, exit status.
local function child(bk, code, stack_kib)
  local path = os.tmpname()
  local f = assert(io.open(path, "w"))
  f:write("local ffi = require('ffi')\nlocal gpu = require('gpujit')\ngpu.use(", string.format("%q", bk),
    ")\n", code, "\n")
  f:close()
  local pre = stack_kib and ("ulimit -s " .. stack_kib .. " && ") or ""
  local p = io.popen("(" .. pre .. "timeout 300 env " .. H.luajit_cmd() .. " " .. path
    .. ") 2>&1; echo \"exit status $?\"")
  local out = p:read("*a")
  p:close()
  os.remove(path)
  local status = tonumber(out:match("exit status (%d+)%s*$"))
  return status == 0, out, status
end

describe("launch configuration keys", function()
  for _, bk in ipairs(H.backends) do
    describe("on " .. bk, function()
      local k
      before_each(function()
        H.need(bk)
        k = H.kernel(bk, function(o) o[gpu.global_id(0)] = gpu.group_size(0) end, { name = "cfgk" })
      end)

      local function refused(cfg, want)
        local o = ffi.new("double[64]")
        local msg = H.error_of(k.launch, k, cfg, o)
        assert.is_truthy(msg:find("bad launch configuration for kernel 'cfgk': " .. want, 1, true), msg)
        for i = 0, 63 do assert.are.equal(0, o[i], "the launch ran") end
      end

      it("refuses a misspelt key, naming it and the key meant", function()
        refused({ global = 64, gruop = 16 }, "unknown key 'gruop' in the launch configuration "
          .. "(did you mean 'group'?)")
        refused({ global = 64, Group = 16 }, "unknown key 'Group' in the launch configuration "
          .. "(did you mean 'group'?)")
        refused({ globl = 64 }, "unknown key 'globl' in the launch configuration (did you mean 'global'?)")
        local s = gpu.stream(bk)
        refused({ global = 64, strem = s }, "unknown key 'strem' in the launch configuration "
          .. "(did you mean 'stream'?)")
        s:synchronize()
      end)

      it("refuses a key that is nothing like one, and array items", function()
        refused({ global = 64, speed = 2 }, "unknown key 'speed' in the launch configuration")
        local msg = H.error_of(k.launch, k, { global = 64, speed = 2 }, ffi.new("double[64]"))
        assert.is_nil(msg:find("did you mean", 1, true), msg)
        refused({ 64, global = 64 }, "unknown key [1] in the launch configuration")
        -- every known key, and one more
        refused({ global = 64, group = 16, stream = gpu.stream(bk), extra = 1 },
          "unknown key 'extra' in the launch configuration")
      end)

      -- Not every table is looked at (gpujit.dims: a kernel's first 8, then
      -- one in 256, so that a table made per launch keeps LuaJIT's allocation
      -- sinking): a call site first reached after many launches still gets
      -- its error within 256 launches (those before it ran without the key).
      it("a misspelt key at a call site reached after 1,000 launches is an error within 256",
        function()
        local o = ffi.new("double[64]")
        for _ = 1, 1000 do k:launch({ global = 64, group = 16 }, o) end
        local n, msg = 0, nil
        while n < 256 and not msg do
          n = n + 1
          local ok, e = pcall(k.launch, k, { global = 64, gruop = 8 }, o)
          if not ok then msg = tostring(e) end
        end
        assert.is_truthy(msg and msg:find("unknown key 'gruop'", 1, true), tostring(msg))
        assert.is_true(n <= 256)
      end)

      it("runs a good table, reused or new, as before", function()
        local o = ffi.new("double[64]")
        local cfg = { global = 64, group = 16 }
        for _ = 1, 3 do
          k:launch(cfg, o)
          k:launch({ global = 64, group = 16 }, o)
        end
        for i = 0, 63 do assert.are.equal(16, o[i]) end
        local s = gpu.stream(bk)
        k:launch({ global = 64, group = 8, stream = s }, o)
        s:synchronize()
        for i = 0, 63 do assert.are.equal(8, o[i]) end
      end)

      it("gpu.kernel's options are strict too, with the option meant", function()
        local msg = H.error_of(gpu.kernel, function() end, { boundschek = true })
        assert.is_truthy(msg:find("gpu.kernel: unknown option 'boundschek' (did you mean 'boundscheck'?)",
          1, true), msg)
      end)
    end)
  end
end)

describe("device limits before the driver", function()
  -- Shapes PoCL (3.1) stopped the process on: SIGABRT ('max_wgs > 0')
  -- beyond 2^32 work groups, SIGILL at 2^32.
  local SHAPES = {
    "{ global = 2^40, group = 64 }",
    "{ global = 2^32, group = 1 }",
    "{ global = 2^32 * 64, group = 64 }",
    "{ global = { 2^17, 2^16 }, group = { 1, 1 } }",
  }
  for _, shape in ipairs(SHAPES) do
    it("opencl refuses " .. shape .. " with an error naming the limit and the value", function()
      H.need("opencl")
      local ok, out = child("opencl", [[
        local k = gpu.kernel(function(o) o[0] = 1 end, { name = "big" })
        local o = ffi.new("double[1]")
        print("launch", pcall(k.launch, k, ]] .. shape .. [[, o))
        print("o", o[0])
      ]])
      assert.is_true(ok, out)
      assert.is_truthy(out:find("launch\tfalse", 1, true), out)
      assert.is_truthy(out:find("work groups, beyond the device's limit of 2147483647 work groups in a "
        .. "launch (in kernel big)", 1, true), out)
      assert.is_truthy(out:find("o\t0", 1, true), out)
    end)
  end

  it("opencl refuses local memory (gpu.shared) beyond CL_DEVICE_LOCAL_MEM_SIZE", function()
    H.need("opencl")
    -- 32 MiB: above the local memory of any OpenCL device (PoCL: 512 KiB to 2 MiB)
    local ok, out = child("opencl", [[
      local k = gpu.kernel(function(o)
        local s = gpu.shared("double", 4194304)
        local i = gpu.local_id(0)
        s[i] = i
        gpu.barrier()
        o[i] = s[63 - i]
      end, { name = "bigshared" })
      print("launch", pcall(k.launch, k, { global = 64, group = 64 }, ffi.new("double[64]")))
    ]])
    assert.is_true(ok, out)
    assert.is_truthy(out:find("launch\tfalse", 1, true), out)
    assert.is_truthy(out:find("opencl: the kernel needs 33554432 bytes of local memory %(gpu.shared%), "
      .. "beyond the device's limit of %d+ bytes %(CL_DEVICE_LOCAL_MEM_SIZE%)"), out)
  end)

  for _, bk in ipairs(H.backends) do
    if bk ~= "opencl" then
      it(bk .. " has no such limit on gpu.shared: 4 MiB of it runs", function()
        H.need(bk)
        local k = H.kernel(bk, function(o)
          local s = gpu.shared("double", 524288)
          local i = gpu.local_id(0)
          s[i * 8192] = i
          gpu.barrier()
          o[i] = s[(63 - i) * 8192]
        end)
        local o = ffi.new("double[64]")
        -- no PTX of it for the suite's PTX check: 4 MiB is past every GPU's shared memory
        H.no_ptx(function() k:launch({ global = 64, group = 64 }, o) end)
        for i = 0, 63 do assert.are.equal(63 - i, o[i]) end
      end)
    end
  end
end)

-- A chain of n device functions, each calling the one before: the kernel
-- writes n + 1.
local CHAIN = [[
local function chain(n)
  local src = { "local gpu = ...", "local f = function(x) return x + 1 end" }
  for _ = 1, n do src[#src + 1] = "do local g = f; f = function(x) return g(x) + 1 end end" end
  src[#src + 1] = "local h = f; return function(o) o[gpu.global_id(0)] = h(0) end"
  return assert(load(table.concat(src, "\n"), "=chain"))(gpu)
end
]]

describe("device-function chains and the C stack", function()
  for _, bk in ipairs(H.backends) do
    for _, stack in ipairs({ 8192, 2048 }) do
      it("a chain 2,000 deep on " .. bk .. " with a " .. stack .. " KiB stack: a clear error or the result",
        function()
          H.need(bk)
          local ok, out = child(bk, CHAIN .. [[
            local k = gpu.kernel(chain(2000), { name = "deep", cache = false })
            local o = ffi.new("double[1]")
            local ran, err = pcall(k.launch, k, 1, o)
            print("launch", ran, ran and o[0] or err)
          ]], stack)
          assert.is_true(ok, out)
          if bk == "sim" then   -- plain Lua calls
            assert.is_truthy(out:find("launch\ttrue\t2001", 1, true), out)
          else
            assert.is_truthy(out:find("launch\tfalse", 1, true), out)
            local want = "device functions nested too deeply: the call of 'g' is %d+ calls deep"
            assert.is_truthy(out:find(want), out)
            assert.is_truthy(out:find("(in kernel deep)", 1, true), out)
          end
        end)
    end

    if bk ~= "sim" then
      it("a background compile on " .. bk .. " with a 2 MiB stack (the worker's too): error or result",
        function()
          H.need(bk)
          local ok, out = child(bk, CHAIN .. [[
            for _, n in ipairs({ 300, 2000 }) do
              local k = gpu.kernel(chain(n), { name = "deep" .. n, cache = false })
              local o = ffi.new("double[1]")
              local ran, err = pcall(function()
                k:compile({ "double[]" }, { async = true }):wait()
                k:launch(1, o)
              end)
              print("launch" .. n, ran, ran and o[0] or err)
            end
          ]], 2048)
          assert.is_true(ok, out)
          -- 300 levels fit a 2 MiB stack in a plain build; under make check's
          -- ASan (larger frames) they may not: the result or the clear error
          assert.is_truthy(out:find("launch300\ttrue\t301", 1, true)
            or out:find("launch300\tfalse\t[^\n]*device functions nested too deeply"), out)
          assert.is_truthy(out:find("launch2000\tfalse", 1, true), out)
          assert.is_truthy(out:find("device functions nested too deeply", 1, true), out)
        end)
    end
  end
end)
