-- Runaway kernels: gpu.kernel(fn, { timeout = seconds }) or GPUJIT_TIMEOUT.
-- A launch that runs longer ends with "kernel 'NAME' timed out after X s
-- (timeout = T)", a SIGINT during it with "kernel 'NAME' interrupted", on
-- every backend; the module keeps working after either, and the previous
-- SIGINT action is back.  Without the option the code has no check at all.
--
-- The runaway launches run in a child luajit under `timeout`, so that a
-- cancellation that does not work shows as a failed test, not a hung suite.

local H = require("spec.helpers")
local ffi = require("ffi")
local gpu = H.gpu

pcall(ffi.cdef, [[
  int setenv(const char *name, const char *value, int overwrite);
  int unsetenv(const char *name);
]])

-- Every listed backend, and sim (the reference) in any case.
local backends = {}
for _, bk in ipairs(H.backends) do
  if bk ~= "sim" then backends[#backends + 1] = bk end
end
backends[#backends + 1] = "sim"

-- Run fn with GPUJIT_TIMEOUT set to v (nil: unset), restoring it after.
local function with_env(v, fn)
  local old = os.getenv("GPUJIT_TIMEOUT")
  if v == nil then ffi.C.unsetenv("GPUJIT_TIMEOUT") else ffi.C.setenv("GPUJIT_TIMEOUT", v, 1) end
  local ok, err = pcall(fn)
  if old == nil then ffi.C.unsetenv("GPUJIT_TIMEOUT") else ffi.C.setenv("GPUJIT_TIMEOUT", old, 1) end
  if not ok then error(err, 0) end
end

local spin = function(out, n)
  local i = gpu.global_id()
  local s, k = 0, 0
  while k < n do
    k = k + 1
    s = s + k % 7
  end
  out[i] = s
end

describe("timeout: the option and GPUJIT_TIMEOUT", function()
  it("rejects what is not a number of seconds > 0", function()
    for _, v in ipairs({ 0, -1, 0 / 0, math.huge, 1e9, "1", {}, true }) do
      local msg = H.error_of(gpu.kernel, spin, { timeout = v, backend = "sim" })
      assert.is_truthy(msg:find("gpu.kernel: option 'timeout' must be a number of seconds > 0 (or false)",
        1, true), msg)
    end
    assert.is_truthy(gpu.kernel(spin, { timeout = false, backend = "sim" }))
    assert.is_truthy(gpu.kernel(spin, { timeout = 0.5, backend = "sim" }))
  end)

  it("GPUJIT_TIMEOUT: a number of seconds, unset or empty for none, anything else an error", function()
    for _, v in ipairs({ "abc", "0", "-2", "1s", "0x10", "nan", "inf", " " }) do
      with_env(v, function()
        local msg = H.error_of(gpu.kernel, spin, { backend = "sim" })
        assert.is_truthy(msg:find("gpu.kernel: GPUJIT_TIMEOUT='" .. v .. "' is not valid: it takes a "
          .. "number of seconds > 0", 1, true), v .. ": " .. msg)
        -- a kernel that says timeout = false does not read it
        assert.is_truthy(gpu.kernel(spin, { backend = "sim", timeout = false }))
      end)
    end
    for _, v in ipairs({ "", "2", "0.25", "1e-1" }) do
      with_env(v, function() assert.is_truthy(gpu.kernel(spin, { backend = "sim" })) end)
    end
  end)
end)

describe("timeout: cuda's code (no GPU needed)", function()
  it("the PTX loads the cancel word (volatile) in the loop only with the option", function()
    local sig = { "double[]", "double" }
    local ok, plain = pcall(function()
      return gpu.kernel(spin, { name = "spin", cache = false }):inspect_asm(sig, "cuda")
    end)
    if not ok then return pending("cuda cannot compile here: " .. tostring(plain)) end
    local on = gpu.kernel(spin, { name = "spin", cache = false, timeout = 1 }):inspect_asm(sig, "cuda")
    assert.is_nil(plain:find("ld.volatile.global.u32", 1, true), plain)
    assert.is_truthy(on:find("ld%.volatile%.global%.u32%s+%%r%d+, %[%%rd%d+%+12%]"), on)
  end)
end)

for _, bk in ipairs(backends) do
  describe("timeout [" .. bk .. "]", function()
    if bk ~= "sim" then
      it("without the option the code is as before: no cancellation load; with it, one", function()
        local sig = { "double[]", "double" }
        local function ir(opts)
          local o = { name = "spin" }
          for k, v in pairs(opts) do o[k] = v end
          return H.kernel(bk, spin, o):inspect_llvm(sig)
        end
        local plain, off = ir({}), ir({ timeout = false })
        assert.are.equal(plain, off)
        assert.is_nil(plain:find("load atomic i32", 1, true))
        local on = ir({ timeout = 0.5 })
        assert.is_truthy(on:find("load atomic i32", 1, true))
        assert.is_truthy(on:find("monotonic", 1, true))
        -- GPUJIT_TIMEOUT compiles the checks too (the seconds are not in the code)
        with_env("3", function() assert.are.equal(on, ir({})) end)
        with_env("3", function() assert.are.equal(plain, ir({ timeout = false })) end)
      end)
    end

    it("a launch that ends in time gives the kernel's results (and the watchdog ends)", function()
      local k = H.kernel(bk, spin, { name = "quick", timeout = 5 })
      local out = ffi.new("double[64]")
      for _ = 1, 3 do
        k:launch(64, out, 10)
        for i = 0, 63 do assert.are.equal(27, out[i]) end
      end
    end)

    it("the disk cache keys on having a timeout, not on its seconds", function()
      local dir = H.tmpdir()
      local got = {}
      local off = gpu.on_compile(function(ev)
        if ev.phase == "done" then got[#got + 1] = ev.cache end
      end)
      local ok, err = pcall(H.with_cache_dir, dir, function()
        local out = ffi.new("double[8]")
        for _, t in ipairs({ 1, 2, false, 3 }) do
          H.kernel(bk, spin, { name = "cached", cache = true, timeout = t }):launch(8, out, 10)
          assert.are.equal(27, out[7])
        end
      end)
      off()
      os.execute("rm -rf '" .. dir .. "'")
      if not ok then error(err, 0) end
      if bk == "sim" then return assert.are.same({}, got) end   -- sim compiles nothing
      assert.are.same({ "written", "hit", "written", "hit" }, got)
    end)

    -- One child process runs every runaway launch of this backend; each
    -- line of its output is TAG|ok|message|more...
    local results
    local function child()
      if results then return results end
      H.need(bk)
      local code = [==[
        local util = require("gpujit.util")
        local bk = ...
        local function say(tag, ...)
          local t = { tag }
          for i = 1, select("#", ...) do t[#t + 1] = tostring((select(i, ...))) end
          io.write((table.concat(t, "|"):gsub("\n", " ")), "\n")
          io.stdout:flush()
        end
        local function timed(k, cfg, ...)
          local t = util.now()
          local ok, e = pcall(k.launch, k, cfg, ...)
          return ok, e, util.now() - t
        end
        local function K(fn, name, timeout)
          return gpu.kernel(fn, { backend = bk, name = name, timeout = timeout, cache = false })
        end
        local out = ffi.new("double[256]")
        local function spin(o, n)
          local i = gpu.global_id()
          local s, k = 0, 0
          while k < n do
            k = k + 1
            s = s + k % 7
          end
          o[i] = s
        end
        local ks = K(spin, "spin", 1)
        ks:launch(64, out, 3)   -- compiled before the clock counts
        say("spin", timed(ks, 64, out, 1e15))
        say("again", pcall(ks.launch, ks, 64, out, 10), out[0], out[63])
        local plain = K(function(a) local i = gpu.global_id(); a[i] = i * 2 end, "plain")
        say("plain", pcall(plain.launch, plain, 64, out), out[5])

        local function dev_spin(n)
          local s = 0
          for k = 1, n do s = s + k % 3 end
          return s
        end
        local kd = K(function(o, n) o[gpu.global_id()] = dev_spin(n) end, "devspin", 1)
        kd:launch(64, out, 3)
        say("devspin", timed(kd, 64, out, 1e15))
        say("devagain", pcall(kd.launch, kd, 64, out, 5), out[0])

        local kb = K(function(o, n)
          local i, l = gpu.global_id(), gpu.local_id()
          local sh = gpu.shared("double", 64)
          local k = 0
          while k < n do
            sh[l] = k
            gpu.barrier()
            o[i] = sh[(l + 1) % 64]
            gpu.barrier()
            k = k + 1
          end
        end, "barspin", 1)
        local cfg = { global = 256, group = 64 }
        kb:launch(cfg, out, 2)
        say("barspin", timed(kb, cfg, out, 1e15))
        say("baragain", pcall(kb.launch, kb, cfg, out, 5), out[0], out[255])

        -- SIGINT: a known previous action (ignore, with flags and a mask)
        pcall(ffi.cdef, [[
          struct gj_t_sigaction { void *handler; unsigned long mask[16]; int flags; void *restorer; };
          int sigaction(int sig, const struct gj_t_sigaction *act, struct gj_t_sigaction *old);
          int getpid(void);
        ]])
        local set, q1, q2 = ffi.new("struct gj_t_sigaction"), ffi.new("struct gj_t_sigaction"),
          ffi.new("struct gj_t_sigaction")
        set.handler = ffi.cast("void *", 1)           -- SIG_IGN
        set.flags = 0x08000000 + 0x40000000            -- SA_ONSTACK | SA_NODEFER
        set.mask[0] = 512                              -- SIGUSR1
        assert(ffi.C.sigaction(2, set, nil) == 0)
        assert(ffi.C.sigaction(2, nil, q1) == 0)
        local ki = K(spin, "spin20", 20)
        ki:launch(64, out, 3)
        -- SIGINT every 0.3 s while the flag file is there (one that comes
        -- before the launch, or after it, meets SIG_IGN): no timing to miss
        local flag = os.tmpname()
        os.execute("(while [ -e " .. flag .. " ]; do sleep 0.3; kill -INT " .. ffi.C.getpid()
          .. "; done; rm -f " .. flag .. ".done; touch " .. flag .. ".done) >/dev/null 2>&1 &")
        say("sigint", timed(ki, 64, out, 1e15))
        os.remove(flag)
        local done = io.open(flag .. ".done")
        while not done do
          os.execute("sleep 0.05")
          done = io.open(flag .. ".done")
        end
        done:close()
        os.remove(flag .. ".done")
        assert(ffi.C.sigaction(2, nil, q2) == 0)
        say("restored", q1.handler == q2.handler, q1.flags == q2.flags, q1.mask[0] == q2.mask[0],
          tonumber(ffi.cast("intptr_t", q2.handler)))
        say("sigagain", pcall(ki.launch, ki, 64, out, 10), out[0])
        say("end")
      ]==]
      results = H.child_lines("local ffi = require('ffi')\nlocal gpu = require('gpujit')\n", code, bk, 60)
      return results
    end

    local function line(tag)
      return child():line(tag)
    end

    local function timed_out(tag, name, t)
      local l = line(tag)
      assert.are.equal("false", l[2], l[3])
      local pat = "^kernel '" .. name .. "' timed out after ([%d%.e%-]+) s %(timeout = "
        .. t:gsub("%.", "%%.") .. "%)$"
      local took = l[3]:match(pat)
      assert.is_truthy(took, l[3])
      assert.is_true(tonumber(took) >= tonumber(t) * 0.99, l[3])
      -- that it returned at all bounds it: the child runs under `timeout 60`
    end

    it("a runaway loop ends with 'timed out'; the kernel and the module work after it", function()
      timed_out("spin", "spin", "1")
      assert.are.same({ "again", "true", "27", "27" }, line("again"))
      assert.are.same({ "plain", "true", "10" }, line("plain"))
    end)

    it("a runaway loop in a device function", function()
      timed_out("devspin", "devspin", "1")
      assert.are.same({ "devagain", "true", "6" }, line("devagain"))
    end)

    it("a runaway loop with barriers (all items of a group stop)", function()
      timed_out("barspin", "barspin", "1")
      assert.are.same({ "baragain", "true", "4", "4" }, line("baragain"))
    end)

    it("SIGINT ends the launch with 'interrupted' and the previous action is back", function()
      local l = line("sigint")
      assert.are.equal("false", l[2], l[3])
      assert.are.equal("kernel 'spin20' interrupted", l[3])
      assert.are.same({ "restored", "true", "true", "true", "1" }, line("restored"))
      assert.are.same({ "sigagain", "true", "27" }, line("sigagain"))
      line("end")
    end)
  end)
end
