-- Point to point on every buffer kind and on ranges of them (views):
-- send/recv, isend/irecv with wait and test, sendrecv around the ring; a
-- gpu.array written by a launch still pending on a stream; MPI errors and
-- argument errors as Lua errors.  Run by spec/mpi/mpi_spec.lua.
local mpi = require("gpujit.mpi")
package.path = "./?.lua;" .. package.path
local C = require("spec.mpi.check")

mpi.run(function()
  local gpu = require("gpujit")
  local ffi = require("ffi")
  local r, n = mpi.rank, mpi.size
  local right, left = (r + 1) % n, (r - 1) % n
  local function msg(from, k) -- rank `from`'s k numbers
    local t = {}
    for i = 1, k do t[i] = from * 100 + i end
    return t
  end
  local zeros = { 0, 0, 0, 0, 0, 0, 0, 0 }

  for _, K in ipairs(require("spec.mpi.kinds")) do
    local what = K.name
    -- send/recv: 0 sends elements 3..6 of its 8 to 1, into 2..5 of 1's zeros
    if r == 0 then
      mpi.send(mpi.view(K.make(msg(0, 8)), 2, 4), 1, 7)
    elseif r == 1 then
      local b = K.make(zeros)
      local got, st = mpi.recv(mpi.view(b, 1, 4), 0, 7)
      C.eq(K.get(b), { 0, 3, 4, 5, 6, 0, 0, 0 }, what .. ": recv of a range")
      C.ok(got.buf == b, what .. ": recv returns its buffer argument")
      C.eq({ st.source, st.tag, st.count }, { 0, 7, 4 }, what .. ": recv status")
    end
    -- isend/irecv around the ring, whole buffers
    local rb = K.make(zeros)
    local rq = mpi.irecv(rb, left, 11)
    local sq = mpi.isend(K.make(msg(r, 8)), right, 11)
    local sts = mpi.waitall({ rq, sq })
    C.eq(K.get(rb), msg(left, 8), what .. ": irecv from the left")
    C.eq({ sts[1].source, sts[1].tag, sts[1].count }, { left, 11, 8 }, what .. ": irecv status")
    local done = rq:test()
    C.ok(done == true, what .. ": test after wait")
    -- isend/irecv of ranges, completed by test
    local rb2 = K.make(zeros)
    local rq2 = mpi.irecv(mpi.view(rb2, 5), left, 12)
    local sq2 = mpi.isend(mpi.view(K.make(msg(r, 8)), 0, 3), right, 12)
    local ok2
    repeat ok2 = rq2:test() until ok2
    sq2:wait()
    C.eq(K.get(rb2), { 0, 0, 0, 0, 0, left * 100 + 1, left * 100 + 2, left * 100 + 3 },
      what .. ": irecv of a range, done by test")
    -- sendrecv around the ring, ranges on both sides
    local sb, rb3 = K.make(msg(r, 8)), K.make(zeros)
    local _, st = mpi.sendrecv(mpi.view(sb, 4, 2), right, mpi.view(rb3, 1, 2), left, 3, 3)
    C.eq(K.get(rb3), { 0, left * 100 + 5, left * 100 + 6, 0, 0, 0, 0, 0 }, what .. ": sendrecv")
    C.eq({ st.source, st.count }, { left, 2 }, what .. ": sendrecv status")
  end

  -- A gpu.array written by a launch still pending on a stream: MPI sends
  -- what the launch wrote (the stream is synchronized first).
  local fill = function(a, base)
    local i = gpu.global_id(0)
    a[i] = base + i
  end
  for _, bk in ipairs(C.backends) do
    if bk ~= "sim" then
      local k = gpu.kernel(fill, { name = "mpi_fill", backend = bk })
      local s = gpu.stream(bk)
      local a = gpu.zeros("double", 64, bk)
      k:launch({ global = 64, stream = s }, a, r * 1000)
      local b = ffi.new("double[64]")
      mpi.sendrecv(a, right, b, left, 21, 21)
      C.eq({ b[0], b[63] }, { left * 1000, left * 1000 + 63 }, bk .. ": a pending launch's array")
      s:synchronize()
    end
  end

  -- MPI errors: the call and the rank
  local x = ffi.new("double[4]")
  C.raises(function() mpi.send(x, right, -5) end, { "MPI_Send failed on rank " .. r, "tag" },
    "an invalid tag")
  if r == 0 then
    mpi.send(x, 1, 30)
  elseif r == 1 then
    C.raises(function() mpi.recv(mpi.view(x, 0, 2), 0, 30) end,
      { "MPI_Recv failed on rank 1 of " .. n, "truncat" }, "a message longer than the buffer")
  end
  -- argument errors
  C.raises(function() mpi.send(x, n) end, "mpi.send: dest must be a rank in [0, " .. n .. ")",
    "dest out of range")
  C.raises(function() mpi.send("x", right) end, "mpi.send: argument #1 must be", "a string buffer")
  C.raises(function() mpi.send(mpi.view(x, 2, 3), right) end, "is past its 4 elements",
    "a range past the end")
  C.raises(function() mpi.recv(ffi.cast("double *", x), left) end, "is an FFI pointer",
    "a pointer without a count")
  C.raises(function() mpi.send({ 1, "a" }, right) end, "table element [2]", "a bad table")
  mpi.barrier()
  C.done("p2p")
end)
