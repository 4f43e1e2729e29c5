-- Compile events (docs/api.md): the table gpu.on_compile's callbacks get,
-- and GPUJIT_VERBOSE's line.  gpujit.dispatch sends them.
local each = pairs   -- each(t), never pairs(t), in loops: docs/reliability.md, "pairs loops"
local concat = table.concat

local M = {}

-- The callbacks of gpu.on_compile, in the order registered.
M.listeners = {}

-- The event of a compile of kernel K for target tgt and the type list tl,
-- before it starts.
function M.event(K, tgt, tl)
  local info = debug.getinfo(K.fn, "S")
  local tcopy = {}
  for i = 1, #tl do tcopy[i] = tl[i] end
  return { phase = "start", kernel = K.name, source = info.short_src, line = info.linedefined,
           types = tcopy, backend = tgt.backend, device = tgt.dev }
end

-- ev after its compile: "done" with what core.compile returned (info), or
-- "error" with the message (ok false).
function M.finish(ev, ok, info)
  if ok then
    ev.phase, ev.cache, ev.stages, ev.note = "done", info.cache, info.stages, info.note
    ev.ms = {}
    for k, v in each(info.ms or {}) do ev.ms[k] = v end
  else
    ev.phase, ev.error = "error", tostring(info)
  end
end

-- "NAME at FILE:LINE", or "FILE:LINE" alone when the name is the default
-- one (the file's base name and the line: gpujit.dispatch's default_name).
local function who(ev)
  local at = ev.source .. ":" .. ev.line
  if at == ev.kernel or at:sub(-#ev.kernel - 1) == "/" .. ev.kernel then return at end
  return ev.kernel .. " at " .. at
end

-- GPUJIT_VERBOSE's line for a "done" or "error" event.
function M.line(ev)
  local parts = {}
  for i, name in ipairs(ev.stages or {}) do
    parts[i] = ("%s %.1f"):format(name, ev.ms[name] or 0)
  end
  if ev.phase == "error" then
    return ("gpujit: compile of %s (%s) on %s:%d failed after %.1f ms: %s\n"):format(
      who(ev), concat(ev.types, ", "), ev.backend, ev.device, ev.total_ms, ev.error)
  end
  return ("gpujit: compiled %s (%s) on %s:%d in %.1f ms [%s]; cache %s%s%s\n"):format(
    who(ev), concat(ev.types, ", "), ev.backend, ev.device,
    ev.total_ms, concat(parts, ", "), ev.cache, ev.note and "; " .. ev.note or "",
    ev.widened and "; widened for a launch of (" .. concat(ev.widened, ", ") .. ")" or "")
end

return M
