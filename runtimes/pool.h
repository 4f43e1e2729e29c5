/*
** A thread pool for data-parallel loops: gj_pool_run(p, n, fn, arg) calls
** fn(arg, begin, end) over disjoint chunks covering [0, n) and returns when
** all of them have run.  The calling thread works too, so a pool of size N
** has N-1 threads of its own.
**
** One pool per backend state (per context): pools are never shared, and
** nothing here is global.  gj_pool_run may be called from any thread, and
** from several at once (calls on one pool are serialised); it must not be
** called from inside fn on the same pool.
*/
#ifndef GJ_POOL_H
#define GJ_POOL_H

#include <stdint.h>

typedef struct gj_pool gj_pool;

typedef void (*gj_pool_fn)(void *arg, int64_t begin, int64_t end);

/* The size a pool gets for nthreads <= 0: the environment variable
** GPUJIT_THREADS when it is a positive number, else the online CPUs. */
int gj_pool_default_size(void);

/* A pool of nthreads threads in all, the caller included (<= 0: the default
** size).  NULL when out of memory.  If the system refuses some threads the
** pool is smaller; gj_pool_size says how large it really is. */
gj_pool *gj_pool_new(int nthreads);

/* Stop and join every thread, then free the pool.  NULL is allowed. */
void gj_pool_free(gj_pool *p);

int gj_pool_size(gj_pool *p);

/* Run fn over [0, ntasks) and wait.  Chunks are claimed from an atomic
** counter, so uneven tasks balance themselves.  ntasks <= 0 is a no-op. */
void gj_pool_run(gj_pool *p, int64_t ntasks, gj_pool_fn fn, void *arg);

#endif
