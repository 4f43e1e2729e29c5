-- spec/fuzz/gen_tables.lua: the constant tables of the differential
-- fuzzer's generator (spec/fuzz/gen.lua; docs/fuzzing.md): which upvalue
-- tables a case gets, how a kernel reads them, and their Lua source.
-- install(G, Gen, node, fmtnum, BMAX) adds G.const_tables, G.const_text,
-- Gen:has_const_table and Gen:const_table_read to the generator.

local T = {}

function T.install(G, Gen, node, fmtnum, BMAX)

  -- Constant tables (docs/typing.md, "Constant tables"; precision = "double"
  -- only, where a table's element is LuaJIT's number): upvalues KT<j> of one
  -- of these shapes, whole ("ti": integers, an lnum in the kernel, or doubles
  -- when a value passes int32_t) or not ("td"), or of int64_t ("L"):
  --   list    { ... } read as KT<j>[e % len + 1];
  --   nested  { { ... }, { ... } } with rows of different lengths, read as
  --           KT<j>[e % rows + 1][f % shortest + 1] or KT<j>[r][f % shortest + 1];
  --   ffi     ffi.new("double[5]", ...) (double, float, int32_t, int16_t,
  --           int64_t) or ffi.new("int32_t[3][4]", ...) (double, int32_t),
  --           read 0-based as KT<j>[e % len] or KT<j>[e % rows][f % cols].
  local function table_value(R, whole, ct)
    if ct == "int16_t" then return R.int(-32768, 32767) end
    if ct == "int64_t" then
      return R.chance(0.2) and R.pick({ 2 ^ 62, -(2 ^ 63), 2 ^ 40 + 3 }) or R.int(-100000, 100000)
    end
    if whole then
      local edge = ct and { 2 ^ 31 - 1, -(2 ^ 31) } or { 2 ^ 31 - 1, -(2 ^ 31), 2 ^ 31 }
      return R.chance(0.1) and R.pick(edge) or R.int(-1000, 1000)
    end
    return R.chance(0.15) and R.pick({ -0.0, 1e300, 0.1, -2.5 }) or (R.int(-4000, 4000) + 0.5) / 8
  end

  local function bound_of(t, b)
    for _, v in ipairs(t) do
      b = type(v) == "table" and bound_of(v, b) or math.max(b, math.abs(v))
    end
    return b
  end

  function G.const_tables(gen, R)
    if gen.single then return end
    for j = 1, R.chance(0.4) and R.int(1, 2) or 0 do
      local c = { name = "KT" .. j, shape = R.pick({ "list", "list", "nested", "ffi", "ffi" }), tab = {} }
      local whole = R.chance(0.6)
      if c.shape == "ffi" then
        local ct = R.pick({ "double", "float", "int32_t", "int16_t", "int64_t", "double", "int32_t" })
        c.dims = { R.int(1, 6) }
        if (ct == "double" or ct == "int32_t") and R.chance(0.4) then c.dims[2] = R.int(1, 4) end
        whole = ct ~= "double" and ct ~= "float"
        c.ctype = ct .. "[" .. table.concat(c.dims, "][") .. "]"
        for r = 1, c.dims[1] do
          if c.dims[2] then
            c.tab[r] = {}
            for m = 1, c.dims[2] do c.tab[r][m] = table_value(R, whole, ct) end
          else
            c.tab[r] = table_value(R, whole, ct)
          end
        end
        c.k = ct == "int64_t" and "L" or whole and "ti" or "td"
      elseif c.shape == "nested" then
        c.short = math.huge
        for r = 1, R.int(1, 4) do
          local row = {}
          for m = 1, R.int(1, 5) do row[m] = table_value(R, whole) end
          c.tab[r], c.short = row, math.min(c.short, #row)
        end
        c.k = whole and "ti" or "td"
      else
        for m = 1, R.int(1, 9) do c.tab[m] = table_value(R, whole) end
        c.k = whole and "ti" or "td"
      end
      c.b = bound_of(c.tab, 0)
      gen.consts[#gen.consts + 1] = c
    end
  end

  function Gen:has_const_table(k)
    for _, c in ipairs(self.consts) do if c.tab and c.k == k then return true end end
    return false
  end

  -- A read of a constant table of kind k ("ti", "td" or "L"; there is one).
  function Gen:const_table_read(k)
    local ts, R = {}, self.R
    for _, c in ipairs(self.consts) do if c.tab and c.k == k then ts[#ts + 1] = c end end
    local c = R.pick(ts)
    local kind, b = k == "ti" and "i" or k, k == "ti" and c.b or nil
    local e, f = self:gen_i(0, BMAX), self:gen_i(0, BMAX)
    local function read(text, args) return node(c.name .. text, kind, b, args, true) end
    if c.shape == "nested" then
      if R.chance(0.3) then
        return read("[" .. R.int(1, #c.tab) .. "][%1 % " .. c.short .. " + 1]", { f })
      end
      return read("[%1 % " .. #c.tab .. " + 1][%2 % " .. c.short .. " + 1]", { e, f })
    elseif c.shape == "ffi" then
      if c.dims[2] then return read("[%1 % " .. c.dims[1] .. "][%2 % " .. c.dims[2] .. "]", { e, f }) end
      return read("[%1 % " .. c.dims[1] .. "]", { e })
    end
    return read("[%1 % " .. #c.tab .. " + 1]", { e })
  end

  -- A constant's value as Lua source: a number, or a table of them.
  local function table_text(tab)
    local t = {}
    for j, v in ipairs(tab) do t[j] = type(v) == "table" and table_text(v) or fmtnum(v) end
    return "{ " .. table.concat(t, ", ") .. " }"
  end

  function G.const_text(c)
    if not c.tab then return fmtnum(c.v) end
    if c.ctype then return "require(\"ffi\").new(\"" .. c.ctype .. "\", " .. table_text(c.tab) .. ")" end
    return table_text(c.tab)
  end

end

return T
