-- Every work item of a group must reach the same gpu.barrier() calls.  A
-- barrier in control flow that depends on the work item (gpu.global_id,
-- gpu.local_id, atomics, loads at such an index, device functions returning
-- them) is a compile error at the barrier's line that names the line of the
-- condition (docs/kernels.md, "Barriers and uniform control flow").
-- Kernels whose barriers are uniform compile and compute what plain Lua
-- computes.

-- luacheck: ignore 211 212 311 (kernels written only to fail to compile)

local H = require("spec.helpers")
local ffi = require("ffi")
local bit = require("bit")
local gpu = H.gpu

local FILE = H.this_file()
local CFG = { global = 16, group = 8 }

-- Device functions.
local function sync()
  gpu.barrier()
end
local function sync_if(c)
  if c then --@sync_if-cond
    gpu.barrier() --@sync_if-barrier
  end
end
local function lid_plus(k) return gpu.local_id(0) + k end
local function twice(x) return 2 * x end
local function half_sync()
  if gpu.local_id(0) < 4 then --@half-cond
    gpu.barrier() --@half-barrier
  end
end
local function sync_both(x)   -- the barrier is outside the branch
  local y = 0
  if x > 2 then y = 1 end
  gpu.barrier()
  return y
end

-- Compile kernel fn (by launching it) and expect the error at the line of
-- `marker` whose message names the condition's line (at `cond`).
local function expect_error(bk, name, fn, marker, cond, words, launch)
  local line, cline = H.line_of(marker), H.line_of(cond)
  local k = H.kernel(bk, fn, { name = name })
  launch = launch or function(kk)
    kk:launch(CFG, ffi.new("int32_t[16]"), ffi.new("int32_t[16]"), 4)
  end
  local msg = H.error_of(launch, k)
  local what = H.check_compile_error(msg, FILE, line, name, words or { "barrier" })
  assert.is_truthy(what:find("line " .. cline, 1, true),
    "the message names line " .. cline .. ":\n  " .. msg)
  assert.is_truthy(what:find("every work item of a group", 1, true), msg)
  H.sanity(bk)
  return msg
end

if #H.compilers == 0 then
  describe("barriers in non-uniform control flow", function()
    pending("need a compiling backend (GPUJIT_SPEC_BACKENDS lists only sim)")
  end)
end

for _, bk in ipairs(H.compilers) do
  local it_wg = H.it_with("workgroups", bk)
  describe("barriers in non-uniform control flow [" .. bk .. "]", function()
    it_wg("under a branch on gpu.local_id", function()
      expect_error(bk, "u_lid", function(o, x, n)
        local l = gpu.local_id(0)
        if l < 4 then --@lid-cond
          gpu.barrier() --@lid-barrier
        end
        o[gpu.global_id(0)] = l
      end, "--@lid-barrier", "--@lid-cond")
    end)

    it_wg("under a branch on gpu.global_id, in an else", function()
      expect_error(bk, "u_gid", function(o, x, n)
        local i = gpu.global_id(0)
        if i >= n then --@gid-cond
          o[i] = 0
        else
          gpu.barrier() --@gid-barrier
          o[i] = 1
        end
      end, "--@gid-barrier", "--@gid-cond")
    end)

    it_wg("in a while loop whose trip count depends on the work item", function()
      expect_error(bk, "u_while", function(o, x, n)
        local j = 0
        while j < gpu.local_id(0) do --@while-cond
          gpu.barrier() --@while-barrier
          j = j + 1
        end
        o[gpu.global_id(0)] = j
      end, "--@while-barrier", "--@while-cond")
    end)

    it_wg("in a for loop with a varying limit", function()
      expect_error(bk, "u_for", function(o, x, n)
        local s = 0
        for j = 1, gpu.local_id(0) do --@for-cond
          s = s + j
          gpu.barrier() --@for-barrier
        end
        o[gpu.global_id(0)] = s
      end, "--@for-barrier", "--@for-cond")
    end)

    it_wg("in a repeat loop with a varying until", function()
      expect_error(bk, "u_repeat", function(o, x, n)
        local j = 0
        repeat
          gpu.barrier() --@repeat-barrier
          j = j + 1
        until j > gpu.local_id(0) --@repeat-cond
        o[gpu.global_id(0)] = j
      end, "--@repeat-barrier", "--@repeat-cond")
    end)

    it_wg("after a varying break in the same loop", function()
      expect_error(bk, "u_break", function(o, x, n)
        local s = 0
        for j = 0, n - 1 do
          if x[gpu.global_id(0)] > j then break end --@break-cond
          s = s + j
          gpu.barrier() --@break-barrier
        end
        o[gpu.global_id(0)] = s
      end, "--@break-barrier", "--@break-cond")
    end)

    it_wg("after an early return on a varying condition", function()
      expect_error(bk, "u_return", function(o, x, n)
        local i = gpu.global_id(0)
        if x[i] == 0 then return end --@return-cond
        o[i] = 1
        gpu.barrier() --@return-barrier
        o[i] = 2
      end, "--@return-barrier", "--@return-cond")
    end)

    it_wg("under a condition on an atomic's result", function()
      expect_error(bk, "u_atomic", function(o, x, n)
        local t = gpu.atomic_add(x, 0, 1)
        if t < n then --@atomic-cond
          gpu.barrier() --@atomic-barrier
        end
      end, "--@atomic-barrier", "--@atomic-cond")
    end)

    it_wg("under a condition on a load at a varying index", function()
      expect_error(bk, "u_load", function(o, x, n)
        local v = x[gpu.local_id(0) + 1]
        if v > 0 then --@load-cond
          gpu.barrier() --@load-barrier
        end
      end, "--@load-barrier", "--@load-cond")
    end)

    it_wg("under a condition on a device function's varying result", function()
      expect_error(bk, "u_devres", function(o, x, n)
        if lid_plus(1) > n then --@devres-cond
          gpu.barrier() --@devres-barrier
        end
      end, "--@devres-barrier", "--@devres-cond")
      expect_error(bk, "u_devarg", function(o, x, n)
        if twice(gpu.global_id(0)) > n then --@devarg-cond
          gpu.barrier() --@devarg-barrier
        end
      end, "--@devarg-barrier", "--@devarg-cond")
    end)

    it_wg("under a condition on a value assigned under a varying branch", function()
      expect_error(bk, "u_ctrl", function(o, x, n)
        local f = 0
        if gpu.local_id(0) < 2 then f = 1 end
        if f == 1 then --@ctrl-cond
          gpu.barrier() --@ctrl-barrier
        end
      end, "--@ctrl-barrier", "--@ctrl-cond")
      expect_error(bk, "u_bool", function(o, x, n)
        local c = gpu.local_id(0) < 2
        if c then --@bool-cond
          gpu.barrier() --@bool-barrier
        end
      end, "--@bool-barrier", "--@bool-cond")
    end)

    it_wg("a device function with a barrier, called under a varying branch", function()
      local msg = expect_error(bk, "u_devcall", function(o, x, n)
        if gpu.local_id(0) == 0 then --@devcall-cond
          sync() --@devcall-barrier
        end
      end, "--@devcall-barrier", "--@devcall-cond")
      assert.is_truthy(msg:find("'sync'", 1, true), msg)
    end)

    it_wg("a device function whose barrier depends on a varying argument", function()
      local msg = expect_error(bk, "u_devparam", function(o, x, n)
        sync_if(gpu.local_id(0) < 2) --@devparam-call
      end, "--@devparam-call", "--@sync_if-cond")
      assert.is_truthy(msg:find("'sync_if'", 1, true), msg)
      assert.is_truthy(msg:find("line " .. H.line_of("--@sync_if-barrier"), 1, true), msg)
    end)

    it_wg("a device function whose own barrier depends on gpu.local_id", function()
      expect_error(bk, "u_devown", function(o, x, n)
        half_sync()
      end, "--@half-barrier", "--@half-cond")
    end)
  end)
end

-- Kernels that must compile and run: their barriers are uniform.
for _, bk in ipairs(H.backends) do
  local it_wg = H.it_with("workgroups", bk)
  describe("barriers in uniform control flow [" .. bk .. "]", function()
    it_wg("a tree reduction: while step > 0 do if lid < step ... barrier", function()
      local n, g = 64, 16
      local x = H.array("int32_t", function(i) return (i * 7) % 13 - 5 end, n)
      local out = ffi.new("int32_t[?]", n / g)
      local k = H.kernel(bk, function(o, a)
        local sh = gpu.shared("int32_t", 16)
        local l = gpu.local_id(0)
        sh[l] = a[gpu.global_id(0)]
        gpu.barrier()
        local step = bit.rshift(gpu.group_size(0), 1)
        while step > 0 do
          if l < step then sh[l] = sh[l] + sh[l + step] end
          gpu.barrier()
          step = bit.rshift(step, 1)
        end
        if l == 0 then o[gpu.group_id(0)] = sh[0] end
      end, { name = "u_reduce" })
      k:launch({ global = n, group = g }, out, x)
      H.check("int32_t", out, function(j)
        local s = 0
        for i = j * g, j * g + g - 1 do s = s + x[i] end
        return s
      end, n / g)
    end)

    it_wg("a branch on gpu.group_id, a barrier after a varying if, a uniform for", function()
      local n, g = 32, 8
      local x = H.array("double", function(i) return i * 0.5 end, n)
      local out = ffi.new("double[?]", n)
      local k = H.kernel(bk, function(o, a, rounds)
        local sh = gpu.shared("double", 8)
        local l, i = gpu.local_id(0), gpu.global_id(0)
        if gpu.group_id(0) == 0 then gpu.barrier() end
        local v = a[i]
        if l < 4 then v = v + 1 end
        for r = 1, rounds do
          sh[l] = v
          gpu.barrier()
          v = v + sh[(l + r) % gpu.group_size(0)]
          gpu.barrier()
        end
        o[i] = v
      end, { name = "u_mixed" })
      k:launch({ global = n, group = g }, out, x, 3)
      local want = {}
      for grp = 0, n / g - 1 do
        local v = {}
        for l = 0, g - 1 do
          v[l] = x[grp * g + l] + (l < 4 and 1 or 0)
        end
        for r = 1, 3 do
          local sh = {}
          for l = 0, g - 1 do sh[l] = v[l] end
          for l = 0, g - 1 do v[l] = v[l] + sh[(l + r) % g] end
        end
        for l = 0, g - 1 do want[grp * g + l + 1] = v[l] end
      end
      H.check("double", out, want, n)
    end)

    it_wg("uniform loads, uniform device calls, a varying break before a barrier outside the loop", function()
      local n, g = 16, 8
      local x = H.array("int32_t", function(i) return i % 5 end, n)
      local out = ffi.new("int32_t[?]", n)
      local k = H.kernel(bk, function(o, a, lim)
        local sh = gpu.shared("int32_t", 8)
        local l, i = gpu.local_id(0), gpu.global_id(0)
        if l == 0 then sh[0] = 3 end
        gpu.barrier()
        if sh[0] > 0 then gpu.barrier() end       -- a uniform index: uniform
        sync_if(gpu.group_id(0) >= 0)              -- a uniform argument
        local s = 0
        for j = 0, twice(lim) do                   -- a uniform bound
          if a[i] < j then break end               -- varying, no barrier inside
          s = s + j
        end
        local y = sync_both(l)                     -- barrier outside its branch
        gpu.barrier()
        o[i] = s * 10 + y
        if l > 2 then return end                   -- after the last barrier
        o[i] = o[i] + 100
      end, { name = "u_misc" })
      k:launch({ global = n, group = g }, out, x, 3)
      H.check("int32_t", out, function(i)
        local l, s = i % g, 0
        for j = 0, 6 do
          if x[i] < j then break end
          s = s + j
        end
        return s * 10 + (l > 2 and 1 or 0) + (l <= 2 and 100 or 0)
      end, n)
    end)
  end)
end
