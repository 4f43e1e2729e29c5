-- What the rank scripts of spec/mpi/ share (spec/mpi/mpi_spec.lua runs
-- them under mpirun).  A failed check raises; the script runs under
-- mpi.run, so the failure ends the whole job with its message and rank.
--
--   local C = require("spec.mpi.check")   -- after require("gpujit.mpi")
--   C.eq(got, want, what); C.ok(cond, what); C.raises(fn, text, what)
--   C.backends    GPUJIT_SPEC_BACKENDS as a list (default { "cpu" })
--   C.done(name)  prints "ok NAME rank R/N: K checks", what the driver counts
local mpi = require("gpujit.mpi")

local C = { n = 0, backends = {} }

for b in (os.getenv("GPUJIT_SPEC_BACKENDS") or "cpu"):gmatch("[^,%s]+") do
  C.backends[#C.backends + 1] = b
end

local function show(v)
  if type(v) == "table" then
    local out = {}
    for i = 1, #v do out[i] = tostring(v[i]) end
    return "{" .. table.concat(out, ", ") .. "}"
  end
  return tostring(v)
end

function C.ok(cond, what)
  C.n = C.n + 1
  if not cond then error("rank " .. mpi.rank .. ": check failed: " .. what, 2) end
end

-- Equal: numbers bitwise (as LuaJIT compares them), tables element by element.
function C.eq(got, want, what)
  C.n = C.n + 1
  local same = got == want
  if type(got) == "table" and type(want) == "table" then
    same = #got == #want
    for i = 1, #want do same = same and got[i] == want[i] end
  end
  if not same then
    error("rank " .. mpi.rank .. ": " .. what .. ": got " .. show(got) .. ", want " .. show(want), 2)
  end
end

-- fn() raises an error whose message contains each of the strings in text.
function C.raises(fn, text, what)
  C.n = C.n + 1
  local ok, err = pcall(fn)
  err = tostring(err)
  local found = not ok
  for _, t in ipairs(type(text) == "table" and text or { text }) do
    found = found and err:find(t, 1, true) ~= nil
  end
  if not found then
    error("rank " .. mpi.rank .. ": " .. what .. ": expected an error with "
      .. show(text) .. ", got " .. (ok and "none" or err), 2)
  end
end

function C.done(name)
  io.stdout:write(string.format("ok %s rank %d/%d: %d checks\n", name, mpi.rank, mpi.size, C.n))
  io.stdout:flush()
end

return C
