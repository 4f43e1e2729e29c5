-- The type table (src/gj_type.h, gj_types): the core owns it, core.types()
-- exports it, lua/gpujit/types.lua builds its tables from it, or, without the
-- core, derives the same entries from LuaJIT's FFI.  These check the table
-- against the FFI, the core's own parser (through core.compile, the path a
-- launch's types take) against types.lua, and the fallback against the core.

local H = require("spec.helpers")
local ffi = require("ffi")
local gpu = H.gpu
local types = require("gpujit.types")

local core = gpu.core

-- Every spelling of the table: canonical names and C spellings.
local function all_names(entries)
  local out = {}
  for _, e in ipairs(entries) do
    out[#out + 1] = e.name
    for _, sp in ipairs(e.spellings) do out[#out + 1] = sp end
  end
  return out
end

-- A canonical, printable form of an entry list (for equality and messages).
local FIELDS = { "name", "size", "align", "bits", "bool", "int", "float", "signed", "int64" }
local function show(entries)
  local lines = {}
  for i, e in ipairs(entries) do
    local f = {}
    for j, k in ipairs(FIELDS) do f[j] = k .. "=" .. tostring(e[k]) end
    lines[i] = table.concat(f, " ") .. " spellings=" .. table.concat(e.spellings, "|")
  end
  return table.concat(lines, "\n")
end

-- The sorted keys of t, joined.
local function keys(t)
  local out = {}
  for k in pairs(t) do out[#out + 1] = tostring(k) end
  table.sort(out)
  return table.concat(out, ",")
end

describe("the type table", function()
  if not core then
    pending("needs the compiled core: " .. tostring(gpu.core_error))
    return
  end
  local entries = core.types()

  it("is what gpujit.types read, when the core is loaded", function()
    assert.are.equal("core", types.source)
    assert.are.equal(show(entries), show(types.entries))
  end)

  it("gives each entry the FFI's size and alignment, for its name and every spelling", function()
    assert.is_true(#entries > 0)
    for _, e in ipairs(entries) do
      for _, nm in ipairs(all_names({ e })) do
        assert.are.equal(ffi.sizeof(nm), e.size, "sizeof " .. nm)
        assert.are.equal(ffi.alignof(nm), e.align, "alignof " .. nm)
      end
      assert.are.equal(e.bool and 1 or 8 * e.size, e.bits, "bits of " .. e.name)
    end
  end)

  it("names each spelling once, and each entry has exactly one kind", function()
    local seen = {}
    for _, nm in ipairs(all_names(entries)) do
      assert.is_nil(seen[nm], "spelled twice: " .. nm)
      seen[nm] = true
    end
    for _, e in ipairs(entries) do
      local n = (e.bool and 1 or 0) + (e.int and 1 or 0) + (e.float and 1 or 0)
      assert.are.equal(1, n, "kinds of " .. e.name)
      assert.is_true(not e.signed or e.int, "signed non-integer " .. e.name)
      assert.are.equal(e.int and e.size == 8, e.int64, "int64 of " .. e.name)
    end
  end)

  it("is what deriving from the FFI gives (the table without the core)", function()
    assert.are.equal(show(entries), show(types.ffi_entries()))
  end)

  it("has every entry of gpujit.types and nothing more", function()
    local names, spellings, ints, floats, int64s = {}, {}, {}, {}, {}
    for i, e in ipairs(entries) do
      names[i] = e.name
      if e.int then ints[e.name] = true end
      if e.float then floats[e.name] = true end
      if e.int64 then int64s[e.name] = true end
      for _, sp in ipairs(e.spellings) do spellings[sp] = e.name end
    end
    assert.are.equal(table.concat(names, ","), table.concat(types.scalars, ","))
    local sorted = { unpack(names) }
    table.sort(sorted)
    for _, f in ipairs({ "size", "align", "is_scalar" }) do
      assert.are.equal(table.concat(sorted, ","), keys(types[f]), "the names in types." .. f)
    end
    for _, e in ipairs(entries) do
      assert.are.equal(e.size, types.size[e.name])
      assert.are.equal(e.align, types.align[e.name])
    end
    assert.are.same(ints, types.is_int)
    assert.are.same(floats, types.is_float)
    assert.are.same(int64s, types.is_int64)
    assert.are.same(spellings, types.aliases)
  end)

  -- core.compile parses the type names it is given with gj_scalar_parse: the
  -- names reach it canonical from a launch, but raw here, so that every
  -- spelling goes through the core's parser and comes back as the kind.
  for _, bk in ipairs(H.compilers) do
    it("parses every spelling in C to the kind gpujit.types gives it, on " .. bk, function()
      H.need(bk)
      local bki
      for _, b in ipairs(core.backends()) do
        if b.name == bk then bki = b.index end
      end
      assert.is_not_nil(bki, bk)
      local names = all_names(entries)
      local params = {}
      for i = 1, #names do params[i] = "p" .. i end
      local fn = assert(loadstring("return function(" .. table.concat(params, ", ") .. ") end"))()
      for _, suffix in ipairs({ "", "[]" }) do
        local tl = {}
        for i, nm in ipairs(names) do tl[i] = nm .. suffix end
        local info = core.compile(fn, tl, { bk = bki, device = 0, name = "types_spec" })
        assert.are.equal(#names, #info.params)
        for i, nm in ipairs(names) do
          local p, want = info.params[i], types.scalar(nm)
          assert.is_not_nil(want, nm)
          assert.are.equal(want, p.elem, "'" .. tl[i] .. "'")
          assert.are.equal(want .. suffix, p.type, "'" .. tl[i] .. "'")
          if suffix == "" then assert.are.equal(types.size[want], p.size, "'" .. nm .. "'") end
        end
      end
    end)
  end
end)

describe("type names in kernels", function()
  -- gpu.shared's type name: the typer parses it with gj_scalar_parse (sim
  -- with gpujit.types), so every spelling of the table must work there too.
  for _, bk in ipairs(H.backends) do
    it("gpu.shared takes every spelling of the type table, on " .. bk, function()
      H.need(bk)
      local body, n = {}, 0
      for _, e in ipairs(types.entries) do
        local names = { e.name, unpack(e.spellings) }
        for _, nm in ipairs(names) do
          n = n + 1
          local s = "s" .. n
          body[#body + 1] = ("local %s = gpu.shared(%q, 1)"):format(s, nm)
          if e.bool then
            body[#body + 1] = ("%s[0] = true; if %s[0] then acc = acc + 1 end"):format(s, s)
          else
            body[#body + 1] = ("%s[0] = 1; acc = acc + %s[0]"):format(s, s)
          end
        end
      end
      local src = "local gpu = ...; return function(out) local acc = 0\n"
        .. table.concat(body, "\n") .. "\nout[0] = acc end"
      local fn = assert(loadstring(src, "=types_spec_shared"))(gpu)
      local out = ffi.new("double[1]")
      H.kernel(bk, fn):launch({ global = 1, group = 1 }, out)
      assert.are.equal(n, out[0])
    end)
  end
end)

describe("gpujit without the core", function()
  -- A child luajit where requiring gpujit.core fails: gpujit loads, takes its
  -- type table from the FFI, and runs kernels on sim.
  it("derives the same type tables from the FFI and runs on sim", function()
    local code = [[
      package.preload["gpujit.core"] = function() error("types_spec: no core", 0) end
      local gpu = require("gpujit")
      local ffi = require("ffi")
      local t = gpu.types
      assert(gpu.core == nil, "the core loaded")
      assert(tostring(gpu.core_error):find("types_spec: no core", 1, true), gpu.core_error)
      assert(gpu.backend() == "sim", gpu.backend())
      local out = { t.source }
      for _, n in ipairs(t.scalars) do
        out[#out + 1] = table.concat({ n, t.size[n], t.align[n], tostring(t.is_int[n]),
          tostring(t.is_float[n]), tostring(t.is_int64[n]) }, ":")
      end
      local al = {}
      for k, v in pairs(t.aliases) do al[#al + 1] = k .. "=" .. v end
      table.sort(al)
      out[#out + 1] = table.concat(al, ",")
      local x = ffi.new("unsigned short[?]", 4)
      gpu.kernel(function(a, n)
        local i = gpu.global_id(0)
        if i < n then a[i] = i * 3 end
      end):launch(4, x, 4)
      out[#out + 1] = table.concat({ x[0], x[1], x[2], x[3] }, ",")
      io.write(table.concat(out, "\n"))
    ]]
    local path = os.tmpname()
    local f = assert(io.open(path, "w"))
    f:write(code)
    f:close()
    local p = io.popen("env -u GPUJIT_BACKEND " .. H.luajit_cmd() .. " " .. path .. " 2>&1")
    local got = p:read("*a")
    p:close()
    os.remove(path)
    local want = { "ffi" }
    for _, n in ipairs(types.scalars) do
      want[#want + 1] = table.concat({ n, types.size[n], types.align[n], tostring(types.is_int[n]),
        tostring(types.is_float[n]), tostring(types.is_int64[n]) }, ":")
    end
    local al = {}
    for k, v in pairs(types.aliases) do al[#al + 1] = k .. "=" .. v end
    table.sort(al)
    want[#want + 1] = table.concat(al, ",")
    want[#want + 1] = "0,3,6,9"
    assert.are.equal(table.concat(want, "\n"), got)
  end)
end)
