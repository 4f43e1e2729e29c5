/*
** The thread behind a background queue (gj_qthread.h).
*/
#include <signal.h>

#include "gj_fork.h"
#include "gj_qthread.h"

int gj_qthread_start(gj_qthread *t, void *(*fn)(void *), void *arg)
{
  sigset_t all, old;
  int rc;
  pthread_mutex_init(&t->mu, NULL);
  pthread_cond_init(&t->work, NULL);
  pthread_cond_init(&t->done, NULL);
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  rc = pthread_create(&t->thread, NULL, fn, arg);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (rc != 0) {
    pthread_cond_destroy(&t->done);
    pthread_cond_destroy(&t->work);
    pthread_mutex_destroy(&t->mu);
    return rc;
  }
  t->gen = gj_fork_gen();
  return 0;
}

int gj_qthread_here(const gj_qthread *t)
{
  return t->gen == gj_fork_gen();
}

void gj_qthread_stop(gj_qthread *t, int *stop)
{
  pthread_mutex_lock(&t->mu);
  *stop = 1;
  pthread_cond_signal(&t->work);
  pthread_mutex_unlock(&t->mu);
  pthread_join(t->thread, NULL);
  pthread_cond_destroy(&t->done);
  pthread_cond_destroy(&t->work);
  pthread_mutex_destroy(&t->mu);
}
