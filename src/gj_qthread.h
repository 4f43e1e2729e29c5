/*
** The thread behind a background queue: a stream's launches
** (runtimes/worker.c) and a context's compiles (src/gj_bg.c).  Its mutex,
** the condition variable the thread waits on for work, the one its owner
** waits on, and the thread, made with every signal blocked (signals such as
** SIGINT, for a launch's timeout, stay the owning thread's), and the fork()
** generation it was made in (gj_fork.h): a fork() child has no such thread,
** and its owner makes it again.  The queue itself (its list, what the
** owner waits for, what a fork() loses) is the owner's.
*/
#ifndef GJ_QTHREAD_H
#define GJ_QTHREAD_H

#include <pthread.h>

typedef struct gj_qthread {
  pthread_mutex_t mu;
  pthread_cond_t work;     /* to the thread: work posted, or stop */
  pthread_cond_t done;     /* to the owner: what it waits for happened */
  pthread_t thread;
  unsigned gen;            /* gj_fork_gen() when made */
} gj_qthread;

/* Make t's mutex, condition variables and thread, which runs fn(arg).  0,
** or pthread_create's error code (then nothing of t is left made). */
int gj_qthread_start(gj_qthread *t, void *(*fn)(void *), void *arg);

/* 1 when t was made in this process, 0 in a fork() child of the one that
** made it (t has no thread here). */
int gj_qthread_here(const gj_qthread *t);

/* Set *stop under t's mutex, wake the thread, join it (it ends when it sees
** *stop) and destroy the mutex and condition variables.  Only where
** gj_qthread_here(t). */
void gj_qthread_stop(gj_qthread *t, int *stop);

#endif
