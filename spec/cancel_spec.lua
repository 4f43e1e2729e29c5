-- Cancellation that bounds any launch (docs/reliability.md, "Runaway kernels"):
-- on cpu a launch is cut into chunks of whole groups (about 4096 work items),
-- on opencl into NDRanges of whole groups with a global offset (about 2^20),
-- and no chunk starts after a timeout or a SIGINT.  So a huge launch of work
-- items without a loop (which no back-edge check can stop) ends with the
-- timeout's error, and Ctrl-C stops a long launch of a kernel compiled
-- without `timeout` ("launch interrupted (Ctrl-C)"), after which the kernel
-- and the previous SIGINT action are as before.
--
-- Each runs in a child luajit under `timeout 120`: a launch that is not
-- bounded shows as a missing line, not as a hung suite.  No time is
-- measured: that the child's launch returned at all is the assertion.

local H = require("spec.helpers")
local gpu = require("gpujit")

local CHILD = [==[
  local gpu = require("gpujit")
  local ffi = require("ffi")
  local bk, wide = ...
  local function say(...)
    local t = {}
    for i = 1, select("#", ...) do t[i] = tostring((select(i, ...))) end
    io.write((table.concat(t, "|"):gsub("\n", " ")), "\n")
    io.stdout:flush()
  end
  pcall(ffi.cdef, [[
    struct gj_t_sigaction { void *handler; unsigned long mask[16]; int flags; void *restorer; };
    int gj_t_sigaction(int sig, const struct gj_t_sigaction *act, struct gj_t_sigaction *old)
      asm("sigaction");
    int gj_t_getpid(void) asm("getpid");
  ]])
  -- SIGINT ignored outside the launches: a SIGINT that comes before or after one is lost
  local set, before, after = ffi.new("struct gj_t_sigaction"), ffi.new("struct gj_t_sigaction"),
    ffi.new("struct gj_t_sigaction")
  set.handler = ffi.cast("void *", 1)
  assert(ffi.C.gj_t_sigaction(2, set, nil) == 0)
  assert(ffi.C.gj_t_sigaction(2, nil, before) == 0)

  local o = ffi.new("double[1]")
  local f = function(a) local i = gpu.global_id(); if i == 0 then a[0] = a[0] + 1 end end

  -- a timeout: `wide` work items, none with a loop
  local kt = gpu.kernel(f, { backend = bk, timeout = 1, cache = false, name = "wide" })
  kt:launch(8, o)
  say("timeout", pcall(kt.launch, kt, wide, o))
  say("timeout again", pcall(kt.launch, kt, 4096, o), o[0])

  -- Ctrl-C without a timeout: SIGINT every 0.2 s while the flag file is there
  local kp = gpu.kernel(f, { backend = bk, timeout = false, cache = false, name = "plain" })
  kp:launch(8, o)
  local flag = os.tmpname()
  os.execute("(while [ -e " .. flag .. " ]; do sleep 0.2; kill -INT " .. ffi.C.gj_t_getpid()
    .. "; done; touch " .. flag .. ".done) >/dev/null 2>&1 &")
  say("sigint", pcall(kp.launch, kp, wide, o))
  os.remove(flag)
  local done = io.open(flag .. ".done")
  while not done do
    os.execute("sleep 0.05")
    done = io.open(flag .. ".done")
  end
  done:close()
  os.remove(flag .. ".done")
  assert(ffi.C.gj_t_sigaction(2, nil, after) == 0)
  say("restored", before.handler == after.handler)
  o[0] = 0
  say("sigint again", pcall(kp.launch, kp, 100000, o), o[0])
  say("end")
]==]

local function run(bk, wide)
  local path = os.tmpname()
  local f = assert(io.open(path, "w"))
  f:write("local function main(...)\n", CHILD, "\nend\nmain(", string.format("%q", bk), ", ", wide, ")\n")
  f:close()
  local p = io.popen("timeout 120 env " .. H.luajit_cmd({ GPUJIT_TIMEOUT = "" }) .. " " .. path .. " 2>&1")
  local text = p:read("*a")
  p:close()
  os.remove(path)
  local lines = { text = text }
  for l in text:gmatch("[^\n]+") do
    local fields = {}
    for x in (l .. "|"):gmatch("([^|]*)|") do fields[#fields + 1] = x end
    lines[fields[1]] = fields
  end
  return lines
end

-- cpu cuts launches into chunks of ~4096 work items, opencl into NDRanges of
-- ~2^20 (global offsets; sim does not cut: docs/reliability.md).  opencl's
-- launch is 2^36 work items: PoCL counts a launch's groups in 32 bits, and
-- gpujit refuses more than 2^31 - 1 groups there (limits_spec); 2^36 still
-- runs for minutes on PoCL, past the child's `timeout 120`, unless stopped.
local WIDE = { cpu = 2^40, opencl = 2^36 }

for _, bk in ipairs(H.backends) do
  if WIDE[bk] then describe("cancellation bounds a launch of any size [" .. bk .. "]", function()
    local r
    local function line(tag)
      H.need(bk)
      r = r or run(bk, WIDE[bk])
      local l = r[tag]
      if not l then error("no '" .. tag .. "' line from the child; its output:\n" .. r.text, 2) end
      return l
    end

    it("a timeout ends a launch of " .. WIDE[bk] .. " work items without a loop, and the kernel works after",
      function()
        local l = line("timeout")
        assert.are.equal("false", l[2], l[3])
        assert.is_truthy(l[3]:match("^kernel 'wide' timed out after [%d%.e%-]+ s %(timeout = 1%)$"), l[3])
        assert.are.same({ "timeout again", "true" }, { line("timeout again")[1], line("timeout again")[2] })
      end)

    it("Ctrl-C ends a long launch of a kernel without timeout; the SIGINT action is restored", function()
      local l = line("sigint")
      assert.are.equal("false", l[2], l[3])
      assert.is_truthy(l[3]:find("launch interrupted (Ctrl-C)", 1, true), l[3])
      assert.is_truthy(l[3]:find("(in kernel plain)", 1, true), l[3])
      assert.are.same({ "restored", "true" }, line("restored"))
      assert.are.same({ "sigint again", "true", "1" }, line("sigint again"))
      line("end")
    end)
  end) end
end

-- A cut launch looks whole to its kernel: on opencl the chunks are NDRanges
-- with a global offset, and get_group_id / get_num_groups would count the
-- chunk (targets/spir.c IR_GROUPS).  1000 x 1101 work items in groups of
-- 16 x 4 (both sizes not multiples of the group: the guarded entry; the
-- last chunk is a partial one) against the formulas, every work item.
local function ids(out, w)
  local x, y = gpu.global_id(0), gpu.global_id(1)
  local b = (y * w + x) * 8
  out[b] = x
  out[b + 1] = y
  out[b + 2] = gpu.group_id(0)
  out[b + 3] = gpu.group_id(1)
  out[b + 4] = gpu.num_groups(0)
  out[b + 5] = gpu.num_groups(1)
  out[b + 6] = gpu.global_size(0)
  out[b + 7] = gpu.global_size(1)
end

for _, bk in ipairs(H.backends) do
  if WIDE[bk] then describe("a launch cut into chunks [" .. bk .. "]", function()
    it("gives every work item the ids, groups and sizes of the whole launch", function()
      local ffi = require("ffi")
      local W, Hh, GX, GY = 1000, 1101, 16, 4
      assert.is_true(W * Hh > 2^20)
      local out = ffi.new("int32_t[?]", W * Hh * 8)
      H.kernel(bk, ids, { name = "ids" }):launch({ global = { W, Hh }, group = { GX, GY } }, out, W)
      local bad, first = 0, nil
      local nx, ny = math.ceil(W / GX), math.ceil(Hh / GY)
      for y = 0, Hh - 1 do
        for x = 0, W - 1 do
          local b = (y * W + x) * 8
          local e = { x, y, math.floor(x / GX), math.floor(y / GY), nx, ny, W, Hh }
          for j = 0, 7 do
            if out[b + j] ~= e[j + 1] then
              bad = bad + 1
              first = first or string.format("item (%d, %d) field %d: %d, not %d", x, y, j,
                out[b + j], e[j + 1])
            end
          end
        end
      end
      assert.are.equal(0, bad, first)
    end)
  end) end
end
