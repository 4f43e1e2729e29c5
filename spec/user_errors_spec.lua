-- Errors a new user met (issue 32): each names the user's file and line,
-- in words about the user's program, on every backend.
--  - a launch that no eager signature accepts, with two or more signatures,
--    is raised at the caller's line (not inside gpujit);
--  - a nil argument followed by others is "got nil", a trailing one (a
--    launch cannot tell it from a missing one) "got nil or no value";
--  - a library function outside the kernel subset that LuaJIT builds from
--    bytecode (string.len) is refused as the C ones are: the kernel's file
--    and line, its name, "a library function not in the kernel subset".

local H = require("spec.helpers")

local FILE = H.this_file()
local PFILE = FILE:gsub("%p", "%%%0")

-- The message without the directory before the file's name.
local function at_file(err) return err:match("[^/]*$") end

for _, bk in ipairs(H.backends) do
  describe("errors a new user meets [" .. bk .. "]", function()
    it("no eager signature fits: raised at the caller's line, with one signature or several", function()
      local body = function(o, n) o[0] = n end
      local two = H.kernel(bk, body, { name = "two" },
        { { "double[]", "int32_t" }, { "float[]", "int32_t" } })
      local one = H.kernel(bk, body, { name = "one" }, { { "double[]", "int32_t" } })
      local ok, err = pcall(function()
        two:launch({ global = 1 }, true, 1) --@two
      end)
      assert.is_false(ok)
      assert.matches("^" .. PFILE .. ":" .. H.line_of("--@two") .. ": no signature of kernel 'two'"
        .. " accepts the arguments %(Lua boolean, Lua number%)", at_file(err))
      ok, err = pcall(function()
        one:launch({ global = 1 }, true, 1) --@one
      end)
      assert.is_false(ok)
      assert.matches("^" .. PFILE .. ":" .. H.line_of("--@one") .. ": bad argument #1 'o' to"
        .. " kernel 'one': expected double%[%]", at_file(err))
    end)

    it("a nil argument is 'got nil', a trailing or missing one 'got nil or no value'", function()
      local k = H.kernel(bk, function(o, n) o[0] = n end, { name = "nils" })
      local o = H.array("double", { 0 }, 1)
      local ok, err = pcall(function()
        k:launch({ global = 1 }, nil, 1) --@nil
      end)
      assert.is_false(ok)
      assert.are.equal(FILE .. ":" .. H.line_of("--@nil") .. ": bad argument #1 'o' to kernel 'nils':"
        .. " got nil", at_file(err))
      ok, err = pcall(function()
        k:launch({ global = 1 }, o) --@none
      end)
      assert.is_false(ok)
      assert.are.equal(FILE .. ":" .. H.line_of("--@none") .. ": bad argument #2 'n' to kernel 'nils':"
        .. " got nil or no value (the kernel takes 2 arguments)", at_file(err))
    end)

    it("string.len is a library function outside the kernel subset", function()
      local fn = function(o)
        o[0] = string.len("hello") --@len
      end
      local k = H.kernel(bk, fn, { name = "strlen" })
      local err
      if bk == "sim" then
        -- sim runs the function as LuaJIT does; compiling it (inspect) refuses it
        local o = H.array("double", { 0 }, 1)
        k:launch({ global = 1 }, o)
        assert.are.equal(5, o[0])
        err = H.error_of(k.inspect_llvm, k, { "double[]" })
      else
        err = H.error_of(k.launch, k, { global = 1 }, H.array("double", { 0 }, 1))
      end
      H.check_compile_error(err, FILE, H.line_of("--@len"), "strlen",
        { "unknown function 'string.len': a library function not in the kernel subset is not supported" })
      assert.is_nil(err:find("ISTYPE", 1, true), err)
    end)

    it("math.deg and math.rad, built from bytecode too, still compile as LuaJIT computes them", function()
      local o = H.array("double", { 0, 0 }, 2)
      H.kernel(bk, function(a)
        a[0], a[1] = math.deg(a[0] + 1), math.rad(a[1] + 90)
      end, { name = "degrad" }):launch({ global = 1 }, o)
      assert.are.equal(math.deg(1), o[0])
      assert.are.equal(math.rad(90), o[1])
    end)
  end)
end
