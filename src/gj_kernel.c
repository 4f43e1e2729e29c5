/*
** A loaded kernel (gj_pipeline.h, struct gj_kernel): its launches on the
** default stream (launch-shape checks, the fault and print record, the
** timeout's watchdog), its print records, and freeing it.  The pipeline
** (gj_pipeline.c) makes kernels; nothing here compiles.
*/
#include <stdlib.h>
#include <string.h>

#include "gj_pipeline.h"
#include "gj_stream.h"
#include "gj_watch.h"

/* The ids' ranges the typer counted on (docs/typing.md): every dimension
** below 2^51, and below 2^31 for a kernel with an lnum parameter (whose
** launches the Lua launcher never sends here otherwise). */
static int dims_in_range(const gj_kernel *k, const gj_dims *dims)
{
  int64_t lim = k->sig.lnum ? ((int64_t)1 << 31) : ((int64_t)1 << 51);
  int i;
  for (i = 0; i < 3; i++)
    if (dims->global[i] >= lim || dims->group[i] >= lim) return 0;
  return 1;
}

int gj_kernel_check_dims(gj_kernel *k, const gj_dims *dims)
{
  if (dims_in_range(k, dims)) return 0;
  return gj_err_set(&k->ctx->err, "launch: a dimension of 2^%d or more (the kernel's "
                    "ids are typed below it)", k->sig.lnum ? 31 : 51);
}

/* The record a launch of k passes: on the stack for checks and timeouts,
** k->rec (with its print area's head set) for a kernel that prints. */
static gj_fault *launch_record(gj_kernel *k, gj_fault *local)
{
  gj_print_head *h;
  if (!k->sig.prints) {
    memset(local, 0, sizeof(*local));
    return local;
  }
  if (!k->rec) {
    k->rec = calloc(1, gj_record_size(&k->sig));
    if (!k->rec) {
      gj_err_set(&k->ctx->err, "launch: out of memory for the print buffer "
                 "(%zu bytes)", gj_record_size(&k->sig));
      return NULL;
    }
  }
  memset(k->rec, 0, sizeof(gj_fault) + sizeof(gj_print_head));
  h = (gj_print_head *)(void *)(k->rec + 1);
  h->cap = k->sig.print_cap;
  return k->rec;
}

/* Launch k on the default stream and wait for it (gj_backend.h: the
** record f is final when wait returns): launches are synchronous for the
** caller, whatever the runtime does in between. */
static int run_on_default(gj_kernel *k, const gj_dims *dims, void *args,
                          gj_fault *f)
{
  int failed;
  if (k->be->launch(k->bst, k->prog, NULL, dims, args, f, &k->ctx->err)) return -1;
  if (k->be->wait && !k->be->default_finishes)
    return k->be->wait(k->bst, k->dev, NULL, &failed, &k->ctx->err);
  return 0;
}

int gj_kernel_launch(gj_kernel *k, const gj_dims *dims, void *args)
{
  gj_fault local, *f;
  gj_watch w;
  int rc;
  if (!dims_in_range(k, dims)) return gj_kernel_check_dims(k, dims);
  if (!k->sig.faults) return run_on_default(k, dims, args, NULL);
  if (!(f = launch_record(k, &local))) return -1;
  if (!k->sig.cancel) {
    if (run_on_default(k, dims, args, f)) return -1;
    return gj_launch_fault(&k->sites, &k->asserts, f, &k->ctx->err);
  }
  /* a timeout: the watchdog sets f->cancel at the deadline or on SIGINT */
  if (gj_watch_start(&w, &f->cancel, k->timeout, &k->ctx->err)) return -1;
  rc = run_on_default(k, dims, args, f);
  if (gj_watch_stop(&w, k->name, &k->ctx->err)) return -1;   /* stopped */
  if (rc) return -1;
  return gj_launch_fault(&k->sites, &k->asserts, f, &k->ctx->err);
}

const void *gj_kernel_prints(const gj_kernel *k, uint64_t *written,
                             uint64_t *dropped)
{
  const gj_print_head *h;
  *written = *dropped = 0;
  if (!k->sig.prints || !k->rec) return NULL;
  h = (const gj_print_head *)(const void *)(k->rec + 1);
  *written = h->written;
  *dropped = h->dropped;
  return h + 1;
}

void gj_kernel_free(gj_kernel *k)
{
  if (!k) return;
  gj_streams_forget_kernel(k->ctx, k);   /* its launches on streams end first */
  if (k->prog && k->bst) k->be->unload(k->bst, k->prog);
  gj_sites_free(&k->sites);
  gj_psites_free(&k->prints);
  gj_asites_free(&k->asserts);
  free(k->rec);
  free(k);
}
