-- Errors at the API's edge that say what is wrong and what to do instead
-- (issue 18): gpu.kernel's first argument, FFI structs, nested tables,
-- math.random in a kernel.

local H = require("spec.helpers")
local ffi = require("ffi")
local gpu = H.gpu

local FILE = H.this_file()

pcall(ffi.cdef, [[
  typedef struct { float x, y, vx, vy; } gj_spec_particle;
  struct gj_spec_body { double m; float pos[3]; };
]])

describe("gpu.kernel's arguments", function()
  it("gpu.kernel(42) is a bad argument #1 in Lua's words, at the caller's line", function()
    local line = H.line_of("--@k42")
    local msg = H.error_of(function()
      local k = gpu.kernel(42) --@k42
      return k
    end)
    assert.is_truthy(msg:find(FILE .. ":" .. line .. ": bad argument #1 to 'kernel' "
      .. "(function expected, got number)", 1, true), msg)
  end)

  it("gpu.kernel(signature, 42) is a bad argument #2", function()
    local msg = H.error_of(function() return gpu.kernel({ "double" }, 42) end)
    assert.is_truthy(msg:find("bad argument #2 to 'kernel' (function expected, got number)",
      1, true), msg)
  end)

  it("gpu.kernel() says what it got", function()
    local msg = H.error_of(function() return gpu.kernel() end)
    assert.is_truthy(msg:find("bad argument #1 to 'kernel' (function expected, got no value)",
      1, true) or msg:find("(function expected, got nil)", 1, true), msg)
  end)
end)

describe("backend names", function()
  it("an unknown backend lists the known ones, which come from the core", function()
    local msg = H.error_of(function() return gpu.use("vulkan") end)
    assert.is_truthy(msg:find("gpu.use: unknown backend 'vulkan' (known: ", 1, true), msg)
    for _, b in ipairs(gpu.backends()) do
      assert.is_truthy(msg:find(b.name, 1, true), b.name .. " missing from: " .. msg)
    end
  end)

  it("without the compiled core only sim is known, and the message says why", function()
    -- a child process whose LUA_CPATH finds no gpujit.core
    local p = assert(io.popen("LUA_CPATH=/nonexistent/?.so LUA_PATH='lua/?.lua;lua/?/init.lua;;' "
      .. "luajit -e 'local gpu = require(\"gpujit\"); print(select(2, pcall(gpu.use, \"cpu\")))' 2>&1"))
    local out = p:read("*a")
    p:close()
    assert.is_truthy(out:find("unknown backend 'cpu' (known: sim; the compiled backends need the "
      .. "compiled core, which is not loaded", 1, true), out)
  end)
end)

for _, bk in ipairs(H.backends) do
  describe("argument errors [" .. bk .. "]", function()
    local k
    before_each(function()
      k = H.kernel(bk, function(a, n)
        local i = gpu.global_id(0)
        if i < n then a[i] = i end
      end, { name = "k_args" })
    end)

    it("an FFI array of a typedef'd struct is a struct array: a store of a number names the struct",
      function()
      local ps = ffi.new("gj_spec_particle[?]", 4)
      local msg = H.error_of(function() k:launch(4, ps, 4) end)
      assert.is_truthy(msg:find("cannot store a number (int64_t) into an element of an array "
        .. "(gj_spec_particle[]) (in kernel k_args)", 1, true), msg)
      assert.is_falsy(msg:find("struct %d"), msg)
    end)

    it("a fixed array of a named struct, and a pointer to one, are arrays of 'struct tag'", function()
      local bodies = ffi.new("struct gj_spec_body[3]")
      local msg = H.error_of(function() k:launch(3, bodies, 3) end)
      assert.is_truthy(msg:find("an array (struct gj_spec_body[])", 1, true), msg)
      local p = ffi.cast("struct gj_spec_body *", bodies)
      msg = H.error_of(function() k:launch(3, p, 3) end)
      if H.host_shared(bk) then
        assert.is_truthy(msg:find("an array (struct gj_spec_body[])", 1, true), msg)
      else   -- a pointer is refused before anything is compiled, as any pointer
        assert.is_truthy(msg:find("an FFI pointer can only be passed to a device that shares host memory",
          1, true), msg)
      end
      -- one struct (bodies[0], a reference) is passed by reference: indexing it is an error
      msg = H.error_of(function() k:launch(3, bodies[0], 3) end)
      assert.is_truthy(msg:find("attempt to index a struct gj_spec_body (in kernel k_args)", 1, true), msg)
    end)

    it("a table of tables says only flat tables are arguments", function()
      local k2 = H.kernel(bk, function(t, n)
        local i = gpu.global_id(0)
        if i < n then t[i + 1][1] = i end
      end, { name = "k_nested" })
      local msg = H.error_of(function() k2:launch(2, { { 1, 2 }, { 3, 4 } }, 2) end)
      assert.is_truthy(msg:find(FILE .. ":%d+: bad argument #1 't' to kernel 'k_nested'"), msg)
      assert.is_truthy(msg:find("only flat Lua tables of numbers", 1, true), msg)
      assert.is_falsy(msg:find("attempt to index", 1, true), msg)
    end)

    it("a table with a table further on says the same", function()
      local k1 = H.kernel(bk, function(t, n)
        local i = gpu.global_id(0)
        if i < n then t[i + 1] = i end
      end, { name = "k_table" })
      local msg = H.error_of(function() k1:launch(2, { 1, { 2 } }, 2) end)
      assert.is_truthy(msg:find("table element [2] is Lua table", 1, true), msg)
      assert.is_truthy(msg:find("only flat Lua tables of numbers", 1, true), msg)
      local t = { 5, 5 }
      k1:launch(2, t, 2)
      assert.are.same({ 0, 1 }, t)
    end)
  end)
end

for _, bk in ipairs(H.compilers) do
  describe("math.random in a kernel [" .. bk .. "]", function()
    it("says it has no kernel form and what to use instead", function()
      local line = H.line_of("--@rnd")
      local k = H.kernel(bk, function(o)
        o[gpu.global_id(0)] = math.random() --@rnd
      end, { name = "k_rnd" })
      local msg = H.error_of(function() k:launch(1, ffi.new("double[1]")) end)
      local what = H.check_compile_error(msg, FILE, line, "k_rnd", { "has no kernel form" })
      assert.is_truthy(what:find("'math.random' has no kernel form", 1, true), msg)
      assert.is_truthy(what:find("gpu.uniform(seed, gpu.global_id(0))", 1, true), msg)
      assert.is_falsy(what:find("may call only", 1, true), msg)
    end)

    it("names math.random when the kernel calls it through a local", function()
      local rnd = math.random
      local k = H.kernel(bk, function(o)
        o[gpu.global_id(0)] = rnd(6)
      end, { name = "k_rnd2" })
      local msg = H.error_of(function() k:launch(1, ffi.new("double[1]")) end)
      assert.is_truthy(msg:find("'rnd' (math.random) has no kernel form", 1, true), msg)
    end)

    it("another math function outside the subset is named as such", function()
      local k = H.kernel(bk, function(o)
        local m = math.frexp(2.5)
        o[gpu.global_id(0)] = m
      end, { name = "k_frexp" })
      local msg = H.error_of(function() k:launch(1, ffi.new("double[1]")) end)
      assert.is_truthy(msg:find("'math.frexp' has no kernel form", 1, true), msg)
      H.sanity(bk)
    end)
  end)
end
