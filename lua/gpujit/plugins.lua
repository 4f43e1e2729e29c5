-- gpujit.plugins: the plugins of this Lua state (docs/plugins.md).
--
-- A plugin is a descriptor table that the core reads at each compile
-- (src/gj_plugin.c): name, version, identity (what the compile cache key
-- hashes), buffers, and either `handle` (a C plugin, core.load_plugin) or
-- Lua hook functions named after the stages.  Registration order is the
-- order the hooks run in.  Registering or removing a plugin drops every
-- compiled overload, so that no kernel keeps code built with another set.
local each = pairs   -- each(t), never pairs(t), in loops: docs/reliability.md, "pairs loops"
local ffi = require("ffi")
local types = require("gpujit.types")

local M = {}

local STAGES = { "job", "frontend", "ir", "optimize", "optimized", "emit" }
local list, by_name = {}, {}
local env          -- core, lib, ctx, changed() (set by M.setup)

function M.setup(e)
  env = e
end

local function fail(fname, msg, level)
  error(fname .. ": " .. msg, level + 1)
end

local function check_name(fname, name, what, level)
  if type(name) ~= "string" or not name:match("^[%w_]+$") then
    fail(fname, what .. " must be a string of letters, digits and _, got "
      .. (type(name) == "string" and ("'" .. name .. "'") or type(name)), level + 1)
  end
end

local function check_buffers(fname, bufs, level)
  if bufs == nil then return {} end
  if type(bufs) ~= "table" then fail(fname, "buffers must be a list", level + 1) end
  if #bufs > 4 then fail(fname, "at most 4 buffers", level + 1) end
  local out = {}
  for i, b in ipairs(bufs) do
    if type(b) ~= "table" then fail(fname, "buffers[" .. i .. "] must be a table", level + 1) end
    check_name(fname, b.name, "buffers[" .. i .. "].name", level + 1)
    local elem = type(b.elem) == "string" and types.scalar(b.elem) or nil
    if type(elem) ~= "string" or not types.size[elem] or elem == "bool" then
      fail(fname, "buffers[" .. i .. "].elem must be a numeric element type, got "
        .. tostring(b.elem), level + 1)
    end
    local per, fixed = b.per_item or 0, b.fixed or 0
    if type(per) ~= "number" or type(fixed) ~= "number" or per < 0 or fixed < 0
        or per % 1 ~= 0 or fixed % 1 ~= 0 or per + fixed == 0 then
      fail(fname, "buffers[" .. i .. "] needs per_item and/or fixed: whole numbers >= 0, "
        .. "not both 0", level + 1)
    end
    out[i] = { name = b.name, elem = elem, per_item = per, fixed = fixed }
  end
  return out
end

-- What the cache key hashes for a Lua plugin: its version and its hooks'
-- bytecode, so that editing a hook is a new key.
local function lua_identity(version, fns)
  local parts = { version }
  for _, f in ipairs(fns) do
    local ok, code = pcall(string.dump, f)
    parts[#parts + 1] = ok and code or tostring(f)
  end
  return table.concat(parts, "\0")
end

local function add(p, fname, level)
  local old = by_name[p.name]
  if old then
    if old.identity == p.identity and old.all == p.all then return old end
    fail(fname, "a plugin named '" .. p.name .. "' is already registered"
      .. (old.path and (" (from " .. old.path .. ")") or "")
      .. "; gpu.remove_plugin('" .. p.name .. "') first", level + 1)
  end
  list[#list + 1] = p
  by_name[p.name] = p
  env.changed()
  return p
end

-- gpu.plugin{ name = , version = , all = , buffers = , report = , <stage> = fn }
function M.register(def)
  local fname = "gpu.plugin"
  if type(def) ~= "table" then fail(fname, "expected a table", 2) end
  check_name(fname, def.name, "name", 2)
  if def.version ~= nil and type(def.version) ~= "string" then
    fail(fname, "version must be a string", 2)
  end
  local p = { name = def.name, version = def.version or "", all = def.all and true or false,
              buffers = check_buffers(fname, def.buffers, 2), kind = "lua" }
  local fns = {}
  for k in each(def) do
    local known = k == "name" or k == "version" or k == "all" or k == "buffers" or k == "key"
    for _, s in ipairs(STAGES) do known = known or k == s end
    if k == "report" then known = true end
    if not known then fail(fname, "unknown field '" .. tostring(k) .. "'", 2) end
  end
  for _, s in ipairs(STAGES) do
    local f = def[s]
    if f ~= nil then
      if type(f) ~= "function" then fail(fname, "'" .. s .. "' must be a function", 2) end
      p[s] = f
      fns[#fns + 1] = f
    end
  end
  if def.report ~= nil and type(def.report) ~= "function" then
    fail(fname, "'report' must be a function", 2)
  end
  p.report = def.report
  -- key: what the hooks read besides their code (an upvalue, a global, a
  -- setting): a string, or a function(info) returning one, evaluated at
  -- every compile and hashed into the cache key (src/gj_plugin.c)
  local key = def.key
  if key ~= nil and type(key) ~= "string" and type(key) ~= "function" then
    fail(fname, "'key' must be a string or a function returning one", 2)
  end
  p.key = key
  if type(key) == "function" then fns[#fns + 1] = key end
  p.identity = lua_identity(p.version, fns) .. (type(key) == "string" and ("\0key\0" .. key) or "")
  return add(p, fname, 2)
end

-- A plugin name -> the shared object: GPUJIT_PLUGIN_PATH (templates with
-- ?, separated by ;), then plugins/ beside the core.
local function find(name)
  local tried = {}
  local path = os.getenv("GPUJIT_PLUGIN_PATH") or ""
  local dir = env.core and env.core.path and env.core.path:match("^(.*)/[^/]*$")
  if dir then path = path .. ";" .. dir .. "/plugins/?.so" end
  for tmpl in path:gmatch("[^;]+") do
    local f = tmpl:gsub("%?", name)
    local h = io.open(f, "rb")
    if h then
      h:close()
      return f
    end
    tried[#tried + 1] = f
  end
  return nil, table.concat(tried, ", ")
end

-- gpu.load_plugin(path or name [, { all = true }])
function M.load(what, opts)
  local fname = "gpu.load_plugin"
  if type(what) ~= "string" or what == "" then fail(fname, "expected a path or a plugin name", 2) end
  if opts ~= nil and type(opts) ~= "table" then fail(fname, "options must be a table", 2) end
  if not (env.core and env.core.load_plugin) then
    fail(fname, "the compiled core (gpujit.core) is not loaded", 2)
  end
  local path = what
  if not what:find("/", 1, true) then
    local tried
    path, tried = find(what)
    if not path then fail(fname, "no plugin '" .. what .. "' (tried " .. tried .. ")", 2) end
  end
  local ok, handle, info = pcall(env.core.load_plugin, path)
  if not ok then fail(fname, tostring(handle), 2) end
  local p = { name = info.name, version = info.version, identity = info.identity,
              buffers = info.buffers, handle = handle, has_report = info.has_report,
              all = opts and opts.all and true or false, path = path, kind = "c" }
  return add(p, fname, 2)
end

function M.remove(name)
  local p = by_name[name]
  if not p then return false end
  by_name[name] = nil
  for i = #list, 1, -1 do
    if list[i] == p then table.remove(list, i) end
  end
  env.changed()
  return true
end

-- gpu.plugins(): { { name, version, kind, all, path }, ... } in order.
function M.list()
  local out = {}
  for i, p in ipairs(list) do
    out[i] = { name = p.name, version = p.version, kind = p.kind, all = p.all, path = p.path }
  end
  return out
end

-- The kernel's `job` option as a plugin that runs first: a table of fields
-- to set, or a function(job, info) that edits the job (or returns one).
local function job_plugin(job)
  if type(job) == "function" then
    return { name = "job_option", identity = lua_identity("", { job }), buffers = {}, job = job }
  end
  local keys, parts = {}, {}
  for k in each(job) do keys[#keys + 1] = k end
  table.sort(keys, function(a, b) return tostring(a) < tostring(b) end)
  for _, k in ipairs(keys) do
    local v = job[k]
    if type(v) == "table" then
      local sub = {}
      for i, x in ipairs(v) do
        sub[i] = type(x) == "table" and ((x.path or "") .. "|" .. (x.prefix or "")) or tostring(x)
      end
      v = "{" .. table.concat(sub, ",") .. "}"
    end
    parts[#parts + 1] = tostring(k) .. "=" .. tostring(v)
  end
  return {
    name = "job_option", identity = table.concat(parts, ";"), buffers = {},
    job = function(j)
      for k, v in each(job) do j[k] = v end
    end,
  }
end

-- The plugins that apply to kernel K, in order: its job option, then every
-- registered plugin that is global or that K names.
function M.active(K)
  local want = K.opts.plugins
  local out = {}
  if K.opts.job ~= nil then out[1] = job_plugin(K.opts.job) end
  local named = {}
  if want then
    for _, n in ipairs(want) do
      if not by_name[n] then
        error("kernel '" .. K.name .. "': plugin '" .. tostring(n)
          .. "' is not loaded (gpu.load_plugin or gpu.plugin)", 0)
      end
      named[n] = true
    end
  end
  for _, p in ipairs(list) do
    if p.all or named[p.name] then out[#out + 1] = p end
  end
  return #out > 0 and out or nil
end

function M.check_kernel_opts(o, level)
  if o.plugins ~= nil then
    if type(o.plugins) ~= "table" then
      error("gpu.kernel: option 'plugins' must be a list of plugin names", level + 1)
    end
    for i, n in ipairs(o.plugins) do
      if type(n) ~= "string" then
        error("gpu.kernel: option 'plugins'[" .. i .. "] must be a plugin name", level + 1)
      end
    end
  end
  if o.job ~= nil and type(o.job) ~= "table" and type(o.job) ~= "function" then
    error("gpu.kernel: option 'job' must be a table of job fields or a function(job)", level + 1)
  end
end

---------------------------------------------------------------------------
-- Buffers at launch.  Each launch of a kernel with plugin buffers gets them
-- zeroed, sized for its work items; afterwards each plugin with a report
-- turns its buffers into K's report.

local function items_of(dims)
  local n = 1
  for d = 0, dims.ndim - 1 do n = n * tonumber(dims.global[d]) end
  return n
end

-- For the launcher of overload ov on target tgt: prepare(args, dims) fills
-- the argument block's buffer fields from parameter first on, and
-- finish(dims) reads them back and stores the reports in K._reports.
function M.launch_buffers(K, tgt, plugs, first)
  local lib, ctx = env.lib, env.ctx
  local bufs = {}      -- { plugin, elem, esz, per, fixed, host, dev, cap }
  for _, p in ipairs(plugs) do
    for _, b in ipairs(p.buffers) do
      bufs[#bufs + 1] = { plugin = p, elem = b.elem, esz = types.size[b.elem],
                          per = b.per_item, fixed = b.fixed, cap = 0 }
    end
  end
  local field = {}
  for j = 1, #bufs do field[j] = "a" .. (first + j - 1) end
  local shared = tgt.shared

  local function grow(b, n, fname)
    local cap = n < 64 and 64 or n
    b.host = ffi.new(b.elem .. "[?]", cap)
    if not shared then
      local bytes = cap * b.esz
      local p = lib.gj_mem_alloc(ctx, tgt.bk, tgt.dev, bytes)
      if p == nil then
        error("kernel '" .. K.name .. "': cannot allocate " .. bytes .. " bytes for plugin "
          .. fname .. "'s buffer: " .. ffi.string(lib.gj_errmsg(ctx)), 0)
      end
      local bk, dev = tgt.bk, tgt.dev
      b.dev = ffi.gc(p, function(q) lib.gj_mem_free(ctx, bk, dev, q) end)
    end
    b.cap = cap
  end

  local function copy(b, n, dir)
    local bytes = n * b.esz
    local dst, src = b.dev, b.host
    if dir == 1 then dst, src = b.host, b.dev end
    if bytes > 0 and lib.gj_mem_copy(ctx, tgt.bk, tgt.dev, dst, src, bytes, dir) ~= 0 then
      error("kernel '" .. K.name .. "': plugin buffer copy failed: "
        .. ffi.string(lib.gj_errmsg(ctx)), 0)
    end
  end

  local function prepare(args, dims)
    local items = items_of(dims)
    for j, b in ipairs(bufs) do
      local n = b.per * items + b.fixed
      if n > b.cap then grow(b, n, b.plugin.name) end
      b.n = n
      ffi.fill(b.host, n * b.esz)
      if shared then
        args[field[j]] = b.host
      else
        copy(b, n, 0)
        args[field[j]] = b.dev
      end
      args[field[j] .. "_len"] = n
    end
  end

  local function finish(dims)
    local items = items_of(dims)
    if not shared then
      for _, b in ipairs(bufs) do copy(b, b.n, 1) end
    end
    local reports = K._reports
    local j = 1
    for _, p in ipairs(plugs) do
      local nb = #p.buffers
      if nb > 0 and (p.report or p.has_report) then
        local hosts, lens = {}, {}
        for k = 1, nb do
          hosts[k] = bufs[j + k - 1].host
          lens[k] = bufs[j + k - 1].n
        end
        local launch = {
          kernel = K.name, items = items, ndim = dims.ndim,
          global = { tonumber(dims.global[0]), tonumber(dims.global[1]), tonumber(dims.global[2]) },
          group = { tonumber(dims.group[0]), tonumber(dims.group[1]), tonumber(dims.group[2]) },
        }
        -- a failing report (either kind) raises with the compile stages'
        -- prefix; the launch itself is done and its results are back
        reports[p.name] = nil
        local ok, r
        if p.handle then
          ok, r = pcall(env.core.plugin_report, p.handle, K.name, dims, items, hosts, lens)
        else
          local named = {}
          for k, b in ipairs(p.buffers) do named[b.name] = hosts[k]; named[k] = hosts[k] end
          named.lengths = lens
          ok, r = pcall(p.report, named, launch)
        end
        if not ok then
          error("kernel " .. K.name .. ": plugin " .. p.name .. ", stage report: " .. tostring(r), 0)
        end
        reports[p.name] = r
      end
      j = j + nb
    end
  end

  return prepare, finish
end

return M
