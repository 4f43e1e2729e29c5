-- Multi-dimensional arrays (docs/typing.md, "Multi-dimensional arrays"):
-- FFI arrays of two or more dimensions as kernel arguments (`T[?][N]`,
-- `T[N][M]`, deeper; of numbers, bools and structs) and shaped gpu.arrays
-- (`gpu.array(ct, { h, w })`), indexed `a[y][x]`; `a[y]` is a row, which a
-- device function takes as an array.  Every result is compared byte for
-- byte with plain LuaJIT running the same function on the same data (the
-- interpreter, H.interp); `a[y] = b[x]` copies a row, as LuaJIT does.  With
-- boundscheck each level's index is checked and the message names the
-- dimension.

local H = require("spec.helpers")
local ffi = require("ffi")
local gpu = H.gpu

ffi.cdef [[
typedef struct { double x, y; float vx; int32_t n; } md_particle;
]]

-- A fresh FFI array of ctype text ct (rows for a VLA) filled by fill(v, ...)
-- for each element (y, x[, z]) of its dims.
local function make(ct, rows, dims, fill)
  local a = rows and ffi.new(ct, rows) or ffi.new(ct)
  local function walk(v, d, idx)
    for j = 0, dims[d] - 1 do
      idx[d] = j
      if d < #dims then walk(v[j], d + 1, idx) else v[j] = fill(unpack(idx, 1, #dims)) end
    end
  end
  walk(a, 1, {})
  return a
end

-- The bytes of an FFI array, for a bitwise comparison.
local function bytes(v) return ffi.string(v, ffi.sizeof(v)) end

local function same_bytes(label, got, ref)
  local g, r = bytes(got), bytes(ref)
  if g ~= r then
    local at = 0
    while g:byte(at + 1) == r:byte(at + 1) do at = at + 1 end
    error(label .. ": differs from plain LuaJIT at byte " .. at, 2)
  end
end

-- Launch body(i, a, b) for i in [0, n) on bk, and in plain LuaJIT on
-- copies (mk() makes the arguments, the same each time); compare every
-- argument byte for byte.  A body writes only what no other work item
-- reads or writes (the backends run items in any order).
local function vs_lua(bk, name, n, body, mk, kopts)
  local o = { name = name }
  for k, v in pairs(kopts or {}) do o[k] = v end
  local k = H.kernel(bk, function(m, a, b)
    local i = gpu.global_id(0)
    if i < m then body(i, a, b) end
  end, o)
  local ga, gb = mk()
  local ra, rb = mk()
  if gb == nil then gb, rb = 0, 0 end   -- one array
  k:launch(n, n, ga, gb)
  H.interp(function() for i = 0, n - 1 do body(i, ra, rb) end end)
  same_bytes(name .. " on " .. bk .. ", argument a", ga, ra)
  if type(gb) == "cdata" then same_bytes(name .. " on " .. bk .. ", argument b", gb, rb) end
end

-- The message of a launch that must fail.
local function launch_error(k, ...)
  return H.error_of(function(...) k:launch(...) end, ...)
end

local KINDS = {
  { "int8_t", function(y, x) return (y * 7 + x * 3) % 50 - 20 end },
  { "uint8_t", function(y, x) return (y * 13 + x * 5) % 200 end },
  { "int32_t", function(y, x) return y * 100003 - x * 7 end },
  { "int64_t", function(y, x) return y * 2 ^ 40 - x * 3 end },
  { "float", function(y, x) return y * 0.1 - x / 3 end },
  { "double", function(y, x) return y * 0.1 - x / 3 + 1e-17 end },
}

for _, bk in ipairs(H.backends) do
  describe("multi-dimensional FFI arrays [" .. bk .. "]", function()
    for _, kind in ipairs(KINDS) do
      local t, fill = kind[1], kind[2]
      -- float: LuaJIT computes in double and rounds at the store
      local kopts = t == "float" and { precision = "lua" } or nil
      it(t .. "[?][N], T[N][M] and T[?][N][M]: reads and writes of a[y][x] (" .. t .. ")", function()
        -- T[?][3]: each work item its row
        vs_lua(bk, "md_vla_" .. t, 5, function(i, a, b)
          for x = 0, 2 do b[i][x] = a[i][x] + a[(i + 1) % 5][2 - x] - x end
        end, function()
          return make(t .. "[?][3]", 5, { 5, 3 }, fill),
            make(t .. "[?][3]", 5, { 5, 3 }, function() return 0 end)
        end, kopts)
        -- T[4][6], fixed: read-modify-write in place
        vs_lua(bk, "md_fixed_" .. t, 4, function(i, a)
          for x = 0, 5 do a[i][x] = a[i][x] * 2 + a[i][5 - x] end   -- its own row only
        end, function() return make(t .. "[4][6]", nil, { 4, 6 }, fill) end, kopts)
        -- T[?][2][3]
        vs_lua(bk, "md_3d_" .. t, 3, function(i, a, b)
          for y = 0, 1 do
            for x = 0, 2 do b[i][y][x] = a[i][1 - y][x] - a[(i + 2) % 3][y][2 - x] end
          end
        end, function()
          return make(t .. "[?][2][3]", 3, { 3, 2, 3 }, fill),
            make(t .. "[?][2][3]", 3, { 3, 2, 3 }, function() return 0 end)
        end, kopts)
      end)
    end

    it("bool[?][N] and bool[N][M]", function()
      vs_lua(bk, "md_bool", 4, function(i, a, b)
        for x = 0, 2 do b[i][x] = a[i][x] ~= a[i][(x + 1) % 3] or x == i end
      end, function()
        return make("bool[?][3]", 4, { 4, 3 }, function(y, x) return (y + x) % 3 == 0 end),
          make("bool[4][3]", nil, { 4, 3 }, function() return false end)
      end)
    end)

    it("arrays of structs in both forms: p[i][j].field", function()
      local function fillp(y, x)
        return { x = y + x / 4, y = y - x, vx = x * 0.5 - y, n = y * 10 + x }
      end
      vs_lua(bk, "md_struct_vla", 3, function(i, p, q)
        for j = 0, 3 do
          local r = p[i][j]
          r.x = r.x + r.vx * 0.25 + p[i][(j + 1) % 4].y
          r.n = r.n + j
          q[i][j] = p[i][j]   -- a copy of the struct
        end
      end, function()
        return make("md_particle[?][4]", 3, { 3, 4 }, fillp),
          make("md_particle[3][4]", nil, { 3, 4 }, function() return {} end)
      end)
    end)

    it("a[y] passed to device functions: rows are arrays (read, write, #row in the kernel)", function()
      local function rowsum(r, w)
        local s = 0
        for x = 0, w - 1 do s = s + r[x] end
        return s
      end
      local function scale(r, w, f)
        for x = 0, w - 1 do r[x] = r[x] * f end
      end
      local function plane(p, h, w)   -- a row of a 3-D array: 2-D
        local s = 0
        for y = 0, h - 1 do s = s + rowsum(p[y], w) * (y + 1) end
        return s
      end
      local function at(m, y, x) return m[y][x] end   -- a whole 2-D array
      vs_lua(bk, "md_devfn", 4, function(i, a, c)
        scale(a[i], 5, i + 0.5)
        a[i][0] = rowsum(a[i], 5) + plane(c[i], 2, 3) + at(a, i, 4) + at(c[i], 1, 2)
      end, function()
        return make("double[?][5]", 4, { 4, 5 }, function(y, x) return y - x * 0.25 end),
          make("int32_t[4][2][3]", nil, { 4, 2, 3 }, function(z, y, x) return z * 100 + y * 10 + x end)
      end)
      -- #row, in the kernel (the dimension's length)
      -- (boundscheck: sim's checked arrays have a length, LuaJIT's FFI arrays do not)
      local k = H.kernel(bk, function(a, o)
        local i = gpu.global_id(0)
        o[i] = #a[i] * 10 + #a[i][0]
      end, { name = "md_len", boundscheck = true })
      local o = ffi.new("int32_t[2]")
      k:launch(2, ffi.new("float[?][3][7]", 2), o)
      assert.are.equal(37, o[0])
      assert.are.equal(37, o[1])
    end)

    it("a[y] = b[x] copies a row, as LuaJIT does (numbers, 3-D, structs; boundscheck)", function()
      for _, bc in ipairs({ false, true }) do
        vs_lua(bk, "md_rowcopy", 3, function(i, a, b)
          a[i] = b[(i + 1) % 3][i]   -- a row of a row of a 3-D array
          b[i][(i + 1) % 3] = a[i]   -- (no row another work item reads)
        end, function()
          return make("int16_t[?][4]", 3, { 3, 4 }, function(y, x) return y * 4 + x end),
            make("int16_t[3][3][4]", nil, { 3, 3, 4 }, function(z, y, x) return -z * 16 - y * 4 - x end)
        end, { boundscheck = bc })
        vs_lua(bk, "md_rowcopy_s", 2, function(i, p, q)
          p[i] = q[1 - i]
          p[i][0].n = p[i][0].n + i
        end, function()
          local function f(y, x) return { x = y + x / 4, y = y - x, vx = x, n = y * 10 + x } end
          return make("md_particle[?][3]", 2, { 2, 3 }, f), make("md_particle[2][3]", nil, { 2, 3 }, f)
        end, { boundscheck = bc })
      end
    end)

    it("atomics on a row of the last dimension", function()
      local k = H.kernel(bk, function(h, v)
        local i = gpu.global_id(0)
        gpu.atomic_add(h[i % 2], v[i] % 4, 1)
      end, { name = "md_atomic" })
      local h = ffi.new("int32_t[2][4]")
      local v = ffi.new("int32_t[16]")
      for i = 0, 15 do v[i] = i * 3 end
      k:launch(16, h, v)
      local ref = ffi.new("int32_t[2][4]")
      for i = 0, 15 do ref[i % 2][v[i] % 4] = ref[i % 2][v[i] % 4] + 1 end
      same_bytes("md_atomic", h, ref)
    end)

    it("an explicit signature names them as T[?][N]", function()
      local k = H.kernel(bk, function(a, y) a[y][2] = y end, { name = "md_sig" },
        { "float[?][4]", "int32_t" })
      local a = ffi.new("float[?][4]", 3)
      k:launch(1, a, 2)
      assert.are.equal(2, a[2][2])
      local msg = launch_error(k, 1, ffi.new("float[?][3]", 3), 2)
      assert.truthy(msg:find("expected float[][4]", 1, true), msg)
      local ks = H.kernel(bk, function(p, j) p[1][j].n = 7 end, { name = "md_sig_s" },
        { "md_particle [?][4]", "int32_t" })
      local p = ffi.new("md_particle[2][4]")
      ks:launch(1, p, 3)
      assert.are.equal(7, p[1][3].n)
      assert.are.equal("md_particle[][4]", gpu.types.normalize("md_particle[8] [4]"))
    end)

    it("boundscheck: an index out of range names the argument, the index and the dimension", function()
      local k = H.kernel(bk, function(a, y, x, o)
        o[0] = a[y][x]
      end, { name = "md_bc2", boundscheck = true })
      local a, o = ffi.new("float[?][4]", 3), ffi.new("double[1]")
      local msg = launch_error(k, 1, a, 3, 0, o)
      assert.truthy(msg:find("index 3 is out of bounds for dimension 1 of argument 1 'a' "
        .. "(length 3, valid indices 0..2)", 1, true), msg)
      msg = launch_error(k, 1, a, 1, -1, o)
      assert.truthy(msg:find("index -1 is out of bounds for dimension 2 of argument 1 'a' "
        .. "(length 4, valid indices 0..3)", 1, true), msg)
      k:launch(1, a, 2, 3, o)   -- in range: no error
      local k3 = H.kernel(bk, function(c, z)
        c[1][2][z] = 1 --@bc3
      end, { name = "md_bc3", boundscheck = true })
      msg = launch_error(k3, 1, ffi.new("double[2][3][5]"), 5)
      assert.truthy(msg:find("index 5 is out of bounds for dimension 3 of argument 1 'c' "
        .. "(length 5, valid indices 0..4)", 1, true), msg)
      assert.truthy(msg:find("multidim_spec.lua:" .. H.line_of("--@bc3"), 1, true), msg)
      -- structs: the element's level
      local ks = H.kernel(bk, function(p, j) p[0][j].n = 1 end, { name = "md_bcs", boundscheck = true })
      msg = launch_error(ks, 1, ffi.new("md_particle[?][2]", 1), 2)
      assert.truthy(msg:find("index 2 is out of bounds for dimension 2 of argument 1 'p'", 1, true), msg)
    end)

    it("errors: a const array written, a row stored into or used as a number", function()
      local kw = H.kernel(bk, function(a) a[0][1] = 1 end, { name = "md_const" })
      local msg = launch_error(kw, 1, ffi.new("const float[2][2]"))
      assert.truthy(msg:find("elements are const (const float [2][2])", 1, true), msg)
      local kr = H.kernel(bk, function(a, o)
        o[0] = a[0] --@rownum
      end, { name = "md_row_num" })
      msg = launch_error(kr, 1, ffi.new("float[2][2]"), ffi.new("double[1]"))
      if bk ~= "sim" then   -- sim runs LuaJIT, whose message is its own
        H.check_compile_error(msg, "multidim_spec.lua", H.line_of("--@rownum"), "md_row_num",
          { "row of a multi-dimensional array" })
      end
      local ks = H.kernel(bk, function(a, b)
        a[0] = b --@rowset
      end, { name = "md_row_set" })
      msg = launch_error(ks, 1, ffi.new("float[2][2]"), 1.5)
      if bk ~= "sim" then
        H.check_compile_error(msg, "multidim_spec.lua", H.line_of("--@rowset"), "md_row_set",
          { "cannot store a number" })
      end
      local kd = H.kernel(bk, function(a, b)
        a[0] = b[0] --@rowdims
      end, { name = "md_row_dims" })
      msg = launch_error(kd, 1, ffi.new("float[2][2]"), ffi.new("float[2][3]"))
      if bk ~= "sim" then
        H.check_compile_error(msg, "multidim_spec.lua", H.line_of("--@rowdims"), "md_row_dims",
          { "a row takes a row of the same type" })
      end
    end)

    it("a derivative refuses a multi-dimensional argument, naming it", function()
      local k = H.kernel(bk, function(a, o)
        local i = gpu.global_id(0)
        o[i] = a[i][1] * 2
      end, { name = "md_ad" })
      local g = gpu.grad(k)
      local msg = H.error_of(function()
        g:launch(2, ffi.new("double[2][2]"), nil, ffi.new("double[2]"), ffi.new("double[2]"))
      end)
      assert.truthy(msg:find("multidim_spec.lua:", 1, true), msg)
      assert.truthy(msg:find("(a): a multi-dimensional array", 1, true), msg)
    end)
  end)

  describe("shaped gpu.array [" .. bk .. "]", function()
    H.use_in_block(bk)

    it("gpu.array(ct, { h, w }): a[y][x] in kernels, #a, shape, to_host gives the shape", function()
      local a = gpu.array("float", { 3, 4 })
      assert.are.equal(3, #a)
      assert.are.same({ 3, 4 }, a.shape)
      assert.truthy(tostring(a):find("gpu.array<float>[3][4]", 1, true), tostring(a))
      local k = H.kernel(bk, function(g, w)
        local i = gpu.global_id(0)
        if i < #g then
          for x = 0, w - 1 do g[i][x] = i * 10 + x * 0.5 end
        end
      end, { name = "md_garray" })
      k:launch(3, a, 4)
      local h = a:to_host()
      assert.truthy(tostring(ffi.typeof(h)):find("float [?][4]", 1, true))
      local ref = make("float[?][4]", 3, { 3, 4 }, function(y, x) return y * 10 + x * 0.5 end)
      same_bytes("md_garray", h, ref)
      -- into a Lua table: nested; into an FFI array of as many elements
      local t = a:to_host({})
      assert.are.equal(3, #t)
      assert.are.equal(21.5, t[3][4])
      local flat = a:to_host(ffi.new("double[12]"))
      assert.are.equal(21.5, flat[11])
      if H.host_shared(bk) or bk == "sim" then   -- host indexing
        assert.are.equal(21.5, a[2][3])
        a[2][3] = 7
        assert.are.equal(7, a[2][3])
        local msg = H.error_of(function() return a[3] end)
        assert.truthy(msg:find("index 3 out of range [0, 3) (dimension 1)", 1, true), msg)
      end
      a:free()
    end)

    it("gpu.to_device: a nested table and a multi-dimensional FFI array keep their shape", function()
      local b = gpu.to_device({ { 1, 2, 3 }, { 4, 5, 6 } }, "int32_t")
      assert.are.same({ 2, 3 }, b.shape)
      local f = gpu.to_device(make("double[?][2][2]", 3, { 3, 2, 2 },
        function(z, y, x) return z + y / 2 + x / 4 end))
      assert.are.same({ 3, 2, 2 }, f.shape)
      local k = H.kernel(bk, function(bb, ff)
        local i = gpu.global_id(0)
        bb[i][2] = bb[i][0] * 10 + bb[i][1] + ff[i][1][1]
      end, { name = "md_todev" })
      k:launch(2, b, f)
      assert.are.same({ { 1, 2, 12 }, { 4, 5, 46 } }, b:to_host({}))   -- 12.75, 46.75 truncated
      assert.are.equal(2.75, f:to_host()[2][1][1])
      -- a gpu.array of structs of a shape
      local p = gpu.zeros("md_particle", { 2, 3 })
      local kp = H.kernel(bk, function(q)
        local i = gpu.global_id(0)
        q[i][2].n = i + 5
      end, { name = "md_gstruct" })
      kp:launch(2, p)
      assert.are.equal(6, p:to_host()[1][2].n)
      local msg = H.error_of(gpu.to_device, { { 1, 2 }, { 3 } })
      assert.truthy(msg:find("rows of a nested table must have equal lengths", 1, true), msg)
    end)

    it("one element, an empty first dimension, errors for a bad shape", function()
      local one = gpu.zeros("double", { 1, 1 })
      local k = H.kernel(bk, function(a, o)
        o[0] = #a
        if #a > 0 then a[0][0] = 5 end
      end, { name = "md_small" })
      local o = ffi.new("int32_t[1]")
      k:launch(1, one, o)
      assert.are.equal(1, o[0])
      assert.are.equal(5, one:to_host()[0][0])
      local empty = gpu.zeros("double", { 0, 4 })
      assert.are.equal(0, #empty)
      assert.are.same({ 0, 4 }, empty.shape)
      k:launch(1, empty, o)
      assert.are.equal(0, o[0])
      assert.are.same({}, empty:to_host({}))
      local msg = H.error_of(gpu.array, "float", { 2, 2.5 })
      assert.truthy(msg:find("shape[2] must be a non-negative integer, got 2.5", 1, true), msg)
      msg = H.error_of(gpu.array, "float", { 2, "x" })
      assert.truthy(msg:find("shape[2] must be a non-negative integer", 1, true), msg)
      msg = H.error_of(gpu.reduce, gpu.zeros("float", { 2, 2 }))
      assert.truthy(msg:find("multi-dimensional", 1, true), msg)
    end)

    it("gpu.hashgrid builds from a shaped array of points as from one array per axis", function()
      local n = 300
      local p2 = make("double[?][2]", n, { n, 2 }, function(i, c) return ((i * 37 + c * 11) % 97) / 7 end)
      local p3 = make("float[?][3]", n, { n, 3 }, function(i, c) return ((i * 13 + c * 29) % 89) / 5 end)
      local function axes(p, d, ct)
        local t = {}
        for c = 1, d do
          t[c] = ffi.new(ct .. "[?]", n)
          for i = 0, n - 1 do t[c][i] = p[i][c - 1] end
        end
        return t
      end
      for _, case in ipairs({ { p2, 2, "double" }, { p3, 3, "float" } }) do
        local p, d, ct = case[1], case[2], case[3]
        local ref = gpu.hashgrid(1.5, { dims = d, dim = 8 }):build(unpack(axes(p, d, ct)))
        for _, pts in ipairs({ p, gpu.to_device(p) }) do
          local g = gpu.hashgrid(1.5, { dims = d, dim = 8 }):build(pts)
          assert.are.equal(n, g.n)
          for _, f in ipairs({ "order", "cell_start", "cell_end" }) do
            same_bytes("hashgrid " .. f, g[f]:to_host(), ref[f]:to_host())
          end
        end
      end
    end)

    it("boundscheck on a shaped gpu.array names the dimension", function()
      local a = gpu.zeros("int32_t", { 2, 5 })
      local k = H.kernel(bk, function(g, y, x) g[y][x] = 1 end, { name = "md_gbc", boundscheck = true })
      local msg = launch_error(k, 1, a, 1, 5)
      assert.truthy(msg:find("index 5 is out of bounds for dimension 2 of argument 1 'g' "
        .. "(length 5, valid indices 0..4)", 1, true), msg)
      msg = launch_error(k, 1, a, 2, 0)
      assert.truthy(msg:find("index 2 is out of bounds for dimension 1 of argument 1 'g' "
        .. "(length 2, valid indices 0..1)", 1, true), msg)
    end)
  end)
end
