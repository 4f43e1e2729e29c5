-- The shipped `count` plugin (plugins/count/count.c, docs/plugins.md):
-- per-work-item counts of instructions, global loads and stores, flops and
-- branches, checked against counts known from the kernels' source.

local H = require("spec.helpers")
local ffi = require("ffi")
local gpu = H.gpu

local CATS = { "instructions", "loads", "stores", "flops", "branches" }

local function counted(bk, fn, opts, sig)
  local o = { plugins = { "count" } }
  for k, v in pairs(opts or {}) do o[k] = v end
  return H.kernel(bk, fn, o, sig)
end

local function floats(n, f)
  local a = ffi.new("float[?]", n)
  for i = 0, n - 1 do a[i] = f and f(i) or 0 end
  return a
end

-- The counts of every item of report r, as a list (0-based items at i + 1).
local function items(r)
  local out = {}
  for i = 0, r.items - 1 do out[i + 1] = r.item(i) end
  return out
end

-- Every category of report r is the same for every item and equals want.
local function uniform(r, want)
  for _, c in ipairs(CATS) do
    assert.are.equal(r[c].min, r[c].max, c .. " differs between items")
    assert.are.equal(r[c].min, r[c].mean, c)
    assert.are.equal(r[c].min * r.items, r[c].total, c)
    if want[c] then assert.are.equal(want[c], r[c].min, c) end
  end
end

local function saxpy(bk)
  return counted(bk, function(a, x, y, n)
    local i = gpu.global_id(0)
    if i < n then y[i] = a * x[i] + y[i] end
  end, nil, { "float", "float[]", "float[]", "int32_t" })
end

describe("count plugin", function()
  setup(function() gpu.load_plugin("count") end)

  it("is loaded by name from plugins/ beside the core", function()
    local found
    for _, p in ipairs(gpu.plugins()) do
      if p.name == "count" then found = p end
    end
    assert.is_truthy(found)
    assert.are.equal("c", found.kind)
    assert.is_truthy(found.path:match("plugins/count%.so$"))
  end)

  it("counts the same on every backend for a kernel without barriers", function()
    local first, from
    for _, bk in ipairs(H.compilers) do
      local k = saxpy(bk)
      k:launch(50, 2, floats(50), floats(50), 50)
      local r = k:report("count")
      local got = {}
      for _, c in ipairs(CATS) do got[c] = r[c].total end
      if first then assert.are.same(first, got, from .. " vs " .. bk) end
      first, from = first or got, from or bk
    end
  end)

  for _, bk in ipairs(H.compilers) do
    describe("on " .. bk, function()
      it("saxpy: 2 loads, 1 store, 2 flops per item, every item the same", function()
        local n = 100
        local k = saxpy(bk)
        k:launch(n, 2, floats(n, function(i) return i end), floats(n), n)
        local r = k:report("count")
        assert.are.equal(n, r.items)
        uniform(r, { loads = 2, stores = 1, flops = 2, branches = 1 })
        assert.is_true(r.instructions.min > 10)
        local it5 = r.item(5)
        for _, c in ipairs(CATS) do assert.are.equal(r[c].min, it5[c], c) end
      end)

      it("shows its atomics in k:inspect_llvm", function()
        local ir = saxpy(bk):inspect_llvm({ "float", "float[]", "float[]", "int32_t" })
        local _, natomic = ir:gsub("atomicrmw add", "")
        assert.is_true(natomic >= 5, "atomics in\n" .. ir)
      end)

      it("a loop of i iterations: loads and flops i + c, instructions affine in i", function()
        local n = 40
        local k = counted(bk, function(x, y)
          local i = gpu.global_id(0)
          local s = 0.0
          for j = 0, i - 1 do s = s + x[j] end
          y[i] = s
        end)
        k:launch(n, floats(n, function(i) return i end), floats(n))
        local it = items(k:report("count"))
        local slope = it[2].instructions - it[1].instructions
        assert.is_true(slope > 0)
        for i = 0, n - 1 do
          local c = it[i + 1]
          assert.are.equal(i + it[1].loads, c.loads, "loads of item " .. i)
          assert.are.equal(i + it[1].flops, c.flops, "flops of item " .. i)
          assert.are.equal(1, c.stores, "stores of item " .. i)
          assert.are.equal(it[1].instructions + slope * i, c.instructions, "item " .. i)
        end
        assert.are.equal(0, it[1].loads)
        assert.are.equal(0, it[1].flops)
      end)

      it("a branch taken by half the items: two instruction counts", function()
        local n = 64
        local k = counted(bk, function(x, y)
          local i = gpu.global_id(0)
          if i % 2 == 0 then
            y[i] = x[i] * 3 + 1
          else
            y[i] = 0
          end
        end)
        k:launch(n, floats(n), floats(n))
        local r = k:report("count")
        local even, odd = r.item(0), r.item(1)
        assert.are_not.equal(even.instructions, odd.instructions)
        assert.are.same({ 1, 1, 2 }, { even.loads, even.stores, even.flops })
        assert.are.same({ 0, 1, 0 }, { odd.loads, odd.stores, odd.flops })
        for i = 0, n - 1 do
          local want = i % 2 == 0 and even or odd
          assert.are.same(want, r.item(i), "item " .. i)
        end
        assert.are.equal(math.max(even.instructions, odd.instructions), r.instructions.max)
        assert.are.equal(math.min(even.instructions, odd.instructions), r.instructions.min)
        assert.are.equal((even.instructions + odd.instructions) * n / 2, r.instructions.total)
      end)

      it("counts the loads and flops of a device function", function()
        local function around(a, i) return a[i] * 0.5 + a[i + 1] end
        local n = 32
        local k = counted(bk, function(x, y)
          local i = gpu.global_id(0)
          y[i] = around(x, i)
        end)
        k:launch(n, floats(n + 1), floats(n))
        uniform(k:report("count"), { loads = 2, stores = 1, flops = 2 })
      end)

      H.it_with("workgroups", bk)("barrier and shared memory: the barrier-free version's counts",
        function()
          local n, g = 64, 16
          local plain = counted(bk, function(x, y)
            local i = gpu.global_id(0)
            y[i] = x[i] + 1
          end)
          local shared = counted(bk, function(x, y)
            local i = gpu.global_id(0)
            local l = gpu.local_id(0)
            local s = gpu.shared("float", 16)
            s[l] = x[i]
            gpu.barrier()
            y[i] = s[15 - l] + 1
          end)
          plain:launch({ global = n, group = g }, floats(n), floats(n))
          shared:launch({ global = n, group = g }, floats(n), floats(n))
          local rp, rs = plain:report("count"), shared:report("count")
          uniform(rp, { loads = 1, stores = 1, flops = 1 })
          -- shared memory is not global: its load and store are not counted
          uniform(rs, { loads = 1, stores = 1, flops = 1 })
          assert.are.equal(n, rs.items)
        end)

      it("each launch reports its own counts (buffers zeroed)", function()
        local k = saxpy(bk)
        k:launch(100, 2, floats(100), floats(100), 100)
        local r1 = k:report("count")
        k:launch(100, 2, floats(100), floats(100), 100)
        local r2 = k:report("count")
        assert.are.equal(r1.instructions.total, r2.instructions.total)
        assert.are.equal(200, r2.loads.total)
        k:launch(10, 2, floats(10), floats(10), 10)
        local r3 = k:report("count")
        assert.are.equal(10, r3.items)
        assert.are.equal(20, r3.loads.total)
        -- the first report is a snapshot: later launches leave it alone
        assert.are.equal(200, r1.loads.total)
        assert.are.equal(2, r1.item(99).loads)
      end)

      it("2D launch: items is the product, item(w) is linear id gid0 + gs0 * gid1", function()
        local w, h = 8, 5
        local k = counted(bk, function(x, y, width)
          local gx, gy = gpu.global_id(0), gpu.global_id(1)
          local s = 0.0
          for _ = 1, gy do s = s + x[gx] end
          y[gx + width * gy] = s
        end, nil, { "float[]", "float[]", "int32_t" })
        k:launch({ global = { w, h } }, floats(w), floats(w * h), w)
        local r = k:report("count")
        assert.are.equal(w * h, r.items)
        for id = 0, w * h - 1 do
          local gy = math.floor(id / w)
          assert.are.equal(gy, r.item(id).loads, "item " .. id)
          assert.are.equal(gy, r.item(id).flops, "item " .. id)
        end
      end)

      it("item(i) outside the launch is a clear error", function()
        local k = saxpy(bk)
        k:launch(4, 2, floats(4), floats(4), 4)
        local r = k:report("count")
        for _, bad in ipairs({ 4, -1, 1.5 }) do
          local ok, err = pcall(r.item, bad)
          assert.is_false(ok)
          assert.is_truthy(tostring(err):match("count: item .* is not a work item of the launch"))
        end
      end)

      it("a kernel that does not name the plugin is not instrumented", function()
        local k = H.kernel(bk, function(x) x[gpu.global_id(0)] = 1 end)
        k:launch(4, floats(4))
        assert.is_nil(k:report("count"))
        assert.is_nil(k:inspect_llvm({ "float[]" }):match("atomicrmw"))
      end)
    end)
  end
end)
