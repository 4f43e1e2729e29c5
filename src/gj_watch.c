/*
** The watchdog of a launch with a timeout, and the temporary SIGINT handler
** (gj_watch.h).  One thread per watched launch: it sleeps on a condition
** variable (CLOCK_MONOTONIC) in steps of at most POLL seconds, so that it
** sees a SIGINT (counted by the handler) within POLL, and the deadline on
** time.  Starting and joining it costs tens of microseconds per launch;
** launches of kernels without a timeout never come here.
*/
#include "gj_watch.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <string.h>
#include <time.h>

#include "gpujit.h"

#define POLL 0.02

/* -- SIGINT -------------------------------------------------------------- */

static pthread_mutex_t sig_mu = PTHREAD_MUTEX_INITIALIZER;
static int sig_users;                   /* begins not yet ended */
static struct sigaction sig_old;        /* the action before the first */
static volatile sig_atomic_t sig_count; /* written by the handler only */

static void on_sigint(int signo)
{
  (void)signo;
  sig_count = sig_count + 1;   /* SIGINT is blocked while this runs */
}

GJ_API int gj_sigint_begin(void)
{
  int rc = 0;
  pthread_mutex_lock(&sig_mu);
  if (sig_users == 0) {
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    if (sigaction(SIGINT, &sa, &sig_old) != 0) rc = -1;
  }
  if (rc == 0) sig_users++;
  pthread_mutex_unlock(&sig_mu);
  return rc;
}

GJ_API void gj_sigint_end(void)
{
  pthread_mutex_lock(&sig_mu);
  if (sig_users > 0 && --sig_users == 0) sigaction(SIGINT, &sig_old, NULL);
  pthread_mutex_unlock(&sig_mu);
}

GJ_API long gj_sigint_count(void)
{
  return (long)sig_count;
}

/* -- the watchdog -------------------------------------------------------- */

static double now_s(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static struct timespec at(double t)
{
  struct timespec ts;
  ts.tv_sec = (time_t)t;
  ts.tv_nsec = (long)((t - (double)ts.tv_sec) * 1e9);
  if (ts.tv_nsec >= 1000000000L) {
    ts.tv_sec++;
    ts.tv_nsec -= 1000000000L;
  }
  if (ts.tv_nsec < 0) ts.tv_nsec = 0;
  return ts;
}

/* The watch of the launch this thread runs (gj_watch_defer/running). */
static _Thread_local gj_watch *cur_watch;

void gj_watch_defer(void)
{
  gj_watch *w = cur_watch;
  if (!w) return;
  pthread_mutex_lock(&w->mu);
  w->deadline = HUGE_VAL;
  pthread_mutex_unlock(&w->mu);
}

void gj_watch_running(void)
{
  gj_watch *w = cur_watch;
  if (!w) return;
  pthread_mutex_lock(&w->mu);
  if (w->deadline == HUGE_VAL) {
    w->t0 = now_s();
    w->deadline = w->t0 + w->seconds;
    pthread_cond_signal(&w->cv);
  }
  pthread_mutex_unlock(&w->mu);
}

static void *watch_main(void *arg)
{
  gj_watch *w = arg;
  pthread_mutex_lock(&w->mu);
  while (!w->done) {
    double t = now_s(), wake;
    struct timespec ts;
    if (gj_sigint_count() != w->sigints) w->reason = GJ_WATCH_SIGINT;
    else if (t >= w->deadline) w->reason = GJ_WATCH_TIMEOUT;
    if (w->reason) {
      __atomic_store_n(w->flag, 1, __ATOMIC_RELAXED);
      break;
    }
    wake = t + POLL < w->deadline ? t + POLL : w->deadline;
    ts = at(wake);
    pthread_cond_timedwait(&w->cv, &w->mu, &ts);
  }
  pthread_mutex_unlock(&w->mu);
  return NULL;
}

int gj_watch_start(gj_watch *w, int32_t *flag, double seconds, gj_err *err)
{
  pthread_condattr_t ca;
  int rc;
  memset(w, 0, sizeof(*w));
  w->flag = flag;
  w->seconds = seconds;
  if (gj_sigint_begin())
    return gj_err_set(err, "launch: cannot install the SIGINT handler of the "
                      "timeout (%s)", strerror(errno));
  w->sigints = gj_sigint_count();
  w->t0 = now_s();
  w->deadline = w->t0 + seconds;
  pthread_mutex_init(&w->mu, NULL);
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&w->cv, &ca);
  pthread_condattr_destroy(&ca);
  rc = pthread_create(&w->thread, NULL, watch_main, w);
  if (rc != 0) {
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
    gj_sigint_end();
    return gj_err_set(err, "launch: cannot start the timeout's watchdog "
                      "thread (%s)", strerror(rc));
  }
  w->outer = cur_watch;
  cur_watch = w;
  return 0;
}

int gj_watch_stop(gj_watch *w, const char *name, gj_err *err)
{
  double elapsed;
  int reason;
  cur_watch = w->outer;
  pthread_mutex_lock(&w->mu);
  w->done = 1;
  pthread_cond_signal(&w->cv);
  pthread_mutex_unlock(&w->mu);
  pthread_join(w->thread, NULL);
  elapsed = now_s() - w->t0;
  reason = w->reason;
  /* a SIGINT after the watchdog's last look still stops the launch: the
  ** user asked for it while it ran */
  if (!reason && gj_sigint_count() != w->sigints) reason = GJ_WATCH_SIGINT;
  gj_sigint_end();
  pthread_cond_destroy(&w->cv);
  pthread_mutex_destroy(&w->mu);
  if (reason == GJ_WATCH_SIGINT)
    return gj_err_set(err, "kernel '%s' interrupted", name);
  if (reason == GJ_WATCH_TIMEOUT)
    return gj_err_set(err, "kernel '%s' timed out after %.3g s (timeout = %g)",
                      name, elapsed, w->seconds);
  return 0;
}
