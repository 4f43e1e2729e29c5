-- assert and error in kernels (docs/api.md, "assert and error in kernels";
-- docs/reliability.md).  A failing assert(v, msg), assert(v) or error(msg)
-- ends its work item, and the launch raises
--   "FILE:LINE: assertion failed: MSG (work item N) (in kernel NAME)"
-- ("assertion failed!" without a message; error's MSG as it is), N being
-- the smallest failing work item by linear global id, whatever order the
-- items ran in (threads, the vectorizer's setting, sim's work groups).
-- After it the module keeps working.  A message that is not a string
-- constant does not compile, at its line.
--
-- busted gives spec files its own `assert` (luassert, a table): the kernels
-- here call Lua's, _G.assert and _G.error, which is what a kernel's plain
-- `assert(...)` is in a program.

local H = require("spec.helpers")
local ffi = require("ffi")
local gpu = H.gpu

local FILE = H.this_file()

local function darr(n, f)
  local a = ffi.new("double[?]", n)
  for i = 0, n - 1 do a[i] = f(i) end
  return a
end

-- msg is exactly the launch error of a failure at FILE:line.
local function check_fail(msg, line, text, item, kname)
  local want = FILE .. ":" .. line .. ": " .. text .. " (work item " .. item
    .. ") (in kernel " .. kname .. ")"
  local at = msg:find(want, 1, true)
  if not (at and at + #want - 1 == #msg) then
    error("expected the message to end with\n  " .. want .. "\ngot\n  " .. msg, 2)
  end
end

local N = 10000
local BAD = { 9000, 37, 500 }

local function checked_pos(x, y, n)
  local i = gpu.global_id()
  if i < n then
    _G.assert(x[i] >= 0, "x must be non-negative") --@pos
    y[i] = x[i] * 2 + 1
  end
end

local function nonneg(v)
  _G.assert(v >= 0) --@devfn
  return v * 2
end

-- error() ends its path: the function need not return a value after it
local function halve(v)
  if v % 2 == 0 then return v / 2 end
  _G.error("odd value") --@odd
end

for _, bk in ipairs(H.backends) do
  describe("assert and error in kernels [" .. bk .. "]", function()
    it("an assert that holds: no error, the results of plain LuaJIT", function()
      local k = H.kernel(bk, checked_pos, { name = "pos" })
      local x, y = darr(N, function(i) return i * 0.5 end), darr(N, function() return 0 end)
      k:launch(N, x, y, N)
      for i = 0, N - 1 do assert.equals(i * 0.5 * 2 + 1, y[i]) end
    end)

    for _, vec in ipairs(bk == "cpu" and { false, true } or { false }) do
      it("reports the smallest failing work item" .. (vec and " (vectorize = true)" or ""), function()
        local k = H.kernel(bk, checked_pos, { name = "pos", vectorize = vec or nil })
        local x, y = darr(N, function(i) return i end), darr(N, function() return 0 end)
        for _, b in ipairs(BAD) do x[b] = -1 end
        -- three times: a race between the failing items would show
        for _ = 1, 3 do
          check_fail(H.error_of(k.launch, k, N, x, y, N), H.line_of("--@pos"),
            "assertion failed: x must be non-negative", 37, "pos")
        end
        -- the items before the first failure ran
        for i = 0, 36 do assert.equals(i * 2 + 1, y[i]) end
        -- the module keeps working: the same kernel runs clean again
        for _, b in ipairs(BAD) do x[b] = b end
        k:launch(N, x, y, N)
        for i = 0, N - 1 do assert.equals(i * 2 + 1, y[i]) end
        H.sanity(bk)
      end)
    end

    it("a kernel with an inner loop (the cpu vectorizer's kind) reports the smallest too", function()
      local k = H.kernel(bk, function(o, x, n)
        local i = gpu.global_id()
        if i >= n then return end
        local s = 0
        for j = 1, 4 do s = s + x[i] * j end
        _G.assert(s < 1000, "sum too large") --@loop
        o[i] = s
      end, { name = "loop", vectorize = bk == "cpu" or nil })
      local x, o = darr(N, function() return 1 end), darr(N, function() return 0 end)
      for _, b in ipairs({ 7000, 41, 2000 }) do x[b] = 500 end
      check_fail(H.error_of(k.launch, k, N, o, x, N), H.line_of("--@loop"),
        "assertion failed: sum too large", 41, "loop")
      x[41], x[2000], x[7000] = 1, 1, 1
      k:launch(N, o, x, N)
      for i = 0, N - 1 do assert.equals(10, o[i]) end
    end)

    it("error(msg) fails the same way, with its message as it is", function()
      local k = H.kernel(bk, function(x, y, n)
        local i = gpu.global_id()
        if i < n then
          if x[i] > 100 then _G.error("x out of range") end --@error
          y[i] = x[i] + 1
        end
      end, { name = "err" })
      local x, y = darr(N, function(i) return i % 100 end), darr(N, function() return 0 end)
      x[6000], x[123], x[9999] = 1000, 1000, 1000
      check_fail(H.error_of(k.launch, k, N, x, y, N), H.line_of("--@error"), "x out of range",
        123, "err")
      x[6000], x[123], x[9999] = 0, 23, 99
      k:launch(N, x, y, N)
      for i = 0, N - 1 do assert.equals(i % 100 + 1, y[i]) end
    end)

    it("assert(v) without a message says 'assertion failed!'; in a device function, its line", function()
      local k = H.kernel(bk, function(x, y, n)
        local i = gpu.global_id()
        if i < n then y[i] = nonneg(x[i]) end
      end, { name = "dev" })
      local x, y = darr(N, function(i) return i end), darr(N, function() return 0 end)
      x[8191], x[4097] = -3, -2
      check_fail(H.error_of(k.launch, k, N, x, y, N), H.line_of("--@devfn"),
        "assertion failed!", 4097, "dev")
      x[8191], x[4097] = 8191, 4097
      k:launch(N, x, y, N)
      for i = 0, N - 1 do assert.equals(2 * i, y[i]) end
    end)

    it("a path that ends in error() returns nothing: the device function's other returns decide", function()
      local k = H.kernel(bk, function(x, y, n)
        local i = gpu.global_id()
        if i < n then y[i] = halve(x[i]) end
      end, { name = "half" })
      local x, y = darr(N, function(i) return 2 * i end), darr(N, function() return 0 end)
      k:launch(N, x, y, N)
      for i = 0, N - 1 do assert.equals(i, y[i]) end
      x[3001], x[2999] = 1, 3
      check_fail(H.error_of(k.launch, k, N, x, y, N), H.line_of("--@odd"), "odd value", 2999,
        "half")
    end)

    it("2-D launches: the work item is the linear global id x + width * y", function()
      local k = H.kernel(bk, function(m, w)
        local x, y = gpu.global_id(0), gpu.global_id(1)
        _G.assert(m[x + w * y] == 0, "nonzero") --@twod
        m[x + w * y] = 1
      end, { name = "twod" })
      local w, h = 96, 40
      local m = darr(w * h, function() return 0 end)
      -- (90, 0) = 90 comes before (1, 1) = 97, which is in an earlier
      -- work group of an 8 x 8 tiling, and (5, 30)
      m[90], m[97], m[5 + w * 30] = 2, 2, 2
      check_fail(H.error_of(k.launch, k, { global = { w, h } }, m, w), H.line_of("--@twod"),
        "assertion failed: nonzero", 90, "twod")
    end)

    it("an item that fails before a barrier: the assert is reported", function()
      local k = H.kernel(bk, function(x, y)
        local i = gpu.global_id()
        local s = gpu.shared("double", 64)
        local l = gpu.local_id()
        _G.assert(x[i] >= 0, "negative before the barrier") --@barrier
        s[l] = x[i]
        gpu.barrier()
        y[i] = s[(l + 1) % 64]
      end, { name = "bar" })
      local n = 256
      local x, y = darr(n, function(i) return i end), darr(n, function() return 0 end)
      x[200], x[70], x[71] = -1, -1, -1
      check_fail(H.error_of(k.launch, k, { global = n, group = 64 }, x, y),
        H.line_of("--@barrier"), "assertion failed: negative before the barrier", 70, "bar")
      x[200], x[70], x[71] = 200, 70, 71
      k:launch({ global = n, group = 64 }, x, y)
      for i = 0, n - 1 do assert.equals(i - i % 64 + (i + 1) % 64, y[i]) end
    end)

    it("gpu.grad and gpu.jvp: the assert stays in the primal part", function()
      local k = H.kernel(bk, function(a, x, y, n)
        local i = gpu.global_id()
        if i < n then
          _G.assert(x[i] >= 0, "x must be non-negative") --@grad
          y[i] = a * x[i] * x[i]
        end
      end, { name = "sq" })
      local n = 64
      local x = darr(n, function(i) return i * 0.5 end)
      local gk, jk = gpu.grad(k, { "a" }), gpu.jvp(k, { "a" })
      local gx, gy = darr(n, function() return 0 end), darr(n, function() return 1 end)
      local ga = ffi.new("double[1]")
      gk:launch(n, 2.0, ga, x, gx, darr(n, function() return 0 end), gy, n)
      local sum = 0
      for i = 0, n - 1 do
        sum = sum + (i * 0.5) * (i * 0.5)
        assert.equals(2 * 2.0 * i * 0.5, gx[i])
      end
      assert.equals(sum, ga[0])
      local y, dy = darr(n, function() return 0 end), darr(n, function() return 0 end)
      jk:launch(n, 2.0, 1.0, x, nil, y, dy, n)
      for i = 0, n - 1 do assert.equals((i * 0.5) * (i * 0.5), dy[i]) end
      x[40], x[9] = -1, -1
      local line = H.line_of("--@grad")
      local msg = H.error_of(gk.launch, gk, n, 2.0, ga, x, gx, y, gy, n)
      assert.is_truthy(msg:find(FILE .. ":" .. line .. ": assertion failed: x must be non-negative"
        .. " (work item 9) (in kernel sq", 1, true), msg)
      msg = H.error_of(jk.launch, jk, n, 2.0, 1.0, x, nil, y, dy, n)
      assert.is_truthy(msg:find(FILE .. ":" .. line .. ": assertion failed: x must be non-negative"
        .. " (work item 9) (in kernel sq", 1, true), msg)
    end)
  end)
end

for _, bk in ipairs(H.compilers) do
  describe("assert and error in compiled kernels [" .. bk .. "]", function()
    it("a message that is not a string constant is refused at its line", function()
      local msg = H.compile_error(bk, function(x, n)
        local i = gpu.global_id()
        _G.assert(i < n, x[i]) --@nonconst
      end, { "double[]", "int32_t" })
      H.check_compile_error(msg, FILE, H.line_of("--@nonconst"), "bad",
        { "the message is a number", "string constant" })
      msg = H.compile_error(bk, function(x, n)
        local i = gpu.global_id()
        if i > n then _G.error(x[i]) end --@errnum
      end, { "double[]", "int32_t" })
      H.check_compile_error(msg, FILE, H.line_of("--@errnum"), "bad", { "string constant" })
      msg = H.compile_error(bk, function(x, n)
        local i = gpu.global_id()
        if i > n then _G.error("bad index", 2) end --@level
        x[i] = 0
      end, { "double[]", "int32_t" })
      H.check_compile_error(msg, FILE, H.line_of("--@level"), "bad", { "no level" })
      H.sanity(bk)
    end)

    it("a launch on a stream reports its failure at synchronize", function()
      local k = H.kernel(bk, checked_pos, { name = "pos" })
      local s = gpu.stream(bk)
      local x = darr(1000, function(i) return i end)
      x[600], x[300] = -1, -2
      local gx, gy = gpu.to_device(x, "double", bk), gpu.to_device(x, "double", bk)
      k:launch({ global = 1000, stream = s }, gx, gy, 1000)
      check_fail(H.error_of(s.synchronize, s), H.line_of("--@pos"),
        "assertion failed: x must be non-negative", 300, "pos")
      -- the stream and the kernel go on
      local gz = gpu.to_device(darr(1000, function(i) return i end), "double", bk)
      k:launch({ global = 1000, stream = s }, gz, gy, 1000)
      s:synchronize()
      local y = gy:to_host()
      for i = 0, 999 do assert.equals(2 * i + 1, y[i]) end
    end)

    it("a kernel without assert has no fail word in its code", function()
      local ir = gpu.kernel(function(x) x[gpu.global_id()] = 1 end,
        { backend = bk, cache = false }):inspect_llvm({ "double[]" })
      assert.is_nil(H.ir_bodies(ir):find("atomicrmw umax", 1, true))
      ir = gpu.kernel(checked_pos, { backend = bk, cache = false })
        :inspect_llvm({ "double[]", "double[]", "int32_t" })
      assert.is_truthy(H.ir_bodies(ir):find("atomicrmw umax", 1, true))
    end)
  end)
end
