-- The host's signal actions survive gpujit (docs/reliability.md, "Signals"):
-- opening a backend and building a program leave every action 1..31 as the
-- host set it.  PoCL sets LLVM up when it finds its devices and builds a
-- program, and LLVM installs its crash, interrupt and info handlers over
-- the process's (SIGINT was LuaJIT's Ctrl-C handler before); the opencl
-- runtime puts them back (runtimes/opencl.c, ocl_sigs_restore), all but
-- SIGFPE, PoCL's own.  Run in a child: a backend opens once per process.

local H = require("spec.helpers")

local CHILD = [==[
local ffi = require("ffi")
local bk = ...
pcall(ffi.cdef, [[
  struct gj_s_sigaction { void *handler; unsigned long mask[16]; int flags; void *restorer; };
  int gj_s_sigaction(int sig, const struct gj_s_sigaction *act, struct gj_s_sigaction *old)
    asm("sigaction");
]])
-- a host's own choices first: SIGINT and SIGTERM ignored, SIGUSR1 too
local ign = ffi.new("struct gj_s_sigaction")
ign.handler = ffi.cast("void *", 1)
for _, s in ipairs({ 2, 15, 10 }) do assert(ffi.C.gj_s_sigaction(s, ign, nil) == 0) end
local function snap()
  local t = {}
  for s = 1, 31 do
    local a = ffi.new("struct gj_s_sigaction")
    if ffi.C.gj_s_sigaction(s, nil, a) == 0 then t[s] = tostring(ffi.cast("uintptr_t", a.handler)) end
  end
  return t
end
local before = snap()
local gpu = require("gpujit")
local k = gpu.kernel(function(a) a[gpu.global_id()] = 2 end, { backend = bk, cache = false })
local o = ffi.new("double[4]")
k:launch(4, o)
assert(o[3] == 2)
local after = snap()
for s = 1, 31 do
  if s ~= 8 and before[s] ~= after[s] then print("changed|" .. s .. "|" .. before[s] .. "|" .. after[s]) end
end
print("done")
]==]

for _, bk in ipairs(H.compilers) do
  describe("signal actions [" .. bk .. "]", function()
    it("a launch (the backend opened, a program built) leaves the host's signal actions", function()
      H.need(bk)
      local path = os.tmpname()
      local f = assert(io.open(path, "w"))
      f:write(CHILD)
      f:close()
      local p = io.popen("timeout 120 env " .. H.luajit_cmd({}) .. " " .. path .. " " .. bk .. " 2>&1")
      local text = p:read("*a")
      p:close()
      os.remove(path)
      assert.truthy(text:find("done", 1, true), text)
      assert.falsy(text:find("changed|", 1, true), text)
    end)
  end)
end
