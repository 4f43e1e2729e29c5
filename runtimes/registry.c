/*
** Every backend compiled in, in the order gpu.devices() lists them.  The
** first one that opens in a context is not necessarily the default device:
** that is the device with the highest rank (gj_device_info.rank, GJ_RANK_*),
** which each runtime gives its devices: CUDA, then an OpenCL GPU, then the
** cpu backend (an OpenCL CPU device such as PoCL's, rank 0, is used only
** when asked for).
*/
#include "gj_backend.h"

extern const gj_backend gj_backend_opencl;
extern const gj_backend gj_backend_cuda;
extern const gj_backend gj_backend_cpu;

const gj_backend *const gj_backends[] = {
  &gj_backend_opencl,
  &gj_backend_cuda,
  &gj_backend_cpu,
};

const int gj_nbackends = (int)(sizeof(gj_backends) / sizeof(gj_backends[0]));
