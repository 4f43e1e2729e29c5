-- print in kernels (docs/api.md, "print in kernels"): each case of
-- spec/print/cases.lua runs in a child process on every backend, and what it
-- writes must be what the sim backend (LuaJIT running the kernel's function
-- item by item, with Lua's own print) writes, line for line; a few cases are
-- also checked against their exact text.

local H = require("spec.helpers")
local gpu = H.gpu

local function run(bk, case)
  local cmd = ("LUA_PATH=%q LUA_CPATH=%q luajit spec/print/cases.lua %s %s 2>&1"):format(
    package.path, package.cpath, bk, case)
  local f = assert(io.popen(cmd))
  local out = f:read("*a")
  f:close()
  return out
end

local CASES = { "values", "types", "order", "barrier", "table" }

describe("print in kernels on sim (the reference)", function()
  it("prints as Lua's print, in work-item order", function()
    local out = run("sim", "order")
    assert.are.equal(table.concat({
      "-- order",
      "x\t0\ty\t0\tj\t2", "x\t1\ty\t0\tj\t1", "helper\t1\t0", "1",
      "x\t2\ty\t0\tj\t2", "x\t0\ty\t1\tj\t1", "x\t1\ty\t1\tj\t2", "helper\t1\t1", "2",
      "x\t2\ty\t1\tj\t1", "x\t0\ty\t2\tj\t2", "x\t1\ty\t2\tj\t1", "helper\t1\t2", "3",
      "x\t2\ty\t2\tj\t2", "x\t0\ty\t3\tj\t1", "x\t1\ty\t3\tj\t2", "helper\t1\t3", "4",
      "x\t2\ty\t3\tj\t1", "-- end", "" }, "\n"), out)
  end)
end)

for _, bk in ipairs(H.compilers) do
  describe("print in kernels [" .. bk .. "]", function()
    for _, case in ipairs(CASES) do
      it("writes what sim writes: " .. case, function()
        local want, got = run("sim", case), run(bk, case)
        assert.is_truthy(want:find("-- end", 1, true), want)
        assert.are.equal(want, got)
      end)
    end

    it("values print exactly as LuaJIT prints them", function()
      local out = run(bk, "values")
      assert.is_truthy(out:find("\n3\t-3\t-1.5\t3\t-inf\tfalse\tnil\ttext\t2.5\ttrue\n", 1, true), out)
      assert.is_truthy(out:find("\n0\t0\t0\t-0\tnan\tfalse\tnil\ttext\t2.5\ttrue\n", 1, true)
        or out:find("\n0\t0\t0\t-0\t-nan\tfalse\tnil\ttext\t2.5\ttrue\n", 1, true), out)
      out = run(bk, "types")
      local line = "\n7LL\t8LL\t255\t0.10000000149012\ttrue\t9.007199254741e+15\t-2147483648\t1e+301\t-0\n"
      assert.is_truthy(out:find(line, 1, true), out)
    end)

    it("keeps what fits in print_buffer and says how much it dropped", function()
      local out = run(bk, "overflow")
      assert.are.equal(table.concat({
        "-- overflow", "line\t0", "--", "line\t0", "line\t1",
        "gpujit: kernel 'cases.lua:59': 8 print records dropped: the print buffer is full"
          .. " (the kernel's print_buffer option sets its bytes)",
        "-- end", "" }, "\n"), out)
    end)

    it("compiles print to an atomic append, and nothing without print", function()
      local f = function(o, n)
        local i = gpu.global_id(0)
        if i < n then o[i] = i * 2 end
      end
      local g = function(o, n)
        local i = gpu.global_id(0)
        if i < n then o[i] = i * 2 end
        if i == 0 then print("n", n) end
      end
      local without = H.kernel(bk, f, { name = "noprint" }):inspect_llvm({ "double[]", "int32_t" })
      local with = H.kernel(bk, g, { name = "withprint" }):inspect_llvm({ "double[]", "int32_t" })
      assert.is_falsy(without:find("atomicrmw", 1, true))
      assert.is_truthy(with:find("atomicrmw add", 1, true))
    end)
  end)
end

describe("print's arguments", function()
  it("an FFI ctype is refused (Lua's print writes ctype<float>; a kernel has no such text)", function()
    local ft = require("ffi").typeof("float")
    local k = H.gpu.kernel(function(o)
      o[0] = 1
      print(ft)
    end, { name = "printctype" })
    local ok, msg = pcall(k.inspect_llvm, k, { "double[]" })
    assert.is_false(ok)
    assert.is_truthy(tostring(msg):find("print: argument 1 is", 1, true), msg)
    assert.is_truthy(tostring(msg):find("string constants", 1, true), msg)
  end)
end)

describe("the print_buffer option", function()
  it("is a whole number of bytes in 64 .. 2^30", function()
    for _, bad in ipairs({ 0, 63, 100.5, 2 ^ 31, -1 }) do
      local ok, msg = pcall(H.gpu.kernel, function() end, { print_buffer = bad })
      assert.is_false(ok)
      assert.is_truthy(tostring(msg):find("option 'print_buffer' must be a whole number of bytes",
        1, true), msg)
    end
    local ok, msg = pcall(H.gpu.kernel, function() end, { print_buffer = "1M" })
    assert.is_false(ok)
    assert.is_truthy(tostring(msg):find("option 'print_buffer' must be a number", 1, true), msg)
  end)
end)

describe("print in kernels for cuda (PTX, no GPU needed)", function()
  it("compiles to an atomic append", function()
    local k = H.gpu.kernel(function(o, n)
      local i = gpu.global_id(0)
      if i < n then print("v", o[i]) end
    end, { name = "ptxprint" })
    local ptx = k:inspect_asm({ "double[]", "int32_t" }, "cuda")
    assert.is_truthy(ptx:find("atom.global.add.u64", 1, true) or ptx:find("atom.add.u64", 1, true)
      or ptx:find("atom", 1, true), ptx)
  end)
end)

-- A host that sets the global print to its own function (a logger) before a
-- printing kernel compiles gets the kernel's lines through it: the kernel's
-- global `print` is the kernel print whatever function the global holds.
for _, bk in ipairs(H.backends) do
  describe("print in kernels under a host's own print [" .. bk .. "]", function()
    it("compiles, and the logger gets the lines", function()
      local lines, real = {}, _G.print
      local ok, err = pcall(function()
        _G.print = function(...)
          local t = {}
          for j = 1, select("#", ...) do t[j] = tostring((select(j, ...))) end
          lines[#lines + 1] = table.concat(t, "\t")
        end
        local k = H.kernel(bk, function(o, n)
          local i = gpu.global_id(0)
          if i < n then print("item", i, o[i]) end
        end, { name = "logged" })
        k:launch({ global = 3 }, H.array("double", { 0.5, -2, 7 }, 3), 3)
      end)
      _G.print = real
      assert.is_true(ok, err)
      assert.are.same({ "item\t0\t0.5", "item\t1\t-2", "item\t2\t7" }, lines)
    end)
  end)
end
