/*
** Error reporting: formatting into a fixed buffer, never allocating, so an
** error can be reported even when memory is short.
*/
#include "gj_err.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int gj_err_set(gj_err *e, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
  va_end(ap);
  return -1;
}

int gj_err_prefix(gj_err *e, const char *fmt, ...)
{
  char old[GJ_ERR_MSGMAX];
  size_t n;
  va_list ap;
  memcpy(old, e->msg, sizeof(old));
  va_start(ap, fmt);
  vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
  va_end(ap);
  n = strlen(e->msg);
  snprintf(e->msg + n, sizeof(e->msg) - n, "%s", old);
  return -1;
}
