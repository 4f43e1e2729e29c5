-- FFI values as constant data (docs/typing.md, "Constant tables"): an FFI
-- struct value a kernel reaches by name is read once, when the kernel is
-- compiled, as LuaJIT reads it (`P.g`, `P.n`, `P.pos.x`, `P.v[k]` with any
-- k, 0-based), and compiled in as constants and constant data.  Results
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

-- f(o, src, i) for i = 0 .. n-1 on bk and in plain LuaJIT, o compared.
local function run(bk, name, f, n)
  local k = H.kernel(bk, function(o, src, m)
    local i = gpu.global_id(0)
    if i < m then f(o, src, i) end
  end, { name = name })
  local src = ffi.new("double[?]", n + 8)
  for j = 0, n + 7 do src[j] = (j * 37) % 11 - 5 + j / 8 end
  local got, ref = ffi.new("double[?]", n), ffi.new("double[?]", n)
  k:launch(n, got, src, n)
  H.interp(function() for i = 0, n - 1 do f(ref, src, i) end end)
  H.check("double", got, function(i) return ref[i] end, n, { what = name .. " on " .. bk })
  return k
end

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
