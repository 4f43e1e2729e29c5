-- Streams (docs/api.md, "Streams"): gpu.stream([device]); a launch with
-- { stream = s } returns once it is enqueued; s:synchronize() waits, copies
-- tables and staged arrays back, prints what the kernels printed and raises
-- the first error; gpu.synchronize() does that for every stream.  What a
-- launch on a stream uses is kept alive until then.

local H = require("spec.helpers")
local ffi = require("ffi")
local gpu = H.gpu
local now = require("gpujit.util").now
local printer = require("gpujit.printer")

-- A long kernel: reps steps of an affine map per element (x stays 1 when it
-- starts at 1, and becomes exactly `reps` when it starts at 0 with mul 1).
local function long_fn(x, n, reps, mul, add)
  local i = gpu.global_id(0)
  if i < n then
    local v = x[i]
    for _ = 1, reps do v = v * mul + add end
    x[i] = v
  end
end

local function add_fn(x, n, v)
  local i = gpu.global_id(0)
  if i < n then x[i] = x[i] + v end
end

local function mul_fn(x, n, v)
  local i = gpu.global_id(0)
  if i < n then x[i] = x[i] * v end
end

-- Lua tables index from 1 in kernels too.
local function tbl_fn(t, n, v)
  local i = gpu.global_id(0) + 1
  if i <= n then t[i] = t[i] * 2 + v end
end

for _, bk in ipairs(H.compilers) do
  describe("streams on " .. bk, function()
    H.use_in_block(bk)

    -- Not a time threshold (a loaded machine can stall the calling thread for
    -- any time): a launch on a stream returns while its kernel of hundreds of
    -- ms still runs, which an event recorded right after it tells; a
    -- synchronous launch would have finished.  Three rounds, one is enough.
    it("a launch of a long kernel returns before the kernel has finished; the result is there "
      .. "after synchronize", function()
      local k = H.kernel(bk, long_fn)
      local n = 1000000
      local x = ffi.new("double[?]", n)
      k:launch(n, x, n, 1, 1.0, 0.0)                     -- compiled before the timing
      -- reps for a synchronous launch of about 300 ms here
      local reps = 50
      while true do
        local t0 = now()
        k:launch(n, x, n, reps, 1.0, 0.0)
        local dt = now() - t0
        if dt > 0.3 or reps > 1e6 then break end
        reps = math.ceil(reps * math.min(8, 0.35 / math.max(dt, 1e-4)))
      end
      local s = gpu.stream()
      local running = 0
      for _ = 1, 3 do
        for i = 0, n - 1 do x[i] = 0 end
        k:launch({ global = n, stream = s }, x, n, reps, 1.0, 1.0)
        local e = s:record()
        if not e:query() then running = running + 1 end
        assert.equal(1, s:pending())
        s:synchronize()
        assert.equal(0, s:pending())
        assert.is_true(e:query())
        for _, i in ipairs({ 0, 1, n / 2, n - 1 }) do assert.equal(reps, x[i]) end
      end
      assert.is_true(running > 0, "every launch on the stream had finished when it returned")
    end)

    it("runs the launches of one stream in order", function()
      local add, mul = H.kernel(bk, add_fn), H.kernel(bk, mul_fn)
      local n = 100000
      local x = ffi.new("double[?]", n)
      local s = gpu.stream()
      local want = 0
      for r = 1, 20 do
        add:launch({ global = n, stream = s }, x, n, r)
        mul:launch({ global = n, stream = s }, x, n, 3)
        want = (want + r) * 3
      end
      assert.equal(40, s:pending())
      s:synchronize()
      assert.equal(want, x[0])
      assert.equal(want, x[n - 1])
    end)

    -- Each launch has arguments of its own (on PoCL's CPU devices an argument
    -- block in host memory that the runtime keeps until the launch has run:
    -- hundreds pending take several of a stream's chunks, reused after each
    -- synchronize); a launch with the arguments of the one before shares them.
    it("keeps each pending launch's own arguments, hundreds at a time, and again after "
      .. "synchronize", function()
      local add = H.kernel(bk, add_fn)
      local n = 64
      local x = ffi.new("double[?]", n)
      local s = gpu.stream()
      for round = 1, 2 do
        local want = x[0]
        for r = 1, 300 do
          add:launch({ global = n, stream = s }, x, n, r * round)
          add:launch({ global = n, stream = s }, x, n, r * round)   -- the same block
          want = want + 2 * r * round
        end
        assert.equal(600, s:pending())
        s:synchronize()
        assert.equal(want, x[0])
        assert.equal(want, x[n - 1])
      end
    end)

    -- On opencl a stream's queue gets profiling (for elapsed times) at its
    -- first event: the work enqueued before must still come first.
    it("an event recorded after launches keeps them before the ones after it", function()
      local k, add = H.kernel(bk, long_fn), H.kernel(bk, add_fn)
      local n = 4096
      local x = ffi.new("double[?]", n)
      local s = gpu.stream()
      k:launch({ global = n, stream = s }, x, n, 20000, 1.0, 1.0)   -- x = 20000
      local e = s:record()
      add:launch({ global = n, stream = s }, x, n, 0.5)
      k:launch({ global = n, stream = s }, x, n, 1, 2.0, 0.0)       -- x = 2 * x
      local e2 = s:record()
      s:synchronize()
      assert.is_true(e:query() and e2:query())
      assert.equal(40001, x[0])
      assert.equal(40001, x[n - 1])
      assert.is_true(e:elapsed(e2) >= 0)
    end)

    it("copies Lua tables back into the same tables at synchronize, in launch order", function()
      local k = H.kernel(bk, tbl_fn)
      local t, u = {}, {}
      for i = 1, 1000 do t[i], u[i] = i, -i end
      local s = gpu.stream()
      k:launch({ global = 1000, stream = s }, t, 1000, 1)
      k:launch({ global = 1000, stream = s }, u, 1000, 0)
      k:launch({ global = 1000, stream = s }, t, 1000, 0)   -- sees the first launch's result
      s:synchronize()
      for i = 1, 1000 do
        assert.equal((i * 2 + 1) * 2, t[i])
        assert.equal(-2 * i, u[i])
      end
    end)

    it("FFI arrays of every kind of transfer hold the result after synchronize", function()
      local k = H.kernel(bk, mul_fn)
      local a = ffi.new("float[?]", 5000)
      local b = ffi.new("int32_t[64]")
      for i = 0, 4999 do a[i] = i end
      for i = 0, 63 do b[i] = i end
      local d = gpu.to_device(ffi.new("double[3]", { 1, 2, 3 }))
      local s = gpu.stream()
      k:launch({ global = 5000, stream = s }, a, 5000, 0.5)
      k:launch({ global = 64, stream = s }, b, 64, -2)
      k:launch({ global = 3, stream = s }, d, 3, 10)
      s:synchronize()
      for i = 0, 4999 do assert.equal(i * 0.5, a[i]) end
      for i = 0, 63 do assert.equal(-2 * i, b[i]) end
      local h = d:to_host()
      assert.same({ 10, 20, 30 }, { h[0], h[1], h[2] })
    end)

    it("raises a bounds-check fault at synchronize, with file, line and kernel; later results "
      .. "are kept; the stream keeps working", function()
      local line = H.line_of("-- OOB") + 0
      local bad = H.kernel(bk, function(x, n)
        local i = gpu.global_id(0)
        x[i + n] = 1   -- OOB
      end, { boundscheck = true, name = "oob" })
      local good = H.kernel(bk, tbl_fn)
      local x = ffi.new("float[8]")
      local t = { 1, 2, 3 }
      local s = gpu.stream()
      good:launch({ global = 3, stream = s }, t, 3, 0)
      bad:launch({ global = 8, stream = s }, x, 8)
      local msg = H.error_of(s.synchronize, s)
      local want = H.this_file() .. ":" .. line .. ": index 8 is out of bounds for argument 1 'x'"
      assert.is_truthy(msg:find(want, 1, true), msg)
      assert.is_truthy(msg:find("(in kernel oob)", 1, true), msg)
      assert.same({ 2, 4, 6 }, t)   -- the launch before the fault was copied back
      assert.equal(0, s:pending())
      good:launch({ global = 3, stream = s }, t, 3, 0)
      s:synchronize()
      assert.same({ 4, 8, 12 }, t)
      -- and the same kernel without a stream still reports at launch
      assert.is_truthy(H.error_of(bad.launch, bad, 8, x, 8):find("index 8 is out of bounds", 1, true))
    end)

    it("prints what the kernels printed at synchronize, launch by launch", function()
      local k = H.kernel(bk, function(n, tag)
        local i = gpu.global_id(0)
        if i < n then print("item", i, tag) end
      end)
      local lines = {}
      printer.write = function(...)
        lines[#lines + 1] = table.concat({ tostring((...)), select(2, ...) }, " ")
      end
      local ok, err = pcall(function()
        local s = gpu.stream()
        k:launch({ global = 2, stream = s }, 2, 1)
        k:launch({ global = 1, stream = s }, 1, 2)
        assert.same({}, lines)
        s:synchronize()
      end)
      printer.write = nil
      assert(ok, err)
      assert.same({ "item 0 1", "item 1 1", "item 0 2" }, lines)
    end)

    it("refuses what a stream cannot do, with the reason, and keeps working", function()
      local k = H.kernel(bk, add_fn)
      local x = ffi.new("double[4]")
      local msg = H.error_of(k.launch, k, { global = 4, stream = {} }, x, 4, 1)
      assert.is_truthy(msg:find("'stream' must be a gpu.stream, got", 1, true), msg)
      local t = H.kernel(bk, add_fn, { timeout = 5 })
      local s = gpu.stream()
      msg = H.error_of(t.launch, t, { global = 4, stream = s }, x, 4, 1)
      assert.is_truthy(msg:find("has a timeout, which launches on a stream do not support", 1, true), msg)
      assert.equal(0, s:pending())
      local pinned = gpu.kernel(add_fn, { backend = "sim" })
      msg = H.error_of(pinned.launch, pinned, { global = 4, stream = s }, x, 4, 1)
      assert.is_truthy(msg:find("runs on sim (its device option), the stream is on", 1, true), msg)
      msg = H.error_of(gpu.kernel, add_fn, { async = true })
      assert.is_truthy(msg:find("option 'async' was removed", 1, true), msg)
      k:launch({ global = 4, stream = s }, x, 4, 1)
      s:synchronize()
      assert.equal(1, x[3])
      assert.equal(bk, s:device().backend)
      assert.is_truthy(tostring(s):find("^gpu.stream on " .. bk))
    end)

    it("a launch refused at the call (a bad table element) leaves its other tables to the host", function()
      local k = H.kernel(bk, function(a, b, n)
        local i = gpu.global_id(0) + 1
        if i <= n then a[i] = a[i] + b[i] end
      end)
      local a, bad = { 1, 2, 3 }, { 1, "x", 3 }
      local s = gpu.stream()
      local msg = H.error_of(k.launch, k, { global = 3, stream = s }, a, bad, 3)
      assert.is_truthy(msg:find("bad argument #2 'b' to kernel", 1, true), msg)
      assert.equal(0, s:pending())
      a[1] = 100                                   -- still the host's
      k:launch({ global = 3, stream = s }, a, { 10, 20, 30 }, 3)
      s:synchronize()
      assert.same({ 110, 22, 33 }, a)
    end)

    it("does not crash when the host reads and writes an array while a launch uses it", function()
      local k = H.kernel(bk, long_fn)
      local n = 200000
      local x = ffi.new("double[?]", n)
      local t = {}
      for i = 1, 1000 do t[i] = i end
      local tk = H.kernel(bk, tbl_fn)
      local s = gpu.stream()
      k:launch({ global = n, stream = s }, x, n, 2000, 1.0, 1.0)
      tk:launch({ global = 1000, stream = s }, t, 1000, 0)
      local sum = 0
      for i = 0, n - 1, 97 do sum = sum + x[i]; x[i] = -1 end   -- undefined values, no crash
      for i = 1, 1000 do t[i] = nil end                          -- the table emptied meanwhile
      assert.is_number(sum)
      s:synchronize()
      assert.equal(2000, x[1])                                   -- untouched by the host
      assert.equal(2, t[1])                                      -- copied back into the same table
      assert.equal(2000, t[1000])
    end)

    it("keeps what a launch uses alive through collectgarbage, also when the stream itself is "
      .. "dropped", function()
      local k = H.kernel(bk, long_fn)
      local tk = H.kernel(bk, tbl_fn)
      local weak = setmetatable({}, { __mode = "v" })
      local t = {}
      for i = 1, 500 do t[i] = i end
      local function start()   -- a frame of its own: no register of ours keeps them
        local s = gpu.stream()
        local x = ffi.new("double[?]", 300000)
        local d = gpu.zeros("double", 300000)
        weak.x, weak.d, weak.s = x, d, s
        k:launch({ global = 300000, stream = s }, x, 300000, 1000, 1.0, 1.0)
        k:launch({ global = 300000, stream = s }, d, 300000, 1000, 1.0, 1.0)
        d:free()                                -- released after the launch is synchronized
        tk:launch({ global = 500, stream = s }, t, 500, 0)
      end
      start()
      for _ = 1, 3 do collectgarbage("collect") end
      assert.is_true(weak.x ~= nil)   -- (not is_not_nil: luassert would keep the value)
      assert.is_true(weak.s ~= nil)
      assert.equal(1, t[1])                     -- not copied back yet
      gpu.synchronize()                         -- every stream, this one too
      assert.equal(1000, weak.x[299999])
      assert.equal(2, t[1])
      assert.equal(1000, t[500])
      for _ = 1, 3 do collectgarbage("collect") end
      assert.is_true(weak.s == nil)   -- synchronized, the stream goes
      -- (x is not checked: under busted an FFI array passed to a launch that
      -- compiled stays referenced, with or without a stream; not in plain luajit)
    end)

    it("gpu.array copies on a stream run in order with its launches", function()
      local mul = H.kernel(bk, mul_fn)
      local s = gpu.stream()
      local src = ffi.new("float[4]", { 1, 2, 3, 4 })
      local d = gpu.to_device(src, nil, s)             -- read when the copy runs
      local e = gpu.to_device({ 5, 6 }, "int32_t", s)  -- a table is read now
      mul:launch({ global = 4, stream = s }, d, 4, 10)
      local t, f = {}, ffi.new("double[4]")
      d:to_host(t, s)                                  -- after the launch
      d:to_host(f, s)                                  -- converted at synchronize
      local g = e:to_host(nil, s)
      mul:launch({ global = 4, stream = s }, d, 4, 2)  -- after the copies
      assert.same({}, t)
      assert.equal(7, s:pending())
      s:synchronize()
      assert.same({ 10, 20, 30, 40 }, t)
      assert.same({ 10, 20, 30, 40 }, { f[0], f[1], f[2], f[3] })
      assert.same({ 5, 6 }, { g[0], g[1] })
      local h = d:to_host()
      assert.same({ 20, 40, 60, 80 }, { h[0], h[1], h[2], h[3] })
      local msg = H.error_of(d.to_host, d, nil, 5)
      assert.is_truthy(msg:find("to_host: argument #2 must be a gpu.stream, got", 1, true), msg)
      local other = gpu.stream("sim")
      msg = H.error_of(d.to_host, d, nil, other)
      assert.is_truthy(msg:find("to_host: the stream is on sim, the array on", 1, true), msg)
    end)

    it("events: record, query, synchronize, a stream waiting for another's event, elapsed time", function()
      local k = H.kernel(bk, long_fn)
      local copy = H.kernel(bk, function(y, x, n)
        local i = gpu.global_id(0)
        if i < n then y[i] = x[i] + 1 end
      end)
      local n = 1000000
      local x, y = ffi.new("double[?]", n), ffi.new("double[?]", n)
      k:launch(n, x, n, 1, 1.0, 0.0)
      local reps = 50                                   -- a launch of about 300 ms
      while true do
        local t0 = now()
        k:launch(n, x, n, reps, 1.0, 0.0)
        local dt = now() - t0
        if dt > 0.3 or reps > 1e6 then break end
        reps = math.ceil(reps * math.min(8, 0.35 / math.max(dt, 1e-4)))
      end
      local t0 = now()
      k:launch(n, x, n, reps, 1.0, 0.0)
      local tsync = now() - t0
      -- device arrays: an FFI array passed to launches on two streams is
      -- undefined on a device that stages it (cuda: each stream has its
      -- own copy until its synchronize; docs/api.md, "Ownership")
      local xd, yd = gpu.zeros("double", n), gpu.zeros("double", n)
      local s1, s2 = gpu.stream(), gpu.stream()
      local h0 = now()
      local e0 = s1:record()
      k:launch({ global = n, stream = s1 }, xd, n, reps, 1.0, 1.0)
      local e1 = s1:record()
      assert.is_false(e1:query())                       -- a launch of hundreds of ms is running
      s2:wait(e1)
      copy:launch({ global = n, stream = s2 }, yd, xd, n) -- after s1's launch, or y would be 1
      e1:synchronize()
      assert.is_true(e1:query())
      assert.is_true(e0:query())
      local ms = e0:elapsed(e1)
      gpu.synchronize()
      local wall = (now() - h0) * 1e3
      xd:to_host(x)
      yd:to_host(y)
      assert.equal(reps, x[n - 1])
      assert.equal(reps + 1, y[0])
      assert.equal(reps + 1, y[n - 1])
      -- the interval holds the launch and is within the wall time; two events
      -- with nothing between them are a shorter interval (no ratio to the
      -- synchronous launch's time: a loaded machine varies it)
      local ea = s1:record()
      local eb = s1:record()
      eb:synchronize()
      assert.is_true(ms > 0 and ms <= wall + 1,
        ("elapsed %.1f ms; the launch took %.1f ms synchronously, %.1f ms passed")
          :format(ms, tsync * 1e3, wall))
      assert.is_true(ea:elapsed(eb) < ms, ("empty interval %.3f ms, the launch's %.3f ms")
        :format(ea:elapsed(eb), ms))
      assert.is_true(math.abs(e1:elapsed(e0) + ms) < 1e-6)
      local msg = H.error_of(e0.elapsed, e0, {})
      assert.is_truthy(msg:find("bad argument #2 to 'elapsed' (gpu.event expected, got table)", 1, true), msg)
      msg = H.error_of(e0.elapsed, e0, gpu.stream("sim"):record())
      assert.is_truthy(msg:find("different devices", 1, true), msg)
      msg = H.error_of(s1.wait, s1, 5)
      assert.is_truthy(msg:find("bad argument #2 to 'wait' (gpu.event expected, got number)", 1, true), msg)
    end)

    it("gpu.synchronize() raises the first error of any stream", function()
      local bad = H.kernel(bk, function(x)
        x[gpu.global_id(0) + 100] = 1
      end, { boundscheck = true, name = "oob2" })
      local x = ffi.new("float[4]")
      local s1, s2 = gpu.stream(), gpu.stream()
      local good = H.kernel(bk, add_fn)
      local y = ffi.new("double[4]")
      good:launch({ global = 4, stream = s1 }, y, 4, 2)
      bad:launch({ global = 4, stream = s2 }, x)
      local msg = H.error_of(gpu.synchronize)
      assert.is_truthy(msg:find("index 100 is out of bounds", 1, true), msg)
      assert.is_truthy(msg:find("(in kernel oob2)", 1, true), msg)
      assert.equal(2, y[3])
      assert.equal(0, s1:pending() + s2:pending())
      gpu.synchronize()
    end)
  end)
end

describe("streams on sim", function()
  it("run each launch when it is made", function()
    local k = gpu.kernel(add_fn, { backend = "sim" })
    local s = gpu.stream("sim")
    local x = ffi.new("double[3]")
    k:launch({ global = 3, stream = s }, x, 3, 5)
    assert.equal(5, x[2])
    assert.equal(0, s:pending())
    s:synchronize()
    assert.equal("gpu.stream on sim", tostring(s))
  end)
end)

describe("streams on opencl with arrays staged through device buffers (as on a GPU)", function()
  -- PoCL shares host memory; without host_register in its entry gpujit
  -- stages FFI arrays and tables through device buffers, as on a GPU.
  local run = H.testing("opencl") and it or pending
  run("tables and FFI arrays: one staging per stream, copied back at synchronize", function()
    local ok, out = H.run_isolated("opencl", H.OPENCL_STAGED .. [[
      local k = gpu.kernel(function(x, n, v)
        local i = gpu.global_id(0)
        if i < n then x[i] = x[i] * 2 + v end
      end)
      local kt = gpu.kernel(function(t, n, v)
        local i = gpu.global_id(0) + 1
        if i <= n then t[i] = t[i] * 2 + v end
      end)
      local s = gpu.stream()
      local x = ffi.new("float[1000]")
      for i = 0, 999 do x[i] = i end
      local t = {}
      for i = 1, 100 do t[i] = i end
      k:launch({ global = 1000, stream = s }, x, 1000, 1)
      kt:launch({ global = 100, stream = s }, t, 100, 1)
      x[0] = -5                                 -- the host's write is lost: the stream owns x
      k:launch({ global = 1000, stream = s }, x, 1000, 0)
      kt:launch({ global = 100, stream = s }, t, 100, 0)
      assert(t[1] == 1 and x[999] == 999, "copied back before synchronize")
      s:synchronize()
      assert(x[0] == 2 and x[999] == (999 * 2 + 1) * 2, "x: " .. x[0] .. " " .. x[999])
      assert(t[1] == 6 and t[100] == 402, "t: " .. t[1] .. " " .. t[100])
      print("DONE")
    ]])
    assert(ok and out:find("DONE", 1, true), out)
  end)
end)

describe("streams on two devices", function()
  -- Whether the two launches run at the same time is a speed property, so it
  -- is measured in bench/two_devices.lua (the ratio of the finish times), not
  -- asserted here: on a loaded machine (make test runs parts side by side)
  -- any threshold on it can be missed.  What must hold whatever the load: a
  -- launch on a cpu stream does not hold up the launch on an opencl stream
  -- after it, both run to their results, and each stream's event tells.
  local run = (H.testing("cpu") and H.testing("opencl")) and it or pending
  run("cpu and opencl: a launch on a stream of each; the first still runs when the second is "
    .. "enqueued", function()
    local ok, out = H.run_isolated("cpu", [[
      local now = require("gpujit.util").now
      local function long_fn(x, n, reps)
        local i = gpu.global_id(0)
        if i < n then local v = x[i]; for _ = 1, reps do v = v * 1.0 + 1.0 end; x[i] = v end
      end
      local kc = gpu.kernel(long_fn, { backend = "cpu", cache = false })
      local ko = gpu.kernel(long_fn, { backend = "opencl", cache = false })
      local n = 200000
      local xc, xo = ffi.new("double[?]", n), ffi.new("double[?]", n)
      -- reps for about 300 ms on each device
      local function reps_for(k, x)
        k:launch(n, x, n, 1)                    -- compiled before the rounds
        local reps = 100
        while true do
          local t0 = now(); k:launch(n, x, n, reps); local dt = now() - t0
          if dt > 0.1 then return math.ceil(reps * 0.3 / dt) end
          reps = reps * 4
        end
      end
      local rc, ro = reps_for(kc, xc), reps_for(ko, xo)
      local sc, so = gpu.stream("cpu"), gpu.stream("opencl")
      local overlapped = 0
      for _ = 1, 3 do
        for i = 0, n - 1 do xc[i], xo[i] = 0, 0 end
        kc:launch({ global = n, stream = sc }, xc, n, rc)
        ko:launch({ global = n, stream = so }, xo, n, ro)
        local ec, eo = sc:record(), so:record()
        if not ec:query() then overlapped = overlapped + 1 end
        sc:synchronize(); so:synchronize()
        assert(ec:query() and eo:query(), "events not complete after synchronize")
        assert(xc[n - 1] == rc and xo[n - 1] == ro, "wrong results")
      end
      print("overlapped " .. overlapped)
    ]], { GPUJIT_THREADS = 1, POCL_MAX_PTHREAD_COUNT = 1 })
    assert(ok, out)
    local n = tonumber(out:match("overlapped (%d+)"))
    assert.is_true(n ~= nil and n > 0, out)
  end)
end)

if not H.testing("cuda") then
  describe("streams on cuda", function()
    local _, why = H.available("cuda")
    pending("the same specs with GPUJIT_SPEC_BACKENDS=cuda, on a machine with a GPU ["
      .. tostring(why or "cuda is not in GPUJIT_SPEC_BACKENDS") .. "]")
  end)
end
