/*
** The C stack left to the calling thread (gj_stack.h).
*/
#include "gj_stack.h"

#include <pthread.h>
#include <stdint.h>

/* This thread's stack [low, high), found once per thread (low 0: not yet
** looked; low 1: unknown). */
static _Thread_local uintptr_t stack_low, stack_high;

static void find_bounds(void)
{
  pthread_attr_t attr;
  void *addr = NULL;
  size_t size = 0;
  stack_low = 1;
  if (pthread_getattr_np(pthread_self(), &attr) != 0) return;
  if (pthread_attr_getstack(&attr, &addr, &size) == 0 && addr && size) {
    stack_low = (uintptr_t)addr;
    stack_high = stack_low + size;
  }
  pthread_attr_destroy(&attr);
}

size_t gj_stack_size(void)
{
  if (!stack_low) find_bounds();
  return stack_low == 1 ? 0 : (size_t)(stack_high - stack_low);
}

size_t gj_stack_left(void)
{
  volatile char here = 0;
  uintptr_t at = (uintptr_t)&here;
  if (!stack_low) find_bounds();
  /* unknown, or running on another stack (a signal's, a coroutine
  ** library's): no answer */
  if (stack_low == 1 || at <= stack_low || at >= stack_high) return (size_t)-1;
  return (size_t)(at - stack_low);
}
