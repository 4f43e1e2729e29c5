-- Value classes as a lattice (docs/typing.md, "Value classes"): a launch
-- whose Lua-number classes a compiled overload covers runs it, and one that
-- none covers compiles the join, so that a scalar that wanders widens once
-- or twice and stays.

local H = require("spec.helpers")
local ffi = require("ffi")
local gpu = H.gpu
local L = require("gpujit.lattice")

describe("the lattice of Lua-number classes", function()
  it("covers and joins", function()
    assert.is_true(L.covers("double", "lua_pos20"))
    assert.is_true(L.covers("double", "double"))
    assert.is_true(L.covers("lua_int", "lua_neg31"))
    assert.is_false(L.covers("lua_pos20", "lua_pos31"))
    assert.is_false(L.covers("float", "lua_pos20"))     -- float rounds 2^24 + 1
    assert.is_false(L.covers("double", "float[]"))
    assert.are.equal("lua_int", L.join("lua_pos20", "lua_zero"))
    assert.are.equal("lua_int", L.join("lua_int", "lua_neg20"))
    assert.are.equal("double", L.join("lua_neg31", "double"))
    assert.is_nil(L.join("float", "lua_pos20"))
    assert.is_nil(L.join("float[]", "double[]"))
  end)

  it("pick: a cover, else the join with the overloads that differ only in numbers", function()
    local function ov(...) local t = { ... }; return t end
    local types = require("gpujit.types")
    local per = {}
    local function add(t) per[types.sig_key(t)] = { types = t } end
    add(ov("float[]", "lua_pos20", "double"))
    add(ov("double[]", "lua_zero", "lua_zero"))
    local t, how = L.pick(per, ov("float[]", "lua_pos20", "lua_neg20"), "")
    assert.are.same(ov("float[]", "lua_pos20", "double"), t)
    assert.are.equal("cover", how)
    t, how = L.pick(per, ov("float[]", "lua_zero", "double"), "")
    assert.are.same(ov("float[]", "lua_int", "double"), t)
    assert.are.equal("join", how)
    t, how = L.pick(per, ov("int32_t[]", "lua_zero", "double"), "")
    assert.are.same(ov("int32_t[]", "lua_zero", "double"), t)
    assert.is_nil(how)
    -- boundscheck's 1-based flags are part of the key: no cover across them
    t, how = L.pick(per, ov("float[]", "lua_pos20", "lua_neg20"), "|100")
    assert.are.same(ov("float[]", "lua_pos20", "lua_neg20"), t)
    assert.is_nil(how)
  end)
end)

for _, bk in ipairs(H.backends) do
  describe("value classes [" .. bk .. "]", function()
    local function integrate(name, seq, opts)
      local o = { name = name }
      for k, v in pairs(opts or {}) do o[k] = v end
      local k = H.kernel(bk, function(x, dt, g)
        local i = gpu.global_id(0)
        x[i] = x[i] + dt * g
      end, o)
      local compiles = 0
      local off = gpu.on_compile(function(ev)
        if ev.phase == "done" and ev.kernel == name then compiles = compiles + 1 end
      end)
      local ok, err = pcall(function()
        for _, v in ipairs(seq) do
          local x = ffi.new("float[4]", 1, 2, 3, 4)
          local ref = ffi.new("float[4]", 1, 2, 3, 4)
          k:launch(4, x, v[1], v[2])
          for i = 0, 3 do ref[i] = ref[i] + v[1] * v[2] end
          H.check("float", x, function(i) return ref[i] end, 4,
            { what = name .. "(" .. H.fmt(v[1]) .. ", " .. H.fmt(v[2]) .. ")" })
        end
      end)
      off()
      if not ok then error(err, 0) end
      return k, compiles
    end

    it("the issue's 8 launches of a wandering dt and g compile at most twice", function()
      local seq = { { 0.016, 9.81 }, { 0, 9.81 }, { -1, 9.81 }, { 7, 9.81 }, { 3e9, 9.81 },
                    { 0.016, 0 }, { 0.016, -10 }, { 7, -10 } }
      local k, compiles = integrate("wander", seq)
      assert.truthy(compiles <= 2, compiles .. " compiles")
      assert.are.same({ { "float[]", "double", "double" } }, k:signatures())
      if bk ~= "sim" then assert.are.equal(1, compiles) end
    end)

    it("whole values first widen to lua_int, then to double, and stay", function()
      local seq = { { 7, 2 }, { 0, 2 }, { -1, 2 }, { 7, 0 }, { 3, -10 }, { 0.5, 2 }, { 7, -10 },
                    { 3e9, 0 }, { 0, 0 }, { 1, 1 } }
      local k, compiles = integrate("wander2", seq)
      assert.are.same({ { "float[]", "lua_pos20", "lua_pos20" }, { "float[]", "lua_int", "lua_pos20" },
                        { "float[]", "lua_int", "lua_int" }, { "float[]", "double", "lua_int" } },
        k:signatures())   -- (3e9, 0) and the rest run the last
      if bk ~= "sim" then assert.are.equal(4, compiles) end
    end)

    it("precision = single: float covers no whole value", function()
      local k = integrate("wander1", { { 0.5, 2 }, { 7, 2 }, { 0.5, 2 } }, { precision = "single" })
      assert.are.same({ { "float[]", "float", "lua_pos20" }, { "float[]", "lua_pos20", "lua_pos20" } },
        k:signatures())
    end)

    it("GPUJIT_VERBOSE says when a launch widened a signature", function()
      local ok, out = H.run_isolated(bk, [[
        local k = gpu.kernel(function(x, dt) x[gpu.global_id(0)] = dt end, { name = "wv", cache = false })
        local x = ffi.new("double[1]")
        k:launch(1, x, 7)
        k:launch(1, x, 0)
        k:launch(1, x, -3)
        print("sigs " .. #k:signatures())
      ]], { GPUJIT_VERBOSE = "1" })
      assert.is_true(ok, out)
      assert.truthy(out:find("sigs 2", 1, true), out)
      if bk == "sim" then   -- sim compiles nothing, and says nothing
        assert.is_nil(out:find("gpujit: compiled", 1, true), out)
      else
        local first = out:match("compiled wv at [^\n]*%(double%[%], lua_pos20%)[^\n]*")
        assert.truthy(first, out)
        assert.is_nil(first:find("widened", 1, true), first)
        assert.truthy(out:find("compiled wv at [^\n]*%(double%[%], lua_int%)[^\n]*; widened for a launch "
          .. "of %(double%[%], lua_zero%)\n"), out)
      end
    end)
  end)
end

for _, bk in ipairs(H.backends) do
  describe("signatures from example values [" .. bk .. "]", function()
    local function kern(name, opts, sig)
      local o = { name = name }
      for k, v in pairs(opts or {}) do o[k] = v end
      return H.kernel(bk, function(x, w, s)
        local i = gpu.global_id(0)
        if i < w then x[i] = x[i] * s + i end
      end, o, sig)
    end

    it("k:signature_for gives the types the launch runs, and launches nothing", function()
      local k = kern("sf")
      local x = ffi.new("float[8]")
      assert.are.same({ "float[]", "lua_pos20", "double" }, k:signature_for(8, x, 8, 0.5))
      assert.are.same({ "float[]", "lua_zero", "lua_neg20" }, k:signature_for(8, x, 0, -2))
      -- a launch of 2^31 work items: every number a double
      assert.are.same({ "float[]", "double", "double" }, k:signature_for({ global = { 2 ^ 31, 1 } }, x, 8, 2))
      assert.are.same({}, k:signatures())
      for i = 0, 7 do assert.are.equal(0, x[i]) end
      -- after a compile, a covered launch runs it: signature_for says so
      k:launch(8, x, 8, 0.5)
      assert.are.same({ "float[]", "lua_pos20", "double" }, k:signature_for(8, x, 4, 3))
      assert.are.same({ "float[]", "lua_int", "double" }, k:signature_for(8, x, 0, 3))
      local err = H.error_of(function() k:signature_for(8, x, "w", 1) end)
      assert.truthy(err:find("bad argument #2 'w'", 1, true), err)
      err = H.error_of(function() k:signature_for(8, x, 1, 2, 3) end)
      assert.truthy(err:find("bad argument #4", 1, true), err)
    end)

    it("k:compile_for compiles that signature, so the launch compiles nothing", function()
      local k = kern("cf")
      local x = ffi.new("float[8]", 1, 1, 1, 1, 1, 1, 1, 1)
      local h = k:compile_for(8, x, 8, 0.5)
      assert.are.equal("ready", h:status())
      assert.are.same({ { "float[]", "lua_pos20", "double" } }, k:signatures())
      local n0 = k.ncompiles
      k:launch(8, x, 8, 0.5)
      k:launch(8, x, 5, 2)    -- covered: (lua_pos20, double)
      assert.are.equal(n0, k.ncompiles)
      assert.are.same({ { "float[]", "lua_pos20", "double" } }, k:signatures())
      H.check("float", x, function(i) return i < 5 and (0.5 + i) * 2 + i or 0.5 + i end, 8)
      -- an eager kernel: the signature that fits
      local ke = kern("cfe", nil, { "float[]", "lua_int", "float" })
      assert.are.same({ "float[]", "lua_int", "float" }, ke:signature_for(8, x, 8, 0.5))
    end)
  end)
end
