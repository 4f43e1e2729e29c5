-- gpujit.mpi under mpirun (`make test-mpi`; docs/distributed.md): each
-- case starts an MPI job of 1, 2 or 3 ranks on this machine (loopback,
-- --oversubscribe) running a rank script of spec/mpi/ or an example, and
-- checks its output: every rank's "ok NAME rank R/N: K checks" line (the
-- scripts check themselves, spec/mpi/check.lua; a failed check ends the
-- job with its message), the examples' results across rank counts, and
-- the message and status of a job in which one rank fails.
--
-- Each job runs under `timeout` (GJ_MPI_SPEC_TIMEOUT seconds, default 180)
-- so that a hang fails the case instead of the suite; its ranks get a fresh
-- GPUJIT_CACHE_DIR and no GPUJIT_THREADS (the thread split is checked).
-- GJ_MPIRUN replaces the launcher (default: Open MPI's mpirun with
-- --oversubscribe, and --allow-run-as-root as root; MPICH's mpiexec).
-- Without an MPI library or launcher every case is pending, with the reason.
local ffi = require("ffi")

local function sh(cmd)
  local p = assert(io.popen(cmd .. " 2>&1; echo \"rc=$?\""))
  local out = p:read("*a")
  p:close()
  local rc = tonumber(out:match("rc=(%d+)%s*$"))
  return out:gsub("rc=%d+%s*$", ""), rc
end

local function trim(s) return (s:gsub("%s+$", "")) end

-- Is MPI here?  The library (gpujit.mpi_abi loads it without MPI_Init) and
-- a launcher.
local abi_ok, abi = pcall(require, "gpujit.mpi_abi")
local why
local launcher = os.getenv("GJ_MPIRUN")
if not abi_ok then
  why = tostring(abi)
elseif not launcher or launcher == "" then
  local name = abi.impl == "openmpi" and "mpirun" or "mpiexec"
  local path = trim(sh("command -v " .. name))
  if not path:match("^/") then
    why = "no " .. name .. " on PATH (Debian: apt-get install openmpi-bin)"
  elseif abi.impl == "openmpi" then
    local root = trim(sh("id -u")) == "0"
    launcher = path .. " --oversubscribe --bind-to none" .. (root and " --allow-run-as-root" or "")
  else
    launcher = path
  end
end

local timeout = tonumber(os.getenv("GJ_MPI_SPEC_TIMEOUT") or "") or 180
local backends = os.getenv("GPUJIT_SPEC_BACKENDS") or "cpu"
local compilers = {}
for b in backends:gmatch("[^,%s]+") do
  if b ~= "sim" then compilers[#compilers + 1] = b end
end

local function tmpdir()
  local d = trim(sh("mktemp -d /tmp/gpujit-mpi-spec-XXXXXX"))
  assert(d:match("^/tmp/gpujit%-mpi%-spec%-"), d)
  return d
end

-- Runs `luajit script args` on np ranks; returns the output and the status
-- (124 or 137: timed out).  env: extra NAME=value words.
local function job(np, script, args, env)
  local dir = tmpdir()
  local cmd = string.format(
    "env -u GPUJIT_THREADS GPUJIT_CACHE_DIR=%s GJ_MPI_SPEC_DIR=%s GPUJIT_SPEC_BACKENDS=%s "
      .. "OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_mpi_yield_when_idle=1 "
      .. "%s timeout -k 5 %d %s -np %d luajit %s %s",
    dir .. "/cache", dir, backends, env or "", timeout, launcher, np, script, args or "")
  os.execute("mkdir -p " .. dir .. "/cache")
  local out, rc = sh(cmd)
  os.execute("rm -rf '" .. dir .. "'")
  return out, rc
end

-- A rank script that checks itself: status 0 and every rank's ok line.
local function passes(np, name)
  local out, rc = job(np, "spec/mpi/" .. name .. ".lua")
  assert(rc ~= 124 and rc ~= 137, name .. " on " .. np .. " ranks timed out:\n" .. out)
  assert(rc == 0, name .. " on " .. np .. " ranks failed (status " .. tostring(rc) .. "):\n" .. out)
  for r = 0, np - 1 do
    local k = out:match("ok " .. name .. " rank " .. r .. "/" .. np .. ": (%d+) checks")
    assert(k and tonumber(k) > 0, "rank " .. r .. " of " .. name .. " did not finish:\n" .. out)
  end
  return out
end

describe("gpujit.mpi under mpirun", function()
  if why then
    pending("MPI is not available: " .. why)
    return
  end

  it("reports the library it bound", function()
    assert.is_true(abi.impl == "openmpi" or abi.impl == "mpich")
    assert.is_truthy(abi.path:match("libmpi"))
    assert.are.equal(abi.impl == "openmpi" and "void *" or "int", abi.IMPL[abi.impl].handle)
    -- a program's own declaration of an MPI name clashes with nothing of gpujit's
    assert.has_no.errors(function() ffi.cdef("int MPI_Init(int *argc, char ***argv);") end)
  end)

  for _, np in ipairs({ 2, 3 }) do
    it("point to point on every buffer kind and on ranges, " .. np .. " ranks", function()
      passes(np, "p2p")
    end)
    it("every collective, the device by local rank and the cpu thread split, "
      .. np .. " ranks", function()
      passes(np, "collectives")
    end)
  end

  it("gpujit loaded first: mpi.threads is the pool's size, and a warning when not the share",
    function()
    local out = passes(2, "late")
    local share, pool = out:match("late: share (%d+) pool (%d+)")
    assert(share, out)
    local warned = out:find("gpujit.mpi: gpujit was loaded before gpujit.mpi", 1, true) ~= nil
    assert.are.equal(share ~= pool, warned)
  end)

  it("3 ranks on one fresh disk cache: one compiles, the others hit", function()
    passes(3, "cache")
  end)

  for _, mode in ipairs({ "run", "plain" }) do
    it("an error on one rank ends the job with its message (" .. mode .. ")", function()
      local out, rc = job(3, "spec/mpi/abort.lua", "", "GJ_MPI_ABORT=" .. mode)
      assert(rc ~= 124 and rc ~= 137, "the job hung:\n" .. out)
      assert.are_not.equal(0, rc)
      assert.is_truthy(out:find("deliberate failure on the last rank", 1, true), out)
      if mode == "run" then
        assert.is_truthy(out:find("gpujit.mpi: rank 2 of 3: deliberate failure", 1, true), out)
      end
    end)
  end

  for _, bk in ipairs(compilers) do
    it("examples/mpi_heat.lua on " .. bk .. ": bit for bit the same at 1, 2 and 3 ranks", function()
      local fields, lines = {}, {}
      for np = 1, 3 do
        local dir = tmpdir()
        local file = dir .. "/field.bin"
        local out, rc = job(np, "examples/mpi_heat.lua", bk .. " 96 48 30", "GJ_HEAT_OUT=" .. file)
        assert(rc == 0, "mpi_heat on " .. np .. " ranks failed (status " .. tostring(rc) .. "):\n"
          .. out)
        lines[np] = out:match("mpi_heat: ok, [^\n]*")
        assert(lines[np], out)
        local fh = assert(io.open(file, "rb"))
        fields[np] = fh:read("*a")
        fh:close()
        os.execute("rm -rf '" .. dir .. "'")
      end
      assert.are.equal(96 * 48 * 8, #fields[1])
      assert(fields[2] == fields[1], "2 ranks differ from 1:\n" .. lines[1] .. "\n" .. lines[2])
      assert(fields[3] == fields[1], "3 ranks differ from 1:\n" .. lines[1] .. "\n" .. lines[3])
    end)

    it("examples/mpi_pi.lua on " .. bk .. ": the same hits at 1, 2 and 3 ranks", function()
      local hits = {}
      for np = 1, 3 do
        local out, rc = job(np, "examples/mpi_pi.lua", bk .. " 65536 7")
        assert(rc == 0, "mpi_pi on " .. np .. " ranks failed:\n" .. out)
        hits[np] = out:match("mpi_pi: ok, %d+ ranks on %S+, 65536 samples, seed 7: (%d+) hits")
        assert(hits[np], out)
      end
      assert.are.equal(hits[1], hits[2])
      assert.are.equal(hits[1], hits[3])
    end)
  end
end)
