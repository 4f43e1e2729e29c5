-- Compiling in the background (docs/api.md, "Compiling in the background"):
-- k:compile(types, { async = true }) returns a handle at once while the
-- LLVM-heavy half of the compile runs on the context's worker thread;
-- h:done() polls, h:wait() waits and raises the compile's error, a launch
-- of a signature still compiling waits for it instead of compiling again.

local H = require("spec.helpers")
local ffi = require("ffi")
local gpu = H.gpu

local SIG = { "double[]", "double[]", "int32_t" }

-- A long kernel: `steps` generated statements (its sync compile takes a
-- few hundred ms here), loaded anew on each call with a constant of its
-- own, so that no two kernels share a function, a disk cache entry or a
-- device compiler's cached build (PoCL keeps one per program text, also
-- across runs: the constant starts from the clock).
local salt = os.time() % 1000000 * 100
local function long_fn(steps)
  salt = salt + 1
  local b = { "local gpu = ...\nreturn function(x, y, n)\n  local i = gpu.global_id()\n",
              "  if i < n then\n    local a, b, c = x[i], y[i], 0.5\n",
              string.format("    c = c * %d.5 / %d.5\n", salt, salt) }
  for j = 1, steps do
    b[#b + 1] = string.format("    a = a * %d.25 + b; b = math.sin(b) * c + a / %d.5; "
      .. "c = c + a * b - %d\n", j % 7 + 1, j % 5 + 1, j % 3)
    if j % 10 == 0 then
      b[#b + 1] = string.format("    if a > %d then a = a - b else b = b + c end\n", j)
    end
  end
  b[#b + 1] = "    y[i] = a + b + c\n  end\nend\n"
  return assert(loadstring(table.concat(b), "=long_kernel"))(gpu)
end

-- y[i] = x[i] * 3 + y[i] through a device function: plain LuaJIT computes
-- the expected values with the same function.
local function f(a, b) return a * 3 + b end
local function saxpy_fn(x, y, n)
  local i = gpu.global_id()
  if i < n then y[i] = f(x[i], y[i]) end
end

local function inputs(n)
  local x, y = ffi.new("double[?]", n), ffi.new("double[?]", n)
  for i = 0, n - 1 do
    x[i] = i * 0.25
    y[i] = 1 - i * 0.5
  end
  return x, y
end

-- Launch k on (x, y, n) and compare y with fn run by plain LuaJIT, where
-- fn(x, y, n) is the kernel's Lua function with gpu.global_id faked.
local function check_launch(k, fn, n)
  local x, y = inputs(n)
  local ex, ey = inputs(n)
  k:launch(n, x, y, ffi.new("int32_t", n))
  local real = gpu.global_id
  for i = 0, n - 1 do
    gpu.global_id = function() return i end
    local ok, err = pcall(fn, ex, ey, n)
    gpu.global_id = real
    assert(ok, err)
  end
  for i = 0, n - 1 do
    assert(H.same("double", y[i], ey[i]), "y[" .. i .. "] = " .. tostring(y[i])
      .. ", plain LuaJIT gives " .. tostring(ey[i]))
  end
end

local function compiles()
  return gpu.cache.stats().compiles
end

for _, bk in ipairs(H.compilers) do
  describe("compiling in the background on " .. bk, function()
    H.use_in_block(bk)

    -- Not a time threshold (a loaded machine can stall the calling thread for
    -- any time): an async compile of a long kernel (front half 2-4 ms, whole
    -- compile hundreds of ms) returns before its compile is done, which
    -- h:done() tells right after it; a synchronous compile would be done.
    it("an async compile returns before its compile is done, finishes, "
      .. "and its launch gives plain LuaJIT's result", function()
      local steps = 100
      H.kernel(bk, saxpy_fn):compile(SIG)   -- the device made ready first
      local ka, fa, h
      local running = 0
      for _ = 1, 3 do
        local ks = H.kernel(bk, long_fn(steps))
        local hs = ks:compile(SIG)
        assert.is_true(hs:done())
        assert.are.equal("ready", hs:status())
        fa = long_fn(steps)
        ka = H.kernel(bk, fa)
        h = ka:compile(SIG, { async = true })
        if not h:done() then running = running + 1 end
        h:wait()
      end
      assert.is_true(running > 0, "every async compile had finished when k:compile returned")
      assert.are.equal(ka, h:wait())
      assert.is_true(h:done())
      assert.are.equal("ready", h:status())
      assert.are.equal(1, ka.ncompiles)
      check_launch(ka, fa, 64)
      assert.are.equal(1, ka.ncompiles)
    end)

    it("a background compile finishes while the caller keeps launching another kernel",
      function()
      local kb = H.kernel(bk, saxpy_fn)
      check_launch(kb, saxpy_fn, 100)                    -- compiled before
      local fa = long_fn(100)
      local ka = H.kernel(bk, fa)
      local h = ka:compile(SIG, { async = true })
      local launches = 0
      while not h:done() do
        check_launch(kb, saxpy_fn, 100)
        launches = launches + 1
      end
      assert.is_true(launches >= 1, "no launch ran while the kernel compiled")
      assert.are.equal(1, kb.ncompiles)
      check_launch(ka, fa, 32)
      assert.are.equal(1, ka.ncompiles)
    end)

    it("a launch of a signature still compiling waits for it and does not compile twice",
      function()
      local fa = long_fn(60)
      local ka = H.kernel(bk, fa)
      local c0 = compiles()
      local h = ka:compile(SIG, { async = true })
      assert.are.equal(h, ka:compile(SIG, { async = true }))   -- the same compile
      check_launch(ka, fa, 16)                 -- right away: waits for h
      assert.is_true(h:done())
      assert.are.equal(1, ka.ncompiles)
      assert.are.equal(1, compiles() - c0)
      -- compiled already: a handle that is done
      local h2 = ka:compile(SIG, { async = true })
      assert.is_true(h2:done())
      assert.are.equal(1, ka.ncompiles)
      assert.are.same({ SIG }, ka:signatures())
    end)

    it("a compile error surfaces at wait with file:line and the module keeps working",
      function()
      -- luacheck: push ignore no_such_table
      local bad = H.kernel(bk, function(x, y, n)
        local i = gpu.global_id()
        if i < n then y[i] = x[i] + no_such_table.field end  -- MARK:bgc-error
      end, { name = "bad_bg" })
      -- luacheck: pop
      local h = bad:compile(SIG, { async = true })           -- does not raise
      local msg = H.error_of(h.wait, h)
      H.check_compile_error(msg, H.this_file(), H.line_of("MARK:bgc-error"), "bad_bg",
        { "nil", "no_such_table" })
      local st, why = h:status()
      assert.are.equal("failed", st)
      assert.are.equal(msg, why)
      assert.are.equal(msg, H.error_of(h.wait, h))           -- again, the same
      -- a launch of that signature raises the same error
      local x, y = inputs(4)
      assert.are.equal(msg, H.error_of(bad.launch, bad, 4, x, y, ffi.new("int32_t", 4)))
      local k = H.kernel(bk, saxpy_fn)
      k:compile(SIG, { async = true }):wait()
      check_launch(k, saxpy_fn, 50)
    end)

    it("many handles at once", function()
      local ks, hs, fns = {}, {}, {}
      for j = 1, 8 do
        fns[j] = function(x, y, n)
          local i = gpu.global_id()
          if i < n then y[i] = x[i] * j + y[i] end
        end
        ks[j] = H.kernel(bk, fns[j])
        hs[j] = ks[j]:compile(SIG, { async = true })
      end
      for j = 8, 1, -1 do assert.are.equal(ks[j], hs[j]:wait()) end
      assert.are.equal(0, gpu.core.compile_pending())
      for j = 1, 8 do
        check_launch(ks[j], fns[j], 40)
        assert.are.equal(1, ks[j].ncompiles)
      end
    end)

    it("collecting a kernel and its handle with the compile in flight", function()
      for _ = 1, 3 do
        local k = H.kernel(bk, long_fn(40))
        k:compile(SIG, { async = true })
      end
      collectgarbage()
      collectgarbage()
      local k = H.kernel(bk, saxpy_fn)
      k:compile(SIG, { async = true }):wait()        -- after those, on the same worker
      collectgarbage()
      collectgarbage()
      assert.are.equal(0, gpu.core.compile_pending())
      check_launch(k, saxpy_fn, 20)
    end)

    it("closing the state with compiles in flight joins them", function()
      if (os.getenv("LD_PRELOAD") or ""):find("tsan", 1, true) then
        -- a process with threads cannot start one under ThreadSanitizer;
        -- spec/c/multistate.c (make tsan) closes states with a compile in flight
        pending("no child process under ThreadSanitizer")
        return
      end
      local script = os.tmpname()
      local fh = assert(io.open(script, "w"))
      fh:write(([[
        local gpu = require("gpujit")
        gpu.use(%q)
        local hs = {}
        for j = 1, 3 do
          local k = gpu.kernel(function(x, n)
            local i = gpu.global_id()
            if i < n then x[i] = math.sin(x[i]) * j end
          end, { cache = false })
          hs[j] = k:compile({ "double[]", "int32_t" }, { async = true })
        end
        os.exit(0, true)   -- lua_close with the compiles in flight
      ]]):format(bk))
      fh:close()
      local cmd = string.format("LUA_PATH=%q LUA_CPATH=%q luajit %s 2>&1; echo rc=$?",
        package.path, package.cpath, script)
      local p = io.popen(cmd)
      local out = p:read("*a")
      p:close()
      os.remove(script)
      assert.is_truthy(out:find("rc=0", 1, true), out)
    end)

    it("a kernel with plugins is refused in the background, with the reason", function()
      gpu.plugin({ name = "bgc_mark", version = "1", ir = function() end })
      local k = H.kernel(bk, saxpy_fn, { plugins = { "bgc_mark" }, name = "plugged" })
      local msg = H.error_of(function() k:compile(SIG, { async = true }) end)
      gpu.remove_plugin("bgc_mark")
      assert.is_truthy(msg:find("kernel plugged: a compile in the background takes no plugins "
        .. "(plugin 'bgc_mark' applies)", 1, true), msg)
      assert.is_truthy(msg:find(H.this_file(), 1, true), msg)   -- raised at the caller
      assert.are.equal(0, k.ncompiles)
    end)

    it("compile events: start at k:compile, done when the result is taken", function()
      local seen = {}
      local off = gpu.on_compile(function(e) seen[#seen + 1] = e end)
      local k = H.kernel(bk, saxpy_fn, { name = "evented" })
      local h = k:compile(SIG, { async = true })
      assert.are.equal(1, #seen)
      assert.are.equal("start", seen[1].phase)
      assert.is_true(seen[1].async)
      h:wait()
      off()
      assert.are.equal(2, #seen)
      assert.are.equal("done", seen[2].phase)
      assert.are.equal("evented", seen[2].kernel)
      assert.is_true(seen[2].total_ms >= 0)
      assert.is_number(seen[2].ms.optimize)
    end)

    it("without async it compiles at once and returns a handle that is done", function()
      local k = H.kernel(bk, saxpy_fn)
      local h = k:compile(SIG)
      assert.is_true(h:done())
      assert.are.equal("ready", h:status())
      assert.are.equal(k, h:wait())
      assert.are.equal(1, k.ncompiles)
      check_launch(k, saxpy_fn, 10)
      assert.are.equal(1, k.ncompiles)
      assert.has_error(function() k:compile(SIG, 5) end)
    end)
  end)
end
