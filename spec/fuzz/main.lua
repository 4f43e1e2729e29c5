-- spec/fuzz/main.lua: differential fuzzing from the command line
-- (`make fuzz N=... SEED=...`; docs/fuzzing.md).
--
--   luajit spec/fuzz/main.lua [N [SEED]]     N kernels from seed SEED on
--                                            the backends of GPUJIT_SPEC_BACKENDS
--   luajit spec/fuzz/main.lua --repro FILE   run one reproducer
--   luajit spec/fuzz/main.lua --grad [N [SEED]]   gradient mode (spec/fuzz/grad.lua):
--                                            N kernels' gradients against finite
--                                            differences and forward mode, on
--                                            every backend listed (sim too)
--   luajit spec/fuzz/main.lua --deriv [N [SEED]]  derivatives inside kernels
--                                            (spec/fuzz/grad_inner.lua): N device
--                                            functions' gpu.gradient against finite
--                                            differences and sim's dual numbers
--
--   luajit spec/fuzz/main.lua --lua [N [SEED]]   every kernel generated as a
--                                            "double" one and compiled with
--                                            precision = "lua" (docs/typing.md):
--                                            float arrays compared bit for bit
--
-- Kernels run C.BATCH at a time, compiled together (check.lua, run_batch);
-- a failing one is run again alone, shrunk, and written as a reproducer under $GPUJIT_FUZZ_OUT
-- (default build/fuzz/); the path is printed.  Exit status 1 when any kernel
-- failed.

local GG = require("spec.fuzz.gen_groups")
local C = require("spec.fuzz.check")
local S = require("spec.fuzz.shrink")
local H = require("spec.helpers")

local backends = H.compilers

if arg[1] == "--repro" then
  local case = dofile(arg[2])
  local fails, why = C.run_all(case, backends)
  if not fails then print("not a valid kernel: " .. why); os.exit(2) end
  for _, f in ipairs(fails) do print(f.bk .. ": " .. f.class .. ": " .. f.msg) end
  print(#fails == 0 and "agrees with the oracle" or "fails")
  os.exit(#fails == 0 and 0 or 1)
end

if arg[1] == "--grad" or arg[1] == "--deriv" then
  local mode = arg[1]
  local GR = require(mode == "--grad" and "spec.fuzz.grad" or "spec.fuzz.grad_inner")
  local n, seed0 = tonumber(arg[2]) or 1000, tonumber(arg[3]) or os.time()
  backends = H.backends   -- sim too: its derivatives run on dual numbers (gpujit.adsim)
  print(string.format("fuzz %s: %d kernels from seed %d on %s, %d per compile", mode, n, seed0,
    table.concat(backends, ","), GR.BATCH))
  local t0, bad = os.time(), 0
  for _, bk in ipairs(backends) do
    local st = { fails = 0, refused = 0, skipped = 0, unsmooth = 0 }
    for b = seed0, seed0 + n - 1, GR.BATCH do
      local batch = {}
      for s = b, math.min(seed0 + n - 1, b + GR.BATCH - 1) do batch[#batch + 1] = GR.generate(s) end
      for j, r in ipairs(GR.run_batch(batch, bk)) do
        local c = batch[j]
        if #r.fails > 0 then
          st.fails = st.fails + 1
          print(string.format("seed %d FAILS on %s:\n  %s\n%s", c.seed, bk, table.concat(r.fails, "\n  "),
            GR.source({ c })))
        end
        if r.refused then
          st.refused = st.refused + 1
          print(string.format("seed %d refused on %s: %s", c.seed, bk, r.refused:sub(1, 300)))
        end
        if r.skipped then st.skipped = st.skipped + 1 end
        st.unsmooth = st.unsmooth + r.unsmooth
      end
    end
    print(string.format("fuzz %s on %s: %d kernels, %d mismatches, %d refused, %d skipped (out of "
      .. "range), %d elements not compared (not smooth there), %d s", mode, bk, n, st.fails, st.refused,
      st.skipped, st.unsmooth, os.time() - t0))
    bad = bad + st.fails
  end
  os.exit(bad == 0 and 0 or 1)
end

local as_lua = arg[1] == "--lua"
if as_lua then table.remove(arg, 1) end
local n = tonumber(arg[1]) or 1000
local seed0 = tonumber(arg[2]) or os.time()
local outdir = os.getenv("GPUJIT_FUZZ_OUT") or "build/fuzz"
os.execute("mkdir -p '" .. outdir .. "'")

local failed, invalid = 0, 0
local t0 = os.time()

-- What the cpu target's work-item vectorizer did with each compile (the
-- compile event's note): how many were vectorized, and why the others
-- were not (the reason without its line), most frequent first at the end.
local vec = { compiles = 0, vectorized = 0, why = {} }
require("gpujit").on_compile(function(e)
  if e.phase ~= "done" or e.backend ~= "cpu" or not e.note then return end
  vec.compiles = vec.compiles + 1
  if e.note:match("^vectorized") then
    vec.vectorized = vec.vectorized + 1
  else
    local why = e.note:match("^not vectorized: ([^;]*)") or e.note
    why = why:gsub(" at line %d+", "")
    vec.why[why] = (vec.why[why] or 0) + 1
  end
end)
local function vec_report()
  if vec.compiles == 0 then return end
  print(string.format("fuzz: cpu compiles vectorized: %d of %d (%.0f%%), %d kernel%s per compile",
    vec.vectorized, vec.compiles, 100 * vec.vectorized / vec.compiles, C.BATCH,
    C.BATCH == 1 and "" or "s"))
  local list = {}
  for why, k in pairs(vec.why) do list[#list + 1] = { why, k } end
  table.sort(list, function(a, b) return a[2] > b[2] or (a[2] == b[2] and a[1] < b[1]) end)
  for j = 1, math.min(#list, 8) do
    print(string.format("  not vectorized %5d: %s", list[j][2], list[j][1]))
  end
end

-- A failing case: confirmed alone, shrunk, written out.
local function report(case, f)
  failed = failed + 1
  print(string.format("seed %d FAILS on %s: %s: %s", case.seed, f.bk, f.class, f.msg:sub(1, 300)))
  local alone = C.run(case, f.bk)
  local path = string.format("%s/seed%d_%s.lua", outdir, case.seed, f.bk)
  if not alone then
    S.write(path, case, string.format("seed %d, backend %s: fails only when compiled with other cases"
      .. " (C.run_batch)\n%s: %s", case.seed, f.bk, f.class, f.msg:sub(1, 400)))
    print("  fails only in its batch; not shrunk: " .. path)
    return
  end
  local small, tries = S.shrink(case, function(c) return C.still_fails(c, f.bk, alone) end)
  local again = C.run(small, f.bk) or alone
  S.write(path, small, string.format("seed %d, backend %s, precision %s\n%s: %s", case.seed, f.bk,
    small.precision, again.class, again.msg:sub(1, 400)))
  print(string.format("  shrunk in %d tries: %s", tries, path))
end

local verbose = os.getenv("GPUJIT_FUZZ_VERBOSE") == "1"

local function run(batch)
  if verbose then
    local s = {}
    for j, c in ipairs(batch) do s[j] = c.seed end
    io.stdout:write("batch ", table.concat(s, ","), "\n")
    io.stdout:flush()
  end
  for j, r in ipairs(C.run_batch(batch, backends)) do
    if r.invalid then
      invalid = invalid + 1
      print(string.format("seed %d: generator produced an invalid kernel: %s", batch[j].seed, r.invalid))
    elseif #r.fails > 0 then
      report(batch[j], r.fails[1])
    end
  end
end

print(string.format("fuzz: %d kernels from seed %d on %s, %d per compile%s", n, seed0,
  table.concat(backends, ","), C.BATCH, as_lua and ", precision = \"lua\"" or ""))
local pending, keys = {}, {}
for seed = seed0, seed0 + n - 1 do
  local case = GG.generate(seed, as_lua and { precision = "double" } or nil)
  if as_lua then case.precision = "lua" end
  local key = GG.batch_key(case)
  if not pending[key] then pending[key] = {}; keys[#keys + 1] = key end
  local list = pending[key]
  list[#list + 1] = case
  if #list == C.BATCH then
    run(list)
    pending[key] = {}
  end
end
for _, key in ipairs(keys) do if #pending[key] > 0 then run(pending[key]) end end
vec_report()
print(string.format("fuzz: %d kernels, %d failed, %d invalid, %d s", n, failed, invalid, os.time() - t0))
os.exit((failed == 0 and invalid == 0) and 0 or 1)
