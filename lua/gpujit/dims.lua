-- gpujit.dims: a launch configuration (k:launch's first argument) written
-- into a kernel's reused gj_dims (layer 1 of a launch, see gpujit.dispatch).
--
-- The module is a factory: gpujit.dispatch calls it once with its error
-- function and gets set_dims(K, d, cfg), which returns run (false: nothing
-- to do), partial (some group is cut by global), huge (a global or group
-- dimension is 2^31 or more: number arguments are then doubles, since the
-- whole-number classes count on ids below 2^31; types.numtag) and the
-- table's `stream` (gpujit.stream; checked by the caller).
--
-- A table's keys are global, group and stream; any other is an error naming
-- it (gpujit.keys).  Looking at a table's keys (next) keeps LuaJIT from
-- sinking the allocation of a table made per launch (`{ global = n }` in
-- a loop: 90 -> 270 ns a launch; so would comparing it with a remembered
-- table), so not every table is looked at: of the tables a kernel gets,
-- the first CHECK_FIRST are checked, then one in CHECK_EVERY (a counter
-- on the kernel).  CHECK_FIRST stays below LuaJIT's hot-loop count (56):
-- a check on the path a loop's trace is recorded on would stay in that
-- trace.  The others are a side exit.  A misspelt key at a call site is
-- thus an error at the kernel's first launches, or within CHECK_EVERY
-- launches of a call site first reached later, and a loop that makes its
-- table per launch keeps its speed (docs/api.md, "Launch configurations").
local type, next = type, next
local keys = require("gpujit.keys")

local KNOWN = { global = true, group = true, stream = true }
local CHECK_FIRST, CHECK_EVERY = 8, 256

-- A key of cfg that is not in KNOWN, or nil (a fourth key is never known).
local function unknown_key(cfg)
  local k = next(cfg)
  if k == nil or KNOWN[k] == nil then return k end
  k = next(cfg, k)
  if k == nil or KNOWN[k] == nil then return k end
  k = next(cfg, k)
  if k == nil or KNOWN[k] == nil then return k end
  return next(cfg, k)
end

return function(raise)
  local function cfgerr(K, why)
    raise("bad launch configuration for kernel '" .. K.name .. "': " .. why)
  end

  local function check_keys(K, cfg)
    local bad = unknown_key(cfg)
    if bad ~= nil then cfgerr(K, keys.message(bad, KNOWN, "the launch configuration")) end
  end

  -- Sizes are whole numbers below 2^51, so that every id is (the typer's
  -- ranges count on it: docs/typing.md).
  local function isint(x)
    return type(x) == "number" and x >= 0 and x % 1 == 0 and x < 2251799813685248
  end

  local function set_dims(K, d, cfg)
    local tc = type(cfg)
    if tc == "number" then
      if not isint(cfg) then
        cfgerr(K, "the number of work items must be a non-negative integer below 2^51, got " .. cfg)
      end
      d.ndim = 1
      d.global[0], d.global[1], d.global[2] = cfg, 1, 1
      d.group[0], d.group[1], d.group[2] = 0, 0, 0
      return cfg > 0, false, cfg >= 2147483648
    elseif tc ~= "table" then
      cfgerr(K, "expected a number or a table { global = ..., group = ... }, got " .. tc)
    end
    local n = (K._ncfg or 0) + 1       -- the tables this kernel got
    K._ncfg = n
    if n <= CHECK_FIRST or n % CHECK_EVERY == 0 then check_keys(K, cfg) end
    local g, grp = cfg.global, cfg.group
    local ndim, x, y, z
    if type(g) == "number" then
      ndim, x, y, z = 1, g, 1, 1
    elseif type(g) == "table" then
      ndim = #g
      if ndim < 1 or ndim > 3 then
        cfgerr(K, "'global' must have 1 to 3 sizes, got " .. ndim)
      end
      x, y, z = g[1], g[2] or 1, g[3] or 1
    elseif g == nil then
      cfgerr(K, "the table needs 'global' (a number or {nx, ny [, nz]})")
    else
      cfgerr(K, "'global' must be a number or {nx, ny [, nz]}, got " .. type(g))
    end
    if not (isint(x) and isint(y) and isint(z)) then
      cfgerr(K, "'global' sizes must be non-negative integers below 2^51")
    end
    d.ndim = ndim
    d.global[0], d.global[1], d.global[2] = x, y, z
    local partial = false
    local huge = x >= 2147483648 or y >= 2147483648 or z >= 2147483648
    if grp == nil then
      d.group[0], d.group[1], d.group[2] = 0, 0, 0
    else
      local gx, gy, gz
      if type(grp) == "number" then
        if ndim ~= 1 then
          cfgerr(K, "'group' must have the same shape as 'global' (" .. ndim .. " sizes)")
        end
        gx, gy, gz = grp, 1, 1
      elseif type(grp) == "table" then
        if #grp ~= ndim then
          cfgerr(K, "'group' must have the same shape as 'global' (" .. ndim .. " sizes), got "
            .. #grp)
        end
        gx, gy, gz = grp[1], grp[2] or 1, grp[3] or 1
      else
        cfgerr(K, "'group' must be a number or {gx, gy [, gz]}, got " .. type(grp))
      end
      if not (isint(gx) and isint(gy) and isint(gz) and gx > 0 and gy > 0 and gz > 0) then
        cfgerr(K, "'group' sizes must be positive integers")
      end
      d.group[0], d.group[1], d.group[2] = gx, gy, gz
      partial = x % gx ~= 0 or y % gy ~= 0 or z % gz ~= 0
      huge = huge or gx >= 2147483648 or gy >= 2147483648 or gz >= 2147483648
    end
    return x * y * z > 0, partial, huge, cfg.stream
  end

  return set_dims
end
