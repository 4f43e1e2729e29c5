-- What is not in the kernel subset is a compile error
--   "errors_spec.lua:LINE: <what> (in kernel NAME)"
-- with the exact line of the construct (found through a marker comment at
-- the end of the line), and bad launches are Lua errors that name the
-- argument.  After every error the module keeps working: the same error
-- comes again, and a good kernel runs.

-- luacheck: globals gj_spec_err_global
-- luacheck: ignore 211 212 311 (kernels written only to fail to compile)

local H = require("spec.helpers")
local ffi = require("ffi")
local gpu = H.gpu

local FILE = H.this_file()

local counter = 0
local lib = {
  val = 5, str = "text", fn = function(x) return x end,
}
local function rec(x)
  if x <= 0 then return 0 end
  return rec(x - 1) + 1 --@recursion
end
local function mixed_returns(x)
  if x > 0 then return 1 else return 1, 2 end --@returns
end
local function uses_string(x)
  local s = "inside a device function"
  if s then return x end --@devfn-string
  return 0
end

local function out1() return ffi.new("double[4]") end

-- Compile (by launching) kernel fn named `name`, expect the error at the
-- line of `marker` naming one of `words`; then again; then a good kernel.
local function expect_error(bk, name, fn, marker, words, launch)
  local line = H.line_of(marker)
  local k = H.kernel(bk, fn, { name = name })
  launch = launch or function(kk) kk:launch(1, out1(), 1) end
  local msg = H.error_of(launch, k)
  H.check_compile_error(msg, FILE, line, name, words)
  local again = H.error_of(launch, k)
  H.check_compile_error(again, FILE, line, name, words)
  H.sanity(bk)
  return msg
end

if #H.compilers == 0 then
  describe("compile errors", function()
    pending("need a compiling backend (GPUJIT_SPEC_BACKENDS lists only sim)")
  end)
end

for _, bk in ipairs(H.compilers) do
  describe("compile errors [" .. bk .. "]", function()
    it("a string", function()
      expect_error(bk, "k_string", function(o, x)
        local s = "hello"; if s then o[0] = x end --@string
      end, "--@string", { "string" })
    end)

    it("a string comparison", function()
      expect_error(bk, "k_strcmp", function(o, x)
        if x == "abc" then o[0] = 1 end --@strcmp
      end, "--@strcmp", { "string" })
    end)

    it("an empty table constructor", function()
      expect_error(bk, "k_table", function(o, x)
        local t = {}; t[1] = x; o[0] = t[1] --@table
      end, "--@table", { "table" })
    end)

    it("a table constructor with values", function()
      expect_error(bk, "k_table2", function(o, x)
        local t = { 1, 2, 3 }; o[0] = t[2] + x --@table2
      end, "--@table2", { "table" })
    end)

    it("a closure created inside the kernel", function()
      expect_error(bk, "k_closure", function(o, x)
        local f = function(y) return y + x end; o[0] = f(1) --@closure
      end, "--@closure", { "closure", "function" })
    end)

    it("varargs", function()
      expect_error(bk, "k_vararg", function(o, ...) local a = ...; o[0] = a end, --@vararg
        "--@vararg", { "vararg", "..." }, function(k) k:launch(1, out1()) end)
    end)

    it("pairs over a table argument", function()
      expect_error(bk, "k_pairs", function(o, t)
        local s = 0; for _, v in pairs(t) do s = s + v end; o[0] = s --@pairs
      end, "--@pairs", { "pairs", "not supported", "unknown", "iterator" },
      function(k) k:launch(1, out1(), { 1, 2, 3 }) end)
    end)

    it("ipairs over a table argument", function()
      expect_error(bk, "k_ipairs", function(o, t)
        local s = 0; for _, v in ipairs(t) do s = s + v end; o[0] = s --@ipairs
      end, "--@ipairs", { "ipairs", "not supported", "unknown", "iterator" },
      function(k) k:launch(1, out1(), { 1, 2, 3 }) end)
    end)

    it("printing an array (print takes numbers, booleans, nil and string constants)", function()
      expect_error(bk, "k_print", function(o, x)
        print("o", o); o[0] = x --@print
      end, "--@print",
      { "print: argument 2 is", "kernels print numbers, booleans, nil and string constants" })
    end)

    it("calling string.format", function()
      expect_error(bk, "k_format", function(o, x)
        o[0] = #string.format("%d", x) --@format
      end, "--@format", { "string", "format", "unknown function", "not supported" })
    end)

    it("calling math.random (math, but not in the subset)", function()
      expect_error(bk, "k_random", function(o, x)
        o[0] = math.random() + x --@random
      end, "--@random", { "'math.random' has no kernel form" })
    end)

    it("calling os.time", function()
      expect_error(bk, "k_os", function(o, x)
        o[0] = os.time() + x --@ostime
      end, "--@ostime", { "os", "time", "unknown function", "not supported" })
    end)

    it("calling a field of an upvalue table that is a number", function()
      expect_error(bk, "k_callnum", function(o, x)
        o[0] = lib.val(x) --@callnum
      end, "--@callnum", { "call", "function", "number", "not supported" })
    end)

    it("calling a field of an upvalue table that is a string", function()
      expect_error(bk, "k_callstr", function(o, x)
        o[0] = lib.str(x) --@callstr
      end, "--@callstr", { "call", "function", "string", "not supported" })
    end)

    it("calling a missing field of gpu", function()
      expect_error(bk, "k_gpufield", function(o, x)
        o[0] = gpu.no_such_intrinsic(x) --@gpufield
      end, "--@gpufield", { "no_such_intrinsic", "unknown", "not supported", "nil", "call" })
    end)

    it("concatenation", function()
      expect_error(bk, "k_concat", function(o, x)
        local s = x .. x; o[0] = 1 --@concat
      end, "--@concat", { "concat", "..", "string" })
    end)

    it("assigning to an upvalue", function()
      expect_error(bk, "k_upset", function(o, x)
        counter = counter + x; o[0] = 1 --@upset
      end, "--@upset", { "upvalue" })
    end)

    it("assigning to a global", function()
      expect_error(bk, "k_gset", function(o, x)
        gj_spec_err_global = x; o[0] = 1 --@gset
      end, "--@gset", { "global" })
    end)

    it("assigning to a field of an upvalue table", function()
      expect_error(bk, "k_fieldset", function(o, x)
        lib.val = x; o[0] = 1 --@fieldset
      end, "--@fieldset", { "field", "table", "upvalue", "assign", "not supported", "string" })
    end)

    it("#a on an FFI pointer argument is an error, not a silent 0", function()
      -- typing.md: #a is for Lua-table and gpu.array arguments; a pointer
      -- has no length at all.
      local k = H.kernel(bk, function(o, a, x)
        o[0] = #a + x
      end, { name = "k_ptrlen" })
      local host = ffi.new("double[8]")
      local out = out1()
      local ok, msg = pcall(function() k:launch(1, out, ffi.cast("double *", host), 1) end)
      assert.is_false(ok, "#a of a double * gave " .. H.fmt(out[0]))
      assert.is_truthy(H.lower_find(tostring(msg), { "length", "#", "pointer" }), msg)
      H.sanity(bk)
    end)

    it("indexing a number", function()
      expect_error(bk, "k_indexnum", function(o, x)
        o[0] = x[1] --@indexnum
      end, "--@indexnum", { "index", "number", "double" })
    end)

    it("recursion", function()
      expect_error(bk, "k_recursion", function(o, x)
        o[0] = rec(x)
      end, "--@recursion", { "recurs" })
    end)

    it("a device function whose returns give different numbers of values", function()
      expect_error(bk, "k_returns", function(o, x)
        local a = mixed_returns(x); o[0] = a
      end, "--@returns", { "return", "values" })
    end)

    it("a string inside a device function names the device function's line", function()
      expect_error(bk, "k_devstr", function(o, x)
        o[0] = uses_string(x)
      end, "--@devfn-string", { "string" })
    end)

    H.it_with("workgroups", bk)("gpu.shared with a size that is not a constant", function()
      expect_error(bk, "k_shared", function(o, n)
        local s = gpu.shared("float", n); s[0] = 1; o[0] = s[0] --@shared
      end, "--@shared", { "constant", "size", "shared" })
    end)

    it("an eager gpu.kernel(sig, fn) reports the error when it is created", function()
      local line = H.line_of("--@eager")
      local msg = H.error_of(function()
        H.kernel(bk, function(o, x)
          local t = { x }; o[0] = t[1] --@eager
        end, { name = "k_eager" }, { "double[]", "double" })
      end)
      H.check_compile_error(msg, FILE, line, "k_eager", { "table" })
      H.sanity(bk)
    end)

    it("k:inspect_llvm reports the same error", function()
      local line = H.line_of("--@inspect")
      local k = H.kernel(bk, function(o, x)
        local s = "x"; if s then o[0] = x end --@inspect
      end, { name = "k_inspect" })
      local msg = H.error_of(function() return k:inspect_llvm({ "double[]", "double" }) end)
      H.check_compile_error(msg, FILE, line, "k_inspect", { "string" })
      H.sanity(bk)
    end)

    it("a kernel without a name option is still named in the error", function()
      local line = H.line_of("--@noname")
      local k = H.kernel(bk, function(o, x)
        local t = {}; o[0] = x --@noname
      end)
      local msg = H.error_of(function() k:launch(1, out1(), 1) end)
      assert.is_truthy(msg:find(FILE:gsub("%p", "%%%0") .. ":" .. line .. ": "), msg)
      assert.is_truthy(msg:find("%(in kernel [^%)]+%)"), msg)
      H.sanity(bk)
    end)
  end)
end

for _, bk in ipairs(H.backends) do
  describe("launch errors [" .. bk .. "]", function()
    local function good()
      return H.kernel(bk, function(o, x)
        local i = gpu.global_id(0)
        o[i] = x + i
      end, { name = "k_args" })
    end

    local function expect_arg_error(k, words, ...)
      local args = { ... }
      local n = select("#", ...)
      local msg = H.error_of(function() k:launch(1, unpack(args, 1, n)) end)
      for _, w in ipairs(words) do
        if not msg:find(w, 1, true) then
          error("the message does not contain \"" .. w .. "\":\n  " .. msg, 2)
        end
      end
      H.sanity(bk)
      return msg
    end

    it("a string argument", function()
      local msg = expect_arg_error(good(), { "bad argument #2 'x'" }, out1(), "str")
      assert.is_truthy(msg:find("string"), msg)
    end)

    it("a function argument", function()
      local msg = expect_arg_error(good(), { "bad argument #2 'x'" }, out1(), print)
      assert.is_truthy(msg:find("function"), msg)
    end)

    it("a nil argument, and a missing one", function()
      local msg = expect_arg_error(good(), { "bad argument #2 'x'" }, out1(), nil)
      assert.is_truthy(H.lower_find(msg, { "nil", "no value" }), msg)
      expect_arg_error(good(), { "bad argument #2 'x'" }, out1())
    end)

    it("a table with a string in it", function()
      local k = H.kernel(bk, function(o, t)
        local i = gpu.global_id(0)
        o[i] = t[i + 1]
      end, { name = "k_tstr" })
      local msg = expect_arg_error(k, { "bad argument #2 't'" }, out1(), { 1, "two", 3 })
      assert.is_truthy(H.lower_find(msg, { "string", "[2]" }), msg)
    end)

    it("a coroutine argument", function()
      expect_arg_error(good(), { "bad argument #2 'x'" }, out1(), coroutine.create(print))
    end)

    it("too many arguments", function()
      expect_arg_error(good(), { "bad argument #3" }, out1(), 1, 2)
    end)

    it("the error points at the line of the launch", function()
      local k = good()
      local line = H.line_of("--@launchline")
      local ok, msg = pcall(function()
        k:launch(1, out1(), "str") --@launchline
      end)
      assert.is_false(ok)
      assert.is_truthy(tostring(msg):find(FILE:gsub("%p", "%%%0") .. ":" .. line .. ":"), msg)
    end)

    it("launch called with a dot instead of a colon", function()
      local k = good()
      local msg = H.error_of(function() k.launch(1, out1(), 1) end)
      assert.is_truthy(#msg > 0)
      H.sanity(bk)
    end)

    for _, case in ipairs({
      { "a string", "abc" },
      { "a negative size", -5 },
      { "a fractional size", 2.5 },
      { "a table without global", { group = 4 } },
      { "four dimensions", { global = { 1, 2, 3, 4 } } },
      { "a global of the wrong type", { global = "x" } },
      { "a group shaped unlike global", { global = { 8, 8 }, group = { 4 } } },
      { "a zero group", { global = 8, group = 0 } },
      { "a boolean", true },
    }) do
      it("a bad launch configuration: " .. case[1], function()
        local k = good()
        local msg = H.error_of(function() k:launch(case[2], out1(), 1) end)
        assert.is_truthy(H.lower_find(msg, { "launch configuration", "global", "group" }), msg)
        assert.is_truthy(msg:find("k_args", 1, true), msg)
        H.sanity(bk)
      end)
    end

    local it_wg = H.it_with("workgroups", bk)
    it_wg("a kernel with gpu.barrier() launched with global not a multiple of group", function()
      local k = H.kernel(bk, function(o)
        local i = gpu.global_id(0)
        o[i] = 1
        gpu.barrier()
      end, { name = "k_barrier" })
      local out = ffi.new("double[10]")
      local msg = H.error_of(function() k:launch({ global = 10, group = 4 }, out) end)
      assert.is_truthy(H.lower_find(msg, { "multiple" }), msg)
      assert.is_truthy(msg:find("k_barrier", 1, true), msg)
      k:launch({ global = 8, group = 4 }, out)
      H.check("double", out, { 1, 1, 1, 1, 1, 1, 1, 1, 0, 0 }, 10)
      H.sanity(bk)
    end)

    it("bad arguments to gpu.kernel", function()
      assert.has_error(function() gpu.kernel("not a function") end)
      assert.has_error(function() gpu.kernel(function() end, { precision = "quad" }) end)
      assert.has_error(function() gpu.kernel(function() end, { backend = "no-such-backend" }) end)
      assert.has_error(function() gpu.kernel({ "no_such_type_t" }, function(x) return x end) end)
      H.sanity(bk)
    end)
  end)
end
