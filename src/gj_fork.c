/*
** The fork generation (gj_fork.h).
*/
#include "gj_fork.h"

#include <dlfcn.h>
#include <pthread.h>

static pthread_once_t fork_once = PTHREAD_ONCE_INIT;
static unsigned fork_gen;

/* In the child, which has one thread: no race with readers. */
static void on_fork_child(void)
{
  __atomic_store_n(&fork_gen, fork_gen + 1, __ATOMIC_RELAXED);
}

/* The handler stays registered for the process's life, so the code that
** holds it must too: the library is pinned (RTLD_NODELETE), or a fork()
** after lua_close unloaded it would jump into unmapped memory. */
static void fork_register(void)
{
  Dl_info info;
  if (dladdr((void *)on_fork_child, &info) && info.dli_fname)
    (void)dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
  pthread_atfork(NULL, NULL, on_fork_child);
}

unsigned gj_fork_gen(void)
{
  pthread_once(&fork_once, fork_register);
  return __atomic_load_n(&fork_gen, __ATOMIC_RELAXED);
}
