/*
** fork(): a child has none of its parent's threads (docs/reliability.md,
** "fork()").  gj_fork_gen() is 0 in a process that no fork() made, and
** grows by one in each child (a pthread_atfork child handler, registered
** once by the first call of gj_fork_gen).  Whoever owns threads notes the
** generation when it makes them and, seeing another one later, knows its
** threads are gone: gpujit's own (the cpu pool, the compile worker, the
** cpu streams' workers) are made again in the child; an OpenCL platform
** opened by the parent is refused with an error (PoCL's threads cannot be
** made again), and nothing waits for or joins a thread of the parent.
*/
#ifndef GJ_FORK_H
#define GJ_FORK_H

/* The process's fork generation (see above); a relaxed load after the
** first call. */
unsigned gj_fork_gen(void);

#endif
