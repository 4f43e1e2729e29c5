-- gpujit.mpi: kernels on every rank of an MPI job (docs/distributed.md;
-- the API is in docs/api.md, "MPI").
--
--   local mpi = require("gpujit.mpi")   -- first: before require("gpujit")
--   mpi.run(function()
--     local gpu = require("gpujit")     -- on this rank's device
--     ...
--   end)
--
-- Loading the module initializes MPI (when the program has not), as mpi4py
-- does on import, and then:
--   * sets MPI_ERRORS_RETURN on the world communicator, so that an MPI error
--     comes back as a code and becomes a Lua error naming the call and the
--     rank (check below);
--   * splits the world by shared memory (MPI_Comm_split_type): local_rank
--     and local_size are this rank's place on its node;
--   * divides the node's CPUs among its ranks: GPUJIT_THREADS (the cpu
--     backend's pool, runtimes/pool.c) defaults to this rank's share when
--     it is unset and gpujit is not loaded yet (the pool's size is read
--     when gpujit opens the cpu backend);
--   * loads gpujit and makes current the device of the default backend
--     whose index is local_rank modulo that backend's device count.
-- MPI is finalized by mpi.finalize() or at the end of mpi.run, never by
-- itself: as in C, a rank that ends without it ends the job abnormally
-- (and one that fails cannot hang in MPI_Finalize waiting for the others).
-- The library binding is gpujit.mpi_abi, the buffers gpujit.mpi_buf.
local ffi = require("ffi")
local bit = require("bit")
local abi = require("gpujit.mpi_abi")
local buf = require("gpujit.mpi_buf")

local f, K = abi.f, abi.K

local M = { impl = abi.impl, library = abi.path, ANY_SOURCE = K.ANY_SOURCE, ANY_TAG = K.ANY_TAG,
            PROC_NULL = K.PROC_NULL, view = buf.view }

local int1 = ffi.typeof("int[1]")

---------------------------------------------------------------------------
-- Errors.

local function errstr(code)
  local s, n = ffi.new("char[?]", K.MAX_ERROR_STRING + 1), int1()
  if f.Error_string(code, s, n) ~= 0 then return "MPI error " .. code end
  return ffi.string(s, n[0])
end

-- rc of MPI_<name>: raises "MPI_<name> failed on rank r of n: message".
local function check(rc, name, level)
  if rc ~= 0 then
    error("gpujit.mpi: MPI_" .. name .. " failed on rank " .. tostring(M.rank) .. " of "
      .. tostring(M.size) .. ": " .. errstr(rc) .. " (error code " .. rc .. ")", (level or 1) + 1)
  end
end

local function argerr(fname, msg, level) error(fname .. ": " .. msg, level + 1) end

---------------------------------------------------------------------------
-- Initialization.

local world = K.COMM_WORLD
do
  local flag = int1()
  check(f.Initialized(flag), "Initialized")
  M.initialized_here = flag[0] == 0
  if M.initialized_here then
    check(f.Init(nil, nil), "Init")
  end
  check(f.Comm_set_errhandler(world, K.ERRORS_RETURN), "Comm_set_errhandler")
  local r = int1()
  check(f.Comm_rank(world, r), "Comm_rank")
  M.rank = r[0]
  check(f.Comm_size(world, r), "Comm_size")
  M.size = r[0]
  local out = abi.handle_arr(1)
  check(f.Comm_split_type(world, K.COMM_TYPE_SHARED, M.rank, K.INFO_NULL, out), "Comm_split_type")
  M._node = out[0]
  check(f.Comm_set_errhandler(M._node, K.ERRORS_RETURN), "Comm_set_errhandler")
  check(f.Comm_rank(M._node, r), "Comm_rank")
  M.local_rank = r[0]
  check(f.Comm_size(M._node, r), "Comm_size")
  M.local_size = r[0]
  M.cuda_aware = abi.cuda_support()
  local s, n = ffi.new("char[?]", 8192), int1()
  M.version = f.Get_library_version(s, n) == 0 and ffi.string(s, n[0]):gsub("%s+$", "") or "?"
end

local finalized = false
function M.finalize()
  if finalized then return end
  local flag = int1()
  if f.Finalized(flag) == 0 and flag[0] == 0 then
    check(f.Finalize(), "Finalize", 2)
  end
  finalized = true
end

-- mpi.abort([message [, code]]): the message on stderr, then the whole job
-- ends (MPI_Abort).  Does not return.
function M.abort(msg, code)
  io.stderr:write("gpujit.mpi: rank ", tostring(M.rank), " of ", tostring(M.size), ": ",
    tostring(msg or "aborted"), "\n")
  io.stderr:flush()
  f.Abort(world, code or 1)
  os.exit(code or 1)
end

-- mpi.run(main, ...): main(...); an error it raises ends the whole job
-- with its message and traceback (mpi.abort), so that no rank waits for
-- one that has failed; then MPI is finalized.  Returns what main returns.
function M.run(main, ...)
  if type(main) ~= "function" then
    argerr("mpi.run", "argument #1 must be a function, got " .. type(main), 2)
  end
  local res = { xpcall(main, debug.traceback, ...) }
  if not res[1] then M.abort(res[2], 1) end
  M.finalize()
  return unpack(res, 2, table.maxn(res))
end

---------------------------------------------------------------------------
-- The cpu threads: the node's CPUs divided among its ranks.

pcall(ffi.cdef, "int gj_mpi_sched_getaffinity(int pid, size_t n, uint8_t *mask) "
  .. "__asm__(\"sched_getaffinity\");")
pcall(ffi.cdef, "int gj_mpi_setenv(const char *k, const char *v, int o) __asm__(\"setenv\");")

local function popcount(mask, n)
  local c = 0
  for i = 0, n - 1 do
    local b = mask[i]
    while b ~= 0 do
      c = c + bit.band(b, 1)
      b = bit.rshift(b, 1)
    end
  end
  return c
end

-- The share of `cpus` CPUs of local rank lr among ls ranks: an even split,
-- the first cpus % ls ranks one more; at least 1.
function M.thread_share(cpus, lr, ls)
  local q, r = math.floor(cpus / ls), cpus % ls
  return math.max(1, q + (lr < r and 1 or 0))
end

do
  -- the union of the ranks' affinity masks is the node's CPUs for this job
  local n = 128
  local mask = ffi.new("uint8_t[?]", n)
  local mine
  if ffi.C.gj_mpi_sched_getaffinity(0, n, mask) == 0 then
    mine = popcount(mask, n)
  else
    for i = 0, n - 1 do mask[i] = 0 end
    mask[0] = 1
    mine = 1
  end
  local all = ffi.new("uint8_t[?]", n)
  check(f.Allreduce(mask, all, n, K.UINT8_T, K.BOR, M._node), "Allreduce")
  M.node_cpus = popcount(all, n)
  M.threads = math.min(mine, M.thread_share(M.node_cpus, M.local_rank, M.local_size))
  local env = os.getenv("GPUJIT_THREADS")
  if env and env ~= "" then
    M.threads = tonumber(env) or M.threads
  elseif package.loaded.gpujit == nil then
    ffi.C.gj_mpi_setenv("GPUJIT_THREADS", tostring(M.threads), 1)
  else
    M._late = true   -- the cpu backend's pool has its size already
  end
end

---------------------------------------------------------------------------
-- Devices: this rank's by its node-local rank.

-- The 0-based index local_rank % count (count devices of a backend).
function M.device_index(local_rank, count)
  if count < 1 then return nil end
  return local_rank % count
end

local gpu = require("gpujit")

-- Loaded after gpujit: the cpu backend kept its threads.  mpi.threads says
-- what it has; a node with several ranks is told once, on stderr.
if M._late then
  for _, d in ipairs(gpu.devices()) do
    -- the device this process's own thread pool runs, told by its facts (a
    -- compiled backend, bk >= 0, whose kernels use host memory as it is)
    if d.host_shared and d.bk >= 0 and d.compute_units ~= M.threads then
      if M.local_size > 1 and M.local_rank == 0 then
        io.stderr:write(string.format("gpujit.mpi: gpujit was loaded before gpujit.mpi, so the "
          .. "cpu backend runs %d threads on each of the %d ranks of this node (%d CPUs): "
          .. "require gpujit.mpi first, or set GPUJIT_THREADS (docs/distributed.md)\n",
          d.compute_units, M.local_size, M.node_cpus))
      end
      M.threads = d.compute_units
    end
  end
end

-- mpi.use([backend]): makes current the device of backend (default: the
-- current one) whose index is local_rank % its device count; returns the entry.
function M.use(backend)
  backend = backend or gpu.backend()
  if backend == nil then return nil end
  local list = {}
  for _, d in ipairs(gpu.devices()) do
    if d.backend == backend then list[#list + 1] = d end
  end
  local i = M.device_index(M.local_rank, #list)
  if i == nil then
    argerr("mpi.use", "backend " .. tostring(backend) .. " has no device", 2)
  end
  M.device = gpu.use(list[i + 1])
  return M.device
end

do
  local want = os.getenv("GPUJIT_BACKEND") or ""
  if gpu.backend() and not want:find(":") then   -- "cuda:1" names the device itself
    M.use()
  else
    M.device = gpu.device()
  end
end

---------------------------------------------------------------------------
-- Buffers, datatypes and operations.

local DT = {
  double = K.DOUBLE, float = K.FLOAT, bool = K.C_BOOL,
  int8_t = K.INT8_T, int16_t = K.INT16_T, int32_t = K.INT32_T, int64_t = K.INT64_T,
  uint8_t = K.UINT8_T, uint16_t = K.UINT16_T, uint32_t = K.UINT32_T, uint64_t = K.UINT64_T,
}

-- (count, datatype) for MPI: the element's type, or its bytes (structs).
local function dt_of(b)
  local dt = DT[b.elem]
  if dt then return b.count, dt end
  return b.count * b.esize, K.BYTE
end

local OPS = { sum = K.SUM, ["+"] = K.SUM, min = K.MIN, max = K.MAX }

local function op_of(op, fname, level)
  local o = OPS[op]
  if not o then
    argerr(fname, "op must be \"sum\" (or \"+\"), \"min\" or \"max\", got " .. tostring(op),
      level + 1)
  end
  return o
end

local function rank_arg(r, what, fname, level, any)
  if type(r) ~= "number" or r ~= math.floor(r)
      or not ((r >= 0 and r < M.size) or r == K.PROC_NULL or (any and r == K.ANY_SOURCE)) then
    argerr(fname, what .. " must be a rank in [0, " .. M.size .. ")"
      .. (any and " or mpi.ANY_SOURCE" or "") .. ", got " .. tostring(r), level + 1)
  end
  return r
end

local function tag_arg(t, fname, level)
  if t == nil then return 0 end
  if type(t) ~= "number" or t ~= math.floor(t) then
    argerr(fname, "the tag must be a whole number, got " .. tostring(t), level + 1)
  end
  return t
end

local function open(v, fname, argn, mode)
  return buf.open(v, fname, argn, mode, M.cuda_aware, 2)
end

local function status_of(st, b)
  local n = int1()
  local count, dt = dt_of(b)
  check(f.Get_count(st, dt, n), "Get_count", 3)
  local c = n[0]
  if dt == K.BYTE and DT[b.elem] == nil and c >= 0 then c = c / b.esize end
  if count == 0 then c = 0 end
  return { source = st.source, tag = st.tag, count = c }
end

---------------------------------------------------------------------------
-- Point to point.

-- mpi.send(buf, dest [, tag])
function M.send(v, dest, tag)
  rank_arg(dest, "dest", "mpi.send", 2)
  tag = tag_arg(tag, "mpi.send", 2)
  local b = open(v, "mpi.send", 1, "in")
  local count, dt = dt_of(b)
  check(f.Send(b.ptr, count, dt, dest, tag, world), "Send", 2)
end

-- mpi.recv(buf, source [, tag]) -> buf, status { source, tag, count }
function M.recv(v, source, tag)
  rank_arg(source, "source", "mpi.recv", 2, true)
  tag = tag == nil and K.ANY_TAG or tag_arg(tag, "mpi.recv", 2)
  local b = open(v, "mpi.recv", 1, "out")
  local count, dt = dt_of(b)
  local st = abi.status_arr(1)
  check(f.Recv(b.ptr, count, dt, source, tag, world, st), "Recv", 2)
  b:finish()
  return v, status_of(st[0], b)
end

-- mpi.sendrecv(sendbuf, dest, recvbuf, source [, sendtag [, recvtag]])
-- -> recvbuf, status
function M.sendrecv(sv, dest, rv, source, stag, rtag)
  local fname = "mpi.sendrecv"
  rank_arg(dest, "dest", fname, 2)
  rank_arg(source, "source", fname, 2, true)
  stag = tag_arg(stag, fname, 2)
  rtag = rtag == nil and K.ANY_TAG or tag_arg(rtag, fname, 2)
  local sb = open(sv, fname, 1, "in")
  local rb = open(rv, fname, 3, "out")
  local sc, sdt = dt_of(sb)
  local rc, rdt = dt_of(rb)
  local st = abi.status_arr(1)
  check(f.Sendrecv(sb.ptr, sc, sdt, dest, stag, rb.ptr, rc, rdt, source, rtag, world, st),
    "Sendrecv", 2)
  rb:finish()
  return rv, status_of(st[0], rb)
end

-- Requests (isend, irecv): r:wait() -> status; r:test() -> done [, status].
local Request = {}
local request_mt = { __index = Request, __metatable = "gpujit.mpi.request" }
request_mt.__tostring = function(r)
  return "mpi request (" .. r.what .. (r.done and ", done)" or ", pending)")
end

local function complete(r, st)
  r.done = true
  r.b:finish()
  r.status = status_of(st, r.b)
  r.b = nil
  return r.status
end

function Request.wait(r)
  if r.done then return r.status end
  local st = abi.status_arr(1)
  check(f.Wait(r.h, st), "Wait", 2)
  return complete(r, st[0])
end

function Request.test(r)
  if r.done then return true, r.status end
  local st, flag = abi.status_arr(1), int1()
  check(f.Test(r.h, flag, st), "Test", 2)
  if flag[0] == 0 then return false end
  return true, complete(r, st[0])
end

local function request(b, what)
  return setmetatable({ h = abi.handle_arr(1), b = b, what = what, done = false }, request_mt)
end

-- mpi.isend(buf, dest [, tag]) -> request.  A table or a staged gpu.array
-- is copied now; an FFI array (or a gpu.array MPI reads in place) must not
-- change until the request completes.
function M.isend(v, dest, tag)
  rank_arg(dest, "dest", "mpi.isend", 2)
  tag = tag_arg(tag, "mpi.isend", 2)
  local b = open(v, "mpi.isend", 1, "in")
  local r = request(b, "isend")
  local count, dt = dt_of(b)
  check(f.Isend(b.ptr, count, dt, dest, tag, world, r.h), "Isend", 2)
  return r
end

-- mpi.irecv(buf, source [, tag]) -> request; buf holds the message after
-- the request's wait (or a test that returns true).
function M.irecv(v, source, tag)
  rank_arg(source, "source", "mpi.irecv", 2, true)
  tag = tag == nil and K.ANY_TAG or tag_arg(tag, "mpi.irecv", 2)
  local b = open(v, "mpi.irecv", 1, "out")
  local r = request(b, "irecv")
  local count, dt = dt_of(b)
  check(f.Irecv(b.ptr, count, dt, source, tag, world, r.h), "Irecv", 2)
  return r
end

-- mpi.waitall(requests) -> their statuses
function M.waitall(list)
  local out = {}
  for i, r in ipairs(list) do out[i] = r:wait() end
  return out
end

---------------------------------------------------------------------------
-- Collectives.

function M.barrier()
  check(f.Barrier(world), "Barrier", 2)
end

local function scalar_cell(x, fname, level)
  if type(x) == "number" then
    local c = ffi.new("double[1]", x)
    return { ptr = c, count = 1, elem = "double", esize = 8, finish = function() end }, c
  end
  argerr(fname, "argument #1 must be a number or a buffer (an FFI array, a Lua table, "
    .. "a gpu.array or an mpi.view), got " .. type(x), level + 1)
end

local function is_buffer(x)
  return type(x) == "cdata" or (type(x) == "table" and (buf.is_view(x) or getmetatable(x) == nil))
end

-- mpi.allreduce(x, op): a number -> the op over every rank's x; a buffer
-- -> elementwise over the ranks, in place, and returned.
function M.allreduce(x, op)
  local o = op_of(op, "mpi.allreduce", 2)
  if type(x) == "number" then
    local b = scalar_cell(x, "mpi.allreduce", 2)
    local out = ffi.new("double[1]")
    check(f.Allreduce(b.ptr, out, 1, K.DOUBLE, o, world), "Allreduce", 2)
    return out[0]
  end
  if not is_buffer(x) then scalar_cell(x, "mpi.allreduce", 2) end
  local b = open(x, "mpi.allreduce", 1, "inout")
  if not DT[b.elem] or b.elem == "bool" then
    argerr("mpi.allreduce", "cannot reduce elements of " .. b.elem, 2)
  end
  check(f.Allreduce(K.IN_PLACE, b.ptr, b.count, DT[b.elem], o, world), "Allreduce", 2)
  b:finish()
  return x
end

-- mpi.reduce_all(a, op): gpu.reduce(a, op) on every rank (on a's device),
-- then the op over the ranks: one Lua number, the same on every rank.
function M.reduce_all(a, op)
  op_of(op, "mpi.reduce_all", 2)
  local local_part = gpu.reduce(a, op == "sum" and "+" or op)
  return (M.allreduce(tonumber(local_part), op))
end

-- mpi.bcast(x, root): a number, boolean or string -> root's; a buffer ->
-- filled with root's, in place, and returned.
function M.bcast(x, root)
  rank_arg(root, "root", "mpi.bcast", 2)
  local tx = type(x)
  if tx == "number" or tx == "boolean" then
    local c = ffi.new("double[1]", tx == "boolean" and (x and 1 or 0) or x)
    check(f.Bcast(c, 1, K.DOUBLE, root, world), "Bcast", 2)
    if tx == "boolean" then return c[0] ~= 0 end
    return c[0]
  elseif tx == "string" then
    local n = ffi.new("int64_t[1]", #x)
    check(f.Bcast(n, 1, K.INT64_T, root, world), "Bcast", 2)
    local len = tonumber(n[0])
    local s = ffi.new("char[?]", len + 1)
    if M.rank == root then ffi.copy(s, x, len) end
    check(f.Bcast(s, len, K.BYTE, root, world), "Bcast", 2)
    return ffi.string(s, len)
  end
  if not is_buffer(x) then
    argerr("mpi.bcast", "argument #1 must be a number, boolean, string or buffer, got " .. tx, 2)
  end
  local b = open(x, "mpi.bcast", 1, M.rank == root and "in" or "out")
  local count, dt = dt_of(b)
  check(f.Bcast(b.ptr, count, dt, root, world), "Bcast", 2)
  b:finish()
  return x
end

-- The gathered buffer: out (checked), or a new one like x of n elements.
local function gather_out(x, out, n, fname, level)
  if out == nil then return buf.like(x, n) end
  local ob = open(out, fname, 3, "out")
  if ob.count < n then
    argerr(fname, "the output holds " .. ob.count .. " elements, " .. n .. " are gathered",
      level + 1)
  end
  return out
end

local function gather(fname, x, root, out)
  local all = root == nil
  local scalar = type(x) == "number"
  local b = scalar and scalar_cell(x, fname, 3) or open(x, fname, 1, "in")
  local count, dt = dt_of(b)
  local n = b.count * M.size
  local res, rb
  if all or M.rank == root then
    res = scalar and ffi.new("double[?]", M.size) or gather_out(x, out, n, fname, 3)
    rb = open(res, fname, 3, "out")
  end
  if all then
    check(f.Allgather(b.ptr, count, dt, rb.ptr, count, dt, world), "Allgather", 3)
  else
    check(f.Gather(b.ptr, count, dt, rb and rb.ptr or nil, count, dt, root, world), "Gather", 3)
  end
  if not rb then return nil end
  rb:finish()
  if scalar then
    local t = {}
    for i = 1, M.size do t[i] = res[i - 1] end
    return t
  end
  return res
end

-- mpi.gather(x, root [, out]) -> on root: a table of every rank's number
-- (x a number, rank r at [r + 1]), or out (default: a new buffer like x's
-- kind, a table or an FFI array) with every rank's elements, rank by rank;
-- nil on the other ranks.
function M.gather(x, root, out)
  rank_arg(root, "root", "mpi.gather", 2)
  return gather("mpi.gather", x, root, out)
end

-- mpi.allgather(x [, out]): gather's result on every rank.
function M.allgather(x, out)
  return gather("mpi.allgather", x, nil, out)
end

function M.wtime() return f.Wtime() end

-- mpi.node_first(fn, ...): fn(...) on local rank 0 of each node, then on
-- the node's other ranks: a kernel's first launch inside compiles it once
-- per node, the others finding it in the disk cache.  Returns fn's results.
-- An error in fn on the first rank is raised after the others are released
-- (they run fn too, and raise their own).
function M.node_first(fn, ...)
  if type(fn) ~= "function" then
    argerr("mpi.node_first", "argument #1 must be a function, got " .. type(fn), 2)
  end
  local res
  if M.local_rank == 0 then res = { pcall(fn, ...) } end
  check(f.Barrier(M._node), "Barrier", 2)
  if M.local_rank ~= 0 then res = { pcall(fn, ...) } end
  if not res[1] then error(res[2], 0) end
  return unpack(res, 2, table.maxn(res))
end

return M
