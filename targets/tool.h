/*
** External programs a backend runs on an artifact: the SPIR-V translator
** (llvm-spirv) and disassembler (spirv-dis).  They are found at run time,
** like the drivers, so gpujit installs and works where they are absent:
** only what needs them fails, with the reason.
*/
#ifndef GJ_TOOL_H
#define GJ_TOOL_H

#include <stddef.h>

#include "gj_err.h"

/* The tool's path: the environment variable `env` when it is set (an
** error when it names no executable file), else the first of `names` (a
** NULL-terminated list) that is an executable: a name with a '/' as it
** is, any other looked up in PATH.  0 with path; -1 with err when none. */
int gj_tool_find(const char *env, const char *const *names, char *path,
                 size_t n, gj_err *err);

/* Run `path args... IN -o OUT` without a shell, where IN is a temporary
** file holding in[0..inlen) and OUT one the tool writes; *out (malloc'd,
** NUL-terminated beyond *outlen) is what it wrote.  With out NULL, run
** `path args... IN` for its exit status only (a checker).  A tool that fails
** (non-zero exit, a signal, no output) gives an error naming it and
** holding the start of its standard error.  Thread-safe: each call has
** its own temporary directory under $TMPDIR (or /tmp). */
int gj_tool_run(const char *path, const char *const *args, const void *in,
                size_t inlen, char **out, size_t *outlen, gj_err *err);

#endif
