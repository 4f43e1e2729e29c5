/*
** Every backend compiled in, in default order: the first one that opens in
** a context is the default device.  The GPU backends go first when they are
** added (cuda, opencl, cpu), so that a machine with a GPU uses it and any
** other machine still runs every kernel on the cpu backend.
*/
#include "backend.h"

extern const gj_backend gj_backend_cpu;

const gj_backend *const gj_backends[] = {
  &gj_backend_cpu,
};

const int gj_nbackends = (int)(sizeof(gj_backends) / sizeof(gj_backends[0]));
