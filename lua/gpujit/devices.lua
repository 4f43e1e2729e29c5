-- gpujit.devices: the registry of backends, devices and targets of one Lua
-- state, built from the compiled core's lists (core.backend_names(), then
-- core.backends(bk) and core.devices(bk) for each backend when it is first
-- asked for) and the Lua face's own sim backend, and the lookups gpu.use,
-- gpu.kernel and the dispatcher resolve device names with.  A backend is
-- opened when a name, a target or a listing needs it, not at require:
-- opening opencl loads its driver (PoCL maps LLVM, ~20 ms), which a script
-- that says gpu.use("cpu") first never pays (docs/architecture.md, "The
-- runtime and the compiler").  The default device needs every backend.
-- Everything a device is known by comes from its entry's facts (rank,
-- host_shared, host_register, parallel_items, ...: src/gj_backend.h); the
-- only name this file knows is "sim", the backend that lives here.
--
--   local R = require("gpujit.devices").open(core, core_error)
--   R.resolve("cuda:1", "gpu.use", level) -> target (or raises at level)
local each = pairs   -- each(t), never pairs(t), in loops: docs/reliability.md, "pairs loops"
local M = {}

function M.open(core, core_error)
  -- A target is one device the dispatcher compiles for and launches on:
  -- { backend, bk, dev, sim, shared (addresses host memory), hostreg (takes
  -- host arrays registered for a launch, gj_mem_host_register), entry (its
  -- gpu.devices() entry), label ("cpu:0") }.  Targets are made once, so the
  -- dispatcher compares them by identity.

  local sim_entry = {
    backend = "sim", name = "sim", vendor = "gpujit", type = "sim", index = 0, bk = -1,
    memory = 0, compute_units = 1, max_group = 1024, max_group_dim = { 1024, 1024, 1024 },
    host_shared = true, host_math = true, rank = 0, parallel_items = 0,
  }
  local sim_target = {
    backend = "sim", bk = -1, dev = 0, sim = true, shared = true, entry = sim_entry, label = "sim",
  }

  local targets = {}       -- compiled backends' devices, in the core's order
  local by_bk = {}         -- by_bk[bk][dev] = target
  local backends = {}      -- list of { name, index, available, error, offline }
  local backend_by_name = {}
  -- Compile-only targets of backends that open without a device (cuda where
  -- there is no driver or GPU): inspect_llvm/inspect_asm compile for them.
  local offline = {}

  local function copy(t)
    local c = {}
    for k, v in each(t) do c[k] = v end
    return c
  end

  -- The compiled backends by name, none opened yet: backends[bk + 1] is
  -- backend bk's entry, completed (available, error, offline) when opened.
  local nbk = 0
  if core then
    local ok, list = pcall(core.backend_names)
    if ok and type(list) == "table" then
      for i, name in ipairs(list) do
        backends[i] = { name = name, index = i - 1 }
        backend_by_name[name] = backends[i]
      end
      nbk = #list
    end
  end
  backends[#backends + 1] = { name = "sim", index = -1, available = true }
  backend_by_name.sim = backends[#backends]

  local opened = {}        -- opened[bk]: its entry and devices are in
  local function by_order(a, b) return a.bk < b.bk or (a.bk == b.bk and a.dev < b.dev) end

  -- Open backend bk (0-based) once: its entry's facts, and its devices as
  -- targets, kept in the core's order.
  local function open_bk(bk)
    if opened[bk] or bk == nil or bk < 0 or bk >= nbk then return end
    opened[bk] = true
    local e = backends[bk + 1]
    local ok, list = pcall(core.backends, bk)
    if ok and type(list) == "table" and type(list[1]) == "table" then
      for k, v in each(list[1]) do e[k] = v end
      if e.offline then
        offline[e.name] = {
          backend = e.name, bk = e.index, dev = 0, sim = false, shared = false, offline = true,
          entry = { backend = e.name, index = 0, name = e.name .. " (no device: compiles only)" },
          label = e.name .. ":0 (no device)",
        }
      end
    else
      e.available, e.error = false, tostring(list)
    end
    local okd, devs = pcall(core.devices, bk)
    if okd and type(devs) == "table" and #devs > 0 then
      for _, d in ipairs(devs) do
        local entry = copy(d)
        local shared = entry.host_shared == true   -- the device's fact (src/gj_backend.h)
        local t = {
          backend = entry.backend, bk = entry.bk, dev = entry.index, sim = false,
          shared = shared, hostreg = not shared and entry.host_register == true, entry = entry,
          label = entry.backend .. ":" .. entry.index,
        }
        targets[#targets + 1] = t
        by_bk[t.bk] = by_bk[t.bk] or {}
        by_bk[t.bk][t.dev] = t
      end
      table.sort(targets, by_order)
    end
  end

  -- Every backend opened: for listings and the default device.
  local function open_all()
    for bk = 0, nbk - 1 do open_bk(bk) end
  end

  local function target_of(bk, dev)
    if bk == -1 then return sim_target end
    if not opened[bk] then open_bk(bk) end
    return by_bk[bk] and by_bk[bk][dev] or nil
  end

  local function known_names()
    local n = {}
    for _, b in ipairs(backends) do n[#n + 1] = b.name end
    return table.concat(n, ", ")
  end

  local function find(backend, index, fname)
    if backend == "sim" then
      if index ~= nil and index ~= 0 then
        return nil, fname .. ": the sim backend has one device (0)"
      end
      return sim_target
    end
    local named = backend_by_name[backend]
    if named then open_bk(named.index) end
    for _, t in ipairs(targets) do
      if t.backend == backend and (index == nil or t.dev == index) then return t end
    end
    local b = backend_by_name[backend]
    if b == nil then
      -- the compiled backends are the core's to list: without it only sim is known
      if not core then
        return nil, fname .. ": unknown backend '" .. tostring(backend) .. "' (known: "
          .. known_names() .. "; the compiled backends need the compiled core, which is not "
          .. "loaded: " .. tostring(core_error) .. ")"
      end
      return nil, fname .. ": unknown backend '" .. tostring(backend) .. "' (known: "
        .. known_names() .. ")"
    end
    if b.available == false then
      return nil, fname .. ": backend '" .. backend .. "' is not available"
        .. (b.error and (": " .. tostring(b.error)) or "")
    end
    if index ~= nil then
      return nil, fname .. ": backend '" .. backend .. "' has no device " .. tostring(index)
    end
    return nil, fname .. ": backend '" .. backend .. "' has no device"
  end

  -- device: "cpu", "cuda:1", "sim", or an entry of gpu.devices(); index: an
  -- optional 0-based device number.
  local function resolve(device, fname, level, index)
    local t, err
    if type(device) == "string" then
      local name, idx = device:match("^([%w_]+):(%d+)$")
      if name then
        t, err = find(name, tonumber(idx), fname)
      else
        t, err = find(device, index, fname)
      end
    elseif type(device) == "table" and type(device.backend) == "string" then
      t, err = find(device.backend, device.index or index, fname)
    else
      err = fname .. ": expected a backend name or an entry of gpu.devices(), got "
        .. type(device)
    end
    if not t then
      if level then error(err, level + 1) end
      return nil, err
    end
    return t
  end

  -- resolve, and for a backend that opened without a device its compile-only
  -- target (what k:inspect_asm(types, "cuda") compiles for).
  local function resolve_compile(device, fname, level, index)
    local t, err = resolve(device, fname, nil, index)
    if t then return t end
    local name = type(device) == "table" and device.backend or device
    if type(name) == "string" then name = name:match("^([%w_]+):0$") or name end
    if offline[name] and (index == nil or index == 0) then return offline[name] end
    error(err, level + 1)
  end

  -- The device with the highest rank the backend gives it (a CUDA GPU, an
  -- OpenCL GPU, the cpu backend; src/gj_backend.h), else sim.
  local function default_target()
    open_all()
    local best
    for _, t in ipairs(targets) do
      local r = t.entry.rank or 0
      if r > 0 and (best == nil or r > (best.entry.rank or 0)) then best = t end
    end
    return best or sim_target
  end

  -- A target that can compile, for inspection when the current one is sim.
  local function inspect_target()
    local t = default_target()   -- every backend opened
    if t.sim then
      if targets[1] then return targets[1] end
      return nil, "no compiling backend is available"
        .. (core_error and (" (gpujit.core: " .. core_error .. ")") or "")
    end
    return t
  end

  return {
    sim_entry = sim_entry, sim_target = sim_target, targets = targets, backends = backends,
    copy = copy, target_of = target_of, resolve = resolve, resolve_compile = resolve_compile,
    default_target = default_target, inspect_target = inspect_target, open_all = open_all,
  }
end

return M
