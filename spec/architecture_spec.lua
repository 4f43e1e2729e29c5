-- The boundaries of docs/architecture.md, checked on the sources so that a
-- change that crosses one fails here: the core includes neither room, the
-- Lua C API stays in the binding files, the Lua face tests no backend's
-- name, every runtime and target table is filled by field name.

local function lines_of(path)
  local f = assert(io.open(path))
  local t = {}
  for l in f:lines() do t[#t + 1] = l end
  f:close()
  return t
end

local function files(dir, pattern)
  local p = assert(io.popen("ls " .. dir))
  local out = {}
  for name in p:lines() do
    if name:match(pattern) then out[#out + 1] = dir .. "/" .. name end
  end
  p:close()
  assert.is_true(#out > 0, "no " .. pattern .. " in " .. dir)
  return out
end

-- Lines of C outside comments (block comments may span lines).
local function code_lines(path)
  local out, in_comment = {}, false
  for i, l in ipairs(lines_of(path)) do
    local s = l
    if in_comment then
      local e = s:find("*/", 1, true)
      if e then s, in_comment = s:sub(e + 2), false else s = "" end
    end
    s = s:gsub("/%*.-%*/", "")
    local b = s:find("/*", 1, true)
    if b then s, in_comment = s:sub(1, b - 1), true end
    s = s:gsub("//.*$", "")
    out[#out + 1] = { n = i, s = s }
  end
  return out
end

local binding = {
  ["src/gj_lua.c"] = true, ["src/gj_lua_types.c"] = true, ["src/gj_lua_types.h"] = true,
  ["src/gj_embed.c"] = true,
}

describe("architecture boundaries (docs/architecture.md)", function()
  it("no file in src/ includes anything from runtimes/ or targets/", function()
    local bad = {}
    for _, f in ipairs(files("src", "%.[ch]$")) do
      for _, l in ipairs(code_lines(f)) do
        if l.s:match("#%s*include") and (l.s:find("runtimes/", 1, true) or l.s:find("targets/", 1, true)
            or l.s:find("backend.h\"", 1, true) and not l.s:find("gj_backend.h", 1, true)) then
          bad[#bad + 1] = f .. ":" .. l.n .. ": " .. l.s
        end
      end
    end
    assert.are.same({}, bad)
  end)

  it("no runtime loads kernels through LLVM; the disk cache's side of a compile needs none", function()
    -- a kernel is loaded by dlopen (cpu) or its driver (opencl, cuda), so that
    -- loading one from the cache needs no compiler (docs/architecture.md, "The
    -- runtime and the compiler"); gj_pipeline_cache.c is the lookup and store
    local list = files("runtimes", "%.[ch]$")
    list[#list + 1] = "src/gj_pipeline_cache.c"
    list[#list + 1] = "src/gj_pipeline_int.h"
    for _, f in ipairs(list) do
      for _, l in ipairs(code_lines(f)) do
        local bad = l.s:match("#%s*include%s*<llvm%-c/(LLJIT)%.h>")
          or l.s:match("#%s*include%s*<llvm%-c/(Orc)%.h>")
          or l.s:match("(LLVMOrc%w+)") or l.s:match("(LLVMCreate%w*ExecutionEngine)")
        assert.is_nil(bad, f .. ":" .. l.n .. ": " .. tostring(bad))
        if f:match("gj_pipeline_") then
          assert.is_nil(l.s:match("(LLVM%w+)"), f .. ":" .. l.n .. " calls LLVM")
          assert.is_nil(l.s:match("#%s*include%s*<llvm"), f .. ":" .. l.n .. " includes LLVM")
        end
      end
    end
  end)

  it("no target includes a runtime's header or sees a runtime's state", function()
    local bad = {}
    for _, f in ipairs(files("targets", "%.[ch]$")) do
      for _, l in ipairs(code_lines(f)) do
        if l.s:match("#%s*include") and l.s:find("runtimes/", 1, true)
            or l.s:find("gj_bstate", 1, true) then
          bad[#bad + 1] = f .. ":" .. l.n .. ": " .. l.s
        end
      end
    end
    assert.are.same({}, bad)
  end)

  it("the Lua C API only in the binding files (the *_lua files, gj_lua, gj_embed)", function()
    local bad = {}
    for _, f in ipairs(files("src", "%.[ch]$")) do
      local base = f:match("[^/]+$")
      local is_binding = binding[f] or base:match("_lua%.[ch]$")
      local public = base == "gpujit.h" or base == "gpujit_plugin.h"   -- lua_State in the ABIs
      if not is_binding then
        for _, l in ipairs(code_lines(f)) do
          local s = l.s:gsub('"[^"]*"', '""')   -- "lua_int" and the like are type names
          if s:match("#%s*include%s*<l[a-z]*%.h>") or s:find("luaL_", 1, true)
              or s:match("lua_%a+%s*%(") or (not public and s:find("lua_State", 1, true)) then
            bad[#bad + 1] = f .. ":" .. l.n .. ": " .. l.s
          end
        end
      end
    end
    assert.are.same({}, bad)
  end)

  it("the Lua face tests no compiled backend's name", function()
    local bad = {}
    for _, f in ipairs(files("lua/gpujit", "%.lua$")) do
      for i, l in ipairs(lines_of(f)) do
        local code = l:gsub("%-%-.*$", "")
        for _, name in ipairs({ "cpu", "opencl", "cuda" }) do
          if code:match("[=~]=%s*\"" .. name .. "\"") or code:match("\"" .. name .. "\"%s*[=~]=") then
            bad[#bad + 1] = f .. ":" .. i .. ": " .. l
          end
        end
      end
    end
    assert.are.same({}, bad)
  end)

  it("every runtime's gj_backend and every target's gj_codegen is filled by field name", function()
    local n = 0
    for _, dir in ipairs({ "runtimes", "targets" }) do
      for _, f in ipairs(files(dir, "%.c$")) do
        local text = table.concat(lines_of(f), "\n")
        for body in text:gmatch("const%s+gj_[bc][a-z]+%s+gj_[%w_]+%s*=%s*(%b{})") do
          n = n + 1
          -- every entry of the initializer is `.field = value`
          local inner = body:sub(2, -2):gsub("/%*.-%*/", ""):gsub("%b()", "()")
          for entry in (inner .. ","):gmatch("%s*(.-)%s*,") do
            if entry ~= "" then
              assert.is_truthy(entry:match("^%.[%w_]+%s*="), f .. ": positional entry '" .. entry .. "'")
            end
          end
        end
      end
    end
    -- the three runtimes and the targets (native, spir, ptx, spirv, ptx for cuda)
    assert.is_true(n >= 7, "found " .. n .. " tables")
  end)

  it("job fields come from the one list: gj_job_lua.c and content_key name none by hand", function()
    -- the fields, from GJ_JOBDEF (src/gj_job.h)
    local def = table.concat(lines_of("src/gj_job.h"), "\n"):match("#define GJ_JOBDEF%(_%)(.-)\n\n")
    assert.is_truthy(def, "no GJ_JOBDEF in src/gj_job.h")
    local fields = {}
    for name in def:gmatch("_%(%s*[%u]+%s*,%s*([%w_]+)%s*,") do fields[#fields + 1] = name end
    assert.is_true(#fields >= 19, "found " .. #fields .. " fields")
    -- code outside the list's macros (#define lines and their continuations)
    local function plain_code(path)
      local out, cont = {}, false
      for _, l in ipairs(code_lines(path)) do
        local is_macro = cont or l.s:match("^%s*#%s*define")
        cont = is_macro and l.s:match("\\%s*$") ~= nil
        if not is_macro then out[#out + 1] = l end
      end
      return out
    end
    local bad = {}
    for _, l in ipairs(plain_code("src/gj_job_lua.c")) do
      for _, name in ipairs(fields) do
        if l.s:match("[%.>]" .. name .. "[^%w_]") then
          bad[#bad + 1] = "src/gj_job_lua.c:" .. l.n .. ": " .. l.s
        end
      end
    end
    -- content_key hashes the job through gj_job_key only
    local body = table.concat(lines_of("src/gj_pipeline.c"), "\n"):match("static void content_key%(.-\n}\n")
    assert.is_truthy(body, "no content_key in src/gj_pipeline.c")
    assert.is_truthy(body:find("gj_job_key(job", 1, true), "content_key does not call gj_job_key")
    if body:match("job%->") then bad[#bad + 1] = "src/gj_pipeline.c: content_key reads a job field" end
    assert.are.same({}, bad)
  end)

  -- The FFI's view of the core (lua/gpujit/cdefs.lua) is the C API's
  -- (src/gpujit.h): every function Lua declares is a GJ_API declaration
  -- there, with the same types (the header's opaque pointers are void *
  -- in Lua), and the core exports exactly the header's functions.
  it("cdefs.lua declares GJ_API functions of gpujit.h, with their types; the core exports those",
    function()
    local function norm_type(t)
      t = t:gsub("%f[%w_]gj_[%w_]+%f[^%w_]%s*%*", function(m)
        local name = m:match("^(gj_[%w_]+)")
        return (name == "gj_dims" or name == "gj_print_rec") and m or "void *"
      end)
      t = t:gsub("%s*%*%s*", " *"):gsub("%s+", " "):gsub("^ ", ""):gsub(" $", "")
      return t
    end
    local function signature(decl)
      local ret, name, params = decl:match("^(.-)([%a_][%w_]*)%s*(%b())%s*$")
      if not ret then return nil end
      local ps = {}
      for p in (params:sub(2, -2) .. ","):gmatch("%s*([^,]-)%s*,") do
        local ty = p:match("^(.-[%s%*])[%a_][%w_]*$")
        ps[#ps + 1] = norm_type(ty or p)
      end
      return name, norm_type(ret) .. " (" .. table.concat(ps, ", ") .. ")"
    end
    -- gpujit.h's GJ_API declarations, comments out
    local text = {}
    for _, l in ipairs(code_lines("src/gpujit.h")) do text[#text + 1] = l.s end
    text = table.concat(text, " ")
    local header = {}
    for decl in text:gmatch("GJ_API%s+([^;{]-)%s*;") do
      local name, sig = signature(decl)
      if name then header[name] = sig end
    end
    assert.is_truthy(header.gj_launch and header.gj_stream_new, "the header scan found no GJ_API functions")
    -- cdefs.lua's functions
    local bad, n = {}, 0
    for _, decl in ipairs(require("gpujit.cdefs")) do
      if not decl:match("^%s*typedef") then
        local name, sig = signature(decl:gsub(";%s*$", ""))
        n = n + 1
        if not header[name] then
          bad[#bad + 1] = name .. ": not a GJ_API function of src/gpujit.h"
        elseif header[name] ~= sig then
          bad[#bad + 1] = name .. ": cdefs.lua says " .. sig .. ", gpujit.h " .. header[name]
        end
      end
    end
    assert.is_true(n >= 25, "cdefs.lua declares " .. n .. " functions")
    -- the core's exported functions (nm -D)
    local core = os.getenv("GPUJIT_SPEC_CORE") or package.searchpath("gpujit.core", package.cpath)
    local p = assert(io.popen("nm -D --defined-only " .. core .. " 2>/dev/null"))
    local exported = {}
    for line in p:lines() do
      local name = line:match("%s[TW]%s+([%w_]+)$")
      if name and (name:match("^gj_") or name:match("^luaopen_")) then exported[name] = true end
    end
    p:close()
    assert.is_truthy(exported.gj_launch, "nm found no gj_launch in " .. core)
    for name in pairs(exported) do
      if not header[name] then
        bad[#bad + 1] = core .. " exports " .. name .. ", which gpujit.h does not declare"
      end
    end
    for name in pairs(header) do
      if not exported[name] then
        bad[#bad + 1] = "gpujit.h declares " .. name .. ", which " .. core .. " does not export"
      end
    end
    table.sort(bad)
    assert.are.same({}, bad)
  end)
end)
