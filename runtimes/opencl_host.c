/*
** The opencl backend, part four: host memory as a launch's array argument
** (gj_backend.h, host_register).
**
** A device that reports CL_DEVICE_HOST_UNIFIED_MEMORY (PoCL's CPU device)
** works in the host's memory, where the launcher's staging of an FFI array
** or a table (a device buffer, a copy in, a copy back when written) only
** moves bytes from one place of it to another.  Instead host_register wraps
** the host memory in a buffer made with CL_MEM_USE_HOST_PTR for the
** launch, and host_release, after it, maps the buffer for reading and unmaps
** it when the launch may have written it (the OpenCL spec: the host memory
** of such a buffer holds the kernels' writes once a map of it has
** completed; unmapped before the host touches it again), then releases it.
**
** PoCL 3.1 makes the host pointer the buffer's storage whatever its
** alignment (a LuaJIT array is 8- or 16-byte aligned, below the device's
** CL_DEVICE_MEM_BASE_ADDR_ALIGN of 128 bytes: PoCL only warns, under
** POCL_DEBUG), and its map of such a buffer returns the host pointer
** without copying.  Measurements: docs/backends.md, bench/RESULTS.md.
**
** Registrations of the same (host, bytes) share one buffer, counted: an
** array passed twice is one buffer, as the OpenCL spec leaves undefined
** what commands do on buffers made over overlapping host memory.  They are
** listed in st->regs (a launch has a few) to find them.
*/
#include "opencl_int.h"

#include <stdlib.h>

int ocl_host_shares(gj_bstate *st, int dev)
{
  ocl_device *d;
  if (dev < 0 || dev >= st->ndevs) return 0;
  d = &st->devs[dev];
  if (!d->host_unified) {
    cl_bool um = CL_FALSE;
    if (st->cl.GetDeviceInfo(d->id, CL_DEVICE_HOST_UNIFIED_MEMORY, sizeof(um),
                             &um, NULL) != CL_SUCCESS)
      um = CL_FALSE;
    d->host_unified = um == CL_TRUE ? 2 : 1;
  }
  return d->host_unified == 2;
}

void *ocl_host_register(gj_bstate *st, int dev, void *host, size_t bytes,
                        int written, gj_err *err)
{
  uint32_t i;
  ocl_buf *b;
  void *addr;
  if (ocl_forked(st, err)) return NULL;
  if (!ocl_host_shares(st, dev)) {
    gj_err_set(err, "opencl: device %d does not share host memory", dev);
    return NULL;
  }
  if (bytes > 0 && !host) {
    gj_err_set(err, "opencl: registration of a null host pointer");
    return NULL;
  }
  for (i = 0; bytes > 0 && i < st->nregs; i++) {
    b = ocl_buf_at(st, dev, st->regs[i]);
    if (b && b->host == host && b->size == bytes) {
      b->refs++;
      b->written |= written;
      return st->regs[i];
    }
  }
  if (st->nregs == st->capregs) {
    uint32_t cap = st->capregs ? 2 * st->capregs : 16;
    void **n = realloc(st->regs, cap * sizeof(*n));
    if (!n) {
      gj_err_set(err, "opencl: out of memory");
      return NULL;
    }
    st->regs = n;
    st->capregs = cap;
  }
  /* Zero bytes: a buffer of its own (of 1 byte), not one over host memory
  ** that is not there. */
  addr = bytes > 0 ? ocl_buf_add(st, dev, CL_MEM_READ_WRITE |
                                 CL_MEM_USE_HOST_PTR, host, bytes, err)
                   : ocl_buf_add(st, dev, CL_MEM_READ_WRITE, NULL, 0, err);
  if (!addr) return NULL;
  b = ocl_buf_at(st, dev, addr);
  b->reg = 1;
  b->written = written && bytes > 0;
  b->host = bytes > 0 ? host : NULL;
  b->refs = 1;
  st->regs[st->nregs++] = addr;
  return addr;
}

/* Make what launches wrote to b visible in its host memory: a map, its
** unmap, and one wait for both (the queue is in order; a blocking map
** would wait twice, which costs as much as the copies at 2^10 floats). */
static int to_host(gj_bstate *st, ocl_buf *b, gj_err *err)
{
  cl_command_queue q = st->devs[b->dev].queue;
  cl_int rc;
  void *p = st->cl.EnqueueMapBuffer(q, b->mem, CL_FALSE, CL_MAP_READ, 0,
                                    b->size, 0, NULL, NULL, &rc);
  if (!p) return ocl_fail(err, "clEnqueueMapBuffer (host array)", rc);
  rc = st->cl.EnqueueUnmapMemObject(q, b->mem, p, 0, NULL, NULL);
  if (rc != CL_SUCCESS)
    return ocl_fail(err, "clEnqueueUnmapMemObject (host array)", rc);
  rc = st->cl.Finish(q);
  return rc == CL_SUCCESS ? 0 : ocl_fail(err, "clFinish (host array)", rc);
}

int ocl_host_release(gj_bstate *st, int dev, void *addr, gj_err *err)
{
  ocl_buf *b;
  uint32_t i;
  int rc = 0;
  if (ocl_forked(st, err)) return -1;
  b = ocl_buf_at(st, dev, addr);
  if (!b || !b->reg)
    return gj_err_set(err, "opencl: %p is no registration of host memory",
                      addr);
  if (--b->refs > 0) return 0;
  if (b->written) rc = to_host(st, b, err);
  for (i = 0; i < st->nregs; i++)
    if (st->regs[i] == addr) st->regs[i] = st->regs[--st->nregs];
  ocl_buf_drop(st, b);
  return rc;
}
