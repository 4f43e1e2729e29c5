-- fork() after use (docs/reliability.md, "fork()"): a child has none of its
-- parent's threads.  gpujit makes its own again on first use in the child
-- (the cpu pool, the compile worker, the cpu streams' workers), so cpu and
-- sim work there; PoCL's threads cannot be made again, so every opencl call
-- in the child of a process that opened the platform is a clear Lua error.
-- Nothing hangs: the parent luajit forks, the child reports, the parent
-- waits, all under `timeout 120` (a hang is a missing line, not a hung suite).

local H = require("spec.helpers")

local CHILD = [==[
  local gpu = require("gpujit")
  local ffi = require("ffi")
  local backends = ...
  pcall(ffi.cdef, [[
    int gj_t_fork(void) asm("fork");
    int gj_t_waitpid(int pid, int *status, int options) asm("waitpid");
  ]])
  local function say(...)
    local t = {}
    for i = 1, select("#", ...) do t[i] = tostring((select(i, ...))) end
    io.write((table.concat(t, "|"):gsub("\n", " ")), "\n")
    io.stdout:flush()
  end
  local N = 100000
  local a = ffi.new("double[?]", N)
  local f = function(x, n) local i = gpu.global_id(); if i < n then x[i] = i * 2 end end
  local ks, streams = {}, {}
  -- the parent uses each backend: launches, a stream, a background compile
  for bk in backends:gmatch("[^,]+") do
    ks[bk] = gpu.kernel(f, { backend = bk, cache = false, name = "k_" .. bk })
    ks[bk]:launch(N, a, N)
    streams[bk] = gpu.stream(bk)
    ks[bk]:launch({ global = N, stream = streams[bk] }, a, N)
    streams[bk]:synchronize()
    if bk ~= "sim" then
      gpu.kernel(function(b) b[gpu.global_id()] = 7 end, { backend = bk, cache = false })
        :compile({ "double[]" }, { async = true }):wait()
    end
  end
  local pid = ffi.C.gj_t_fork()
  if pid == 0 then
    for bk in backends:gmatch("[^,]+") do
      local k = ks[bk]
      for i = 0, N - 1 do a[i] = 0 end
      say(bk .. " launch", pcall(k.launch, k, N, a, N))
      say(bk .. " result", a[N - 1])
      local k2 = gpu.kernel(function(b) b[gpu.global_id()] = 9 end,
        { backend = bk, cache = false, name = "bg_" .. bk })
      say(bk .. " compile", pcall(function()
        k2:compile({ "double[]" }, { async = bk ~= "sim" }):wait()
        k2:launch(8, a)
        return a[7]
      end))
      say(bk .. " old stream", pcall(function()
        k:launch({ global = N, stream = streams[bk] }, a, N)
        streams[bk]:synchronize()
        return a[N - 1]
      end))
      say(bk .. " new stream", pcall(function()
        local s2 = gpu.stream(bk)
        k:launch({ global = 10, stream = s2 }, a, 10)
        s2:synchronize()
        return a[9]
      end))
    end
    say("child end")
    os.exit(0, true)        -- closes the state: finalizers in the child
  end
  local st = ffi.new("int[1]")
  say("waited", ffi.C.gj_t_waitpid(pid, st, 0) == pid, st[0])
  for bk in backends:gmatch("[^,]+") do
    local k = ks[bk]
    say(bk .. " parent after", pcall(k.launch, k, N, a, N), a[N - 1])
  end
]==]

local results
local function line(tag)
  results = results or H.child_lines(nil, CHILD, table.concat(H.backends, ","), 120)
  return results:line(tag)
end

local FORKED = "opencl: this process is a fork() child of the process that opened the OpenCL "
  .. "platform, and PoCL's threads do not survive fork()"

describe("fork() after use", function()
  for _, bk in ipairs(H.backends) do
    if bk == "opencl" then
      it("opencl in the child: a clear error on each use, never a hang; the parent goes on", function()
        H.need(bk)
        for _, tag in ipairs({ "launch", "compile", "old stream", "new stream" }) do
          local l = line("opencl " .. tag)
          assert.are.equal("false", l[2], tag .. ": " .. table.concat(l, "|"))
          assert.is_truthy(l[3]:find(FORKED, 1, true), tag .. ": " .. l[3])
        end
        line("child end")
        assert.are.same({ "waited", "true", "0" }, line("waited"))
        assert.are.same({ "opencl parent after", "true", "199998" }, line("opencl parent after"))
      end)
    else
      it(bk .. " in the child: launches, background compiles and streams work", function()
        H.need(bk)
        assert.are.same({ bk .. " launch", "true" }, line(bk .. " launch"))
        assert.are.same({ bk .. " result", "199998" }, line(bk .. " result"))
        assert.are.same({ bk .. " compile", "true", "9" }, line(bk .. " compile"))
        assert.are.same({ bk .. " old stream", "true", "199998" }, line(bk .. " old stream"))
        assert.are.same({ bk .. " new stream", "true", "18" }, line(bk .. " new stream"))
        line("child end")
        assert.are.same({ "waited", "true", "0" }, line("waited"))
        assert.are.same({ bk .. " parent after", "true", "199998" }, line(bk .. " parent after"))
      end)
    end
  end
end)
