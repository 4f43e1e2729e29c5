-- FFI metatypes in kernels (issue 20; docs/typing.md, "Metatypes"): the
-- metamethods of a struct's ffi.metatype compile as device functions.  Every
-- construct runs on each backend and in plain LuaJIT (the same Lua function
-- called on the host, work item after work item), the arrays compared byte
-- for byte; errors name the struct and the metamethod with file:line.

local H = require("spec.helpers")
local ffi = require("ffi")
local gpu = H.gpu

ffi.cdef [[
typedef struct { double x, y, z; } mt_vec3;
typedef struct { float x, y; } mt_vec2;
typedef struct { double x, y, z; } mt_plain;
]]

local vec3
vec3 = ffi.metatype("mt_vec3", {
  __add = function(a, b) return vec3(a.x + b.x, a.y + b.y, a.z + b.z) end,
  __sub = function(a, b) return vec3(a.x - b.x, a.y - b.y, a.z - b.z) end,
  -- v * s, s * v (LuaJIT finds the right operand's __mul) and v * w
  __mul = function(a, b)
    if type(a) == "number" then return vec3(a * b.x, a * b.y, a * b.z) end
    if type(b) == "number" then return vec3(a.x * b, a.y * b, a.z * b) end
    return vec3(a.x * b.x, a.y * b.y, a.z * b.z)
  end,
  __div = function(a, s) return vec3(a.x / s, a.y / s, a.z / s) end,
  __unm = function(a) return vec3(-a.x, -a.y, -a.z) end,
  __len = function(a) return math.sqrt(a.x * a.x + a.y * a.y + a.z * a.z) end,
  -- LuaJIT calls __eq for a == 1 and a == nil too
  __eq = function(a, b)
    if type(b) ~= "cdata" then return false end
    return a.x == b.x and a.y == b.y and a.z == b.z
  end,
  __lt = function(a, b) return a.x < b.x end,
  __le = function(a, b) return a.x <= b.x end,
  __index = {
    dot = function(a, b) return a.x * b.x + a.y * b.y + a.z * b.z end,
    scaled = function(a, s) return vec3(a.x * s, a.y * s, a.z * s) end,
    dim = 3,
  },
})

-- __index as a function (a computed property), no arithmetic at all
local vec2 = ffi.metatype("mt_vec2", {
  __index = function(v, k)
    if k == "len2" then return v.x * v.x + v.y * v.y end
    if k == "sum" then return v.x + v.y end
    return 0
  end,
})

-- A kernel running body(i, ...) for i in [0, n), and the same on the host.
local function each(body)
  return function(n, a, b, c)
    local i = gpu.global_id(0)
    if i < n then body(i, a, b, c) end
  end
end

-- Run body on backend bk and on the host from copies of the same inputs;
-- every cdata argument compared byte for byte (these structs have no
-- padding).  counts[j]: the element count of cdata argument j.
local function check(bk, body, n, args, counts)
  local mine, ref = {}, {}
  for j, a in ipairs(args) do
    if type(a) == "cdata" then
      local ct, sz = ffi.typeof(a), ffi.sizeof(a)
      if counts[j] then
        mine[j], ref[j] = ffi.new(ct, counts[j]), ffi.new(ct, counts[j])
      else   -- a struct argument, passed by reference
        mine[j], ref[j] = ffi.new(ct), ffi.new(ct)
      end
      ffi.copy(mine[j], a, sz)
      ffi.copy(ref[j], a, sz)
    else
      mine[j], ref[j] = a, a
    end
  end
  local k = H.kernel(bk, each(body), { name = "mt" })
  k:launch(n, n, unpack(mine, 1, #args))
  for i = 0, n - 1 do body(i, unpack(ref, 1, #args)) end
  for j, a in ipairs(args) do
    if type(a) == "cdata" then
      local sz = ffi.sizeof(a)
      local got, want = ffi.string(mine[j], sz), ffi.string(ref[j], sz)
      if got ~= want then
        local at = 0
        while got:byte(at + 1) == want:byte(at + 1) do at = at + 1 end
        error(("argument %d differs from plain LuaJIT's at byte %d (of %d) on %s")
          :format(j, at, #got, bk), 2)
      end
    end
  end
  return mine, ref
end

local N = 29

local function vecs(n, seed)
  local p = ffi.new("mt_vec3[?]", n)
  for i = 0, n - 1 do
    p[i].x, p[i].y, p[i].z = (i * seed) % 7 - 3.25, i / (seed + 3), -i * 0.125
  end
  return p
end

for _, bk in ipairs(H.backends) do
  describe("metatypes [" .. bk .. "]", function()
    it("arithmetic on struct values and array references: a + b * s, s * v, -a, a / s", function()
      check(bk, function(i, p, q, out)
        local j = (i * 7 + 3) % N
        local a = p[i] + q[j] * 2.5              -- __add(p[i], __mul(q[j], 2.5))
        -- (q[j + 1], not p[j]: p[j] is another work item's, written below; on a GPU
        -- the items run at once, and reading it was a race: an H200 differed)
        local b = 0.5 * a - q[(j + 1) % N]       -- a number on the left: a's __mul
        local c = -(a + b) / 3
        out[i] = c + p[i] * q[j]                 -- stored: a copy into the array
        p[i] = vec3(a.x, b.y, c.z)
      end, N, { vecs(N, 3), vecs(N, 5), ffi.new("mt_vec3[?]", N) }, { N, N, N })
    end)

    it("a struct argument (a reference to the caller's struct) as an operand", function()
      local c = ffi.new("mt_vec3", 0.5, -2, 3)
      check(bk, function(i, p, prm, out)
        out[i] = prm + p[i] * (prm:dot(p[i]) + #prm)
      end, N, { vecs(N, 3), c, ffi.new("mt_vec3[?]", N) }, { N, nil, N })
    end)

    it("a struct without a metatype on the left: the right operand's metamethod", function()
      local plain = ffi.new("mt_plain[?]", N)
      for i = 0, N - 1 do plain[i].x, plain[i].y, plain[i].z = i, -i, i * 0.5 end
      check(bk, function(i, p, q, out)
        out[i] = q[i] * p[i]                     -- mt_plain * mt_vec3: __mul of mt_vec3
        out[i] = out[i] + q[i] * p[i] * 2
      end, N, { vecs(N, 7), plain, ffi.new("mt_vec3[?]", N) }, { N, N, N })
    end)

    it("comparisons: == ~= < <= > >= through __eq __lt __le; == with a number or nil calls __eq", function()
      check(bk, function(i, p, q, out)
        -- q is p's copy: b is a's twin (==), one with a's x (<= but not <), or another
        local a, b = p[i], q[(i + (i % 3 == 0 and 0 or i % 3 == 1 and 7 or 5)) % N]
        local f = 0
        if a == b then f = f + 1 end
        if a ~= b then f = f + 2 end
        if a < b then f = f + 4 end
        if a <= b then f = f + 8 end
        if a > b then f = f + 16 end
        if a >= b then f = f + 32 end
        if a == a then f = f + 64 end
        if a == 1 then f = f + 128 end
        if a ~= nil then f = f + 256 end
        if not (a < b) then f = f + 512 end  -- luacheck: ignore 581 (ISGE: not __lt)
        out[i] = f + (a == p[i] and 1024 or 0)
      end, N, { vecs(N, 3), vecs(N, 3), ffi.new("double[?]", N) }, { N, N, N })
    end)

    it("#v (__len), methods from the __index table: v:dot(w), v.dot(v, w), v:scaled(s), v.dim", function()
      check(bk, function(i, p, out, o3)
        local v = p[i] + p[(i + 1) % N]
        out[i] = #v + v:dot(p[i]) + v.dot(p[i], v) + v.dim + #p[i]
        o3[i] = v:scaled(v.dim) + p[i]:scaled(-1)
      end, N, { vecs(N, 11), ffi.new("double[?]", N), ffi.new("mt_vec3[?]", N) }, { N, N, N })
    end)

    it("__index as a function: computed properties with a string key", function()
      local a = ffi.new("mt_vec2[?]", N)
      for i = 0, N - 1 do a[i].x, a[i].y = i * 0.25, 3 - i end
      check(bk, function(i, v, out)
        local w = v[i]
        out[i] = w.len2 + w.sum * 2 + w.other + w.x
      end, N, { a, ffi.new("float[?]", N), 0 }, { N, N })
      assert.is_truthy(vec2)
    end)

    it("an n-body step with a vec3 metatype in double gives LuaJIT's results bitwise", function()
      local n = 48
      local function step(i, pos, vel, npos)
        local pi = pos[i]
        local acc = vec3(0, 0, 0)
        for j = 0, n - 1 do
          local d = pos[j] - pi
          local r2 = d:dot(d) + 0.01
          acc = acc + d * (1 / (r2 * math.sqrt(r2)))
        end
        local v = vel[i] + acc * 0.001
        vel[i] = v
        npos[i] = pi + v * 0.001
      end
      local notes = {}
      local off = gpu.on_compile(function(e)
        if e.phase == "done" then notes[#notes + 1] = e.note or "" end
      end)
      local ok, err = pcall(check, bk, step, n, { vecs(n, 13), vecs(n, 17), ffi.new("mt_vec3[?]", n) },
        { n, n, n })
      off()
      assert(ok, err)
      -- on cpu the struct values become registers before the work-item
      -- vectorizer looks (cpu_split's SROA runs): it vectorizes the step
      if bk == "cpu" and os.getenv("GPUJIT_VECTORIZE") ~= "0" then   -- (cuda_spec's scalar run)
        assert.matches("^vectorized", notes[#notes])
      end
    end)
  end)
end

describe("metatypes: errors", function()
  local file = H.this_file()
  local bk = H.compilers[1] or "cpu"
  local function compile_err(fn, sig) return H.compile_error(bk, fn, sig) end

  it("a missing metamethod names the struct and the metamethod with file:line, as LuaJIT raises", function()
    local msg = compile_err(function(p, o)
      o[0] = p[0] + p[1] --@noadd
    end, { "mt_plain[]", "mt_plain[]" })
    H.check_compile_error(msg, file, H.line_of("--@noadd"), "bad", { "struct mt_plain has no __add" })
    msg = compile_err(function(p, o)
      if p[0] < p[1] then o[0] = 1 end --@nolt
    end, { "mt_vec2[]", "float[]" })
    H.check_compile_error(msg, file, H.line_of("--@nolt"), "bad", { "struct mt_vec2 has no __lt" })
    msg = compile_err(function(p, o)
      o[0] = -p[0] --@nounm
    end, { "mt_vec2[]", "mt_vec2[]" })
    H.check_compile_error(msg, file, H.line_of("--@nounm"), "bad", { "struct mt_vec2 has no __unm" })
    msg = compile_err(function(p, o)
      o[0] = #p[0] --@nolen
    end, { "mt_plain[]", "double[]" })
    H.check_compile_error(msg, file, H.line_of("--@nolen"), "bad", { "struct mt_plain has no __len" })
    msg = compile_err(function(p, o)
      o[0] = p[0]:norm() --@nomethod
    end, { "mt_plain[]", "double[]" })
    H.check_compile_error(msg, file, H.line_of("--@nomethod"), "bad",
      { "no field 'norm' in struct mt_plain" })
    -- a metamethod written in C
    ffi.cdef "typedef struct { double x; } mt_clen;"
    local clen = ffi.metatype("mt_clen", { __len = math.sqrt })
    assert.is_truthy(clen)
    msg = compile_err(function(p, o)
      o[0] = #p[0] --@clen
    end, { "mt_clen[]", "double[]" })
    H.check_compile_error(msg, file, H.line_of("--@clen"), "bad",
      { "__len of struct mt_clen is a C function: kernels call metamethods written in Lua" })
    -- a constructor LuaJIT would run __new for
    ffi.cdef "typedef struct { double x; } mt_withnew;"
    local withnew = ffi.metatype("mt_withnew", { __new = function(ct, x) return ffi.new(ct, 2 * x) end })
    msg = compile_err(function(o)
      o[0] = withnew(1) --@hasnew
    end, { "mt_withnew[]" })
    H.check_compile_error(msg, file, H.line_of("--@hasnew"), "bad",
      { "struct mt_withnew(...): its metatype has __new, which kernels do not call" })
    -- LuaJIT raises too
    local plain = ffi.new("mt_plain[2]")
    assert.is_false(pcall(function() return plain[0] + plain[1] end))
  end)

  it("an error inside a metamethod names its own line; the module keeps working", function()
    local bad
    ffi.cdef "typedef struct { double x; } mt_badm;"
    bad = ffi.metatype("mt_badm", {
      __add = function(a, b)
        return a.x + b.y --@inmm
      end,
    })
    assert.is_truthy(bad)
    local msg = compile_err(function(p, o) o[0] = p[0] + p[1] end, { "mt_badm[]", "double[]" })
    assert.matches(file .. ":" .. H.line_of("--@inmm") .. ": no field 'y' in struct mt_badm", msg, 1, true)
    -- the same session compiles and runs good kernels afterwards
    local p, out = vecs(4, 3), ffi.new("mt_vec3[4]")
    H.kernel(bk, function(a, o) local i = gpu.global_id(0) o[i] = a[i] + a[i] end):launch(4, p, out)
    for i = 0, 3 do assert.are.equal(p[i].x * 2, out[i].x) end
  end)
end)

describe("metatypes: the frontend", function()
  it("finds metamethods under a call hook and gives back the hook the program had set", function()
    local calls = 0
    local function hook() calls = calls + 1 end
    debug.sethook(hook, "r", 0)
    local p, out = vecs(4, 3), ffi.new("mt_vec3[4]")
    local ok, err = pcall(function()
      H.kernel(H.compilers[1] or "cpu", function(a, o)
        local i = gpu.global_id(0)
        o[i] = -a[i] + a[i] * 3
      end, { name = "hooked" }):launch(4, p, out)
    end)
    local h, mask = debug.gethook()
    debug.sethook()
    assert(ok, err)
    assert.are.equal(hook, h)
    assert.are.equal("r", mask)
    assert.is_true(calls > 0)
    for i = 0, 3 do assert.are.equal(p[i].x * 2, out[i].x) end
  end)
end)

describe("metatypes: the disk cache", function()
  local bk = H.compilers[1] or "cpu"
  it("the metamethods' bytecode and constants are in the key", function()
    local dir = H.tmpdir()
    local function run(add)
      local ok, out = H.run_isolated(bk, [[
        ffi.cdef("typedef struct { double x; } mt_keyed;")
        local v
        v = ffi.metatype("mt_keyed", { __add = function(a, b) return v(]] .. add .. [[) end })
        local k = gpu.kernel(function(p, o) o[0] = p[0] + p[1] end)
        local a, o = ffi.new("mt_keyed[2]", {{3}, {4}}), ffi.new("mt_keyed[1]")
        k:launch(1, a, o)
        io.write("x=", o[0].x, "\n")
      ]], { GPUJIT_CACHE_DIR = dir })
      assert.is_true(ok, out)
      return out
    end
    assert.matches("x=7", run("a.x + b.x"), 1, true)
    assert.matches("x=-1", run("a.x - b.x"), 1, true)     -- other bytecode
    assert.matches("x=9", run("a.x + b.x + 2"), 1, true)  -- other constants
    assert.are.equal(3, #H.ls(dir .. "/*.gjc"))
    assert.matches("x=-1", run("a.x - b.x"), 1, true)     -- a hit, still right
    assert.are.equal(3, #H.ls(dir .. "/*.gjc"))
    os.execute("rm -rf '" .. dir .. "'")
  end)
end)

describe("metatypes: PTX", function()
  it("assembles with ptxas (metamethod calls, methods, comparisons)", function()
    local k = gpu.kernel(function(p, out, d)
      local i = gpu.global_id(0)
      local v = p[i] + p[i + 1] * 2 - (-p[i])
      out[i] = v / #v
      if v < p[i] then d[i] = v:dot(p[i]) + v.dim end
    end, { name = "ptxmeta", cache = false })
    local s = k:inspect_asm({ "mt_vec3[]", "mt_vec3[]", "double[]" }, "cuda")
    local ok, out = H.ptxas(s)
    if ok == nil then return pending("ptxas not found") end
    assert(ok, out)
  end)
end)
