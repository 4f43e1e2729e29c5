-- The shipped `nancheck` plugin (plugins/nancheck/nancheck.c,
-- docs/plugins.md): the first NaN a kernel stores into a float or double
-- array, reported with its Lua line, argument, work item and index.

local H = require("spec.helpers")
local ffi = require("ffi")
local gpu = H.gpu

local SOURCE = debug.getinfo(1, "S").source:gsub("^@", "")

local function checked(bk, fn, opts, sig)
  local o = { plugins = { "nancheck" } }
  for k, v in pairs(opts or {}) do o[k] = v end
  return H.kernel(bk, fn, o, sig)
end

local function array(ct, n, f)
  local a = ffi.new(ct .. "[?]", n)
  for i = 0, n - 1 do a[i] = f and f(i) or 0 end
  return a
end

-- The line of the call site plus d.
local function here(d) return debug.getinfo(2, "l").currentline + d end

-- A store of 0/0 into y[i + 1] for the items whose x[i] is 0.
local RATIO_LINE = here(4)
local function ratio(bk, ct, opts)
  return checked(bk, function(x, y)
    local i = gpu.global_id(0)
    y[i + 1] = x[i] / x[i]
  end, opts, { ct .. "[]", ct .. "[]" })
end

describe("nancheck plugin", function()
  setup(function() gpu.load_plugin("nancheck") end)

  for _, bk in ipairs(H.compilers) do
    describe("on " .. bk, function()
      for _, ct in ipairs({ "double", "float" }) do
        it(ct .. ": one item stores 0/0 -> its line, argument, item, index and count", function()
          local n = 16
          local k = ratio(bk, ct)
          local y = array(ct, n + 1)
          k:launch(n, array(ct, n, function(i) return i == 5 and 0 or i + 1 end), y)
          assert.is_true(y[6] ~= y[6])
          local r = k:report("nancheck")
          assert.is_table(r)
          assert.are.equal(1, r.count)
          assert.are.equal(RATIO_LINE, r.line)
          assert.are.equal(SOURCE, r.source)
          assert.are.equal(2, r.arg)
          assert.are.equal(5, r.item)
          assert.are.equal(6, r.index)
          assert.are.equal(ct, r.type)
          assert.are.equal("y", r.argname)
          assert.are.equal(string.format("%s:%d: NaN stored into argument 2 (y) at index 6 by work "
            .. "item 5 (1 NaN store in this launch)", SOURCE, RATIO_LINE), r.message)
        end)
      end

      it("several items: the count is every NaN store, the record one of them", function()
        local n = 64
        local k = ratio(bk, "double")
        local zero = { [3] = true, [17] = true, [40] = true, [41] = true }
        k:launch(n, array("double", n, function(i) return zero[i] and 0 or 1 end),
          array("double", n + 1))
        local r = k:report("nancheck")
        assert.are.equal(4, r.count)
        assert.is_true(zero[r.item])
        assert.are.equal(r.item + 1, r.index)
        assert.is_truthy(r.message:match("%(4 NaN stores in this launch%)$"))
      end)

      it("no NaN: nil, and each launch reports its own", function()
        local n = 8
        local k = ratio(bk, "float")
        k:launch(n, array("float", n, function(i) return i + 1 end), array("float", n + 1))
        assert.is_nil(k:report("nancheck"))
        k:launch(n, array("float", n), array("float", n + 1))
        assert.are.equal(n, k:report("nancheck").count)
        k:launch(n, array("float", n, function(i) return i + 1 end), array("float", n + 1))
        assert.is_nil(k:report("nancheck"))
      end)

      H.it_with("boundscheck", bk)("works with boundscheck on; the bounds checks still fire", function()
        local n = 4
        local k = ratio(bk, "double", { boundscheck = true })
        k:launch(n, array("double", n), array("double", n + 1))
        local r = k:report("nancheck")
        assert.are.equal(n, r.count)
        assert.are.equal(RATIO_LINE, r.line)
        assert.are.equal(r.item + 1, r.index)
        local ok, err = pcall(k.launch, k, n, array("double", n), array("double", n))
        assert.is_false(ok)
        assert.is_truthy(tostring(err):match(":" .. RATIO_LINE .. ": index 4 is out of bounds"), err)
      end)

      it("a store in a device function reports the device function's line", function()
        local put_line = here(1)
        local function put(a, i, v) a[i] = v end
        local n = 8
        local k = checked(bk, function(x, y)
          local i = gpu.global_id(0)
          put(y, i, math.sqrt(x[i]))
        end)
        k:launch(n, array("double", n, function(i) return i == 2 and -1 or i end), array("double", n))
        local r = k:report("nancheck")
        assert.are.equal(1, r.count)
        assert.are.equal(put_line, r.line)
        assert.are.equal(2, r.arg)
        assert.are.equal(2, r.item)
        assert.are.equal(2, r.index)
      end)

      it("an integer array cannot hold a NaN: no check at all", function()
        local sig = { "double[]", "int32_t[]" }
        local k = checked(bk, function(x, y)
          local i = gpu.global_id(0)
          y[i] = math.floor(x[i] / 2)
        end, nil, sig)
        local n = 4
        k:launch(n, array("double", n, function() return 0 / 0 end), array("int32_t", n))
        assert.is_nil(k:report("nancheck"))
        assert.is_nil(k:inspect_llvm(sig):match("cmpxchg"))
        assert.is_truthy(ratio(bk, "double"):inspect_llvm({ "double[]", "double[]" }):match("cmpxchg"))
      end)

      it("a cache hit in a new process still names the file", function()
        local dir = H.tmpdir()
        local script = dir .. "/nan.lua"
        local f = assert(io.open(script, "w"))
        f:write(string.format([[
local ffi, gpu = require("ffi"), require("gpujit")
gpu.use(%q)
gpu.load_plugin("nancheck")
local k = gpu.kernel(function(x, y)
  y[gpu.global_id(0)] = x[0] / x[0]
end, { plugins = { "nancheck" }, cache = true })
k:launch(2, ffi.new("double[1]"), ffi.new("double[2]"))
print(k:report("nancheck").message, gpu.cache.stats().hits)
]], bk))
        f:close()
        local outs = {}
        for run = 1, 2 do
          local p = io.popen(H.luajit_cmd({ GPUJIT_CACHE_DIR = dir .. "/cache" }) .. " " .. script .. " 2>&1")
          outs[run] = p:read("*a")
          p:close()
        end
        os.execute("rm -rf '" .. dir .. "'")
        local want = script:gsub("%p", "%%%0")
          .. ":5: NaN stored into argument 2 %(y%) at index %d by work item %d "
          .. "%(2 NaN stores in this launch%)\t"
        assert.is_truthy(outs[1]:match(want .. "0"), outs[1])
        assert.is_truthy(outs[2]:match(want .. "1"), outs[2])
      end)

      it("composes with count: each reports, count sees one global store per item", function()
        gpu.load_plugin("count")
        local n = 8
        local k = checked(bk, function(x, y)
          local i = gpu.global_id(0)
          y[i] = x[i] / x[i]
        end, { plugins = { "nancheck", "count" } })
        k:launch(n, array("double", n, function(i) return i == 4 and 0 or 1 end), array("double", n))
        assert.are.equal(4, k:report("nancheck").item)
        local c = k:report("count")
        assert.are.equal(n, c.stores.total)
        assert.are.equal(1, c.stores.max)
      end)
    end)
  end
end)
