-- gpujit.mpi_abi: the system MPI library through LuaJIT's FFI, and the
-- little in which MPI implementations differ (docs/distributed.md, "How the
-- binding works").  gpujit.mpi builds the API on it.
--
--   local abi = require("gpujit.mpi_abi")   -- raises when no MPI is found
--   abi.lib            the library's FFI namespace (ffi.load, RTLD_GLOBAL)
--   abi.impl           "openmpi" or "mpich" (the MPICH ABI: MPICH, Intel MPI,
--                      MVAPICH, Cray MPICH)
--   abi.path           the library file that was loaded
--   abi.f              the MPI functions: abi.f.Send is MPI_Send, ...
--   abi.K              the constants as values of the handle type
--   abi.handle         the handle ctype (MPI_Comm, MPI_Datatype, MPI_Op,
--                      MPI_Request, MPI_Info, MPI_Errhandler alike)
--   abi.handle_arr     the ctype of an array of handles (an out argument)
--   abi.status, abi.status_arr   MPI_Status and an array of them
--   abi.cuda_support() whether MPIX_Query_cuda_support says CUDA-aware
--
-- Why a table and not a C shim: the standard fixes the functions' names and
-- signatures but not the handles' C types.  Open MPI's handles are pointers
-- to global objects the library exports (MPI_COMM_WORLD is
-- &ompi_mpi_comm_world), MPICH's are int constants fixed by its mpi.h (and
-- its ABI, shared by its derivatives).  So the implementation is told from
-- the library's symbols at load (Open MPI exports ompi_mpi_comm_world), and
-- what differs (the handle type, the MPI_Status layout, the constants) is
-- the one table IMPL below; nothing has to be compiled against an mpi.h,
-- and the core (gpujit.core) never links MPI.
--
-- Names: every declaration is private to gpujit.  A function is declared
-- as gj_mpi_<impl>_<Name> with an asm label naming the MPI symbol, and the
-- types are gj_mpi_<impl>_*: a program that ffi.cdef's MPI_Init (or
-- MPI_Status) itself, with its own types, clashes with nothing here; and
-- the two implementations' declarations never meet in one LuaJIT state.
local each = pairs   -- each(t), never pairs(t), in loops: docs/reliability.md, "pairs loops"
local ffi = require("ffi")

local M = {}

-- What differs between the implementations.  sym: constants that are the
-- addresses of exported objects (Open MPI); int: constants that are plain
-- values.  ints holds the values every implementation defines as ints.
local IMPL = {
  openmpi = {
    handle = "void *",
    -- struct ompi_status_public_t (Open MPI's mpi.h)
    status = "int source; int tag; int error; int cancelled_; size_t ucount_;",
    sym = {
      COMM_WORLD = "ompi_mpi_comm_world", COMM_SELF = "ompi_mpi_comm_self",
      INFO_NULL = "ompi_mpi_info_null", ERRORS_RETURN = "ompi_mpi_errors_return",
      REQUEST_NULL = "ompi_request_null",
      SUM = "ompi_mpi_op_sum", MIN = "ompi_mpi_op_min", MAX = "ompi_mpi_op_max",
      BOR = "ompi_mpi_op_bor",
      BYTE = "ompi_mpi_byte", DOUBLE = "ompi_mpi_double", FLOAT = "ompi_mpi_float",
      INT8_T = "ompi_mpi_int8_t", INT16_T = "ompi_mpi_int16_t",
      INT32_T = "ompi_mpi_int32_t", INT64_T = "ompi_mpi_int64_t",
      UINT8_T = "ompi_mpi_uint8_t", UINT16_T = "ompi_mpi_uint16_t",
      UINT32_T = "ompi_mpi_uint32_t", UINT64_T = "ompi_mpi_uint64_t",
      C_BOOL = "ompi_mpi_c_bool",
    },
    ints = { ANY_SOURCE = -1, PROC_NULL = -2, ANY_TAG = -1, COMM_TYPE_SHARED = 0,
             MAX_ERROR_STRING = 256 },
    in_place = 1,
  },
  mpich = {
    handle = "int",
    -- MPICH's MPI_Status
    status = "int count_lo_; int count_hi_; int source; int tag; int error;",
    sym = {},
    int = {
      COMM_WORLD = 0x44000000, COMM_SELF = 0x44000001, INFO_NULL = 0x1c000000,
      ERRORS_RETURN = 0x54000001, REQUEST_NULL = 0x2c000000,
      MAX = 0x58000001, MIN = 0x58000002, SUM = 0x58000003, BOR = 0x58000008,
      BYTE = 0x4c00010d, FLOAT = 0x4c00040a, DOUBLE = 0x4c00080b,
      INT8_T = 0x4c000137, INT16_T = 0x4c000238, INT32_T = 0x4c000439, INT64_T = 0x4c00083a,
      UINT8_T = 0x4c00013b, UINT16_T = 0x4c00023c, UINT32_T = 0x4c00043d,
      UINT64_T = 0x4c00083e, C_BOOL = 0x4c00013f,
    },
    ints = { ANY_SOURCE = -2, PROC_NULL = -1, ANY_TAG = -1, COMM_TYPE_SHARED = 1,
             MAX_ERROR_STRING = 512 },
    in_place = -1,
  },
}
M.IMPL = IMPL

-- The functions gpujit.mpi calls; H is the handle type, S the status type.
local FUNCS = {
  { "Init", "int (int *argc, char ***argv)" },
  { "Initialized", "int (int *flag)" },
  { "Finalized", "int (int *flag)" },
  { "Finalize", "int (void)" },
  { "Abort", "int (H comm, int code)" },
  { "Comm_rank", "int (H comm, int *rank)" },
  { "Comm_size", "int (H comm, int *size)" },
  { "Comm_split_type", "int (H comm, int type, int key, H info, H *out)" },
  { "Comm_set_errhandler", "int (H comm, H eh)" },
  { "Error_string", "int (int code, char *s, int *len)" },
  { "Get_library_version", "int (char *s, int *len)" },
  { "Send", "int (const void *buf, int count, H dt, int dest, int tag, H comm)" },
  { "Recv", "int (void *buf, int count, H dt, int src, int tag, H comm, S *st)" },
  { "Isend", "int (const void *buf, int count, H dt, int dest, int tag, H comm, H *req)" },
  { "Irecv", "int (void *buf, int count, H dt, int src, int tag, H comm, H *req)" },
  { "Wait", "int (H *req, S *st)" },
  { "Test", "int (H *req, int *flag, S *st)" },
  { "Sendrecv", "int (const void *sbuf, int scount, H sdt, int dest, int stag, "
    .. "void *rbuf, int rcount, H rdt, int src, int rtag, H comm, S *st)" },
  { "Get_count", "int (const S *st, H dt, int *count)" },
  { "Allreduce", "int (const void *sbuf, void *rbuf, int count, H dt, H op, H comm)" },
  { "Bcast", "int (void *buf, int count, H dt, int root, H comm)" },
  { "Gather", "int (const void *sbuf, int scount, H sdt, void *rbuf, int rcount, H rdt, "
    .. "int root, H comm)" },
  { "Allgather", "int (const void *sbuf, int scount, H sdt, void *rbuf, int rcount, H rdt, "
    .. "H comm)" },
  { "Barrier", "int (H comm)" },
  { "Wtime", "double (void)" },
}

local function try_load(name)
  local ok, lib = pcall(ffi.load, name, true)   -- global: Open MPI's plugins need its symbols
  if ok then return lib end
  return nil, tostring(lib)
end

-- Is sym an exported symbol of lib?  (A declaration per probe, private.)
local function has_symbol(lib, sym, impl)
  local name = "gj_mpi_probe_" .. impl .. "_" .. sym
  pcall(ffi.cdef, "extern uint8_t " .. name .. "[1] __asm__(\"" .. sym .. "\");")
  return (pcall(function() return lib[name] end))
end

-- The candidates: GPUJIT_MPI_LIB, else Open MPI's and MPICH's sonames.
local function candidates()
  local want = os.getenv("GPUJIT_MPI_LIB")
  if want and want ~= "" then return { want } end
  return { "libmpi.so.40", "libmpi.so.12", "libmpi.so" }
end

local lib, path
do
  local tried = {}
  for _, name in ipairs(candidates()) do
    local l, err = try_load(name)
    if l then
      lib, path = l, name
      break
    end
    tried[#tried + 1] = name .. " (" .. (err:match("[^:]*$") or err):gsub("^%s+", "") .. ")"
  end
  if not lib then
    error("gpujit.mpi: no MPI library could be loaded; tried " .. table.concat(tried, ", ")
      .. ". Install Open MPI (Debian: apt-get install openmpi-bin libopenmpi-dev) or MPICH, "
      .. "or set GPUJIT_MPI_LIB to the library's path (docs/distributed.md)", 0)
  end
end

local impl = has_symbol(lib, "ompi_mpi_comm_world", "any") and "openmpi" or "mpich"
local I = IMPL[impl]
local P = "gj_mpi_" .. impl .. "_"
M.lib, M.impl, M.path = lib, impl, path

-- The types and functions, once per state (a second load finds them).
pcall(ffi.cdef, "typedef " .. I.handle .. " " .. P .. "handle;")
pcall(ffi.cdef, "typedef struct " .. P .. "status { " .. I.status .. " } " .. P .. "status;")
local f = {}
for _, fn in ipairs(FUNCS) do
  local name, sig = fn[1], fn[2]
  local ret, args = sig:match("^(%S+) (%b())$")
  args = args:gsub("%f[%w]H%f[^%w]", P .. "handle"):gsub("%f[%w]S%f[^%w]", P .. "status")
  pcall(ffi.cdef, ret .. " " .. P .. name .. args .. " __asm__(\"MPI_" .. name .. "\");")
  f[name] = lib[P .. name]
end
M.f = f

M.handle = ffi.typeof(P .. "handle")
M.handle_arr = ffi.typeof(P .. "handle[?]")
M.status = ffi.typeof(P .. "status")
M.status_arr = ffi.typeof(P .. "status[?]")

-- The constants, as handles (and the plain ints).
local K = {}
for k, sym in each(I.sym) do
  pcall(ffi.cdef, "extern uint8_t " .. P .. "sym_" .. k .. "[1] __asm__(\"" .. sym .. "\");")
  K[k] = ffi.cast(M.handle, lib[P .. "sym_" .. k])
end
for k, v in each(I.int or {}) do K[k] = ffi.cast(M.handle, v) end
for k, v in each(I.ints) do K[k] = v end
K.IN_PLACE = ffi.cast("void *", I.in_place)
M.K = K

-- MPIX_Query_cuda_support (Open MPI's extension): true when this library
-- was built CUDA-aware and runs with it on; false where it says no or has
-- no such function (MPICH builds: GPUJIT_MPI_CUDA_AWARE=1 says so).
function M.cuda_support()
  local env = require("gpujit.env").get("GPUJIT_MPI_CUDA_AWARE", "gpujit.mpi", 0)
  if env ~= nil then return env end
  local name = P .. "cuda_query"
  pcall(ffi.cdef, "int " .. name .. "(void) __asm__(\"MPIX_Query_cuda_support\");")
  local ok, fn = pcall(function() return lib[name] end)
  return ok and fn() == 1
end

return M
