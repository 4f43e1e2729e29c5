-- Nested constant tables (docs/typing.md, "Constant tables"): a Lua table
-- of tables of numbers (to any one depth) reached as an upvalue and indexed
-- with variables, `T[i][j]` or `local row = T[i]; row[j]`, is compiled in
-- as read-only constant data.  Results are compared bit for bit with plain
-- LuaJIT running the same function; rows may differ in length; an index
-- outside reads 0 (documented: LuaJIT would give nil); mixed depths and
-- writes are compile errors at their line; the numbers are in the cache key.

local H = require("spec.helpers")
local ffi = require("ffi")
local gpu = H.gpu

local M3 = { { 1, 2, 1 }, { 0, 0.5, 0 }, { -1, -2.25, -1 } }   -- doubles
local RAG = { { 3, 1, 4 }, { 1, 5 }, { 9, 2, 6, 5 }, {} }       -- whole, ragged
local RLEN = { 3, 2, 4, 0 }
local CUBE = { { { 1, 2 }, { 3, 4 } }, { { 5, 6 }, { 7, 8e300 } } }
local WIDE = { { 2 ^ 31 - 1, -2 ^ 31 }, { 7, -0.0 } }

-- f(o, src, i) on bk and in plain LuaJIT, o compared (spec/helpers.lua)
local run = H.rows_vs_lua

for _, bk in ipairs(H.backends) do
  describe("nested constant tables [" .. bk .. "]", function()
    it("a 3x3 stencil's weights as T[r][c], both indices loop counters", function()
      run(bk, "ctn_m3", function(o, src, i)
        local s = 0
        for r = 1, 3 do
          for c = 1, 3 do s = s + M3[r][c] * src[i + r + c] end
        end
        o[i] = s
      end, 20)
    end)

    it("local row = T[i], then row[j]; constant indices on either level", function()
      run(bk, "ctn_row", function(o, src, i)
        local row = M3[i % 3 + 1]
        o[i] = row[1] * src[i] + row[i % 3 + 1] + M3[2][i % 3 + 1] + M3[i % 3 + 1][3] + M3[3][2]
      end, 15)
    end)

    it("ragged rows read within their lengths; whole numbers stay integers", function()
      run(bk, "ctn_rag", function(o, _, i)
        local r = i % 4 + 1
        local s = 0
        for c = 1, RLEN[r] do s = s + RAG[r][c] * (2 ^ 40 + c) end
        o[i] = s + WIDE[i % 2 + 1][1] * WIDE[1][i % 2 + 1] + WIDE[2][i % 2 + 1]
      end, 12)
    end)

    it("derivatives treat the numbers as constants (forward and reverse)", function()
      local k = H.kernel(bk, function(x, y, n)
        local i = gpu.global_id(0)
        if i < n then y[i] = M3[i % 3 + 1][1] * x[i] * x[i] + M3[3][i % 3 + 1] * x[i] end
      end, { name = "ctn_ad" })
      local n = 6
      local x, dx = ffi.new("double[?]", n), ffi.new("double[?]", n)
      local y, dy = ffi.new("double[?]", n), ffi.new("double[?]", n)
      for i = 0, n - 1 do x[i], dx[i] = i - 2.5, 1 end
      local function want(i) return 2 * M3[i % 3 + 1][1] * x[i] + M3[3][i % 3 + 1] end
      gpu.jvp(k):launch(n, x, dx, y, dy, n)
      H.check("double", dy, want, n)
      local gx, gy = ffi.new("double[?]", n), ffi.new("double[?]", n)
      for i = 0, n - 1 do gy[i] = 1 end
      gpu.grad(k):launch(n, x, gx, y, gy, n)
      H.check("double", gx, want, n)
    end)

    it("three levels, and a row passed to a device function", function()
      local function sum2(row, k) return row[1] * k + row[2] end
      run(bk, "ctn_cube", function(o, src, i)
        local a, b = i % 2 + 1, (i + 1) % 2 + 1
        o[i] = CUBE[a][b][i % 2 + 1] * src[i] + sum2(CUBE[b][a], src[i + 1]) + CUBE[2][2][2]
      end, 10)
    end)
  end)
end

for _, bk in ipairs(H.compilers) do
  describe("nested constant tables: compiling [" .. bk .. "]", function()
    it("an index outside any table reads 0, at every level", function()
      local k = H.kernel(bk, function(o, n)
        local i = gpu.global_id(0)
        if i < n then o[i] = RAG[math.floor(i / 6) - 1][i % 6 - 1] end
      end, { name = "ctn_out" })
      local n = 36
      local o = ffi.new("double[?]", n)
      k:launch(n, o, n)
      H.check("double", o, function(i)
        local row = RAG[math.floor(i / 6) - 1]
        return row and row[i % 6 - 1] or 0
      end, n)
    end)

    it("the numbers and the directory are constant data of the module", function()
      local k = H.kernel(bk, function(o, n)
        local i = gpu.global_id(0)
        if i < n then o[i] = RAG[i % 4 + 1][i % 3 + 1] * n end
      end, { name = "ctn_ir" })
      local ir = k:inspect_llvm({ "double[]", "lua_pos20" })
      assert.truthy(ir:find("@gj.const.%d+ = internal[^\n]*constant %[10 x i32%] "
        .. "%[i32 0, i32 3, i32 1, i32 4, i32 1, i32 5, i32 9, i32 2, i32 6, i32 5%]"), ir)
      -- nodes: empty, root (rows 2..5), the four rows (start, length)
      assert.truthy(ir:find("@gj.cdir.%d+ = internal[^\n]*constant %[12 x i32%] "
        .. "%[i32 0, i32 0, i32 1, i32 4, i32 0, i32 3, i32 3, i32 2, i32 5, i32 4, "
        .. "i32 9, i32 0%]"), ir)
      assert.is_nil(ir:find("fmul"), "RAG[r][c] * n is an integer product")
    end)

    it("a write to a nested table or to a row of it is a compile error at its line", function()
      local err = H.compile_error(bk, function(o, n)
        M3[n][1] = 2 --@ctn_w1
        o[0] = 1
      end, { "double[]", "lua_pos20" })
      H.check_compile_error(err, "consttable_nested_spec.lua", H.line_of("--@ctn_w1"), "bad",
        { "assigning to table 'M3' (to a table in it)" })
      err = H.compile_error(bk, function(o, n)
        local row = M3[n]
        o[0] = row[1]
        row[n] = o[1] --@ctn_w2
      end, { "double[]", "lua_pos20" })
      H.check_compile_error(err, "consttable_nested_spec.lua", H.line_of("--@ctn_w2"), "bad",
        { "assigning to table 'M3' (to a table in it)" })
      err = H.compile_error(bk, function(o, n)
        o[0] = M3[2][n]
        M3[2][n] = 1 --@ctn_w3
      end, { "double[]", "lua_pos20" })
      H.check_compile_error(err, "consttable_nested_spec.lua", H.line_of("--@ctn_w3"), "bad",
        { "assigning to table 'M3[2]'" })
    end)

    it("numbers and tables at one depth, other values, cycles, FFI rows: errors naming the place", function()
      local MIXD = { { 1, 2 }, 3 }
      local MIXR = { { 1, 2 }, { 3, { 4 } } }
      local BADV = { { 1, 2 }, { 3, true } }
      local NONE = { {}, {} }
      local CYC = { 1 }
      CYC[1] = CYC
      local OFF = { ffi.new("double[2]", 1, 2) }
      local cases = {
        { function(o, n) o[0] = MIXD[n][1] end, "table 'MIXD' holds a number at [2] but a table at [1]" },
        { function(o, n) o[0] = MIXR[n][1] end, "table 'MIXR' holds a table at [2][2] but numbers" },
        { function(o, n) o[0] = BADV[n][1] end,
          "table 'BADV' holds a value that is not a number at [2][2]" },
        { function(o, n) o[0] = NONE[n][1] end,
          "table 'NONE' has no number at [1] (nor in any table in it)" },
        { function(o, n) o[0] = CYC[n][1] end, "table 'CYC' nests tables more than 8 deep" },
        { function(o, n) o[0] = OFF[n][1] end, "table 'OFF' holds an FFI array at [1]" },
      }
      for _, c in ipairs(cases) do
        local err = H.compile_error(bk, c[1], { "double[]", "lua_pos20" })
        local info = debug.getinfo(c[1], "S")
        H.check_compile_error(err, "consttable_nested_spec.lua", info.linedefined, "bad", { c[2] })
      end
    end)

    it("the numbers are in the disk cache key: a changed row compiles anew", function()
      local dir = H.tmpdir()
      local T = { { 10, 20 }, { 30 } }
      local function f(o, n)
        local i = gpu.global_id(0)
        if i < n then o[i] = T[math.floor(i / 2) + 1][i % 2 + 1] end
      end
      local o = ffi.new("double[4]")
      local function launch(expect_hits, want)
        local hits = 0
        local off = gpu.on_compile(function(ev)
          if ev.phase == "done" and ev.cache == "hit" then hits = hits + 1 end
        end)
        gpu.kernel(f, { backend = bk, name = "ctn_key" }):launch(4, o, 4)
        off()
        assert.are.equal(expect_hits, hits)
        H.check("double", o, want, 4)
      end
      H.with_cache_dir(dir, function()
        launch(0, { 10, 20, 30, 0 })
        T[2][2] = 40   -- a longer row
        launch(0, { 10, 20, 30, 40 })
        T[2][2] = nil  -- back as it was: the first entry serves it
        launch(1, { 10, 20, 30, 0 })
      end)
    end)
  end)
end
