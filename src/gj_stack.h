/*
** The C stack left to the calling thread, for the code that recurses with
** the user's program (codegen over chains of device functions, gj_cg.c):
** it checks before it goes deeper, and raises a Lua error instead of
** running off the end of a thread's stack (2 MiB is common for threads,
** 8 MiB for a main thread).
*/
#ifndef GJ_STACK_H
#define GJ_STACK_H

#include <stddef.h>

/* Bytes between the caller's frame and the low end of its thread's stack
** (stacks grow down on every target gpujit builds for); (size_t)-1 when
** the thread's bounds are unknown. */
size_t gj_stack_left(void);

/* The size of the calling thread's stack; 0 when unknown. */
size_t gj_stack_size(void);

#endif
