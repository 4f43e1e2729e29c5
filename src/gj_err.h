/*
** Error reporting for the gpujit core.
**
** Every fallible function in the core returns an int: 0 on success, -1 on
** failure after filling a gj_err.  Nothing in the core prints, exits or
** aborts; the Lua binding turns a gj_err into one Lua error at the boundary.
*/
#ifndef GJ_ERR_H
#define GJ_ERR_H

#include <stddef.h>

#define GJ_ERR_MSGMAX 4096

typedef struct gj_err {
  char msg[GJ_ERR_MSGMAX];
} gj_err;

/* Format the message into e (truncated to fit) and return -1. */
int gj_err_set(gj_err *e, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Prefix an existing message: "<prefix><old message>". Returns -1. */
int gj_err_prefix(gj_err *e, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

#endif
