-- gpujit.keys: strict tables of named fields (a launch configuration,
-- gpu.kernel's options).  A key that is not one of the known ones is an
-- error naming it and, when a known key is close to it (a typo: at most
-- two edits, a swap of neighbours counting as one), the key meant:
--   unknown key 'gruop' in the launch configuration (did you mean 'group'?)
local each = pairs   -- each(t), never pairs(t), in loops: docs/reliability.md, "pairs loops"
local M = {}

-- Edits from a to b: insertions, deletions, substitutions and swaps of
-- two neighbours (the optimal string alignment distance).
local function distance(a, b)
  local la, lb = #a, #b
  local d = {}
  for i = 0, la do d[i] = { [0] = i } end
  for j = 0, lb do d[0][j] = j end
  for i = 1, la do
    for j = 1, lb do
      local cost = a:byte(i) == b:byte(j) and 0 or 1
      local v = math.min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost)
      if i > 1 and j > 1 and a:byte(i) == b:byte(j - 1) and a:byte(i - 1) == b:byte(j) then
        v = math.min(v, d[i - 2][j - 2] + 1)
      end
      d[i][j] = v
    end
  end
  return d[la][lb]
end
M.distance = distance

-- The known key closest to key (sorted names; ties: the first), if it is
-- at most 2 edits away and fewer than key's length; else nil.
function M.closest(key, known)
  if type(key) ~= "string" then return nil end
  local names = {}
  for k in each(known) do names[#names + 1] = k end
  table.sort(names)
  local best, bestd
  for _, k in ipairs(names) do
    local dk = distance(key:lower(), k:lower())
    if dk <= 2 and dk < #key and (bestd == nil or dk < bestd) then best, bestd = k, dk end
  end
  return best
end

-- "unknown key 'k' in <where>" with the close key when there is one.
function M.message(key, known, where)
  local text = (type(key) == "string" and ("'" .. key .. "'") or ("[" .. tostring(key) .. "]"))
  local s = "unknown key " .. text .. " in " .. where
  local near = M.closest(key, known)
  if near then s = s .. " (did you mean '" .. near .. "'?)" end
  return s
end

return M
