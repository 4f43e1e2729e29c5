-- Bounds-checked kernels: gpu.kernel(fn, { boundscheck = true }) or
-- GPUJIT_BOUNDSCHECK=1.  An out-of-range index is a Lua error
--   "FILE:LINE: index I is out of bounds for argument N 'name' (length L,
--    valid indices B..E) (in kernel NAME)"
-- on every backend (sim says the same, at the same line), the module keeps
-- working, and in-range kernels compute what they compute unchecked.
-- Without the option the generated code has no check at all.

local H = require("spec.helpers")
local ffi = require("ffi")
local gpu = H.gpu

local FILE = H.this_file()

-- Every listed backend, and sim (the reference) in any case.
local backends = {}
for _, bk in ipairs(H.backends) do
  if bk ~= "sim" then backends[#backends + 1] = bk end
end
backends[#backends + 1] = "sim"

local function dbl(n) return ffi.new("double[?]", n) end

-- Check msg against the bounds-check message; idx may be a number or a
-- set of allowed numbers (several work items fault, one wins).
local function check_fault(msg, line, kname, idx, what, len, first, last)
  local pat = FILE:gsub("%p", "%%%0") .. ":" .. line .. ": index (%-?%d+) is out of bounds for "
    .. what:gsub("%p", "%%%0") .. " %(length " .. len .. "(.-)%) %(in kernel '?"
    .. kname:gsub("%p", "%%%0") .. "'?[%)%s,;]"
  local got, rest = msg:match(pat)
  if not got then
    error(string.format("bounds-check message does not match %s:%d, %s, length %d, kernel %s:\n  %s",
      FILE, line, what, len, kname, msg), 2)
  end
  got = tonumber(got)
  local okidx = type(idx) == "table" and idx[got] or got == idx
  if not okidx then error("wrong index " .. got .. " in: " .. msg, 2) end
  if first then
    local range = ", valid indices " .. first .. ".." .. last
    if rest ~= range then error("expected '" .. range .. "' in: " .. msg, 2) end
  end
end

for _, bk in ipairs(backends) do
  local it = H.it_with("boundscheck", bk)
  local it_wg = H.features.workgroups.has[bk] and it or H.it_with("workgroups", bk)
  local function kernel(fn, name, opts)
    local o = { name = name, boundscheck = true }
    for k, v in pairs(opts or {}) do o[k] = v end
    return H.kernel(bk, fn, o)
  end

  describe("boundscheck [" .. bk .. "]", function()
    it("in range: the same results as without checks", function()
      local f = function(x, y, t, n)
        local i = gpu.global_id()
        y[i] = x[i] * 2 + t[i % n + 1] + #t
      end
      local x, t = dbl(16), { 1, 2, 3, 4, 5 }
      for i = 0, 15 do x[i] = i * 0.25 end
      local y1, y2 = dbl(16), dbl(16)
      H.kernel(bk, f, { name = "plain" }):launch(16, x, y1, t, 5)
      kernel(f, "checked"):launch(16, x, y2, t, 5)
      for i = 0, 15 do
        assert.are.equal(y1[i], y2[i])
        assert.are.equal(i * 0.5 + (i % 5 + 1) + 5, y2[i])
      end
    end)

    it("a load past the end names file, line, index, length and argument", function()
      local line = H.line_of("--@load-past")
      local k = kernel(function(src, dst, n)
        local i = gpu.global_id()
        dst[i] = src[i + n] --@load-past
      end, "k_load")
      local src, dst = dbl(10), dbl(10)
      local msg = H.error_of(k.launch, k, 10, src, dst, 9)
      check_fault(msg, line, "k_load", { [9] = true, [10] = true, [11] = true, [12] = true,
        [13] = true, [14] = true, [15] = true, [16] = true, [17] = true, [18] = true },
        "argument 1 'src'", 10, 0, 9)
      -- only work item 9 faults: its index is the one reported
      msg = H.error_of(k.launch, k, 10, src, dst, 1)
      check_fault(msg, line, "k_load", 10, "argument 1 'src'", 10, 0, 9)
      k:launch(10, src, dst, 0)   -- the same kernel works after the fault
      H.sanity(bk)
    end)

    it("a store before the start (negative index) is caught and not done", function()
      local line = H.line_of("--@store-neg")
      local k = kernel(function(a, off)
        local i = gpu.global_id()
        a[i - off] = 7 --@store-neg
      end, "k_store")
      local a = dbl(4)
      local msg = H.error_of(k.launch, k, 1, a, 3)
      check_fault(msg, line, "k_store", -3, "argument 1 'a'", 4, 0, 3)
      for i = 0, 3 do assert.are.equal(0, a[i]) end
      k:launch(4, a, 0)
      for i = 0, 3 do assert.are.equal(7, a[i]) end
    end)

    it("a Lua table is checked from 1: index 0 and #t + 1 fail", function()
      local line = H.line_of("--@table")
      local k = kernel(function(t, out, j)
        out[0] = t[j] --@table
      end, "k_table")
      local t, out = { 10, 20, 30 }, dbl(1)
      check_fault(H.error_of(k.launch, k, 1, t, out, 0), line, "k_table", 0, "argument 1 't'", 3, 1, 3)
      check_fault(H.error_of(k.launch, k, 1, t, out, 4), line, "k_table", 4, "argument 1 't'", 3, 1, 3)
      k:launch(1, t, out, 3)
      assert.are.equal(30, out[0])
    end)

    it("an n argument larger than the array is caught", function()
      local line = H.line_of("--@too-short")
      local k = kernel(function(a, s, n)
        local acc = 0
        for j = 0, n - 1 do acc = acc + a[j] end --@too-short
        s[0] = acc
      end, "k_sum")
      local a, s = dbl(8), dbl(1)
      for i = 0, 7 do a[i] = 1 end
      check_fault(H.error_of(k.launch, k, 1, a, s, 12), line, "k_sum", 8, "argument 1 'a'", 8, 0, 7)
      k:launch(1, a, s, 8)
      assert.are.equal(8, s[0])
    end)

    it("an access in a device function names the kernel's argument", function()
      local line = H.line_of("--@devfn")
      local function get(x, j)
        return x[j] --@devfn
      end
      local k = kernel(function(p, q, o)
        local i = gpu.global_id()
        o[i] = get(p, i) + get(q, i + 2)
      end, "k_devfn")
      local p, q, o = dbl(4), dbl(4), dbl(4)
      local msg = H.error_of(k.launch, k, 4, p, q, o)
      check_fault(msg, line, "k_devfn", { [4] = true, [5] = true }, "argument 2 'q'", 4, 0, 3)
      k:launch(2, p, q, o)
    end)

    it_wg("a gpu.shared array is checked against its compile-time length", function()
      local line = H.line_of("--@shared")
      local k = kernel(function(o, off)
        local s = gpu.shared("float", 8)
        local l = gpu.local_id()
        s[l] = l
        gpu.barrier()
        o[gpu.global_id()] = s[l + off] --@shared
      end, "k_shared")
      local o = ffi.new("float[8]")
      local msg = H.error_of(k.launch, k, { global = 8, group = 8 }, o, 7)
      check_fault(msg, line, "k_shared", { [8] = true, [9] = true, [10] = true, [11] = true,
        [12] = true, [13] = true, [14] = true }, "a gpu.shared array", 8, 0, 7)
      k:launch({ global = 8, group = 8 }, o, 0)
      for i = 0, 7 do assert.are.equal(i, o[i]) end
    end)

    it_wg("a gpu.local_array is checked against its compile-time length", function()
      local line = H.line_of("--@local")
      local k = kernel(function(o, j)
        local t = gpu.local_array("int32_t", 4)
        t[j] = 5 --@local
        o[0] = t[0]
      end, "k_local")
      local o = ffi.new("int32_t[1]")
      check_fault(H.error_of(k.launch, k, 1, o, 4), line, "k_local", 4, "a gpu.local_array", 4, 0, 3)
      k:launch(1, o, 0)
      assert.are.equal(5, o[0])
    end)

    it_wg("an atomic on an index out of range is caught and not done", function()
      local line = H.line_of("--@atomic")
      local k = kernel(function(c, j)
        gpu.atomic_add(c, j, 1) --@atomic
      end, "k_atomic")
      local c = ffi.new("int32_t[2]")
      check_fault(H.error_of(k.launch, k, 4, c, 2), line, "k_atomic", 2, "argument 1 'c'", 2, 0, 1)
      assert.are.equal(0, c[0])
      assert.are.equal(0, c[1])
      k:launch(4, c, 1)
      assert.are.equal(4, c[1])
    end)

    it("a variable holding either of two arrays", function()
      local line = H.line_of("--@either")
      local k = kernel(function(a, b, j)
        local i = gpu.global_id()
        local t = a
        if i % 2 == 1 then t = b end
        t[j] = i --@either
      end, "k_either")
      local a, b = dbl(4), dbl(4)
      k:launch(2, a, b, 3)
      assert.are.equal(1, b[3])
      -- both 0-based: checked from 0; the compiled code no longer knows which argument
      local what = bk == "sim" and "argument 1 'a'" or "an array argument"
      check_fault(H.error_of(k.launch, k, 1, a, b, 4), line, "k_either", 4, what, 4, 0, 3)
      -- a table and an FFI array: the compiled check cannot know where indices start
      local msg = H.error_of(k.launch, k, 2, a, { 1, 2, 3, 4 }, 0)
      if bk == "sim" then
        check_fault(msg, line, "k_either", 0, "argument 2 'b'", 4, 1, 4)
      else
        H.check_compile_error(msg, FILE, line, "k_either", { "Lua table", "indexed from 0" })
      end
      H.sanity(bk)
    end)

    it("faults in many work items report one of them", function()
      local line = H.line_of("--@many")
      local k = kernel(function(a)
        local i = gpu.global_id()
        a[i * 2] = i --@many
      end, "k_many")
      local a = dbl(100)
      local allowed = {}
      for i = 50, 999 do allowed[i * 2] = true end
      for _ = 1, 3 do
        check_fault(H.error_of(k.launch, k, 1000, a), line, "k_many", allowed, "argument 1 'a'", 100)
      end
      -- what the other items wrote: in place where the device shares host
      -- memory (a failed launch copies nothing back from a device)
      if H.host_shared(bk) then
        for i = 0, 49 do assert.are.equal(i, a[i * 2]) end
      end
    end)

    it("int64_t and uint64_t indices: in range they index, out of range they fault", function()
      local line = H.line_of("--@index64")
      local k = kernel(function(a, n, z, uz)
        local i = gpu.global_id()
        local j, u = i + z, i + uz   -- int64_t, uint64_t
        a[j] = a[u] + 1
        a[u + n] = a[j] --@index64
      end, "k_index64")
      local a = dbl(8)
      local z, uz = ffi.new("int64_t", 0), ffi.new("uint64_t", 0)
      k:launch(4, a, 4, z, uz)
      for i = 0, 7 do assert.are.equal(1, a[i]) end
      local msg = H.error_of(k.launch, k, 4, a, 5, z, uz)
      assert.is_truthy(msg:find(FILE .. ":" .. line .. ": index ", 1, true), msg)
      assert.is_truthy(msg:find("is out of bounds for argument 1 'a' (length 8, valid indices 0..7)",
        1, true), msg)
    end)

    it("gpu.sort under GPUJIT_BOUNDSCHECK=1 (its kernels index with 64-bit integers)", function()
      local ok, out = H.run_isolated(bk, [[
        local k0, v0, ref = {}, {}, {}
        for i = 1, 300 do k0[i] = ((i - 1) * 7919) % 601 - 300; v0[i] = i - 1; ref[i] = k0[i] end
        local dk, dv = gpu.to_device(k0, "int32_t"), gpu.to_device(v0, "uint32_t")
        gpu.sort(dk, dv)
        local keys, vals = dk:to_host(), dv:to_host()
        table.sort(ref)
        for i = 0, 299 do
          assert(keys[i] == ref[i + 1], "key " .. i)
          assert((vals[i] * 7919) % 601 - 300 == keys[i], "value " .. i)
        end
        print("sorted")
      ]], { GPUJIT_BOUNDSCHECK = "1" })
      assert.is_true(ok, out)
      assert.is_truthy(out:find("sorted", 1, true), out)
    end)
  end)
end

for _, bk in ipairs(H.compilers) do
  local it = H.it_with("boundscheck", bk)
  describe("boundscheck code [" .. bk .. "]", function()
    local f = function(x, y)
      local i = gpu.global_id()
      y[i] = x[i] + 1
    end
    it("without the option the kernel has no check; with it, one per access", function()
      local sig = { "float[]", "float[]" }
      local plain = H.kernel(bk, f, { name = "k_plain" }):inspect_llvm(sig)
      local off = H.kernel(bk, f, { name = "k_plain", boundscheck = false }):inspect_llvm(sig)
      assert.are.equal(plain, off)
      assert.is_nil(plain:find("cmpxchg", 1, true))
      local checked = H.kernel(bk, f, { name = "k_plain", boundscheck = true }):inspect_llvm(sig)
      assert.is_truthy(checked:find("cmpxchg", 1, true))
      assert.are_not.equal(plain, checked)
    end)

    it("GPUJIT_BOUNDSCHECK=1 turns it on for every kernel", function()
      local code = [[
        local k = gpu.kernel(function(a) a[gpu.global_id() + 1] = 1 end, { name = "envk" })
        local ok, err = pcall(k.launch, k, 4, ffi.new("double[4]"))
        print(ok, err)
        local k2 = gpu.kernel(function(a) a[gpu.global_id() + 1] = 1 end, { boundscheck = false })
        print("off", pcall(k2.launch, k2, 3, ffi.new("double[4]")))
      ]]
      local ok, out = H.run_isolated(bk, code, { GPUJIT_BOUNDSCHECK = 1 })
      assert.is_true(ok, out)
      assert.is_truthy(out:find("index 4 is out of bounds for argument 1 'a' (length 4", 1, true), out)
      assert.is_truthy(out:find("off\ttrue", 1, true), out)
    end)
  end)
end
