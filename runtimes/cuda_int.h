/*
** Internal to the cuda runtime: what cuda.c and cuda_run.c share (its
** target, targets/ptx_cuda.c, sees only targets/ptx.h).  The design is
** described at the top of cuda.c.
*/
#ifndef GJ_CUDA_INT_H
#define GJ_CUDA_INT_H

#include <stddef.h>
#include <stdint.h>

#include "gj_backend.h"
#include "../targets/ptx.h"

/* -- The Driver API, declared here and loaded at run time ------------------
** gpujit builds without the CUDA toolkit: the few types, constants and
** entry points it uses are declared as <cuda.h> (CUDA 12/13) declares them,
** and the functions are looked up with dlsym in libcuda.so.1 under their
** versioned symbol names (cuMemAlloc is cuMemAlloc_v2, ...). */

typedef int CUresult;
typedef int CUdevice;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;
typedef struct CUlinkState_st *CUlinkState;
typedef unsigned long long CUdeviceptr;

enum {
  CUDA_SUCCESS = 0,
  CUDA_ERROR_OUT_OF_MEMORY = 2,
  CUDA_ERROR_NO_DEVICE = 100,
  CUDA_ERROR_NOT_READY = 600,
  /* cuMemHostAlloc flags */
  CU_MEMHOSTALLOC_PORTABLE = 1,
  CU_MEMHOSTALLOC_DEVICEMAP = 2,
  /* CUdevice_attribute */
  CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 1,
  CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X = 2,
  CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X = 5,
  CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16,
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
  /* CUfunction_attribute */
  CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 0,
  /* CUjit_option */
  CU_JIT_INFO_LOG_BUFFER = 3,
  CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES = 4,
  CU_JIT_ERROR_LOG_BUFFER = 5,
  CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6,
  /* CUjitInputType */
  CU_JIT_INPUT_PTX = 1
};

#define CU_FUNCS(X)                                                          \
  X(Init, "cuInit", (unsigned flags))                                        \
  X(DriverGetVersion, "cuDriverGetVersion", (int *v))                        \
  X(DeviceGetCount, "cuDeviceGetCount", (int *n))                            \
  X(DeviceGet, "cuDeviceGet", (CUdevice *d, int ordinal))                    \
  X(DeviceGetName, "cuDeviceGetName", (char *name, int len, CUdevice d))     \
  X(DeviceGetAttribute, "cuDeviceGetAttribute", (int *v, int attr,           \
                                                 CUdevice d))                \
  X(DeviceTotalMem, "cuDeviceTotalMem_v2", (size_t *bytes, CUdevice d))      \
  X(PrimaryCtxRetain, "cuDevicePrimaryCtxRetain", (CUcontext *c,             \
                                                   CUdevice d))              \
  X(PrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", (CUdevice d))         \
  X(CtxGetCurrent, "cuCtxGetCurrent", (CUcontext *c))                        \
  X(CtxPushCurrent, "cuCtxPushCurrent_v2", (CUcontext c))                    \
  X(CtxPopCurrent, "cuCtxPopCurrent_v2", (CUcontext *c))                     \
  X(CtxSynchronize, "cuCtxSynchronize", (void))                              \
  X(LinkCreate, "cuLinkCreate_v2", (unsigned n, int *opts, void **vals,      \
                                    CUlinkState *s))                         \
  X(LinkAddData, "cuLinkAddData_v2", (CUlinkState s, int type, void *data,   \
                                      size_t size, const char *name,         \
                                      unsigned n, int *opts, void **vals))   \
  X(LinkComplete, "cuLinkComplete", (CUlinkState s, void **cubin,            \
                                     size_t *size))                          \
  X(LinkDestroy, "cuLinkDestroy", (CUlinkState s))                           \
  X(ModuleLoadData, "cuModuleLoadData", (CUmodule *m, const void *image))    \
  X(ModuleUnload, "cuModuleUnload", (CUmodule m))                            \
  X(ModuleGetFunction, "cuModuleGetFunction", (CUfunction *f, CUmodule m,    \
                                               const char *name))            \
  X(FuncGetAttribute, "cuFuncGetAttribute", (int *v, int attr,               \
                                             CUfunction f))                  \
  X(LaunchKernel, "cuLaunchKernel", (CUfunction f, unsigned gx, unsigned gy, \
                                     unsigned gz, unsigned bx, unsigned by,  \
                                     unsigned bz, unsigned shmem,            \
                                     CUstream s, void **params,              \
                                     void **extra))                          \
  X(MemAlloc, "cuMemAlloc_v2", (CUdeviceptr *p, size_t bytes))               \
  X(MemFree, "cuMemFree_v2", (CUdeviceptr p))                                \
  X(MemcpyHtoD, "cuMemcpyHtoD_v2", (CUdeviceptr dst, const void *src,        \
                                    size_t n))                               \
  X(MemcpyDtoH, "cuMemcpyDtoH_v2", (void *dst, CUdeviceptr src, size_t n)) \
  X(MemHostAlloc, "cuMemHostAlloc", (void **pp, size_t bytes,                 \
                                     unsigned flags))                        \
  X(MemHostGetDevicePointer, "cuMemHostGetDevicePointer_v2",                 \
    (CUdeviceptr *d, void *p, unsigned flags))                               \
  X(MemFreeHost, "cuMemFreeHost", (void *p))                                 \
  X(StreamQuery, "cuStreamQuery", (CUstream s))                             \
  X(StreamCreate, "cuStreamCreate", (CUstream *s, unsigned flags))           \
  X(StreamDestroy, "cuStreamDestroy_v2", (CUstream s))                       \
  X(StreamSynchronize, "cuStreamSynchronize", (CUstream s))                  \
  X(MemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2", (CUdeviceptr dst,               \
                                              const void *src, size_t n,     \
                                              CUstream s))                   \
  X(MemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2", (void *dst, CUdeviceptr src,    \
                                              size_t n, CUstream s))         \
  X(EventCreate, "cuEventCreate", (CUevent *e, unsigned flags))              \
  X(EventRecord, "cuEventRecord", (CUevent e, CUstream s))                   \
  X(EventQuery, "cuEventQuery", (CUevent e))                                 \
  X(EventSynchronize, "cuEventSynchronize", (CUevent e))                     \
  X(EventElapsedTime, "cuEventElapsedTime", (float *ms, CUevent a,           \
                                             CUevent b))                     \
  X(EventDestroy, "cuEventDestroy_v2", (CUevent e))                          \
  X(StreamWaitEvent, "cuStreamWaitEvent", (CUstream s, CUevent e,            \
                                           unsigned flags))

typedef struct cu_api {
#define CU_FIELD(f, sym, args) CUresult (*f) args;
  CU_FUNCS(CU_FIELD)
#undef CU_FIELD
  /* Optional: an old driver may lack them (messages then give the code). */
  CUresult (*GetErrorName)(CUresult r, const char **s);
  CUresult (*GetErrorString)(CUresult r, const char **s);
} cu_api;

/* -- Devices and the process-wide driver state (cuda.c) ------------------ */

typedef struct cu_device {
  CUdevice id;
  gj_device_info info;
  int sm;                  /* compute capability, e.g. 90 */
  int64_t max_grid[3];
} cu_device;

/* The driver, loaded once per process: every lua_State shares it. */
typedef struct cu_driver {
  cu_api api;
  cu_device *devs;
  int ndevs;
} cu_driver;

/* One allocation set: the device pointers a state allocated and has not
** freed, so that closing the state frees them. */
typedef struct cu_ptrset {
  CUdeviceptr *slots;      /* open addressing; 0 empty, 1 deleted */
  size_t cap, used, live;
} cu_ptrset;

struct gj_bstate {
  const cu_driver *drv;    /* NULL: compiling only (no driver or device) */
  CUcontext *ctx;          /* per device: its primary context, retained on
                           ** first use, NULL before */
  cu_ptrset *mem;          /* per device */
  gj_err offline_why;      /* drv NULL: why (the driver's error) */
  gj_ptx_libdevice libdevice;   /* the PTX target's state (targets/ptx.h) */
  int offline_sm;          /* the target without a device (GPUJIT_CUDA_ARCH) */
};

/* err = "cuda: <call> failed: CUDA_ERROR_NAME (its description)"; -1. */
int cu_fail(gj_err *err, const char *call, CUresult r);
/* cu_fail for a call on device dev; a sticky error (a kernel's illegal
** address, ...: the context refuses all further work) also marks the
** device's primary context lost for the process, and err says so.  From
** then on cu_enter fails at once with that reason, until every state that
** uses the device has closed (cuda.c, "Sticky errors"). */
int cu_fail_dev(int dev, gj_err *err, const char *call, CUresult r);
/* Make device dev's primary context current on this thread (retaining it
** on first use): pushed when another (or none) was current, and then
** *pushed = 1 and cu_leave pops it, so the caller's context is kept. */
int cu_enter(gj_bstate *st, int dev, int *pushed, gj_err *err);
void cu_leave(gj_bstate *st, int pushed);
/* "cuda: no CUDA device" errors for a state that only compiles, or a
** device number that does not exist. */
int cu_check_dev(gj_bstate *st, int dev, gj_err *err);

/* -- cuda_run.c ------------------------------------------------------------- */

int cu_load(gj_bstate *st, int dev, const char *art, size_t len,
            const gj_sig *sig, gj_program **out, gj_err *err);
void cu_unload(gj_bstate *st, gj_program *p);
/* On the default stream: runs the kernel to its end.  On a stream of
** cu_stream_new: enqueues it (cuLaunchKernel on the CUstream) and returns;
** cu_wait synchronizes the stream and fills the launches' records. */
int cu_launch(gj_bstate *st, gj_program *p, gj_bstream *s, const gj_dims *dims,
              void *args, gj_fault *fault, gj_err *err);
int cu_wait(gj_bstate *st, int dev, gj_bstream *s, int *failed, gj_err *err);
int cu_stream_new(gj_bstate *st, int dev, gj_bstream **out, gj_err *err);
void cu_stream_free(gj_bstate *st, int dev, gj_bstream *s);
/* Events: CUevents recorded on the stream (untested: no GPU here). */
int cu_event_record(gj_bstate *st, int dev, gj_bstream *s, gj_bevent **out,
                    gj_err *err);
int cu_event_query(gj_bstate *st, gj_bevent *e, gj_err *err);
int cu_event_sync(gj_bstate *st, gj_bevent *e, gj_err *err);
int cu_event_wait(gj_bstate *st, int dev, gj_bstream *s, gj_bevent *e,
                  gj_err *err);
int cu_event_elapsed(gj_bstate *st, gj_bevent *a, gj_bevent *b, double *ms,
                     gj_err *err);
void cu_event_free(gj_bstate *st, gj_bevent *e);
/* gj_backend.copy_async: cuMemcpy*Async on the stream (from pageable host
** memory the driver may finish the copy before it returns). */
int cu_stream_copy(gj_bstate *st, int dev, gj_bstream *s, void *dst,
                   const void *src, size_t n, int dir, gj_err *err);
/* gj_backend.cache_save and cache_load: the disk cache keeps a loaded
** program's cubin (owned by the program), so that the next process skips
** both LLVM and the driver's PTX compiler. */
int cu_cache_save(gj_bstate *st, gj_program *p, char **out, size_t *len,
                  gj_err *err);
int cu_cache_load(gj_bstate *st, int dev, const char *bin, size_t len,
                  const gj_sig *sig, gj_program **out, gj_err *err);

#endif
