-- docs/api.md documents every public name: this walks the tables of
-- require("gpujit") (functions, kernel and array methods, the cache, the
-- core, device entries, compile events), the kernel options and the
-- environment variables the sources read, and fails on any name the page
-- does not mention, so that the reference cannot drift from the code.

local H = require("spec.helpers")
local ffi = require("ffi")
local gpu = H.gpu

local function read(path)
  local f = assert(io.open(path, "r"), "cannot open " .. path)
  local s = f:read("*a")
  f:close()
  return s
end

local DOC = read("docs/api.md")

local function esc(s) return (s:gsub("%p", "%%%0")) end

-- Is `text` in the page, not followed by more of an identifier?
local function mentions(text)
  return DOC:find(esc(text) .. "%f[^%w_]") ~= nil
end

-- The names of t's keys that `prefix .. key` does not find in the page.
local function missing(t, prefix, skip)
  local out = {}
  for k in pairs(t) do
    if type(k) == "string" and not (skip and skip(k)) and not mentions(prefix .. k) then
      out[#out + 1] = prefix .. k
    end
  end
  table.sort(out)
  return out
end

local function none_missing(list, what)
  assert(#list == 0, "docs/api.md does not document " .. what .. ": " .. table.concat(list, ", "))
end

local function private(k) return k:sub(1, 1) == "_" and k ~= "_VERSION" end

describe("docs/api.md", function()
  it("documents every field of the module", function()
    none_missing(missing(gpu, "gpu.", private), "these module fields")
    assert.is_true(mentions("gpu.core_error"))
  end)

  it("documents gpu.cache, gpu.core and gpu.types", function()
    none_missing(missing(gpu.cache, "gpu.cache."), "these cache functions")
    if gpu.core then none_missing(missing(gpu.core, "gpu.core."), "these core fields") end
    none_missing(missing(gpu.types, "gpu.types."), "these gpu.types fields")
  end)

  it("documents every method and field of a kernel object", function()
    local methods = require("gpujit.dispatch").methods
    none_missing(missing(methods, "k:"), "these kernel methods")
    local k = gpu.kernel(function(a) a[0] = 1 end, { name = "doc" })
    local out = {}
    for key, v in pairs(k) do
      if type(key) == "string" and not private(key) then
        -- a method (k:launch) or a field (k.fn, which holds a function)
        if not (mentions("k:" .. key) or mentions("k." .. key)) then
          out[#out + 1] = (type(v) == "function" and "k:" or "k.") .. key
        end
      end
    end
    none_missing(out, "these kernel fields")
    assert.is_truthy(DOC:find("k[cfg](...)", 1, true))
  end)

  it("documents every method and field of a device array", function()
    none_missing(missing(require("gpujit.array").methods, "e:"), "these array methods")
    local e = gpu.to_device({ 1, 2 }, "double", "sim")
    for _, f in ipairs({ "ctype", "device" }) do
      assert.is_not_nil(e[f])
      assert.is_true(mentions("e." .. f), "e." .. f)
    end
    assert.is_truthy(DOC:find("`#e`", 1, true))
    for _, f in ipairs({ "array", "zeros", "to_device" }) do assert.is_true(mentions("gpu." .. f)) end
  end)

  it("documents gpujit.util", function()
    none_missing(missing(require("gpujit.util"), "util."), "these gpujit.util functions")
  end)

  it("documents every field of device, backend, cache-stats, job and plugin tables", function()
    local function words(t, what)
      local out = {}
      for key in pairs(t) do
        if not mentions("`" .. key) and not DOC:find("%f[%w_]" .. esc(key) .. "%f[^%w_]") then
          out[#out + 1] = key
        end
      end
      table.sort(out)
      none_missing(out, what)
    end
    for _, d in ipairs(gpu.devices()) do words(d, "these device entry fields") end
    for _, b in ipairs(gpu.backends()) do words(b, "these backend entry fields") end
    if gpu.core then
      words(gpu.cache.stats(), "these gpu.cache.stats() fields")
      local k = gpu.kernel(function(a) a[0] = 1 end)
      words(gpu.job(k, { "double[]" }, H.compilers[1] or "cpu"), "these gpu.job fields")
      words(gpu.load_plugin("count"), "these plugin entry fields")
      for _, p in ipairs(gpu.plugins()) do words(p, "these gpu.plugins() fields") end
      words(gpu.core.host_stats(), "these host_stats fields")
    end
  end)

  it("documents every kernel option", function()
    local src = read("lua/gpujit/init.lua")
    local block = assert(src:match("local known_opts = (%b{})"), "known_opts not found in init.lua")
    local out, n = {}, 0
    for name in block:gmatch("([%a_]+) = ") do
      n = n + 1
      if not DOC:find("| `" .. name .. "` |", 1, true) then out[#out + 1] = name end
    end
    assert.is_true(n >= 10, "found only " .. n .. " options")
    none_missing(out, "these kernel options (a row of the options table)")
  end)

  it("documents every environment variable the sources read", function()
    -- (no `sort -u`: under make check the children inherit the preloaded
    -- libasan, and sort's own leak fails the run; the names are made unique here)
    local p = io.popen("grep -rhoE '\"GPUJIT_[A-Z0-9_]+\"' lua src targets runtimes bin plugins")
    local out, n, seen = {}, 0, {}
    for name in p:read("*a"):gmatch('"(GPUJIT_[A-Z0-9_]+)"') do
      if not seen[name] then
        seen[name] = true
        n = n + 1
        if not DOC:find("| `" .. name, 1, true) then out[#out + 1] = name end
      end
    end
    p:close()
    assert.is_true(n >= 12, "found only " .. n .. " variables")
    none_missing(out, "these environment variables (a row of its table)")
  end)

  for _, bk in ipairs(H.compilers) do
    it("documents every field of a compile event [" .. bk .. "]", function()
      local seen = {}
      local off = gpu.on_compile(function(e)
        for key in pairs(e) do seen[key] = true end
      end)
      local k = H.kernel(bk, function(a) a[gpu.global_id(0)] = 1 end, { name = "docev" })
      k:launch(1, ffi.new("double[1]"))
      local bad = H.kernel(bk, function(a) a[0] = "s" end, { name = "docev_bad" })
      pcall(bad.launch, bad, 1, ffi.new("double[1]"))
      off()
      assert.is_true(seen.phase and seen.ms and seen.error and true)
      local out = {}
      for key in pairs(seen) do
        -- the first cell of a row of the event table
        if not DOC:find("\n| [^|\n]*`" .. esc(key) .. "`[^|\n]*|") then out[#out + 1] = key end
      end
      table.sort(out)
      none_missing(out, "these compile event fields (a row of the event table)")
    end)
  end

  it("is the reference the README links to", function()
    local readme = read("README.md")
    assert.is_truthy(readme:find("(docs/api.md)", 1, true), "README.md does not link docs/api.md")
    assert.is_falsy(readme:find("../shared/API.md", 1, true), "README.md still links ../shared/API.md")
  end)
end)
