-- Structs in kernels (issue 20; docs/typing.md, "Structs"): arrays of FFI
-- structs and struct values made with the ctype.  Every construct run on
-- each backend and by plain LuaJIT (the same Lua function called on the
-- host, work item after work item), the arrays compared byte for byte,
-- field by field (so -0 and NaN bits count; padding, which LuaJIT leaves
-- undefined in a struct it constructs, does not); errors name the struct,
-- the field, the file and the line.

local H = require("spec.helpers")
local ffi = require("ffi")
local gpu = H.gpu

ffi.cdef [[
typedef struct { float x, y, vx, vy; } st_particle;
typedef struct { double x, y, z; } st_vec3;
typedef struct {
  char c;          /* then 7 bytes of padding before d */
  double d;
  st_vec3 pos;
  float f[3];      /* then 4 bytes of padding before q */
  int64_t q;
  uint8_t u;
  bool b;
  int32_t i;
  st_vec3 pts[2];
} st_mixed;
typedef struct { uint8_t tag; int32_t n; uint64_t big; } st_ints;
typedef union { float f; int32_t i; } st_union;
typedef struct { float *p; } st_withptr;
typedef struct { int a : 3; int b : 5; } st_bits;
typedef struct __attribute__((packed)) { char c; double d; } st_packed;
typedef struct { int32_t total; int32_t counts[4]; double sum; } st_hist;
]]

-- A kernel running body(i, ...) for i in [0, n), and the same on the host.
local function each(body, nargs)
  if nargs == 1 then
    return function(n, a)
      local i = gpu.global_id(0)
      if i < n then body(i, a) end
    end
  end
  return function(n, a, b)
    local i = gpu.global_id(0)
    if i < n then body(i, a, b) end
  end
end

local function host_run(body, n, a, b)
  for i = 0, n - 1 do body(i, a, b) end
end

local function new_like(ct, n, fill)
  local a = ffi.new(ct .. "[?]", n)
  for i = 0, n - 1 do fill(a[i], i) end
  return a
end

-- The bytes of the fields of struct entry e at p (padding left out: a
-- struct LuaJIT constructs, copied whole, copies padding it never wrote).
local function struct_bytes(p, e, out)
  for _, f in ipairs(e.fields) do
    for k = 0, (f.count or 1) - 1 do
      if type(f.type) == "table" then
        struct_bytes(p + f.offset + k * f.type.size, f.type, out)
      else
        local sz = gpu.types.size[f.type]
        out[#out + 1] = ffi.string(p + f.offset + k * sz, sz)
      end
    end
  end
end

-- An argument's contents for comparison: every byte of a scalar array,
-- the fields of every element of a struct array.
local function field_bytes(a, sz, orig)
  local info = gpu.types.ctype_info(orig)
  local e = info and gpu.types.structs[info.elem]
  if not e then return ffi.string(a, sz) end
  local out, base = {}, ffi.cast("const uint8_t *", a)
  for i = 0, sz / e.size - 1 do struct_bytes(base + i * e.size, e, out) end
  return table.concat(out)
end

-- Run body on backend bk and on the host from the same inputs; every
-- argument array compared byte for byte (struct padding left out).  opts.esize[j]: the element size
-- of argument j, an FFI VLA (copied as one of the same length).
local function check(bk, body, n, args, opts)
  local mine, ref = {}, {}
  -- plain copies: FFI VLAs of the same type and size
  for j, a in ipairs(args) do
    if type(a) == "cdata" then
      local ct = ffi.typeof(a)
      local sz = ffi.sizeof(a)
      local esz = opts and opts.esize and opts.esize[j] or nil
      local cnt = esz and sz / esz or nil
      mine[j] = cnt and ffi.new(ct, cnt) or ffi.new(ct)
      ref[j] = cnt and ffi.new(ct, cnt) or ffi.new(ct)
      ffi.copy(mine[j], a, sz)
      ffi.copy(ref[j], a, sz)
    else
      mine[j], ref[j] = a, a
    end
  end
  local k = H.kernel(bk, each(body, #args), { name = opts and opts.name or "structs" })
  k:launch(n, n, unpack(mine, 1, #args))
  host_run(body, n, unpack(ref, 1, #args))
  for j, a in ipairs(args) do
    if type(a) == "cdata" then
      local sz = ffi.sizeof(a)
      local got, want = field_bytes(mine[j], sz, a), field_bytes(ref[j], sz, a)
      if got ~= want then
        local at = 0
        while got:byte(at + 1) == want:byte(at + 1) do at = at + 1 end
        error(("argument %d differs from plain LuaJIT's at byte %d (of %d, padding left out) on %s")
          :format(j, at, #got, bk), 2)
      end
    end
  end
  return mine, ref, k
end

local N = 37

local function particles(n)
  return new_like("st_particle", n, function(p, i)
    p.x, p.y, p.vx, p.vy = i * 0.5, -i, (i % 5) - 2.25, i / 7
  end)
end

local function mixed(n)
  return new_like("st_mixed", n, function(e, i)
    e.c = i % 100 - 50
    e.d = i == 3 and -0.0 or i * 1.25 - 7
    e.pos.x, e.pos.y, e.pos.z = i, -i * 0.5, 1 / (i + 1)
    e.f[0], e.f[1], e.f[2] = i, i + 0.5, -i
    e.q = i * 1000000007
    e.u = (i * 37) % 256
    e.b = i % 3 == 0
    e.i = -i * 3
    e.pts[0].x, e.pts[1].y = i * 2, i * 3
  end)
end

describe("structs: the layout is LuaJIT's", function()
  it("reads sizes, offsets and alignment through ffi.typeinfo and names the type by its C name", function()
    local e = assert(gpu.types.struct("st_mixed"))
    assert.are.equal("st_mixed", e.name)
    assert.are.equal(ffi.sizeof("st_mixed"), e.size)
    assert.are.equal(ffi.alignof("st_mixed"), e.align)
    local seen = {}
    for _, f in ipairs(e.fields) do
      assert.are.equal(ffi.offsetof("st_mixed", f.name), f.offset, f.name)
      seen[f.name] = f
    end
    assert.are.equal(8, seen.d.offset)           -- a char, then padding to the double
    assert.are.equal("int8_t", seen.c.type)
    assert.are.equal(3, seen.f.count)
    assert.are.equal("st_vec3", seen.pos.type.name)
    assert.are.equal(2, seen.pts.count)
    assert.are.equal("st_mixed[]", gpu.types.normalize("st_mixed[?]"))
    assert.are.equal("st_mixed[]", gpu.types.normalize("st_mixed *"))
    assert.are.equal("st_mixed[]", gpu.types.of_value(ffi.new("st_mixed[2]")))
    -- the core reads the layout text, field names and offsets included
    assert.is_truthy(gpu.types.core_name("st_mixed[]"):find("d:8:double", 1, true))
  end)
end)

for _, bk in ipairs(H.backends) do
  describe("structs [" .. bk .. "]", function()
    it("p[i].x reads and writes; local q = p[i] is a reference (float fields)", function()
      check(bk, function(i, p, dt)
        local q = p[i]
        q.x = q.x + q.vx * dt
        p[i].y = p[i].y + p[i].vy * dt
        q.vx = -q.vx
      end, N, { particles(N), 0.1 }, { esize = { ffi.sizeof("st_particle") } })
    end)

    it("every field type: char then double (padding), int32, int64, uint8, bool, float, double", function()
      check(bk, function(i, m, out)
        local e = m[i]
        e.c = e.c - 3                    -- int8 wraps in the store as LuaJIT's does
        e.d = e.d * 2 + e.c
        e.q = e.q * 3 + e.i              -- int64: cdata arithmetic
        e.u = e.u + 200                  -- uint8: modulo 256 in the store
        e.b = not e.b
        e.i = e.i - e.u
        e.f[1] = e.f[1] / 3              -- float: rounded in the store
        out[i] = e.d + e.u + e.i + (e.b and 1 or 0) + e.f[1]
      end, N, { mixed(N), ffi.new("double[?]", N) },
        { esize = { ffi.sizeof("st_mixed"), 8 } })
    end)

    it("nested structs and fixed arrays in structs: p[i].pos.x, p[i].f[k], p[i].pts[1].y", function()
      check(bk, function(i, m)
        local e = m[i]
        e.pos.x = e.pos.x + e.pos.y * e.pos.z
        local pos = e.pos                -- a reference into the element
        pos.z = -pos.z
        for k = 0, 2 do e.f[k] = e.f[k] * k + i end
        e.pts[1].y = e.pts[0].x + m[i].pts[1].y
        local pt = e.pts[0]
        pt.z = pt.x - 0.5
      end, N, { mixed(N) }, { esize = { ffi.sizeof("st_mixed") } })
    end)

    it("integer-only structs: uint8, int32, uint64 fields", function()
      local a = new_like("st_ints", N, function(e, i)
        e.tag, e.n, e.big = i * 7, i * -1000003, 0xfffffffffffffff0ULL + i
      end)
      check(bk, function(i, s)
        local e = s[i]
        e.tag = e.tag * 9 + 1
        e.n = e.n * 3 + 1
        e.big = e.big + e.tag
      end, N, { a }, { esize = { ffi.sizeof("st_ints") } })
    end)

    it("p[j] = p[i] copies the element; references go to and come back from device functions", function()
      local function bump(q, d) q.vx = q.vx + d; return q end
      local function pick(p, i) return p[i] end
      check(bk, function(i, p, out)
        out[i] = p[N - 1 - i]            -- a copy of the whole struct
        local q = bump(pick(out, i), 1)
        q.vy = q.vy * 2
        out[i].x = (p[i] == p[i]) and 1 or 0    -- the same reference
        out[i].y = (p[i] == out[i]) and 1 or 0
      end, N, { particles(N), ffi.new("st_particle[?]", N) },
        { esize = { ffi.sizeof("st_particle"), ffi.sizeof("st_particle") } })
    end)

    it("fixed-size FFI arrays of structs, and eager signatures name the struct", function()
      local a = ffi.new("st_particle[8]")
      for i = 0, 7 do a[i].x = i end
      local k = H.kernel(bk, function(p) local i = gpu.global_id(0); p[i].y = p[i].x * 3 end, nil,
        { "st_particle[]" })
      k:launch(8, a)
      for i = 0, 7 do assert.are.equal(3 * i, a[i].y) end
      assert.are.same({ { "st_particle[]" } }, k:signatures())
      local k2 = H.kernel(bk, function(p, n) if gpu.global_id(0) < n then p[0].x = n end end)
      k2:launch(1, a, 5)
      assert.are.equal("st_particle[]", k2:signatures()[1][1])
      assert.are.equal(5, a[0].x)
    end)

    it("gpu.array, gpu.zeros and gpu.to_device of structs, by C name or ctype; e:to_host()", function()
      H.with_backend(bk, function()
        local d = gpu.zeros("st_particle", N)
        assert.are.equal("st_particle", d.ctype)
        local src = particles(N)
        local e = gpu.to_device(src)
        local f = gpu.array(ffi.typeof("st_particle"), N)
        local k = H.kernel(bk, function(out, a, b, n)
          local i = gpu.global_id(0)
          if i < n then
            out[i] = a[i]
            out[i].vx = a[i].x + a[i].y
            b[i] = out[i]             -- b: a gpu.array only written
          end
        end)
        k:launch(N, d, e, f, N)
        assert.are.same({ { "st_particle[]", "st_particle[]", "st_particle[]", "lua_pos20" } },
          k:signatures())
        local hd, hf = d:to_host(), ffi.new("st_particle[?]", N)
        f:to_host(hf)
        for i = 0, N - 1 do
          local want = ffi.new("st_particle", src[i])
          want.vx = src[i].x + src[i].y
          local sz = ffi.sizeof("st_particle")
          assert.are.equal(ffi.string(want, sz), ffi.string(hd + i, sz))
          assert.are.equal(ffi.string(want, sz), ffi.string(hf + i, sz))
        end
        assert.matches("a Lua table cannot fill an array of st_particle",
          H.error_of(gpu.to_device, { 1, 2 }, "st_particle"), 1, true)
        assert.matches("element type must be a scalar type name such as \"float\" or an FFI struct type",
          H.error_of(gpu.array, "struct nope", 3), 1, true)
      end)
    end)

    it("boundscheck: an index past an array of structs is an error naming the argument", function()
      local k = H.kernel(bk, function(p, n)
        local i = gpu.global_id(0)
        p[i + n].x = 1 --@oob
      end, { name = "oob", boundscheck = true })
      local a = particles(4)
      local msg = H.error_of(k.launch, k, 4, a, 2)
      if bk ~= "sim" then
        assert.matches("out of bounds for argument 1 'p' (length 4", msg, 1, true)
      end
      assert.matches(H.this_file() .. ":" .. H.line_of("--@oob"), msg, 1, true)
      k:launch(2, a, 2)
      assert.are.equal(1, a[3].x)
      -- a fixed array of structs in a struct made in the kernel: checked too
      local MIXED = ffi.typeof("st_mixed")
      local k2 = H.kernel(bk, function(o, j)
        local v = MIXED(1)
        v.pts[j].x = 5 --@oob2
        o[0] = v.pts[1].x
      end, { name = "oob2", boundscheck = true })
      local o = ffi.new("double[1]")
      k2:launch(1, o, 1)
      assert.are.equal(5, o[0])
      if bk ~= "sim" then   -- (sim runs LuaJIT's FFI, which checks no field array)
        msg = H.error_of(k2.launch, k2, 1, o, 2)
        assert.matches(H.this_file() .. ":" .. H.line_of("--@oob2"), msg, 1, true)
        assert.matches("index 2 is out of bounds", msg, 1, true)
      end
    end)

    it("struct values: the ctype as an upvalue constructs (LuaJIT's initializers, the rest zero)", function()
      local vec3, ints, mixed_t = ffi.typeof("st_vec3"), ffi.typeof("st_ints"), ffi.typeof("st_mixed")
      local function scale(q, s) q.x = q.x * s; q.y = q.y * s; q.z = q.z * s end
      local function dot(a, b) return a.x * b.x + a.y * b.y + a.z * b.z end
      check(bk, function(i, out, m)
        local a = vec3(i, i * 2, -0.0)
        local b = vec3(1)                 -- y, z: zero
        scale(a, 0.5)                     -- a reference: the function writes a
        b.y = dot(a, b)
        out[3 * i] = a                    -- copies
        out[3 * i + 1] = b
        local w = a                       -- the same object, as in LuaJIT
        w.z = b.y - 1
        out[3 * i + 2] = a
        local e = mixed_t(i - 5, i / 3)   -- c (int8_t), d; the rest zero
        e.pos.x = out[3 * i].y
        e.f[2] = e.c
        e.q = e.q + i
        m[i] = e
      end, N, { ffi.new("st_vec3[?]", 3 * N), mixed(N) },
        { esize = { ffi.sizeof("st_vec3"), ffi.sizeof("st_mixed") } })
      check(bk, function(i, s)
        local e = ints(i * 300, i - 7)    -- uint8 wraps, as the FFI stores it
        e.big = e.big + 1
        s[i].n = e.n + e.tag
        if i % 2 == 0 then s[i] = e end
      end, N, { new_like("st_ints", N, function(e, i) e.tag, e.n, e.big = i, -i, i end) },
        { esize = { ffi.sizeof("st_ints") } })
    end)

    it("struct values returned from device functions: a new one by value, a passed one as itself", function()
      local vec3 = ffi.typeof("st_vec3")
      local function make(x, y) local v = vec3(x, y); v.z = x * y; return v end
      local function cross(a, b)
        return vec3(a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x)
      end
      local function bump(v) v.x = v.x + 1; return v end    -- the caller's own object
      local function two(i) return make(i, 1), make(1, i) end
      check(bk, function(i, out)
        local a = make(i, 2)
        local b, c = two(i)
        local d = cross(a, b)
        local e = bump(d)
        e.y = -e.y                         -- e is d: both change, as in LuaJIT
        out[4 * i] = d
        out[4 * i + 1] = c
        out[4 * i + 2] = bump(make(i, -i))
        out[4 * i + 3] = cross(make(1, 0), out[4 * i + 1])
      end, N, { ffi.new("st_vec3[?]", 4 * N) }, { esize = { ffi.sizeof("st_vec3") } })
    end)

    it("a struct cdata argument is passed by reference, as LuaJIT passes it to a function", function()
      local P = ffi.typeof("st_vec3")
      local params = ffi.new("st_mixed")
      params.d, params.pos.x, params.f[1], params.i = 0.25, -3, 1.5, 7
      local arr = mixed(4)
      local k = H.kernel(bk, function(prm, out, acc)
        local i = gpu.global_id(0)
        out[i] = prm.d * i + prm.pos.x + prm.f[1] + prm.i
        if i == 0 then prm.pos.y = 42; acc.x = acc.x + 1 end   -- written back
      end)
      local out = ffi.new("double[8]")
      local acc = P(10, 0, 0)
      k:launch(8, params, out, acc)
      for i = 0, 7 do assert.are.equal(0.25 * i - 3 + 1.5 + 7, out[i]) end
      assert.are.equal(42, params.pos.y)
      assert.are.equal(11, acc.x)
      -- an element of an array (a reference, arr[2]) is that element
      k:launch(1, arr[2], out, acc)
      assert.are.equal(42, arr[2].pos.y)
      assert.are.equal(12, acc.x)
      assert.are.same({ "st_mixed", "double[]", "st_vec3" }, k:signatures()[1])
      -- eager signatures name it so too
      local ke = H.kernel(bk, function(v, o) o[0] = v.x + v.y end, nil, { "st_vec3", "double[]" })
      ke:launch(1, P(1.5, 2), out)
      assert.are.equal(3.5, out[0])
    end)

    it("atomics on a fixed array field (a histogram in a struct)", function()
      local h = ffi.new("st_hist[2]")
      local k = H.kernel(bk, function(hs, n)
        local i = gpu.global_id(0)
        if i < n then
          local b = hs[i % 2]
          gpu.atomic_add(b.counts, i % 4, 1)
          gpu.atomic_add(hs[0].counts, 0, 2)
        end
      end)
      k:launch(N, h, N)
      local want = { [0] = { 0, 0, 0, 0 }, { 0, 0, 0, 0 } }
      for i = 0, N - 1 do
        local c = want[i % 2]
        c[i % 4 + 1] = c[i % 4 + 1] + 1
      end
      want[0][1] = want[0][1] + 2 * N
      for e = 0, 1 do
        for j = 0, 3 do assert.are.equal(want[e][j + 1], h[e].counts[j], e .. "/" .. j) end
        assert.are.equal(0, h[e].total)
      end
    end)

    if bk == "cpu" or bk == "sim" then
      it("an FFI pointer to structs (where the device shares host memory)", function()
        local a = particles(N)
        local ptr = ffi.cast("st_particle *", a)
        local k = H.kernel(bk, function(p, n)
          local i = gpu.global_id(0)
          if i < n then p[i].x = p[i].x + 1 end
        end)
        k:launch(N, ptr, N)
        for i = 0, N - 1 do assert.are.equal(i * 0.5 + 1, a[i].x) end
      end)
    end
  end)
end

describe("structs: errors", function()
  local file = H.this_file()
  local bk = H.compilers[1] or "cpu"
  local function compile_err(fn, sig) return H.compile_error(bk, fn, sig) end

  it("a missing field names the struct and the field with file:line", function()
    local msg = compile_err(function(p)
      p[0].z = 1 --@nofield
    end, { "st_particle[]" })
    H.check_compile_error(msg, file, H.line_of("--@nofield"), "bad", { "no field 'z' in struct st_particle" })
    msg = compile_err(function(p, o)
      o[0] = p[0].pos.w --@nofield2
    end, { "st_mixed[]", "double[]" })
    H.check_compile_error(msg, file, H.line_of("--@nofield2"), "bad", { "no field 'w' in struct st_vec3" })
  end)

  it("assigning a whole struct or array field, or a number to an element, is an error", function()
    local msg = compile_err(function(p)
      p[0].pos = 1 --@wholefield
    end, { "st_mixed[]" })
    H.check_compile_error(msg, file, H.line_of("--@wholefield"), "bad",
      { "cannot assign to field 'pos' of struct st_mixed: it is a struct" })
    msg = compile_err(function(p)
      p[0] = 1 --@numelem
    end, { "st_particle[]" })
    H.check_compile_error(msg, file, H.line_of("--@numelem"), "bad",
      { "cannot store a number (integer literal) into an element of an array (st_particle[])" })
    msg = compile_err(function(p, m)
      p[0] = m[0] --@otherstruct
    end, { "st_particle[]", "st_mixed[]" })
    H.check_compile_error(msg, file, H.line_of("--@otherstruct"), "bad",
      { "cannot store a struct st_mixed into an element of an array (st_particle[])" })
    msg = compile_err(function(p, o)
      o[0] = p[0] + 1 --@arith
    end, { "st_particle[]", "double[]" })
    -- as in LuaJIT, arithmetic on a struct is its metatype's __add: it has none
    H.check_compile_error(msg, file, H.line_of("--@arith"), "bad", { "struct st_particle has no __add" })
  end)

  it("struct constructors: too many initializers, a struct field's, a bad value; returning one", function()
    local vec3, mixed_t = ffi.typeof("st_vec3"), ffi.typeof("st_mixed")
    local msg = compile_err(function(o)
      o[0] = vec3(1, 2, 3, 4) --@toomany
    end, { "st_vec3[]" })
    H.check_compile_error(msg, file, H.line_of("--@toomany"), "bad",
      { "4 initializers for struct st_vec3, which has 3 fields" })
    msg = compile_err(function(o)
      o[0] = mixed_t(1, 2, 3) --@nested
    end, { "st_mixed[]" })
    H.check_compile_error(msg, file, H.line_of("--@nested"), "bad",
      { "initializer 3 is for field 'pos', a struct" })
    msg = compile_err(function(o, a)
      o[0] = vec3(a) --@badinit
    end, { "st_vec3[]", "double[]" })
    H.check_compile_error(msg, file, H.line_of("--@badinit"), "bad",
      { "initializer 1 (for field 'x') is an array (double[])" })
    msg = compile_err(function(s, i)
      local e = vec3(1)
      if i > 0 then e = s[i] end
      e.x = 2 --@mixed
    end, { "st_vec3[]", "int32_t" })
    H.check_compile_error(msg, file, H.line_of("--@mixed"), "bad",
      { "a value here may be a struct made in the kernel or a struct in an array argument" })
    local function either(v, c)
      if c > 0 then return v else return vec3(c) end --@ret
    end
    msg = compile_err(function(o, c)
      o[0] = either(vec3(1), c)
    end, { "st_vec3[]", "int32_t" })
    H.check_compile_error(msg, file, H.line_of("--@ret"), "bad",
      { "device function 'either' returns a struct that may be made here or passed in" })
  end)

  it("unions, pointer and bit fields, struct values and packed layouts are refused clearly", function()
    local k = H.kernel(bk, function(_) end, { name = "k" })
    local function arg_err(v) return H.error_of(k.launch, k, 1, v) end
    assert.matches("unions are not supported in kernels", arg_err(ffi.new("st_union[2]")), 1, true)
    assert.matches("field 'p' of st_withptr has a type kernels do not support",
      arg_err(ffi.new("st_withptr[2]")), 1, true)
    assert.matches("is a bit field", arg_err(ffi.new("st_bits[2]")), 1, true)
    assert.matches("gpu.atomic_add on an array of struct st_hist: atomics work on arrays of numbers",
      compile_err(function(h) gpu.atomic_add(h, 0, 1) end, { "st_hist[]" }), 1, true)
    local msg = H.error_of(function()
      H.kernel(bk, function(p, o) o[0] = p[0].d end, { name = "pk" })
        :precompile({ "st_packed[]", "double[]" })
    end)
    assert.matches("struct st_packed: field 'd' (double) at byte offset 1 is 1-byte aligned", msg, 1, true)
  end)
end)

describe("structs: the disk cache", function()
  local bk = H.compilers[1] or "cpu"
  it("two structs of one name but other layouts or field names, in two processes, share no entry", function()
    local dir = H.tmpdir()
    local function run(decl)
      local ok, out = H.run_isolated(bk, [[
        ffi.cdef("typedef struct { ]] .. decl .. [[ } same_name;")
        local k = gpu.kernel(function(p) p[0].x = 7 end)
        local a = ffi.new("same_name[1]")
        k:launch(1, a)
        io.write("x=", a[0].x, " bytes0=", ffi.cast("float *", a)[0], "\n")
      ]], { GPUJIT_CACHE_DIR = dir })
      assert.is_true(ok, out)
      return out
    end
    assert.matches("x=7 bytes0=7", run("float x, y;"), 1, true)
    assert.matches("x=7 bytes0=0", run("float y, x;"), 1, true)   -- x at offset 4 here
    assert.matches("x=7 bytes0=7", run("float x, z;"), 1, true)   -- same code, other field names
    -- one entry each: the layout text (offsets and field names) is in the key
    assert.are.equal(3, #H.ls(dir .. "/*.gjc"))
    assert.matches("x=7 bytes0=0", run("float y, x;"), 1, true)    -- a hit, still right
    assert.are.equal(3, #H.ls(dir .. "/*.gjc"))
    os.execute("rm -rf '" .. dir .. "'")
  end)
end)

describe("structs: PTX", function()
  local MIXED = ffi.typeof("st_mixed")
  it("assembles with ptxas (field loads, stores, copies, a struct made in the kernel, a struct argument)",
    function()
    local k = gpu.kernel(function(m, out, prm)
      local i = gpu.global_id(0)
      local e = m[i]
      e.d = e.d * prm.x
      prm.y = i
      e.q = e.q + e.i
      e.pos.x = e.f[1] + e.d + e.u + (e.b and 1 or 0)
      out[i] = m[0]
      local v = MIXED(i, 0.5)
      v.pts[1].y = e.q
      out[i + 1] = v
    end, { name = "ptxstructs", cache = false })
    local s = k:inspect_asm({ "st_mixed[]", "st_mixed[]", "st_vec3" }, "cuda")
    assert.is_truthy(s:find("ld.global.f64", 1, true), s)
    local ok, out = H.ptxas(s)
    if ok == nil then return pending("ptxas not found") end
    assert(ok, out)
  end)
end)
