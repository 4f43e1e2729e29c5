-- spec/fuzz/gen.lua: random kernels in the kernel subset, for differential
-- fuzzing (docs/fuzzing.md).
--
--   local G = require("spec.fuzz.gen")
--   local case = G.generate(seed, { precision = "double" })
--   local src = G.source(case)      -- Lua source: a chunk returning the kernel
--
-- A case is a tree (so that spec/fuzz/shrink.lua can cut it down) plus the
-- launch size and the input data.  Every expression node carries a kind:
--   i  an integer-valued Lua number (typed as an integer by gpujit), with a
--      bound on its magnitude kept below 2^52, so that LuaJIT's doubles and
--      gpujit's 64-bit integers agree exactly (typing.md: they differ above 2^53);
--   L  an int64_t cdata in LuaJIT (a load from an int64_t[] array): + - * / % ^,
--      unary -, bit.* and comparisons with i, L or (precision = "double") d,
--      LuaJIT's cdata arithmetic (typing.md, "C integers");
--   d  a double (with precision = "double"): any operation, compared bitwise;
--   f  a float computed in float by gpujit and in double by LuaJIT: only ever
--      stored into the float array `of`, never branched on or converted,
--      compared within a tolerance (docs/fuzzing.md).
-- With precision = "single" every float is of kind f.
--
-- The kernel's parameters are always
--   n, s, ri, rl, ru, rf, rd, oi, ol, ou, oh, of, od
-- n: the number of work items, s: a Lua number, r*: read-only arrays of M
-- elements (int32_t, int64_t, uint8_t, float, double) read at any index,
-- o*: arrays of 4*n elements (int32_t, int64_t, uint8_t, int16_t, float,
-- double) where work item g reads and writes only [4g, 4g+3], so that work
-- items never race and the order the backend runs them in does not matter.
-- Last, rs and os: arrays of FFI structs (G.STRUCT: an int32_t, a uint8_t,
-- padding, a double, an int64_t), rs of M elements read-only, os of 4*n
-- owned as the o* arrays; their fields are read and written as `rs[j].d`,
-- `os[4 * g + 1].i = ...` (docs/typing.md, "Structs").  Their data are
-- flat lists, four values per element, in field order.

local ffi = require("ffi")

local G = {}

G.STRUCT = "fuzz_rec"
G.FIELDS = { "i", "u", "d", "l" }
G.FIELD_CT = { i = "int32_t", u = "uint8_t", d = "double", l = "int64_t" }
pcall(ffi.cdef, "typedef struct { int32_t i; uint8_t u; double d; int64_t l; } fuzz_rec;")
-- Its metatype (docs/typing.md, "Metatypes"): metamethods that return
-- numbers, so that metatype arithmetic on elements of rs and os is a d
-- expression (`(rs[j] + os[k])`, `(2.5 * rs[j])`, `rs[j]:dd(os[k])`) and
-- #e an i one.  A metatype is set once per process: the pcall keeps the
-- first when this file is loaded again.
pcall(ffi.metatype, G.STRUCT, {
  __add = function(a, b) return a.d + b.d end,
  __sub = function(a, b) return a.d - b.i end,
  __mul = function(a, b)
    if type(a) == "number" then return a * b.d end
    return a.d * b
  end,
  __unm = function(a) return -a.d end,
  __len = function(a) return a.i end,
  __index = { dd = function(a, b) return a.d * 0.5 - b.d end },
})

local B31 = 2147483648          -- bound of int32 values
local BMAX = 2 ^ 52             -- no integer expression may exceed this

G.params = { "n", "s", "ri", "rl", "ru", "rf", "rd", "oi", "ol", "ou", "oh", "of", "od", "rs", "os",
  "rm" }
G.ctypes = { ri = "int32_t", rl = "int64_t", ru = "uint8_t", rf = "float", rd = "double",
  oi = "int32_t", ol = "int64_t", ou = "uint8_t", oh = "int16_t", of = "float", od = "double",
  rs = G.STRUCT, os = G.STRUCT, rm = "int32_t" }
G.arrays = { "ri", "rl", "ru", "rf", "rd", "oi", "ol", "ou", "oh", "of", "od", "rs", "os", "rm" }
-- rm: a multi-dimensional FFI array, int32_t[?][G.MD_COLS] of M rows (docs/typing.md,
-- "Multi-dimensional arrays"), read-only, read as rm[j][c]; its data flat, row by row.
G.box = { rs = "struct", os = "struct", rm = "md" }
G.MD_COLS = 4

---------------------------------------------------------------------------
-- Random numbers: Park-Miller, exact in doubles, the same on every machine.
---------------------------------------------------------------------------

local function rng(seed)
  local s = math.floor(seed) % 2147483646 + 1
  local R = {}
  function R.next()
    s = (s * 48271) % 2147483647
    return s
  end
  -- Consecutive seeds start on nearby states, whose first draws differ by
  -- a small multiple of 48271: mix them apart before the first use.
  for _ = 1, 8 do R.next() end
  function R.int(a, b) return a + R.next() % (b - a + 1) end
  function R.chance(p) return R.next() / 2147483647 < p end
  function R.pick(t) return t[R.int(1, #t)] end
  return R
end

---------------------------------------------------------------------------
-- Expression nodes
---------------------------------------------------------------------------
-- { f = format with %1..%9 for the children, k = kind, b = bound (i only),
--   c = children, keep = true when the shrinker must not replace the node by
--   a child (it guards a range or a sign of zero) }

local node_mt = { __index = {
  -- for nodes whose bound is their first child's
  fixb = function(e) e.b = e.c[1].b; return e end,
} }

local function node(f, k, b, c, keep)
  return setmetatable({ f = f, k = k, b = b, c = c or {}, keep = keep }, node_mt)
end

local function fmtnum(v)
  if v == math.floor(v) and math.abs(v) < 2 ^ 53 then
    local s = string.format("%.0f", v)
    return v < 0 and "(" .. s .. ")" or s
  end
  local s = string.format("%.17g", v)
  return v < 0 and "(" .. s .. ")" or s
end

local function const_i(v) return node(fmtnum(v), "i", math.abs(v)) end
local function const_d(v) return node(fmtnum(v), "d") end
G.const_i, G.const_d = const_i, const_d

-- Render an expression.  LuaJIT folds `-0` into the float constant -0.0
-- (a weak float for gpujit, not an integer): the negation of a literal 0
-- renders as 0.
function G.expr(e)
  if e.f == "(-%1)" and e.c[1].f == "0" then return "0" end
  return (e.f:gsub("%%(%d)", function(d) return G.expr(e.c[tonumber(d)]) end))
end

---------------------------------------------------------------------------
-- The generator state
---------------------------------------------------------------------------

local Gen = {}
Gen.__index = Gen

local function new_gen(R, o)
  return setmetatable({ R = R, single = o.single, vars = {}, nvar = 0, fns = {}, consts = {},
    loops = 0, budget = o.budget or 24, M = o.M, infn = nil, nlabel = 0, no_assert = o.no_assert,
    nrng = 0, rng_max = R.chance(0.08) and 2 or 0 }, Gen)
end

-- May this expression call a random-number function (gpu.philox4x32,
-- uniform, normal)?  About one kernel in twelve, at most two calls each
-- (Philox is ten rounds: a compile costs more).
function Gen:rng_call()
  if self.nrng >= self.rng_max or not self.R.chance(0.05) then return false end
  self.nrng = self.nrng + 1
  return true
end

function Gen:fresh(prefix)
  self.nvar = self.nvar + 1
  return prefix .. self.nvar
end

function Gen:vars_of(kind)
  local out = {}
  for _, v in ipairs(self.vars) do
    if v.k == kind then out[#out + 1] = v end
  end
  return out
end

-- Keep an integer node within bound maxb: (e % K), K <= maxb.
function Gen:within(e, maxb)
  if e.b <= maxb then return e end
  local K = math.max(1, math.min(math.floor(maxb), self.R.pick({ 3, 7, 16, 100, 1000, 65536, 2147483647 })))
  if self.R.chance(0.3) then K = -K end
  return node("(%1 % " .. fmtnum(K) .. ")", "i", math.abs(K), { e }, true)
end

-- An integer value entering float arithmetic.  gpujit gives LuaJIT's -0
-- (from -x or 0*-1: typing.md, "Negative zero"), but not with precision =
-- "single", whose integers stay integers: there the -0 becomes +0 first.
function Gen:nz(e)
  if not self.single then return e end
  return node("(%1 + 0)", "i", e.b, { e }, true)
end

-- An integer as a double: `/ 1` (always a float division) gives gpujit a
-- double, not an integer.
function Gen:tof(e) return node("(%1 / 1)", "d", nil, { self:nz(e) }, true) end

-- Index into a read-only array: any integer, floored modulo M.
function Gen:ro_index(depth)
  local e = self:gen_i(depth, BMAX)
  return node("(%1 % " .. self.M .. ")", "i", self.M - 1, { e }, true)
end

-- Index of one of this work item's slots of an o* array.  `fixed`: the
-- shrinker never replaces it (a constant index would make work items race).
function Gen:own_index(depth)
  local ix
  if self.R.chance(0.4) then
    ix = node("(g * 4 + " .. self.R.int(0, 3) .. ")", "i", B31, {}, true)
  else
    ix = node("(g * 4 + %1 % 4)", "i", B31, { self:gen_i(depth, BMAX) }, true)
  end
  ix.fixed = true
  return ix
end

---------------------------------------------------------------------------
-- Integer expressions (kind i, magnitude <= maxb)
---------------------------------------------------------------------------

function Gen:leaf_i(maxb)
  local R = self.R
  local opts = {}
  opts[#opts + 1] = function() return const_i(R.int(-20, 20)) end
  opts[#opts + 1] = function()
    return const_i(R.pick({ 0, 1, -1, 2, 31, 32, 255, 256, 1000, 65535, 2147483647, -2147483648,
      4294967295, 2 ^ 40 + 3 }))
  end
  if not self.infn then
    opts[#opts + 1] = function() return node("g", "i", 4096) end
    opts[#opts + 1] = function()
      -- now and then rm[j][c] in its place: decided by a stream of its own
      -- (self.R2), so that a seed's kernel is otherwise what it was before rm
      local R2 = self.R2
      if R2 and R2.chance(0.1) then
        local col = R2.chance(0.5) and const_i(R2.int(0, G.MD_COLS - 1))
          or node("(g % " .. G.MD_COLS .. ")", "i", G.MD_COLS - 1, nil, true)
        return node("rm[%1][%2]", "i", B31, { self:ro_index(1), col })
      end
      return node("ri[%1]", "i", B31, { self:ro_index(1) })
    end
    opts[#opts + 1] = function() return node("ru[%1]", "i", 255, { self:ro_index(1) }) end
    opts[#opts + 1] = function() return node("oi[%1]", "i", B31, { self:own_index(1) }) end
    opts[#opts + 1] = function() return node("oh[%1]", "i", 32768, { self:own_index(1) }) end
    if self.structs and R.chance(0.3) then   -- a field of a struct array, now and then
      opts[#opts + 1] = function()
        local ro, f = R.chance(0.5), R.chance(0.5) and "i" or "u"
        return node((ro and "rs" or "os") .. "[%1]." .. f, "i", f == "i" and B31 or 255,
          { ro and self:ro_index(1) or self:own_index(1) })
      end
    end
  end
  local vs = self:vars_of("i")
  if #vs > 0 then
    for _ = 1, 3 do
      opts[#opts + 1] = function()
        local v = R.pick(vs)
        return node(v.name, "i", v.b)
      end
    end
  end
  local cs = {}
  for _, c in ipairs(self.consts) do if c.k == "i" then cs[#cs + 1] = c end end
  if #cs > 0 then
    opts[#opts + 1] = function() local c = R.pick(cs); return node(c.name, "i", math.abs(c.v)) end
  end
  if self:has_const_table("ti") then opts[#opts + 1] = function() return self:const_table_read("ti") end end
  if self:rng_call() then   -- Philox4x32-10's first word (docs/api.md, "Random numbers")
    return self:within(node("(gpu.philox4x32(%1, %2, 0, 7, %3, 0))", "i", 4294967296,
      { self:gen_i(0, B31), self:gen_i(0, B31), self:gen_i(0, B31) }, true), maxb)
  end
  return self:within(R.pick(opts)(), maxb)
end

local BITOPS1 = { "bnot", "tobit" }
local BITOPS2 = { "band", "bor", "bxor", "lshift", "rshift", "arshift", "rol", "ror" }

function Gen:gen_i(depth, maxb)
  maxb = maxb or BMAX
  local R = self.R
  if depth <= 0 or R.chance(0.3) then return self:leaf_i(maxb) end
  local d = depth - 1
  local r = R.int(1, 14)
  if r <= 2 then
    local a, b = self:gen_i(d, maxb / 2), self:gen_i(d, maxb / 2)
    return node(r == 1 and "(%1 + %2)" or "(%1 - %2)", "i", a.b + b.b, { a, b })
  elseif r == 3 then
    local a = self:gen_i(d, math.sqrt(maxb))
    local b = self:gen_i(d, math.max(1, math.floor(maxb / math.max(a.b, 1))))
    return node("(%1 * %2)", "i", a.b * b.b, { a, b })
  elseif r == 4 then
    local a = self:gen_i(d, maxb)
    -- with precision = "single", 0 - a: LuaJIT folds -(0 % 8) to the float
    -- constant -0, which meets integers as a float there (typing.md)
    return node(self.single and "(0 - %1)" or "(-%1)", "i", a.b, { a })
  elseif r == 5 then
    local K = R.pick({ 2, 3, 5, 7, 8, 10, 256, -3, -8, 1000 })
    if math.abs(K) > maxb then K = 2 end
    return node("(%1 % " .. fmtnum(K) .. ")", "i", math.abs(K), { self:gen_i(d, BMAX) })
  elseif r == 6 then
    -- a divisor that is never 0 (integer x % 0 differs on purpose: kernels.md)
    local b = self:gen_i(d, BMAX)
    return node("(%1 % (bit.band(%2, 7) + 1))", "i", math.min(8, maxb), { self:gen_i(d, BMAX), b })
  elseif r == 7 then
    return node("math.abs(%1)", "i", nil, { self:gen_i(d, maxb) }):fixb()
  elseif r == 8 then
    local a, b = self:gen_i(d, maxb), self:gen_i(d, maxb)
    return node(R.chance(0.5) and "math.min(%1, %2)" or "math.max(%1, %2)", "i",
      math.max(a.b, b.b), { a, b })
  elseif r == 9 or r == 10 then
    if maxb < B31 then return self:within(self:gen_i(depth, BMAX), maxb) end
    -- bit.* take any number (here integers or floats) and give an int32
    local function arg()
      if not self.single and R.chance(0.25) then return self:gen_d(d) end
      return self:gen_i(d, BMAX)
    end
    if R.chance(0.3) then
      return node("bit." .. R.pick(BITOPS1) .. "(%1)", "i", B31, { arg() })
    end
    return node("bit." .. R.pick(BITOPS2) .. "(%1, %2)", "i", B31, { arg(), arg() })
  elseif r == 11 then
    return node(R.chance(0.5) and "math.floor(%1)" or "math.ceil(%1)", "i", nil,
      { self:gen_i(d, maxb) }):fixb()
  elseif r == 12 then
    local a, b = self:gen_i(d, maxb), self:gen_i(d, maxb)
    return node("(%1 and %2 or %3)", "i", math.max(a.b, b.b), { self:gen_cond(d), a, b })
  elseif r == 13 then
    local call = self:call_expr("i", d)
    if call then return self:within(call, maxb) end
  end
  return self:leaf_i(maxb)
end

---------------------------------------------------------------------------
-- int64_t cdata expressions (kind L)
---------------------------------------------------------------------------

function Gen:gen_L(depth)
  local R = self.R
  if depth <= 0 or R.chance(0.35) then
    if self:has_const_table("L") and R.chance(0.3) then return self:const_table_read("L") end
    if R.chance(0.6) then return node("rl[%1]", "L", nil, { self:ro_index(1) }) end
    if self.structs and not self.infn and R.chance(0.15) then
      if R.chance(0.5) then return node("rs[%1].l", "L", nil, { self:ro_index(1) }) end
      return node("os[%1].l", "L", nil, { self:own_index(1) })
    end
    if R.chance(0.5) then return node("ol[%1]", "L", nil, { self:own_index(1) }) end
    -- an integer that may be -0 is a double for gpujit, and int64_t with a
    -- double is double (LuaJIT: int64_t cdata): bit.tobit makes it an integer
    return node("bit.tobit(%1)", "i", 2 ^ 31, { self:gen_i(1, 2 ^ 31 - 1) })
  end
  local a, b = self:gen_L(depth - 1), self:gen_L(depth - 1)
  if a.k ~= "L" and b.k ~= "L" then a = node("rl[%1]", "L", nil, { self:ro_index(1) }) end
  if R.chance(0.2) then
    -- bit.* with an int64_t operand: 64-bit in LuaJIT 2.1 and in gpujit
    -- (typing.md); a shift's count is an integer, its first operand int64_t
    local r = R.int(1, 4)
    local l = a.k == "L" and a or b
    if r == 1 then return node("bit.bnot(%1)", "L", nil, { l }) end
    if r == 2 then
      return node("bit." .. R.pick({ "lshift", "rshift", "arshift", "rol", "ror" }) .. "(%1, %2)",
        "L", nil, { l, self:gen_i(1, 100) })
    end
    local o = l == a and b or a
    return node("bit." .. R.pick({ "band", "bor", "bxor" }) .. "(%1, %2)", "L", nil,
      { l, R.chance(0.5) and o or self:gen_i(1, BMAX) })
  end
  local op = R.pick({ "+", "-", "*", "+", "-", "*", "/", "%", "^" })
  -- the negation of an int64_t, not of an integer that may be 0 (a -0 double
  -- for gpujit, int64_t arithmetic for LuaJIT)
  if R.chance(0.15) then return node("(-%1)", "L", nil, { a.k == "L" and a or b }) end
  -- a double operand: converted to int64_t as LuaJIT's cdata arithmetic
  -- converts it (1.5 -> 1, NaN and beyond 2^63 -> -2^63), either side
  if not self.single and R.chance(0.25) then
    local dd = R.chance(0.5) and self:const_float() or self:gen_d(1)
    if a.k == "L" then b = dd else a = dd end
  end
  return node("(%1 " .. op .. " %2)", "L", nil, { a, b })
end

---------------------------------------------------------------------------
-- Float expressions (kind d, or f with precision = "single")
---------------------------------------------------------------------------

local MATH1 = { "abs", "ceil", "floor", "sqrt", "exp", "log", "log10", "sin", "cos", "tan", "asin",
  "acos", "atan", "sinh", "cosh", "tanh" }
local MATH2 = { "atan2", "pow", "fmod", "min", "max", "log" }

function Gen:const_float()
  local R = self.R
  local v = R.pick({ 0.5, -0.5, 0.25, 1.5, -2.75, 3.125, 0.1, 1e-3, 1e10 + 0.5, 123.456, -7.5e-5 })
  if R.chance(0.3) then v = R.int(-1000, 1000) + 0.5 end
  return const_d(v)
end

-- Every d node is a double for gpujit too: integer operands enter only
-- through tof, or on one side of an operation whose other side is a double
-- (an operation on two integers would be integer arithmetic, whose -0 and
-- x % 0 differ from LuaJIT's on purpose: typing.md).
function Gen:leaf_d()
  local R = self.R
  local opts = {
    function() return self:const_float() end,
    function() return self:tof(self:gen_i(0, BMAX)) end,
  }
  if not self.infn then
    opts[#opts + 1] = function() return node("s", "d") end
    opts[#opts + 1] = function() return node("n", "d") end
    opts[#opts + 1] = function() return node("rd[%1]", "d", nil, { self:ro_index(1) }) end
    opts[#opts + 1] = function() return node("od[%1]", "d", nil, { self:own_index(1) }) end
    if self.structs and R.chance(0.3) then
      opts[#opts + 1] = function()
        if R.chance(0.5) then return node("rs[%1].d", "d", nil, { self:ro_index(1) }) end
        return node("os[%1].d", "d", nil, { self:own_index(1) })
      end
    end
    if self.structs and not self.single and R.chance(0.3) then
      opts[#opts + 1] = function() return self:meta_d() end
    end
  end
  local vs = self:vars_of("d")
  for _ = 1, math.min(#vs, 3) do
    opts[#opts + 1] = function() return node(R.pick(vs).name, "d") end
  end
  for _, c in ipairs(self.consts) do
    if c.k == "d" then opts[#opts + 1] = function() return node(c.name, "d") end end
  end
  if self:has_const_table("td") then opts[#opts + 1] = function() return self:const_table_read("td") end end
  if R.chance(0.05) then return node(R.chance(0.5) and "math.huge" or "math.pi", "d") end
  if not self.single and self:rng_call() then   -- counter-based uniforms and normals
    return node(R.chance(0.7) and "gpu.uniform(%1, %2)" or "gpu.normal(%1, %2)", "d", nil,
      { self:gen_i(0, B31), self:gen_i(0, B31) }, true)
  end
  return R.pick(opts)()
end

-- Metatype arithmetic on struct elements (G.STRUCT's metatype, above): a d
-- expression; the elements are nodes of kind "s", which nothing replaces.
function Gen:meta_d()
  local R = self.R
  local function elem()
    if R.chance(0.5) then return node("rs[%1]", "s", nil, { self:ro_index(1) }) end
    return node("os[%1]", "s", nil, { self:own_index(1) })
  end
  local r = R.int(1, 7)
  if r == 1 then return node("(%1 + %2)", "d", nil, { elem(), elem() }) end
  if r == 2 then return node("(%1 - %2)", "d", nil, { elem(), elem() }) end
  if r == 3 then return node("(%1 * %2)", "d", nil, { elem(), self:dop(0) }) end
  if r == 4 then return node("(%1 * %2)", "d", nil, { self:dop(0), elem() }) end
  if r == 5 then return node("(-%1)", "d", nil, { elem() }) end
  if r == 6 then return node("(%1 + #%2)", "d", nil, { self:dop(0), elem() }) end
  return node("%1:dd(%2)", "d", nil, { elem(), elem() })
end

-- A float operand: a d expression or an integer as a double.  (An integer
-- operand as it is would meet a double that LuaJIT's parser may have folded
-- into an integer constant, (0.5 + 0.5), and turn into integer arithmetic.)
function Gen:dop(depth)
  if self.R.chance(0.3) then return self:tof(self:gen_i(depth, BMAX)) end
  return self:gen_d(depth)
end

function Gen:gen_d(depth)
  local R = self.R
  if depth <= 0 or R.chance(0.25) then return self:leaf_d() end
  local d = depth - 1
  local r = R.int(1, 12)
  if r <= 3 then
    local op = R.pick({ "+", "-", "*", "/", "%", "^" })
    return node("(%1 " .. op .. " %2)", "d", nil, { self:dop(d), self:dop(d) })
  elseif r == 4 then
    return node("(-%1)", "d", nil, { self:gen_d(d) })
  elseif r <= 6 then
    return node("math." .. R.pick(MATH1) .. "(%1)", "d", nil, { self:dop(d) })
  elseif r == 7 then
    return node("math." .. R.pick(MATH2) .. "(%1, %2)", "d", nil, { self:dop(d), self:dop(d) })
  elseif r == 8 then
    return node("(%1 / %2)", "d", nil, { self:nz(self:gen_i(d, BMAX)), self:nz(self:gen_i(d, BMAX)) })
  elseif r == 9 then
    return node("(%1 and %2 or %3)", "d", nil, { self:gen_cond(d), self:gen_d(d), self:gen_d(d) })
  elseif r == 10 then
    return node("math.modf(%1)", "d", nil, { self:gen_d(d) })
  elseif r == 11 then
    local call = self:call_expr("d", d)
    if call then return call end
  end
  return self:leaf_d()
end

-- A float expression computed in float by gpujit (stored only into `of`):
-- loads of rf, float constants, small integers; at most two operations deep.
function Gen:gen_f(depth)
  local R = self.R
  if depth <= 0 or R.chance(0.3) then
    local r = R.int(1, 4)
    if r <= 2 and not self.infn then return node("rf[%1]", "f", nil, { self:ro_index(1) }) end
    -- constants exact in float and small: a float argument of sin/cos that
    -- rounds (1e10 + 0.5) would make any difference of the results legal
    if r == 3 then return const_d((R.int(-800, 800) + 0.5) / 8) end
    return self:nz(self:gen_i(1, 1000))
  end
  local d = depth - 1
  local r = R.int(1, 6)
  if r <= 3 then
    local op = R.pick({ "+", "-", "*", "/" })
    return node("(%1 " .. op .. " %2)", "f", nil, { self:gen_f(d), self:gen_f(d) })
  elseif r == 4 then
    return node("(-%1)", "f", nil, { self:gen_f(d) })
  elseif r == 5 then
    local fn = R.pick({ "abs", "floor", "ceil", "sin", "cos" })
    return node("math." .. fn .. "(%1)", "f", nil, { self:gen_f(d) })
  end
  return node("math." .. R.pick({ "min", "max" }) .. "(%1, %2)", "f", nil, { self:gen_f(d), self:gen_f(d) })
end

---------------------------------------------------------------------------
-- Conditions
---------------------------------------------------------------------------

local CMP = { "<", "<=", ">", ">=", "==", "~=" }

function Gen:gen_cond(depth)
  local R = self.R
  local r = R.int(1, 10)
  local d = math.max(depth - 1, 0)
  local op = R.pick(CMP)
  if depth > 0 and r == 1 then
    return node("(not %1)", "b", nil, { self:gen_cond(d) })
  elseif depth > 0 and r == 2 then
    return node(R.chance(0.5) and "(%1 and %2)" or "(%1 or %2)", "b", nil,
      { self:gen_cond(d), self:gen_cond(d) })
  elseif r <= 5 or self.single then
    return node("(%1 " .. op .. " %2)", "b", nil, { self:gen_i(d, BMAX), self:gen_i(d, BMAX) })
  elseif r <= 8 then
    return node("(%1 " .. op .. " %2)", "b", nil, { self:dop(d), self:dop(d) })
  elseif not self.infn then
    return node("(%1 " .. op .. " %2)", "b", nil, { self:gen_L(d), self:gen_L(d) })
  end
  return node("(%1 " .. op .. " %2)", "b", nil, { self:gen_i(d, BMAX), self:gen_i(d, BMAX) })
end

---------------------------------------------------------------------------
-- Device function calls
---------------------------------------------------------------------------

-- A call of a device function whose first result has kind k, as an
-- expression (its first result), or nil when there is none to call.
function Gen:callable(k)
  local out = {}
  for idx, f in ipairs(self.fns) do
    if f.rets[1] == k and (not self.infn or idx < self.infn) then out[#out + 1] = f end
  end
  return out
end

function Gen:args_for(f, depth)
  local args = {}
  for j, pk in ipairs(f.params) do
    if pk == "i" then args[j] = self:gen_i(depth, B31) else args[j] = self:gen_d(depth) end
  end
  return args
end

function Gen:call_expr(k, depth)
  local fs = self:callable(k)
  if #fs == 0 then return nil end
  local f = self.R.pick(fs)
  local args = self:args_for(f, depth)
  local ph = {}
  for j = 1, #args do ph[j] = "%" .. j end
  -- parenthesized: its first result only, even as the last argument of a call
  return node("(" .. f.name .. "(" .. table.concat(ph, ", ") .. "))", k, k == "i" and B31 or nil, args, true)
end

---------------------------------------------------------------------------
-- Statements
---------------------------------------------------------------------------
-- { t = "local"|"set"|"store"|"if"|"for"|"while"|"repeat"|"break"|"goto"
--   |"ret"|"call"|"print"|"assert", ... }

-- Integer assignments keep the variable within int32 range, so that loops
-- cannot grow it past 2^53.
function Gen:bounded_i(depth)
  local R = self.R
  local e = self:gen_i(depth, BMAX)
  if e.b <= B31 then return e end
  local r = R.int(1, 3)
  if r == 1 then return node("bit.band(%1, 1048575)", "i", 1048576, { e }, true) end
  if r == 2 then return node("(%1 % 9973)", "i", 9973, { e }, true) end
  return node("bit.bxor(%1, " .. R.int(0, 1000) .. ")", "i", B31, { e }, true)
end

function Gen:block(depth, n)
  local out = {}
  local saved = #self.vars
  for _ = 1, n do
    if self.budget <= 0 then break end
    out[#out + 1] = self:stmt(depth)
  end
  for j = #self.vars, saved + 1, -1 do self.vars[j] = nil end
  return out
end

local OUTS = { "oi", "ol", "ou", "oh", "of", "od" }

-- A store into a field of this work item's elements of os.
function Gen:store_field(idx)
  local R = self.R
  local f = R.pick(G.FIELDS)
  local e
  if f == "d" then
    e = (not self.single and R.chance(0.8)) and self:gen_d(3) or self:nz(self:gen_i(2, BMAX))
  elseif f == "l" then
    e = R.chance(0.5) and self:gen_L(2) or self:gen_i(2, BMAX)
  else
    e = self:gen_i(3, BMAX)
  end
  return { t = "store", arr = "os", field = f, idx = idx, e = e }
end

function Gen:store()
  local R = self.R
  local a = R.pick(OUTS)
  local idx = self:own_index(1)
  local e
  if self.structs and R.chance(0.15) then return self:store_field(idx) end
  if a == "ol" then
    e = R.chance(0.5) and self:gen_L(2) or self:gen_i(2, BMAX)
  elseif a == "of" then
    e = self:gen_f(2)
    if not self.single and R.chance(0.3) then e = self:gen_d(2) end
  elseif a == "od" then
    e = (not self.single and R.chance(0.8)) and self:gen_d(3) or self:nz(self:gen_i(2, BMAX))
  else
    e = self:gen_i(3, BMAX)
  end
  return { t = "store", arr = a, idx = idx, e = e }
end

-- A loop's body.  labelled: the loop may end its body with a label that
-- `goto` statements in the body jump to (a `continue`); returns the body and
-- the label (nil when none was chosen).
function Gen:loop_body(depth, labelled)
  local saved, saved_label = self.loops, self.cur_label
  self.loops = self.loops + 1
  local lab = nil
  if labelled and self.R.chance(0.35) then lab = self:label() end
  self.cur_label = lab
  local body = self:block(depth + 1, self.R.int(1, 4))
  self.loops, self.cur_label = saved, saved_label
  return body, lab
end

function Gen:stmt(depth)
  local R = self.R
  self.budget = self.budget - 1
  local r = R.int(1, 20)
  local nest = depth < 3 and self.budget > 2
  if r <= 3 then
    local k = self.single and "i" or R.pick({ "i", "i", "d" })
    local name = self:fresh("v")
    local e = (k == "i") and self:bounded_i(3) or self:gen_d(3)
    local st = { t = "local", name = name, e = e }
    self.vars[#self.vars + 1] = { name = name, k = k, b = B31 }
    return st
  elseif r <= 5 then
    local vs = {}
    for _, v in ipairs(self.vars) do if v.mut ~= false then vs[#vs + 1] = v end end
    if #vs > 0 then
      local v = R.pick(vs)
      local e = (v.k == "i") and self:bounded_i(3) or self:gen_d(3)
      return { t = "set", name = v.name, e = e }
    end
  elseif r <= 7 and self.infn == nil then
    return self:store()
  elseif r <= 9 and nest then
    local st = { t = "if", c = self:gen_cond(2), body = self:block(depth + 1, R.int(1, 3)) }
    if R.chance(0.4) then st.els = self:block(depth + 1, R.int(1, 2)) end
    return st
  elseif r == 10 and nest then
    local var = self:fresh("k")
    local a, b = R.int(-3, 4), R.int(-3, 8)
    local step = R.pick({ 1, 1, 2, -1, 3 })
    if step < 0 then a, b = b, a end
    local st = { t = "for", var = var, a = const_i(a), step = step }
    if not self.single and R.chance(0.25) then
      -- a float limit: LuaJIT counts to floor(limit); at most 7 turns
      st.b = node(step > 0 and "math.min(6.5, %1)" or "math.max(-6.5, %1)", "d", nil,
        { self:gen_d(1) }, true)
    else
      st.b = const_i(b)
    end
    self.vars[#self.vars + 1] = { name = var, k = "i", b = 8, mut = false }
    st.body, st.label = self:loop_body(depth, true)
    self.vars[#self.vars] = nil
    return st
  elseif r == 11 and nest then
    local cnt = self:fresh("w")
    local st = { t = "while", cnt = cnt, max = R.int(1, 6), c = self:gen_cond(1) }
    st.body, st.label = self:loop_body(depth, true)
    return st
  elseif r == 12 and nest then
    local cnt = self:fresh("r")
    local st = { t = "repeat", cnt = cnt, max = R.int(1, 6) }
    st.body = self:loop_body(depth, false)
    st.c = self:gen_cond(1)
    return st
  elseif r == 13 and self.loops > 0 then
    return { t = "break", c = self:gen_cond(1) }
  elseif r == 14 and self.loops > 0 and self.cur_label then
    return { t = "goto", c = self:gen_cond(1), label = self.cur_label }
  elseif r == 15 and self.infn == nil and R.chance(0.3) then
    return { t = "ret", c = self:gen_cond(1) }
  elseif r == 16 and R.chance(0.25) then
    return self:print_stmt()
  elseif r == 19 and not self.no_assert and R.chance(0.2) then
    return self:assert_stmt()
  elseif r == 18 and self.infn == nil and self.structs and not self.single then
    -- (not in gen_groups' kernels, whose control flow stays uniform; not
    -- with precision = "single", where s is a float)
    return self:guard_stmt(depth, nest)
  elseif r <= 17 then
    local fs = {}
    for idx, f in ipairs(self.fns) do
      if not self.infn or idx < self.infn then fs[#fs + 1] = f end
    end
    if #fs > 0 then
      local f = R.pick(fs)
      local st = { t = "call", fn = f.name, args = self:args_for(f, 2), names = {} }
      for j, k in ipairs(f.rets) do
        st.names[j] = self:fresh("c")
        self.vars[#self.vars + 1] = { name = st.names[j], k = k, b = B31 }
      end
      return st
    end
  end
  return self:store_or_local()
end

-- Guards (docs/typing.md, "Guards"): an integer variable compared with the
-- Lua-number argument s -- whole (a bound: gpujit narrows the variable's
-- range where the comparison holds), or fractional, -0, NaN, +-inf, past
-- 2^31 (no bound: nothing may narrow) -- and, where it holds, arithmetic
-- on the variable whose exactness in integers depends on that range.
-- Forms: 1 `if x OP s then <use> ... end`, 2 the use in the else branch,
-- 3 `if x OP s then return end` before the use, 4 a while loop counting
-- from x while below s (and a few turns), the use after it.
function Gen:guard_stmt(depth, nest)
  local R = self.R
  local xs = { "g" }
  for _, v in ipairs(self:vars_of("i")) do xs[#xs + 1] = v.name end
  local form = R.int(nest and 1 or 3, 4)
  local st = { t = "guard", form = form, x = R.pick(xs), op = R.pick({ "<", "<=", ">", ">=" }),
    swap = R.chance(0.3), K = R.pick({ 1, 4, -3, 1024, 2 ^ 20 }),   -- (x * K + x) stays below 2^52
    idx = self:own_index(1), cnt = self:fresh("q"), turns = R.int(1, 5) }
  if form <= 2 then st.body = self:block(depth + 1, R.int(1, 2)) end
  return st
end

local SWAPPED = { ["<"] = ">", ["<="] = ">=", [">"] = "<", [">="] = "<=" }

G.renderers = {}
G.renderers.guard = function(out, st, ind)
  local p = string.rep("  ", ind)
  local x = st.form == 4 and st.cnt or st.x
  local test = st.swap and ("s " .. SWAPPED[st.op] .. " " .. x) or (x .. " " .. st.op .. " s")
  local use = p .. "  od[" .. G.expr(st.idx) .. "] = (" .. x .. " * " .. fmtnum(st.K) .. " + " ..
    x .. ") * s + " .. x .. " * s"
  if st.form == 1 or st.form == 2 then
    out[#out + 1] = p .. "if " .. test .. " then"
    if st.form == 1 then out[#out + 1] = use end
    G.render_block(out, st.body, ind + 1)
    if st.form == 2 then
      out[#out + 1] = p .. "else"
      out[#out + 1] = use
    end
    out[#out + 1] = p .. "end"
  elseif st.form == 3 then
    out[#out + 1] = p .. "if " .. test .. " then return end"
    out[#out + 1] = use:sub(3)
  else
    out[#out + 1] = p .. "local " .. st.cnt .. " = " .. st.x
    out[#out + 1] = p .. "while " .. st.cnt .. " < s and " .. st.cnt .. " < " .. st.x .. " + " ..
      st.turns .. " do " .. st.cnt .. " = " .. st.cnt .. " + 1 end"
    out[#out + 1] = use:sub(3)
  end
end

-- print(...) of integers, doubles (not with precision = "single", where
-- gpujit prints the float it computed), booleans, nil and string constants;
-- check.lua compares the lines (docs/api.md, "print in kernels").
local PRINT_STRS = { '"x"', '"v ="', '""', '"a\tb"' }

function Gen:print_stmt()
  local R = self.R
  local args = {}
  for j = 1, R.int(0, 4) do
    local r = R.int(1, 6)
    if r <= 2 then
      args[j] = self:nz(self:bounded_i(2))
    elseif r == 3 and not self.single then
      args[j] = self:gen_d(2)
    elseif r == 4 then
      args[j] = node(R.pick(PRINT_STRS), "s")
    elseif r == 5 then
      args[j] = self:gen_cond(1)
    else
      args[j] = node("nil", "s")
    end
  end
  return { t = "print", args = args }
end

-- assert(c, msg) and error(msg) (docs/api.md, "assert and error in
-- kernels"): c is a random condition, or'ed with a test that holds for all
-- but about one in K values of an integer expression (the work item's id
-- in kernels), so that some kernels fail and some never do.  A failing
-- kernel is compared by its message: the same text and the same smallest
-- failing work item as the oracle (check.lua; its writes are unspecified).
local ASSERT_MSGS = { '"fz"', '"value out of range"', false }

function Gen:assert_stmt()
  local R = self.R
  local x = self.infn == nil and R.chance(0.7) and node("g", "i", 4096) or self:bounded_i(1)
  local K = R.pick({ 3, 7, 61, 1009 })
  local rare = node("(%1 % " .. K .. " ~= " .. R.int(0, K - 1) .. ")", "b", nil, { x }, true)
  return { t = "assert", form = R.int(1, 2), c = self:gen_cond(1), rare = rare,
           msg = R.pick(ASSERT_MSGS) }
end

function Gen:store_or_local()
  if self.infn == nil then return self:store() end
  local name = self:fresh("v")
  local e = self:bounded_i(2)
  self.vars[#self.vars + 1] = { name = name, k = "i", b = B31 }
  return { t = "local", name = name, e = e }
end

-- Labels for `goto continue`: the loop body's statements run inside a
-- `do ... end` and the label follows it (so no local is in scope there).
-- The goto statements of a body jump to its own loop's label; a loop
-- without one (and a repeat loop) has no goto in its body.
function Gen:label()
  self.nlabel = self.nlabel + 1
  return "cont" .. self.nlabel
end

---------------------------------------------------------------------------
-- Rendering
---------------------------------------------------------------------------

local E = G.expr

-- Renderers of statement types that other generators add
-- (spec/fuzz/gen_groups.lua), and the guards above: type -> function(out,
-- st, ind).

local function render_block(out, stmts, ind)
  for _, st in ipairs(stmts) do G.render_stmt(out, st, ind) end
end

function G.render_stmt(out, st, ind)
  local p = string.rep("  ", ind)
  local t = st.t
  if t == "local" then
    out[#out + 1] = p .. "local " .. st.name .. " = " .. E(st.e)
  elseif t == "set" then
    out[#out + 1] = p .. st.name .. " = " .. E(st.e)
  elseif t == "store" then
    out[#out + 1] = p .. st.arr .. "[" .. E(st.idx) .. "]" .. (st.field and "." .. st.field or "")
      .. " = " .. E(st.e)
  elseif t == "if" then
    out[#out + 1] = p .. "if " .. E(st.c) .. " then"
    render_block(out, st.body, ind + 1)
    if st.els then
      out[#out + 1] = p .. "else"
      render_block(out, st.els, ind + 1)
    end
    out[#out + 1] = p .. "end"
  elseif t == "for" or t == "while" then
    if t == "for" then
      out[#out + 1] = p .. "for " .. st.var .. " = " .. E(st.a) .. ", " .. E(st.b) ..
        (st.step ~= 1 and (", " .. st.step) or "") .. " do"
    else
      out[#out + 1] = p .. "local " .. st.cnt .. " = 0"
      out[#out + 1] = p .. "while " .. st.cnt .. " < " .. st.max .. " and " .. E(st.c) .. " do"
      out[#out + 1] = p .. "  " .. st.cnt .. " = " .. st.cnt .. " + 1"
    end
    if st.label then
      out[#out + 1] = p .. "  do"
      render_block(out, st.body, ind + 2)
      out[#out + 1] = p .. "  end"
      out[#out + 1] = p .. "  ::" .. st.label .. "::"
    else
      render_block(out, st.body, ind + 1)
    end
    out[#out + 1] = p .. "end"
  elseif t == "repeat" then
    out[#out + 1] = p .. "local " .. st.cnt .. " = 0"
    out[#out + 1] = p .. "repeat"
    out[#out + 1] = p .. "  " .. st.cnt .. " = " .. st.cnt .. " + 1"
    render_block(out, st.body, ind + 1)
    out[#out + 1] = p .. "until " .. st.cnt .. " >= " .. st.max .. " or " .. E(st.c)
  elseif t == "break" then
    out[#out + 1] = p .. "if " .. E(st.c) .. " then break end"
  elseif t == "goto" then
    out[#out + 1] = p .. "if " .. E(st.c) .. " then goto " .. st.label .. " end"
  elseif t == "ret" then
    out[#out + 1] = p .. "if " .. E(st.c) .. " then return end"
  elseif t == "call" then
    local a = {}
    for j, e in ipairs(st.args) do a[j] = E(e) end
    out[#out + 1] = p .. "local " .. table.concat(st.names, ", ") .. " = " .. st.fn .. "(" ..
      table.concat(a, ", ") .. ")"
  elseif t == "return" then
    local a = {}
    for j, e in ipairs(st.es) do a[j] = E(e) end
    out[#out + 1] = p .. "return " .. table.concat(a, ", ")
  elseif t == "assert" then
    if st.form == 1 then
      out[#out + 1] = p .. "assert(" .. E(st.c) .. " or " .. E(st.rare) ..
        (st.msg and ", " .. st.msg or "") .. ")"
    else
      out[#out + 1] = p .. "if not " .. E(st.rare) .. " and " .. E(st.c) .. " then error(" ..
        (st.msg or '"fz error"') .. ") end"
    end
  elseif t == "print" then
    local a = {}
    for j, e in ipairs(st.args) do a[j] = E(e) end
    out[#out + 1] = p .. "print(" .. table.concat(a, ", ") .. ")"
  elseif G.renderers[t] then
    G.renderers[t](out, st, ind)
  end
end

-- The lines of a case's constants, device functions and kernel, the kernel
-- being `head .. "function(...)"` (head: "return " or "k3 = ").
local function render_case(out, case, head, ind)
  local p = string.rep("  ", ind)
  for _, c in ipairs(case.consts) do
    out[#out + 1] = p .. "local " .. c.name .. " = " .. G.const_text(c)
  end
  for _, f in ipairs(case.fns) do
    out[#out + 1] = p .. "local function " .. f.name .. "(" .. table.concat(f.pnames, ", ") .. ")"
    render_block(out, f.body, ind + 1)
    out[#out + 1] = p .. "end"
  end
  out[#out + 1] = p .. head .. "function(" .. table.concat(G.params, ", ") .. ")"
  out[#out + 1] = p .. "  local g = gpu.global_id(0)"
  out[#out + 1] = p .. "  if g >= n then return end"
  render_block(out, case.body, ind + 1)
  out[#out + 1] = p .. "end"
end

-- The kernel as Lua source: a chunk that takes `gpu` and returns the kernel
-- function.  Device functions and constants are its upvalues.
function G.source(case)
  local out = { "local gpu = ...", "local bit, math = bit, math" }
  render_case(out, case, "return ", 0)
  return table.concat(out, "\n") .. "\n"
end

-- Several cases as one kernel: function(which, <the kernel's params>) runs
-- case number `which` (each case a device function, in its own scope), so
-- that one compile serves several cases (spec/fuzz/check.lua, run_batch).
function G.batch_source(cases)
  local out = { "local gpu = ...", "local bit, math = bit, math" }
  local names = {}
  for j = 1, #cases do names[j] = "k" .. j end
  out[#out + 1] = "local " .. table.concat(names, ", ")
  for j, case in ipairs(cases) do
    out[#out + 1] = "do"
    render_case(out, case, names[j] .. " = ", 1)
    out[#out + 1] = "end"
  end
  local ps = table.concat(G.params, ", ")
  out[#out + 1] = "return function(which, " .. ps .. ")"
  for j = 1, #cases do
    out[#out + 1] = "  " .. (j == 1 and "if" or "elseif") .. " which == " .. j .. " then " ..
      names[j] .. "(" .. ps .. ")"
  end
  out[#out + 1] = "  end"
  out[#out + 1] = "end"
  return table.concat(out, "\n") .. "\n"
end

---------------------------------------------------------------------------
-- A whole case
---------------------------------------------------------------------------

function Gen:device_fn(idx)
  local R = self.R
  local f = { name = "f" .. idx, params = {}, pnames = {}, rets = {} }
  local np = R.int(1, 3)
  self.infn = idx
  self.vars = {}
  for j = 1, np do
    f.params[j] = (self.single or R.chance(0.6)) and "i" or "d"
    f.pnames[j] = "p" .. j
    self.vars[j] = { name = "p" .. j, k = f.params[j], b = B31 }
  end
  local nr = R.chance(0.7) and 1 or 2
  for j = 1, nr do f.rets[j] = (self.single or R.chance(0.6)) and "i" or "d" end
  self.budget = R.int(2, 6)
  local body = {}
  for _ = 1, 6 do
    if self.budget <= 0 then break end
    body[#body + 1] = self:stmt(1)
  end
  local es = {}
  for j, k in ipairs(f.rets) do
    es[j] = (k == "i") and self:bounded_i(2) or self:gen_d(2)
  end
  body[#body + 1] = { t = "return", es = es }
  f.body = body
  self.infn = nil
  self.vars = {}
  return f
end

function G.generate(seed, o)
  o = o or {}
  local R = rng(seed)
  local single = o.precision == "single" or (o.precision == nil and R.chance(0.15))
  local M = R.int(5, 40)
  local gen = new_gen(R, { single = single, M = M })
  gen.structs = true   -- rs and os are parameters (gen_groups' kernels have none)
  gen.R2 = rng(seed + 1000003)   -- rm's reads (Gen:leaf_i)
  -- upvalue constants
  for j = 1, R.int(0, 3) do
    local isf = not single and R.chance(0.4)
    local v = isf and (R.int(-100, 100) + 0.375) or R.int(-50, 50)
    gen.consts[j] = { name = "K" .. j, v = v, k = isf and "d" or "i" }
  end
  G.const_tables(gen, R)
  for j = 1, R.int(0, 3) do gen.fns[j] = gen:device_fn(j) end
  gen.budget = o.budget or R.int(6, 28)
  local body = {}
  while gen.budget > 0 do body[#body + 1] = gen:stmt(0) end
  local case = { seed = seed, precision = single and "single" or "double", M = M,
    N = R.int(1, 48), consts = gen.consts, fns = gen.fns, body = body }
  case.data = G.data(R, case)
  return case
end

-- Input data: read-only arrays of M elements, output arrays of 4*N
-- elements, each value drawn once so that a reproducer can list them.
function G.data(R, case)
  local d = {}
  local function fill(name, n, f)
    local t = {}
    for j = 1, n do t[j] = f() end
    d[name] = t
  end
  local function int_val(lo, hi)
    if R.chance(0.05) then return R.pick({ lo, hi, 0, -1 }) end
    return R.int(math.max(lo, -1000), math.min(hi, 1000))
  end
  local M, O = case.M, 4 * case.N
  fill("ri", M, function() return int_val(-2147483648, 2147483647) end)
  fill("rl", M, function()
    if R.chance(0.1) then return R.pick({ 2 ^ 40 + 7, -(2 ^ 35), 2 ^ 62 }) end
    return R.int(-100000, 100000)
  end)
  fill("ru", M, function() return R.int(0, 255) end)
  fill("rf", M, function() return (R.int(-2000, 2000)) / 64 end)
  fill("rd", M, function()
    if R.chance(0.08) then return R.pick({ 0, -0.0, 1e300, -1e-300, 2 ^ 53, 0.5, -2.5 }) end
    return R.int(-1000000, 1000000) / 1024
  end)
  fill("oi", O, function() return int_val(-2147483648, 2147483647) end)
  fill("ol", O, function() return R.int(-100000, 100000) end)
  fill("ou", O, function() return R.int(0, 255) end)
  fill("oh", O, function() return R.int(-32768, 32767) end)
  fill("of", O, function() return R.int(-1000, 1000) / 8 end)
  fill("od", O, function() return R.int(-1000000, 1000000) / 1024 end)
  -- the struct arrays: i, u, d, l per element
  local field_val = {
    function() return int_val(-2147483648, 2147483647) end,
    function() return R.int(0, 255) end,
    function() return R.int(-1000000, 1000000) / 1024 end,
    function() return R.int(-100000, 100000) end,
  }
  local k = 0
  local function field() k = k % 4 + 1; return field_val[k]() end
  fill("rs", 4 * M, field)
  k = 0
  fill("os", 4 * O, field)
  -- s, the Lua-number argument: fractional, whole (typed as an integer class
  -- by gpujit, docs/typing.md "Whole numbers"), or a value at the edges of
  -- the classes and of the exact range: -0, 2^31, 2^53 +- 1, values whose
  -- products pass 2^53 and 2^63, NaN, +-inf.
  local r = R.int(1, 10)
  if r <= 3 then
    d.s = R.int(-1000, 1000) / 4 + 0.125
  elseif r <= 6 then
    d.s = R.int(-1000, 1000)
  else
    d.s = R.pick({ 0, -0.0, 1, -1, 2 ^ 20, 2 ^ 20 + 1, -(2 ^ 20), -(2 ^ 20) - 1, 2 ^ 31 - 1,
      -(2 ^ 31), 2 ^ 31, -(2 ^ 31) - 1, 2 ^ 26 + 3, 3037000499, 2 ^ 32 + 1, 2 ^ 53 - 1, 2 ^ 53 + 2,
      -(2 ^ 53) + 1, 0 / 0, math.huge, -math.huge, 0.5, -2.5 })
  end
  -- last, so that the other arrays' data are what they were before rm
  fill("rm", G.MD_COLS * M, function() return int_val(-2147483648, 2147483647) end)
  return d
end

-- Constant tables: spec/fuzz/gen_tables.lua.
require("spec.fuzz.gen_tables").install(G, Gen, node, fmtnum, BMAX)

-- For the generators that build on this one (spec/fuzz/gen_groups.lua).
G.rng, G.node, G.fmtnum, G.new_gen, G.render_block = rng, node, fmtnum, new_gen, render_block
G.B31, G.BMAX = B31, BMAX

return G
