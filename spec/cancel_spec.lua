-- Cancellation that bounds any launch (docs/reliability.md, "Runaway kernels"):
-- on cpu a launch is cut into chunks of whole groups (about 4096 work items),
-- and no chunk starts after a timeout or a SIGINT.  So a launch of 2^40 work
-- items without a loop (which no back-edge check can stop) ends with the
-- timeout's error, and Ctrl-C stops a long launch of a kernel compiled
-- without `timeout` ("launch interrupted (Ctrl-C)"), after which the kernel
-- and the previous SIGINT action are as before.
--
-- Each runs in a child luajit under `timeout 120`: a launch that is not
-- bounded shows as a missing line, not as a hung suite.  No time is
-- measured: that the child's launch returned at all is the assertion.

local H = require("spec.helpers")

local CHILD = [==[
  local gpu = require("gpujit")
  local ffi = require("ffi")
  local bk = ...
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

  -- a timeout: 2^40 work items, none with a loop
  local kt = gpu.kernel(f, { backend = bk, timeout = 1, cache = false, name = "wide" })
  kt:launch(8, o)
  say("timeout", pcall(kt.launch, kt, 2^40, o))
  say("timeout again", pcall(kt.launch, kt, 4096, o), o[0])

  -- Ctrl-C without a timeout: SIGINT every 0.2 s while the flag file is there
  local kp = gpu.kernel(f, { backend = bk, timeout = false, cache = false, name = "plain" })
  kp:launch(8, o)
  local flag = os.tmpname()
  os.execute("(while [ -e " .. flag .. " ]; do sleep 0.2; kill -INT " .. ffi.C.gj_t_getpid()
    .. "; done; touch " .. flag .. ".done) >/dev/null 2>&1 &")
  say("sigint", pcall(kp.launch, kp, 2^40, o))
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

local function run(bk)
  local path = os.tmpname()
  local f = assert(io.open(path, "w"))
  f:write("local function main(...)\n", CHILD, "\nend\nmain(", string.format("%q", bk), ")\n")
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

-- cpu cuts launches into chunks; opencl (one NDRange, PoCL) and sim do not
-- (docs/reliability.md says what they do).
describe("cancellation bounds a launch of any size [cpu]", function()
  local r
  local function line(tag)
    H.need("cpu")
    r = r or run("cpu")
    local l = r[tag]
    if not l then error("no '" .. tag .. "' line from the child; its output:\n" .. r.text, 2) end
    return l
  end

  it("a timeout ends a launch of 2^40 work items without a loop, and the kernel works after", function()
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
end)
