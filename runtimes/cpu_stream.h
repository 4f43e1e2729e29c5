/*
** The cpu backend's streams: a gj_bstream is a worker thread (worker.h)
** that runs the stream's launches in order, each driving the backend's
** pool as a launch on the default stream does.  The default stream (NULL)
** has no worker: its launches run on the caller's thread, and `wait` on
** it returns at once.
*/
#ifndef GJ_CPU_STREAM_H
#define GJ_CPU_STREAM_H

#include "gj_backend.h"
#include "worker.h"

int cpu_stream_new(gj_bstate *st, int dev, gj_bstream **out, gj_err *err);
void cpu_stream_free(gj_bstate *st, int dev, gj_bstream *s);
int cpu_stream_wait(gj_bstate *st, int dev, gj_bstream *s, int *failed,
                    gj_err *err);
/* gj_backend.copy_async: a memcpy posted to the worker. */
int cpu_stream_copy(gj_bstate *st, int dev, gj_bstream *s, void *dst,
                    const void *src, size_t n, int dir, gj_err *err);
/* Events (gj_backend.h): a marker posted to the worker (it takes no
** launch index); a wait is a marker of the other stream that blocks its
** worker until the event has finished. */
int cpu_event_record(gj_bstate *st, int dev, gj_bstream *s, gj_bevent **out,
                     gj_err *err);
int cpu_event_query(gj_bstate *st, gj_bevent *e, gj_err *err);
int cpu_event_sync(gj_bstate *st, gj_bevent *e, gj_err *err);
int cpu_event_wait(gj_bstate *st, int dev, gj_bstream *s, gj_bevent *e,
                   gj_err *err);
int cpu_event_elapsed(gj_bstate *st, gj_bevent *a, gj_bevent *b, double *ms,
                      gj_err *err);
void cpu_event_free(gj_bstate *st, gj_bevent *e);
/* Queue job on s (worker.h's gj_worker_post). */
int cpu_stream_post(gj_bstream *s, gj_work_fn run, gj_work_done done,
                    void *job, gj_err *err);

#endif
