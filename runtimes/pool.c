/*
** A thread pool for data-parallel loops.
**
** One word, `state`, holds the job number (high bits), a `closed` bit and
** the number of workers inside the job (low bits).  Protocol, one job at a
** time per pool (run_mu serialises callers):
**
**   caller                                 worker
**   ------                                 ------
**   write fn/arg/ntasks/chunk, next = 0    wait until the job number
**   state = (job+1, open, 0 inside)          changes (spin a little, then
**     (release; wake sleepers)               sleep on `wake`)
**   claim and run chunks itself            join: CAS state -> inside + 1,
**   close: set the closed bit                only while the job is open
**   wait until nobody is inside            claim and run chunks
**     (spin, then sleep on `done`)         leave: inside - 1 (the last one
**                                            out of a closed job signals)
**
** Invariants: job fields are written only while the previous job is
** closed with nobody inside, and read only by a worker that joined (its
** CAS acquires the release that published them).  A worker cannot join a
** closed or older job, because its CAS compares the whole word.  So the
** caller never waits for a worker that has not started (a sleeping thread
** costs a job nothing but the wake-up call), and when gj_pool_run returns
** every chunk has run and no worker reads the job any more.  Workers spin
** for a short while after each job so that back-to-back launches find them
** awake.
*/
#ifndef _GNU_SOURCE
#define _GNU_SOURCE   /* sched_getaffinity, CPU_COUNT */
#endif
#include "pool.h"

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Polls of an atomic before a thread goes to sleep: with a pause in each,
** on the order of 100 microseconds on current x86 and ARM cores. */
#define POOL_SPIN 4096

/* Chunks per thread a job is cut into: enough for balance when some
** tasks (or some cores) are slower, few enough that claiming is free. */
#define POOL_CHUNKS_PER_THREAD 8

#define POOL_MAX_THREADS 1024

/* The fields of `state`. */
#define ST_INSIDE   ((uint64_t)0xffff)    /* workers inside the job */
#define ST_CLOSED   ((uint64_t)1 << 16)   /* no more workers may join */
#define ST_JOB1     ((uint64_t)1 << 17)   /* job number unit */
#define ST_JOB(s)   ((s) >> 17)

struct gj_pool {
  int size;                  /* threads in all, the caller included */
  int nworkers;              /* threads created: size - 1 */
  pthread_t *threads;
  pthread_mutex_t run_mu;    /* one gj_pool_run at a time */
  pthread_mutex_t mu;        /* guards sleeping and waking */
  pthread_cond_t wake;       /* workers sleep here between jobs */
  pthread_cond_t done;       /* the caller sleeps here for stragglers */
  int sleepers;              /* workers waiting on `wake` (under mu) */
  /* The current job: see the invariants above. */
  gj_pool_fn fn;
  void *arg;
  int64_t ntasks, chunk;
  _Atomic int64_t next;      /* first task not yet claimed */
  _Atomic uint64_t state;    /* job number | closed | inside */
  _Atomic int stop;          /* set once, by gj_pool_free */
};

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__) || defined(__arm__)
  __asm__ __volatile__("yield");
#endif
}

int gj_pool_default_size(void)
{
  const char *env = getenv("GPUJIT_THREADS");
  long n = 0;
  if (env && *env) {
    char *end;
    n = strtol(env, &end, 10);
    if (*end != '\0' || n <= 0) n = 0;
  }
  if (n <= 0) {
#ifdef CPU_COUNT
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof(set), &set) == 0) n = CPU_COUNT(&set);
#endif
    if (n <= 0) n = sysconf(_SC_NPROCESSORS_ONLN);
    if (n <= 0) n = 1;
  }
  return n > POOL_MAX_THREADS ? POOL_MAX_THREADS : (int)n;
}

/* Claim and run chunks of the current job until none is left. */
static void pool_work(gj_pool *p)
{
  int64_t n = p->ntasks, chunk = p->chunk;
  for (;;) {
    int64_t b = atomic_fetch_add_explicit(&p->next, chunk,
                                          memory_order_relaxed);
    if (b >= n) break;
    p->fn(p->arg, b, b + chunk < n ? b + chunk : n);
  }
}

static void *pool_worker(void *ud)
{
  gj_pool *p = ud;
  uint64_t seen = 0;            /* the last job number this thread saw */
  for (;;) {
    uint64_t s = 0;
    int i;
    for (i = 0; i < POOL_SPIN; i++) {
      s = atomic_load_explicit(&p->state, memory_order_acquire);
      if (ST_JOB(s) != seen ||
          atomic_load_explicit(&p->stop, memory_order_relaxed))
        break;
      cpu_relax();
    }
    if (i == POOL_SPIN) {
      pthread_mutex_lock(&p->mu);
      p->sleepers++;
      while (ST_JOB(s = atomic_load_explicit(&p->state,
                                             memory_order_acquire)) == seen
             && !atomic_load_explicit(&p->stop, memory_order_relaxed))
        pthread_cond_wait(&p->wake, &p->mu);
      p->sleepers--;
      pthread_mutex_unlock(&p->mu);
    }
    if (atomic_load_explicit(&p->stop, memory_order_acquire)) break;
    seen = ST_JOB(s);
    /* Join, unless the job is already closed (or over). */
    while (!(s & ST_CLOSED) && ST_JOB(s) == seen) {
      if (atomic_compare_exchange_weak_explicit(&p->state, &s, s + 1,
                                                memory_order_acquire,
                                                memory_order_acquire)) {
        pool_work(p);
        s = atomic_fetch_sub_explicit(&p->state, 1, memory_order_acq_rel)
            - 1;
        if ((s & ST_CLOSED) && (s & ST_INSIDE) == 0) {
          pthread_mutex_lock(&p->mu);
          pthread_cond_signal(&p->done);
          pthread_mutex_unlock(&p->mu);
        }
        break;
      }
    }
  }
  return NULL;
}

gj_pool *gj_pool_new(int nthreads)
{
  gj_pool *p;
  sigset_t all, old;
  int i;
  if (nthreads <= 0) nthreads = gj_pool_default_size();
  if (nthreads > POOL_MAX_THREADS) nthreads = POOL_MAX_THREADS;
  p = calloc(1, sizeof(*p));
  if (!p) return NULL;
  p->threads = calloc((size_t)nthreads, sizeof(pthread_t));
  if (!p->threads) { free(p); return NULL; }
  pthread_mutex_init(&p->run_mu, NULL);
  pthread_mutex_init(&p->mu, NULL);
  pthread_cond_init(&p->wake, NULL);
  pthread_cond_init(&p->done, NULL);
  atomic_init(&p->next, 0);
  atomic_init(&p->state, ST_CLOSED);   /* job 0: closed, nobody inside */
  atomic_init(&p->stop, 0);
  /* Workers block every signal (they inherit the mask), so asynchronous
  ** signals such as SIGINT or a profiler's timer reach the host's threads,
  ** never ours. */
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  for (i = 0; i < nthreads - 1; i++) {
    if (pthread_create(&p->threads[i], NULL, pool_worker, p) != 0) break;
    p->nworkers++;
  }
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  p->size = p->nworkers + 1;
  return p;
}

void gj_pool_free(gj_pool *p)
{
  int i;
  if (!p) return;
  pthread_mutex_lock(&p->mu);
  atomic_store_explicit(&p->stop, 1, memory_order_release);
  pthread_cond_broadcast(&p->wake);
  pthread_mutex_unlock(&p->mu);
  for (i = 0; i < p->nworkers; i++) pthread_join(p->threads[i], NULL);
  pthread_cond_destroy(&p->done);
  pthread_cond_destroy(&p->wake);
  pthread_mutex_destroy(&p->mu);
  pthread_mutex_destroy(&p->run_mu);
  free(p->threads);
  free(p);
}

int gj_pool_size(gj_pool *p)
{
  return p ? p->size : 1;
}

void gj_pool_run(gj_pool *p, int64_t ntasks, gj_pool_fn fn, void *arg)
{
  uint64_t s;
  int64_t chunk;
  int i;
  if (ntasks <= 0) return;
  if (p->nworkers == 0 || ntasks == 1) {
    fn(arg, 0, ntasks);
    return;
  }
  chunk = ntasks / ((int64_t)p->size * POOL_CHUNKS_PER_THREAD);
  if (chunk < 1) chunk = 1;
  pthread_mutex_lock(&p->run_mu);
  p->fn = fn;
  p->arg = arg;
  p->ntasks = ntasks;
  p->chunk = chunk;
  atomic_store_explicit(&p->next, 0, memory_order_relaxed);
  /* Publish the job: open, nobody inside.  Under mu, so that a worker
  ** about to sleep either sees the new job or gets the broadcast. */
  s = atomic_load_explicit(&p->state, memory_order_relaxed);
  pthread_mutex_lock(&p->mu);
  atomic_store_explicit(&p->state, (ST_JOB(s) + 1) * ST_JOB1,
                        memory_order_release);
  if (p->sleepers) pthread_cond_broadcast(&p->wake);
  pthread_mutex_unlock(&p->mu);
  pool_work(p);
  /* Every chunk is claimed; close the job and wait for those inside. */
  s = atomic_fetch_or_explicit(&p->state, ST_CLOSED, memory_order_acq_rel);
  for (i = 0; (s & ST_INSIDE) != 0 && i < POOL_SPIN; i++) {
    cpu_relax();
    s = atomic_load_explicit(&p->state, memory_order_acquire);
  }
  if (s & ST_INSIDE) {
    pthread_mutex_lock(&p->mu);
    while (atomic_load_explicit(&p->state, memory_order_acquire) & ST_INSIDE)
      pthread_cond_wait(&p->done, &p->mu);
    pthread_mutex_unlock(&p->mu);
  }
  pthread_mutex_unlock(&p->run_mu);
}
