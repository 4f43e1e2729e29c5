-- spec/fuzz/shrink.lua: cut a failing generated kernel down while it still
-- fails the same way, and write it out as a reproducer (docs/fuzzing.md).
--
--   local S = require("spec.fuzz.shrink")
--   local small = S.shrink(case, still_fails)   -- still_fails(case) -> bool
--   S.write(path, small, note)
--
-- Edits tried, smallest result first: fewer work items, dropping a device
-- function or a constant, dropping a statement, replacing an if or a loop by
-- its body, dropping an else, replacing an expression by a constant of its
-- kind or by one of its operands of the same kind (never across a node that
-- guards a range or the sign of zero: gen.lua marks those `keep`; never
-- for a work item's own index, marked `fixed`), zeroing
-- input data.  Each edit is kept when the edited case still fails; a case
-- that the oracle rejects (e.g. a variable whose declaration was dropped)
-- does not fail, so it is never kept.

local G = require("spec.fuzz.gen")
local GG = require("spec.fuzz.gen_groups")

local S = {}

local function deep_copy(v, seen)
  if type(v) ~= "table" then return v end
  seen = seen or {}
  if seen[v] then return seen[v] end
  local t = setmetatable({}, getmetatable(v))
  seen[v] = t
  for k, x in pairs(v) do t[k] = deep_copy(x, seen) end
  return t
end
S.copy = deep_copy

-- Statement fields holding expressions, by statement type.
local EXPR_FIELDS = { "e", "idx", "c", "a", "b", "lim" }

-- Call f(parent_table, key) for every expression node in the case, in a
-- fixed order (children after their parent).
local function each_expr(case, f)
  local function visit(tbl, key)
    f(tbl, key)
    local e = tbl[key]
    for j = 1, #e.c do visit(e.c, j) end
  end
  local function stmts(block)
    for _, st in ipairs(block) do
      for _, fld in ipairs(EXPR_FIELDS) do
        if type(st[fld]) == "table" and st[fld].f then visit(st, fld) end
      end
      for _, list in ipairs({ st.args, st.es }) do
        for j = 1, #list do visit(list, j) end
      end
      if st.body then stmts(st.body) end
      if st.els then stmts(st.els) end
    end
  end
  for _, fn in ipairs(case.fns) do stmts(fn.body) end
  stmts(case.body)
end

-- Call f(block) for every statement list.
local function each_block(case, f)
  local function visit(block)
    f(block)
    for _, st in ipairs(block) do
      if st.body then visit(st.body) end
      if st.els then visit(st.els) end
    end
  end
  for _, fn in ipairs(case.fns) do visit(fn.body) end
  visit(case.body)
end

local ATOMS = {
  i = { G.const_i(0), G.const_i(1) },
  L = { G.const_i(1) },
  d = { G.const_d(0.5) },
  f = { G.const_d(0.5) },
  b = { { f = "(0 < 1)", k = "b", c = {} }, { f = "(1 < 0)", k = "b", c = {} } },
}

-- The replacements of expression node e: constants of its kind, and
-- children of the same kind whose bound is no larger.
local function replacements(e)
  local out = {}
  if e.fixed then return out end
  for _, a in ipairs(ATOMS[e.k] or {}) do
    if a.f ~= e.f and (e.k ~= "i" or a.b <= (e.b or math.huge)) then out[#out + 1] = a end
  end
  if not e.keep then
    for _, ch in ipairs(e.c) do
      local same = ch.k == e.k or (e.k == "L" and ch.k == "i")
      if same and (e.k ~= "i" or (ch.b or math.huge) <= (e.b or math.huge)) then out[#out + 1] = ch end
    end
  end
  return out
end

-- Launch edits of a case with case.launch (gen_groups.lua): per dimension,
-- one group fewer (or one work item fewer, without work groups), then a
-- smaller group; case.N follows.
local function dims(t) if type(t) == "number" then return { t } end return t end
local function launch_edits(case, out)
  local L = case.launch
  local function edit(fn)
    out[#out + 1] = function(c)
      local gl, gr = dims(c.launch.global), c.launch.group and dims(c.launch.group)
      if fn(gl, gr) == false then return false end
      if type(c.launch.global) == "number" then c.launch.global = gl[1] end
      if gr and type(c.launch.group) == "number" then c.launch.group = gr[1] end
      c.N = GG.count(c.launch)
    end
  end
  for d = 1, #dims(L.global) do
    edit(function(gl, gr)
      local step = (case.wg and gr) and gr[d] or 1
      if gl[d] - step < 1 then return false end
      gl[d] = gl[d] - step
    end)
    if L.group then
      -- halve the group; with work groups global stays a multiple of it
      edit(function(gl, gr)
        if gr[d] <= 1 then return false end
        local ng = gl[d] / gr[d]
        gr[d] = math.floor(gr[d] / 2)
        if case.wg then gl[d] = gr[d] * ng end
      end)
    end
  end
end

-- Every candidate edit, as a function that edits a copy of the case in
-- place (returning false when it does not apply).
local function candidates(case)
  local out = {}
  if case.launch then
    launch_edits(case, out)
  elseif case.N > 1 then
    out[#out + 1] = function(c) c.N = 1 end
    out[#out + 1] = function(c) c.N = math.floor(c.N / 2) end
    out[#out + 1] = function(c) c.N = c.N - 1 end
  end
  for j = #case.fns, 1, -1 do
    out[#out + 1] = function(c) table.remove(c.fns, j) end
  end
  for j = #case.consts, 1, -1 do
    out[#out + 1] = function(c) table.remove(c.consts, j) end
  end
  -- statements: number the blocks in each_block's order
  local nb = 0
  each_block(case, function(block)
    nb = nb + 1
    local bi = nb
    for j = #block, 1, -1 do
      local st = block[j]
      local function edit(fn)
        out[#out + 1] = function(c)
          local k = 0
          each_block(c, function(b)
            k = k + 1
            if k == bi then fn(b) end
          end)
        end
      end
      -- keep: a statement that later ones need to stay race-free (a
      -- shared-array write, its barrier: gen_groups.lua)
      if st.t ~= "return" and not st.keep then edit(function(b) table.remove(b, j) end) end
      if st.body then
        edit(function(b)
          local s = table.remove(b, j)
          for m = #s.body, 1, -1 do table.insert(b, j, s.body[m]) end
        end)
      end
      if st.els then edit(function(b) b[j].els = nil end) end
    end
  end)
  -- expressions
  local ne = 0
  each_expr(case, function(tbl, key)
    ne = ne + 1
    local ei = ne
    for r = 1, #replacements(tbl[key]) do
      out[#out + 1] = function(c)
        local k = 0
        local done = false
        each_expr(c, function(t2, k2)
          k = k + 1
          if k == ei and not done then
            done = true
            t2[k2] = deep_copy(replacements(t2[k2])[r])
          end
        end)
      end
    end
  end)
  -- data: zero whole arrays, then single values
  for _, sp in ipairs(GG.layout(case)) do
    local name = sp.name
    out[#out + 1] = function(c)
      local t = c.data[name]
      local any = false
      for j = 1, #t do if t[j] ~= 0 then any = true end t[j] = 0 end
      return any
    end
  end
  return out
end

-- Output arrays hold 4 elements per work item (a struct array's data: 4
-- values per element).
local function fit_data(c)
  for _, sp in ipairs(GG.layout(c)) do
    local name = sp.name
    if name:sub(1, 1) == "o" then
      local t = c.data[name]
      local keep = 4 * c.N * (sp.box == "struct" and 4 or 1)
      for j = #t, keep + 1, -1 do t[j] = nil end
    end
  end
end

-- Shrink case while still_fails(case) holds.  max_tries bounds the number
-- of candidate runs (default 3000).  Returns the smallest failing case.
function S.shrink(case, still_fails, max_tries)
  max_tries = max_tries or 3000
  local cur = deep_copy(case)
  local tries = 0
  local progress = true
  while progress and tries < max_tries do
    progress = false
    for _, edit in ipairs(candidates(cur)) do
      tries = tries + 1
      if tries > max_tries then break end
      local c = deep_copy(cur)
      if edit(c) ~= false then
        fit_data(c)
        if still_fails(c) then
          cur = c
          progress = true
          break
        end
      end
    end
  end
  return cur, tries
end

-- A reproducer: a Lua file returning the case's source and data, loaded by
-- spec/fuzz_repro_spec.lua (and by `luajit spec/fuzz/main.lua --repro FILE`).
function S.render(case, note)
  local out = { "-- gpujit fuzz reproducer (docs/fuzzing.md)" }
  for l in (note or ""):gmatch("[^\n]+") do out[#out + 1] = "-- " .. l end
  out[#out + 1] = "return {"
  out[#out + 1] = string.format("  precision = %q, N = %d, M = %d,", case.precision, case.N, case.M)
  if case.launch then
    -- a gen_groups.lua case: its launch (and so its arguments: GG.layout)
    local function shape(t)
      if type(t) == "number" then return tostring(t) end
      return "{ " .. table.concat(t, ", ") .. " }"
    end
    out[#out + 1] = "  launch = { global = " .. shape(case.launch.global) ..
      (case.launch.group and (", group = " .. shape(case.launch.group)) or "") .. " },"
    if case.wg then out[#out + 1] = "  wg = true," end
  end
  out[#out + 1] = "  data = {"
  local s = case.data.s
  out[#out + 1] = "    s = " .. (s ~= s and "0 / 0" or s == math.huge and "math.huge"
    or s == -math.huge and "-math.huge" or (s == 0 and 1 / s < 0) and "-0.0"
    or string.format("%.17g", s)) .. ","
  for _, sp in ipairs(GG.layout(case)) do
    local name = sp.name
    local vals = {}
    for j, v in ipairs(case.data[name]) do
      vals[j] = (v == math.floor(v) and math.abs(v) < 2 ^ 53) and string.format("%.0f", v)
        or string.format("%.17g", v)
      if v == 0 and 1 / v < 0 then vals[j] = "-0.0" end
    end
    -- at most 10 values a line (luacheck's line length)
    local lines = {}
    for j = 1, #vals, 10 do lines[#lines + 1] = table.concat(vals, ", ", j, math.min(j + 9, #vals)) end
    if #lines <= 1 then
      out[#out + 1] = "    " .. name .. " = { " .. (lines[1] or "") .. " },"
    else
      out[#out + 1] = "    " .. name .. " = {"
      for _, l in ipairs(lines) do out[#out + 1] = "      " .. l .. "," end
      out[#out + 1] = "    },"
    end
  end
  out[#out + 1] = "  },"
  out[#out + 1] = "  source = [==["
  out[#out + 1] = (case.source or GG.source(case)) .. "]==],"
  out[#out + 1] = "}"
  return table.concat(out, "\n") .. "\n"
end

function S.write(path, case, note)
  local f = assert(io.open(path, "w"))
  f:write(S.render(case, note))
  f:close()
end

return S
