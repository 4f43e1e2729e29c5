/*
** Runaway kernels (gpu.kernel's timeout, GPUJIT_TIMEOUT): the watchdog of
** one launch, and SIGINT while such a launch runs.
**
** gj_watch_start starts a thread that sets *flag (the launch's fault
** record's cancel word, src/gj_backend.h) to 1 when `seconds` have passed
** or a SIGINT came, then waits; gj_watch_stop ends it and says whether it
** fired.  The kernel's code, compiled with cancellation checks, stops
** soon after the flag is set (gj_cg_cancel.c); the launch then returns and
** gj_watch_stop turns what happened into the error.
**
** The clock counts the kernel's run, not a device's build: a runtime that
** may build inside the launch (PoCL compiles the work-group function at
** the first launch of a local size) calls gj_watch_defer while it
** enqueues, and gj_watch_running when the device reports the kernel
** running (opencl: its event's CL_RUNNING); the deadline counts from
** there.  Both act on the watch that the calling thread's launch started
** (a thread-local pointer set by gj_watch_start, cleared by
** gj_watch_stop); with none they do nothing.  A SIGINT stops a deferred
** launch all the same.
**
** SIGINT: from the first gj_sigint_begin to the matching last
** gj_sigint_end (counted: launches on several threads may overlap) the
** process's SIGINT action is a handler that only counts the signal
** (async-signal-safe); the last end restores the previous action exactly
** as it was (handler, mask and flags).  A SIGINT stops every watched launch
** running at the time.
*/
#ifndef GJ_WATCH_H
#define GJ_WATCH_H

#include <pthread.h>
#include <stdint.h>

#include "gj_err.h"

typedef struct gj_watch {
  pthread_t thread;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int32_t *flag;
  double t0, deadline, seconds;   /* CLOCK_MONOTONIC seconds; deadline
                                  ** is HUGE_VAL while deferred */
  struct gj_watch *outer; /* the thread's watch before this one */
  long sigints;           /* gj_sigint_count() at the start */
  int done;               /* the launch has returned */
  int reason;             /* 0, GJ_WATCH_TIMEOUT, GJ_WATCH_SIGINT */
} gj_watch;

enum { GJ_WATCH_TIMEOUT = 1, GJ_WATCH_SIGINT = 2 };

/* Start watching a launch (seconds > 0); the SIGINT handler is installed
** for the watch.  0, or -1 with err (nothing started). */
int gj_watch_start(gj_watch *w, int32_t *flag, double seconds, gj_err *err);

/* End the watch (the launch has returned) and restore SIGINT's action.
** 0 when it did not fire; else -1 with err saying "kernel 'NAME' timed
** out after X s (timeout = T)" or "kernel 'NAME' interrupted". */
int gj_watch_stop(gj_watch *w, const char *name, gj_err *err);

/* For runtimes, on the launching thread (see the top): the kernel is not
** running yet (the clock stops), and now it is (the clock starts again
** from 0).  No-ops without a watch. */
void gj_watch_defer(void);
void gj_watch_running(void);

/* The SIGINT handler alone (the sim backend, through the FFI): begin gives
** 0, or -1 when sigaction failed (nothing installed, end must not be
** called); count is how many SIGINTs the handler has seen so far. */
int gj_sigint_begin(void);
void gj_sigint_end(void);
long gj_sigint_count(void);

#endif
