-- Constant tables (docs/typing.md, "Constant tables"): a Lua table of
-- numbers reached as an upvalue and indexed with a variable is compiled in
-- as read-only constant data.  Results are compared bit for bit with plain
-- LuaJIT running the same function; a write and a table that is not a list
-- of numbers are compile errors at their line.  Nested tables:
-- spec/consttable_nested_spec.lua.

local H = require("spec.helpers")
local ffi = require("ffi")
local gpu = H.gpu

local W5 = { 1, 4, 6, 4, 1 }                       -- whole: an lnum on [0, 6]
local FR = { 0.5, -1.25, 3, 1e300, -0.0, 0.1 }     -- not whole: doubles
local EDGE = { 2 ^ 31 - 1, -2 ^ 31, 7 }             -- whole, int32_t's edges
local BIG = { 2 ^ 31, 3 }                          -- past int32_t: doubles

-- f(o, src, i) on bk and in plain LuaJIT, o compared (spec/helpers.lua)
local run = H.rows_vs_lua

for _, bk in ipairs(H.backends) do
  describe("constant tables [" .. bk .. "]", function()
    it("a 5-tap filter's weights indexed by the loop counter", function()
      run(bk, "ct_w5", function(o, src, i)
        local s = 0
        for t = 1, 5 do s = s + W5[t] * src[i + t - 1] end
        o[i] = s / 16
      end, 24)
    end)

    it("whole numbers are integers: index math on them stays exact", function()
      run(bk, "ct_idx", function(o, src, i)
        local w = W5[i % 5 + 1]
        o[i] = src[w + 1] + w * (2 ^ 40 + 1) + EDGE[i % 3 + 1] * EDGE[(i + 1) % 3 + 1]
      end, 12)
    end)

    it("fractions, -0, huge values and values past int32_t are the doubles", function()
      run(bk, "ct_frac", function(o, src, i)
        o[i] = FR[i % 6 + 1] * src[i] + FR[(i + 2) % 6 + 1] * -1 + BIG[i % 2 + 1] * 3
      end, 18)
    end)

    it("FFI arrays of numbers: 0-based, with any index, constant or not", function()
      local FW = ffi.new("float[5]", 1, 4, 6, 4, 1)
      local FD = ffi.new("double[?]", 3, { 0.5, -1.25, 1e300 })
      local FI = ffi.new("int16_t[4]", -3, 7, 9, 1000)
      local FU = ffi.new("uint8_t[3]", 255, 0, 17)
      run(bk, "ct_ffi", function(o, src, i)
        local s = 0
        for t = 0, 4 do s = s + FW[t] * src[i + t] end
        o[i] = s + FD[i % 3] + FI[i % 4] * (2 ^ 40) + FU[i % 3] + FW[2] + FD[1]
      end, 16)
    end)

    it("a table reached through a device function and a global-like upvalue", function()
      local P = { tab = { 2, 3, 5, 7, 11, 13 } }
      local function prime(k) return P.tab[k] end
      run(bk, "ct_dev", function(o, _, i)
        local s = 0
        for k = 1, i % 6 + 1 do s = s + prime(k) end
        o[i] = s
      end, 12)
    end)
  end)
end

for _, bk in ipairs(H.compilers) do
  describe("constant tables: compiling [" .. bk .. "]", function()
    it("the numbers are constant data of the module, integers where whole", function()
      local k = H.kernel(bk, function(o, n)
        local i = gpu.global_id(0)
        if i < n then o[i] = W5[i % 5 + 1] * n end
      end, { name = "ct_ir" })
      local ir = k:inspect_llvm({ "double[]", "lua_pos20" })
      assert.truthy(ir:find("@gj.const.%d+ = internal[^\n]*constant %[6 x i32%] "
        .. "%[i32 0, i32 1, i32 4, i32 6, i32 4, i32 1%]"), ir)
      assert.is_nil(ir:find("fmul"), "W5[k] * n is an integer product")
    end)

    it("a write is a compile error at its line", function()
      local err = H.compile_error(bk, function(o, n)
        local i = gpu.global_id(0)
        W5[i % 5 + 1] = n --@ct_write
        o[i] = 1
      end, { "double[]", "lua_pos20" })
      H.check_compile_error(err, "consttable_spec.lua", H.line_of("--@ct_write"), "bad",
        { "assigning to table 'W5'" })
    end)

    it("a table of other values, or of no numbers, is an error naming it and the index", function()
      local MIX = { 1, 2, "three" }
      local EMPTY = {}
      local err = H.compile_error(bk, function(o, n)
        o[0] = MIX[n] --@ct_mix
      end, { "double[]", "lua_pos20" })
      H.check_compile_error(err, "consttable_spec.lua", H.line_of("--@ct_mix"), "bad",
        { "table 'MIX' holds a value that is not a number at [3]" })
      err = H.compile_error(bk, function(o, n)
        o[0] = EMPTY[n] --@ct_empty
      end, { "double[]", "lua_pos20" })
      H.check_compile_error(err, "consttable_spec.lua", H.line_of("--@ct_empty"), "bad",
        { "table 'EMPTY' has no number at [1]" })
    end)

    it("an FFI array's contents are in the disk cache key too", function()
      local dir = H.tmpdir()
      local A = ffi.new("int32_t[2]", 5, 6)
      local function f(o, n)
        local i = gpu.global_id(0)
        if i < n then o[i] = A[i] end
      end
      local o = ffi.new("double[2]")
      H.with_cache_dir(dir, function()
        gpu.kernel(f, { backend = bk, name = "ct_fkey" }):launch(2, o, 2)
        H.check("double", o, { 5, 6 }, 2)
        A[1] = 60
        gpu.kernel(f, { backend = bk, name = "ct_fkey" }):launch(2, o, 2)
        H.check("double", o, { 5, 60 }, 2)
      end)
    end)

    it("the contents are in the disk cache key: a changed table compiles anew", function()
      local dir = H.tmpdir()
      local T = { 10, 20, 30 }
      local function f(o, n)
        local i = gpu.global_id(0)
        if i < n then o[i] = T[i + 1] end
      end
      local o = ffi.new("double[3]")
      H.with_cache_dir(dir, function()
        gpu.kernel(f, { backend = bk, name = "ct_key" }):launch(3, o, 3)
        H.check("double", o, { 10, 20, 30 }, 3)
        T[2] = 25
        local k2 = gpu.kernel(f, { backend = bk, name = "ct_key" })
        local hits = 0
        local off = gpu.on_compile(function(ev)
          if ev.phase == "done" and ev.cache == "hit" then hits = hits + 1 end
        end)
        k2:launch(3, o, 3)
        off()
        assert.are.equal(0, hits)
        H.check("double", o, { 10, 25, 30 }, 3)
        -- the same contents again: the first entry serves it
        T[2] = 20
        hits = 0
        off = gpu.on_compile(function(ev)
          if ev.phase == "done" and ev.cache == "hit" then hits = hits + 1 end
        end)
        gpu.kernel(f, { backend = bk, name = "ct_key" }):launch(3, o, 3)
        off()
        assert.are.equal(1, hits)
        H.check("double", o, { 10, 20, 30 }, 3)
      end)
    end)
  end)
end
