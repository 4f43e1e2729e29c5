-- FFI hygiene (docs/api.md, "FFI names"): gpujit claims no common C name in
-- ffi.C.  Its own uses of libc (the clock, calloc/free) are asm-labelled
-- private names, so a program that declares the standard forms of
-- clock_gettime, nanosleep, usleep, malloc, calloc, realloc, free, memcpy,
-- memset, getenv, printf and the variable environ, before or after require("gpujit"), calls them
-- with their standard types, and gpujit's own users of those functions
-- (GPUJIT_VERBOSE's notes, gpu.on_compile, sim's s:record(), a launch with a
-- timeout) keep working.
--
-- Each order runs in a child luajit (under `timeout`), so that "before"
-- really comes before the module's first load.

local H = require("spec.helpers")

-- The user's program, its declarations placed by `order`.
local USER_DECLS = [==[
  local ffi = require("ffi")
  ffi.cdef[[
    struct timespec { long tv_sec; long tv_nsec; };
    int clock_gettime(int clk_id, struct timespec *tp);
    int nanosleep(const struct timespec *req, struct timespec *rem);
    int usleep(unsigned int usec);
    void *malloc(size_t size);
    void *calloc(size_t nmemb, size_t size);
    void *realloc(void *ptr, size_t size);
    void free(void *ptr);
    void *memcpy(void *dest, const void *src, size_t n);
    void *memset(void *s, int c, size_t n);
    char *getenv(const char *name);
    int printf(const char *format, ...);
    extern char *environ[];
  ]]
]==]

local USER_CALLS = [==[
  local ffi = require("ffi")
  local C = ffi.C
  local function say(...) io.write(table.concat({ ... }, "|"), "\n"); io.stdout:flush() end
  local ts = ffi.new("struct timespec")
  say("clock_gettime", C.clock_gettime(1, ts), tostring(ts.tv_sec > 0 or ts.tv_nsec > 0))
  local req = ffi.new("struct timespec", { 0, 1000 })
  say("nanosleep", C.nanosleep(req, nil))
  say("usleep", C.usleep(1))
  local p = ffi.cast("char *", C.malloc(16))
  C.memset(p, 65, 15); p[15] = 0
  say("malloc+memset", ffi.string(p))
  local q = ffi.cast("char *", C.calloc(4, 8))
  C.memcpy(q, p, 8)
  q = ffi.cast("char *", C.realloc(q, 64))
  say("calloc+memcpy+realloc", ffi.string(q, 8), q[20])
  C.free(p); C.free(q)
  say("getenv", ffi.string(C.getenv("GJ_HYGIENE_VAR")))
  local env_n = 0
  while C.environ[env_n] ~= nil do env_n = env_n + 1 end
  say("environ", tostring(env_n > 0))
  io.stdout:flush()
  say("printf", C.printf("%s\n", "from printf"))
]==]

-- gpujit's own users of those names, on backend bk.
local GPUJIT_USES = [==[
  local gpu = require("gpujit")
  local ffi = require("ffi")
  local bk = ...
  local function say(...) io.write(table.concat({ ... }, "|"), "\n"); io.stdout:flush() end
  local events = 0
  local off = gpu.on_compile(function(ev) if ev.phase == "done" then events = events + 1 end end)
  local k = gpu.kernel(function(o, n)
    local i = gpu.global_id()
    local s = 0
    for j = 1, n do s = s + j end
    o[i] = s
  end, { backend = bk, timeout = 30, cache = false })
  local out = ffi.new("double[8]")
  k:launch(8, out, 4)
  off()
  say("timed launch", out[7], tostring(bk == "sim" or events > 0))
  local ks = gpu.kernel(function(o, n) o[gpu.global_id()] = n * 3 end, { backend = bk, cache = false })
  local s = gpu.stream(bk)
  local e0 = s:record()
  ks:launch({ global = 8, stream = s }, out, 5)
  local e1 = s:record()
  s:synchronize()
  say("stream events", out[0], tostring(e0:elapsed(e1) >= 0))
  say("now", tostring(require("gpujit.util").now() > 0))
]==]

local function run_child(order, bk)
  local src
  if order == "before" then
    src = USER_DECLS .. USER_CALLS .. "\n" .. GPUJIT_USES .. "\n" .. USER_CALLS
  else
    src = GPUJIT_USES .. "\n" .. USER_DECLS .. USER_CALLS .. "\n" .. GPUJIT_USES
  end
  local path = os.tmpname()
  local f = assert(io.open(path, "w"))
  f:write("local function main(...)\n", src, "\nend\nmain(", string.format("%q", bk), ")\n")
  f:close()
  local p = io.popen("timeout 120 env " .. H.luajit_cmd({
    GPUJIT_VERBOSE = "1", GJ_HYGIENE_VAR = "hello", GPUJIT_TIMEOUT = "",
    GPUJIT_HYGIENE_UNKNOWN = "1" })
    .. " " .. path .. " 2>&1; echo \"exit|$?\"")
  local text = p:read("*a")
  p:close()
  os.remove(path)
  return text
end

local function count(text, pat)
  local n = 0
  for _ in text:gmatch(pat) do n = n + 1 end
  return n
end

describe("FFI hygiene", function()
  for _, bk in ipairs(H.backends) do
    for _, order in ipairs({ "before", "after" }) do
      it("the user's libc declarations " .. order .. " require('gpujit') work, and so does gpujit ["
        .. bk .. "]", function()
        H.need(bk)
        local text = run_child(order, bk)
        assert.is_truthy(text:find("exit|0\n", 1, true), text)
        -- the user's calls: before, around gpujit's uses; after, between them
        local calls = order == "before" and 2 or 1
        assert.are.equal(calls, count(text, "clock_gettime|0|true\n"), text)
        assert.are.equal(calls, count(text, "nanosleep|0\n"), text)
        assert.are.equal(calls, count(text, "usleep|0\n"), text)
        assert.are.equal(calls, count(text, "malloc%+memset|AAAAAAAAAAAAAAA\n"), text)
        assert.are.equal(calls, count(text, "calloc%+memcpy%+realloc|AAAAAAAA|0\n"), text)
        assert.are.equal(calls, count(text, "getenv|hello\n"), text)
        assert.are.equal(calls, count(text, "from printf\n"), text)
        assert.are.equal(calls, count(text, "environ|true\n"), text)
        -- gpujit's own read of environ: the unknown GPUJIT_* name is reported
        assert.are.equal(1, count(text, "GPUJIT_HYGIENE_UNKNOWN is not a variable gpujit reads"), text)
        -- gpujit's: a timed launch (with on_compile), stream events, the clock
        local runs = order == "before" and 1 or 2
        assert.are.equal(runs, count(text, "timed launch|10|true\n"), text)
        assert.are.equal(runs, count(text, "stream events|15|true\n"), text)
        assert.are.equal(runs, count(text, "now|true\n"), text)
        -- GPUJIT_VERBOSE's compile notes (they time the compile)
        if bk ~= "sim" then
          assert.is_truthy(text:find("gpujit: ", 1, true), text)
        end
      end)
    end
  end
end)

-- The rule, kept: every function and extern variable that lua/ declares
-- through ffi.cdef has a gj_ name of its own; one that stands for a libc
-- name says which with an asm label.
local LIBC = {}
for name in ([[clock_gettime nanosleep usleep sleep malloc calloc realloc free memcpy memmove
  memset memcmp strlen strcmp getenv setenv unsetenv printf fprintf snprintf sprintf puts
  getpid fork waitpid kill signal sigaction raise exit abort time gettimeofday open close
  read write mmap munmap sysconf posix_memalign aligned_alloc dlopen dlsym environ errno]]):gmatch("%S+") do
  LIBC[name] = true
end

-- Every string literal of a Lua source text ("...", '...', [[...]], [=[...]=]).
local function strings(src)
  local out, i = {}, 1
  while i <= #src do
    local c = src:sub(i, i)
    if src:sub(i, i + 1) == "--" then
      local eq = src:match("^%-%-%[(=*)%[", i)
      if eq then
        local _, e = src:find("]" .. eq .. "]", i, true)
        i = (e or #src) + 1
      else
        local e = src:find("\n", i, true)
        i = (e or #src) + 1
      end
    elseif c == "[" and src:match("^%[=*%[", i) then
      local eq = src:match("^%[(=*)%[", i)
      local s = i + #eq + 2
      local _, e = src:find("]" .. eq .. "]", s, true)
      out[#out + 1] = src:sub(s, (e or #src + #eq + 2) - #eq - 2)
      i = (e or #src) + 1
    elseif c == '"' or c == "'" then
      local j = i + 1
      while j <= #src and src:sub(j, j) ~= c do
        if src:sub(j, j) == "\\" then j = j + 1 end
        j = j + 1
      end
      out[#out + 1] = src:sub(i + 1, j - 1)
      i = j + 1
    else
      i = i + 1
    end
  end
  return out
end

-- The functions a C declaration text declares: { name, asm label or nil }.
local function functions(decl)
  local out = {}
  for name, rest in decl:gmatch("[%w_%*]%s+%**%s*([%a_][%w_]*)%s*%b()(%s*[^;]*);") do
    if not name:match("^_*asm_*$") then   -- an extern variable's label: externs()
      out[#out + 1] = { name = name, label = rest:match("asm%s*%(%s*\"([^\"]+)\"%s*%)") }
    end
  end
  return out
end

-- The variables a C declaration text declares extern: { name, asm label or nil }.
local function externs(decl)
  local out = {}
  for d in decl:gmatch("extern%s+([^;]*);") do
    local label = d:match("asm_*%s*%(%s*\"([^\"]+)\"%s*%)")
    d = d:gsub("_*asm_*%s*%b()", ""):gsub("%b[]", "")
    out[#out + 1] = { name = d:match("([%a_][%w_]*)%s*$"), label = label }
  end
  return out
end

describe("FFI hygiene: the rule in lua/", function()
  it("the scanner finds what it must (a check of the check)", function()
    local f = functions("int clock_gettime(int, struct ts *); void *gj_a(size_t n) asm(\"calloc\");")
    assert.are.same({ { name = "clock_gettime" }, { name = "gj_a", label = "calloc" } }, f)
    assert.are.same({ "int x(void);", "b" }, strings("local a = [[int x(void);]] -- c\nlocal b = 'b'"))
    assert.are.same({ { name = "environ" }, { name = "gj_e", label = "environ" } },
      externs("extern char *environ[]; extern char **gj_e asm(\"environ\");"))
  end)

  it("every function ffi.cdef declares in lua/ has a gj_ name, a libc one an asm label", function()
    local files = H.ls("lua/*.lua lua/gpujit/*.lua lua/gpujit/*/*.lua")
    assert.is_true(#files > 10, "found " .. #files .. " files under lua/")
    local bad, seen = {}, 0
    for _, path in ipairs(files) do
      local fh = assert(io.open(path))
      local src = fh:read("*a")
      fh:close()
      if src:find("ffi.cdef", 1, true) then
        for _, s in ipairs(strings(src)) do
          local decls = functions(s)
          for _, v in ipairs(externs(s)) do decls[#decls + 1] = v end
          for _, fn in ipairs(decls) do
            seen = seen + 1
            if not fn.name:match("^gj_") then
              bad[#bad + 1] = path .. ": " .. fn.name .. " (a name of its own, gj_..., with an asm label)"
            elseif LIBC[fn.label or ""] == nil and fn.label then
              bad[#bad + 1] = path .. ": " .. fn.name .. " asm(\"" .. fn.label .. "\"): not a libc name"
            end
            if LIBC[fn.name] then
              bad[#bad + 1] = path .. ": libc's " .. fn.name .. " without an asm label"
            end
          end
        end
      end
    end
    assert.is_true(seen >= 20, "found only " .. seen .. " declarations: the scanner is broken")
    assert.are.same({}, bad)
  end)
end)
