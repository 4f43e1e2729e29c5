-- FFI values as constant data (docs/typing.md, "Constant tables"): an FFI
-- struct value a kernel reaches by name is read once, when the kernel is
-- compiled, as LuaJIT reads it (`P.g`, `P.n`, `P.pos.x`, `P.v[k]` with any
-- k, 0-based), and compiled in as constants and constant data; so are FFI
-- arrays of int64_t/uint64_t (C integers, as LuaJIT's cdata) and FFI
-- arrays of two or more dimensions (`W[i][j]`, 0-based).  Results
-- are compared bit for bit with plain LuaJIT running the same function;
-- writes are compile errors at their line; the values are in the cache key.

local H = require("spec.helpers")
local ffi = require("ffi")
local gpu = H.gpu

ffi.cdef [[
typedef struct { double x, y; } ctf_vec2;
typedef struct {
  double g; int32_t n; float v[3]; uint8_t u; bool on;
  ctf_vec2 pos; ctf_vec2 pts[2]; int16_t taps[5];
} ctf_params;
]]

local P = ffi.new("ctf_params", { g = -9.81, n = 7, v = { 0.1, -2.5, 1e30 }, u = 200, on = true,
  pos = { 0.25, -3 }, pts = { { 1, 2 }, { 3, 4.5 } }, taps = { 1, -4, 6, -4, 1 } })
local GRAVITY = ffi.new("ctf_vec2", 0, -9.81)
local WIDE = ffi.new("struct { int64_t big; double d; }", -5, 0.5)

-- f(o, src, i) on bk and in plain LuaJIT, o compared (spec/helpers.lua)
local run = H.rows_vs_lua

for _, bk in ipairs(H.backends) do
  describe("FFI struct values as constant data [" .. bk .. "]", function()
    it("scalar, bool and nested struct fields read as LuaJIT reads them", function()
      run(bk, "ctf_fields", function(o, src, i)
        local s = P.g * src[i] + P.n * i + P.u + P.pos.x * P.pos.y + GRAVITY.y
        if P.on then s = s + 1 end
        o[i] = s
      end, 12)
    end)

    it("array fields indexed from 0 with any index; arrays of structs by constant", function()
      run(bk, "ctf_arrays", function(o, src, i)
        local s = 0
        for t = 0, 4 do s = s + P.taps[t] * src[i + t] end
        o[i] = s + P.v[i % 3] + P.v[2] + P.pts[1].y * P.pts[0].x
      end, 12)
    end)

    it("read in a device function", function()
      local function fall(t) return GRAVITY.x * t + 0.5 * GRAVITY.y * t * t + P.v[1] end
      run(bk, "ctf_dev", function(o, src, i) o[i] = fall(src[i]) end, 10)
    end)
  end)
end

local L64 = ffi.new("int64_t[5]", -5, 2 ^ 62 + 1, 3, -2 ^ 63, 0)
L64[4] = -1LL
local U64 = ffi.new("uint64_t[3]", 7, 2 ^ 63 + 2 ^ 12, 0)
U64[2] = -1ULL
local Q64 = ffi.new("struct { int64_t ids[3]; uint64_t m[2]; double x; }",
  { { -7, 2 ^ 60 + 5, 3 }, { 9, 2 ^ 63 }, 0.5 })
local W33 = ffi.new("double[3][3]", { { 1, 2, 1 }, { 0, 0.5, -0.0 }, { -1, -2.25, 1e300 } })
local V2 = ffi.new("int32_t[?][2]", 3, { { 7, -8 }, { 2 ^ 31 - 1, -2 ^ 31 }, { 0, 5 } })
local F3 = ffi.new("float[2][2][2]", { { { 0.1, 2 }, { 3, 4 } }, { { 5, 6 }, { 7, 1e30 } } })

for _, bk in ipairs(H.backends) do
  describe("FFI arrays as constant data [" .. bk .. "]", function()
    it("int64_t and uint64_t elements (of arrays and of struct array fields) are C integers", function()
      local function f(q, i)
        q[i] = L64[i % 5] + L64[1] / 3 + U64[i % 3] * 3 - U64[1] % 1000 + L64[4] * i
          + Q64.ids[i % 3] * 2 + Q64.m[i % 2] - Q64.ids[1]
      end
      local k = H.kernel(bk, function(q, m)
        local i = gpu.global_id(0)
        if i < m then f(q, i) end
      end, { name = "ctf_i64" })
      local n = 15
      local got, ref = ffi.new("int64_t[?]", n), ffi.new("int64_t[?]", n)
      k:launch(n, got, n)
      H.interp(function() for i = 0, n - 1 do f(ref, i) end end)
      for i = 0, n - 1 do assert.are.equal(tostring(ref[i]), tostring(got[i]), "element " .. i) end
    end)

    it("two and three dimensions: W[i][j], local row = W[i], constant indices, a VLA", function()
      run(bk, "ctf_md", function(o, src, i)
        local s = 0
        for r = 0, 2 do
          local row = W33[r]
          for c = 0, 2 do s = s + row[c] * src[i + r + c] end
        end
        o[i] = s + V2[i % 3][i % 2] * (2 ^ 40 + 1) + V2[1][1] + W33[2][i % 3]
          + F3[i % 2][1][i % 2] + F3[1][1][1] + W33[i % 3][0]
      end, 12)
    end)
  end)
end

for _, bk in ipairs(H.compilers) do
  describe("FFI arrays as constant data: compiling [" .. bk .. "]", function()
    it("an index outside reads 0 at every level; a write is an error at its line", function()
      local k = H.kernel(bk, function(o, q, n)
        local i = gpu.global_id(0)
        if i < n then
          o[i] = W33[math.floor(i / 5) - 1][i % 5 - 1]
          q[i] = L64[i - 2]
        end
      end, { name = "ctf_out" })
      local len = 25
      local od, oq = ffi.new("double[?]", len), ffi.new("int64_t[?]", len)
      k:launch(len, od, oq, len)
      H.check("double", od, function(i)
        local r, c = math.floor(i / 5) - 1, i % 5 - 1
        return (r >= 0 and r < 3 and c >= 0 and c < 3) and W33[r][c] or 0
      end, len)
      for i = 0, len - 1 do
        local want = (i - 2 >= 0 and i - 2 < 5) and L64[i - 2] or 0LL
        assert.are.equal(tostring(want), tostring(oq[i]), "element " .. i)
      end
      local err = H.compile_error(bk, function(o, n)
        W33[n][1] = o[0] --@ctf_w33
      end, { "double[]", "lua_pos20" })
      H.check_compile_error(err, "consttable_ffi_spec.lua", H.line_of("--@ctf_w33"), "bad",
        { "assigning to table 'W33' (to a table in it)" })
      err = H.compile_error(bk, function(o, n)
        o[0] = L64[n]
        L64[n] = 1 --@ctf_wl64
      end, { "double[]", "lua_pos20" })
      H.check_compile_error(err, "consttable_ffi_spec.lua", H.line_of("--@ctf_wl64"), "bad",
        { "assigning to table 'L64'" })
    end)

    it("64-bit integers are i64 constant data; their contents are in the cache key", function()
      local k = H.kernel(bk, function(q, n)
        local i = gpu.global_id(0)
        if i < n then q[i] = U64[i] end
      end, { name = "ctf_ir64" })
      local ir = k:inspect_llvm({ "uint64_t[]", "lua_pos20" })
      assert.truthy(ir:find("@gj.const.%d+ = internal[^\n]*constant %[4 x i64%] "
        .. "%[i64 0, i64 7, i64 %-9223372036854771712, i64 %-1%]"), ir)
      local dir = H.tmpdir()
      local A = ffi.new("int64_t[2]", 5, 6)
      local function f(q, n)
        local i = gpu.global_id(0)
        if i < n then q[i] = A[i] end
      end
      local q = ffi.new("int64_t[2]")
      H.with_cache_dir(dir, function()
        gpu.kernel(f, { backend = bk, name = "ctf_key64" }):launch(2, q, 2)
        assert.are.equal("6LL", tostring(q[1]))
        A[1] = 2 ^ 60 + 1
        gpu.kernel(f, { backend = bk, name = "ctf_key64" }):launch(2, q, 2)
        assert.are.equal(tostring(A[1]), tostring(q[1]))
      end)
    end)
  end)
end

for _, bk in ipairs(H.compilers) do
  describe("FFI struct values as constant data: compiling [" .. bk .. "]", function()
    it("a write to a field or an element is a compile error at its line naming it", function()
      local cases = {
        { function(o, n) P.g = n; o[0] = 1 end, "assigning to table 'P' (field 'g')" },
        { function(o, n) P.v[n] = 1; o[0] = 1 end, "assigning to table 'P.v'" },
        { function(o, n) P.pos.x = n; o[0] = 1 end, "assigning to table 'P.pos' (field 'x')" },
        { function(o, n) GRAVITY.y = o[n] end, "assigning to table 'GRAVITY' (field 'y')" },
      }
      for _, c in ipairs(cases) do
        local err = H.compile_error(bk, c[1], { "double[]", "lua_pos20" })
        H.check_compile_error(err, "consttable_ffi_spec.lua", debug.getinfo(c[1], "S").linedefined,
          "bad", { c[2] })
      end
    end)

    it("a 64-bit integer field is refused at its line, saying what to do instead", function()
      local f = function(o, n) o[0] = WIDE.big * n + WIDE.d end
      local err = H.compile_error(bk, f, { "double[]", "lua_pos20" })
      H.check_compile_error(err, "consttable_ffi_spec.lua", debug.getinfo(f, "S").linedefined,
        "bad", { "'WIDE.big' is a cdata", "pass it as an argument", "FFI array" })
    end)

    it("the values are in the disk cache key; a compiled kernel keeps what it read", function()
      local dir = H.tmpdir()
      local Q = ffi.new("ctf_params", { g = 2, taps = { 1, 2, 3, 4, 5 } })
      local function f(o, n)
        local i = gpu.global_id(0)
        if i < n then o[i] = Q.g * Q.taps[i] end
      end
      local o = ffi.new("double[2]")
      local function launch(k, expect_hits, want)
        local hits = 0
        local off = gpu.on_compile(function(ev)
          if ev.phase == "done" and ev.cache == "hit" then hits = hits + 1 end
        end)
        k:launch(2, o, 2)
        off()
        assert.are.equal(expect_hits, hits)
        H.check("double", o, want, 2)
      end
      H.with_cache_dir(dir, function()
        local k1 = gpu.kernel(f, { backend = bk, name = "ctf_key" })
        launch(k1, 0, { 2, 4 })
        Q.taps[1] = 20
        launch(k1, 0, { 2, 4 })   -- read once: k1 keeps its numbers
        launch(gpu.kernel(f, { backend = bk, name = "ctf_key" }), 0, { 2, 40 })
        Q.g = 3
        launch(gpu.kernel(f, { backend = bk, name = "ctf_key" }), 0, { 3, 60 })
        Q.g, Q.taps[1] = 2, 2   -- as first: its entry serves it
        launch(gpu.kernel(f, { backend = bk, name = "ctf_key" }), 1, { 2, 4 })
      end)
    end)
  end)
end
